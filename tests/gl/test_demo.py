"""The demo headless: N frames offscreen, a non-blank PNG with the characters in it, a frame-time summary."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from tests.conftest import ROOT


def test_headless_demo_writes_screenshot_and_summary(tmp_path):
    png = tmp_path / "demo.png"
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "--headless", "--frames", "3", "--screenshot",
                        str(png), "--width", "192", "--height", "108", "--characters", "5"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert re.search(r"frames \d+: mean [\d.]+ ms, p95 [\d.]+ ms, max [\d.]+ ms", r.stdout), r.stdout
    img = np.asarray(Image.open(png).convert("RGB")).astype(np.float32)
    assert img.shape == (108, 192, 3)
    # Not blank: strong variation, and something other than the sky/ground gradient (characters are
    # lit light-coloured shapes in the middle of the frame).
    assert img.std() > 10.0
    centre = img[20:100, 40:150]
    assert (np.abs(np.diff(centre, axis=1)).max() > 40.0)


@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_demo_scene_animates(gl_ctx, device):
    from game.components import DeformedMeshes
    from game.demo import DemoScene

    class _GL:  # the scene only needs .ctx from the context wrapper
        ctx = gl_ctx

    scene = DemoScene(_GL(), width=96, height=64, count=2, device=device, deformer="lbs")
    try:
        inst = next(i for i in scene.instances if i.skinned is not None)

        def current():
            if device == "gpu":  # the graph writes the renderer's SSBOs; read back only for the test
                return scene.graph.download(inst.deform)[0][:, :3].copy()
            return scene.world.get(inst.entity, DeformedMeshes).positions[inst.key].copy()

        before = current()
        scene.run_frames(10)
        after = current()
        assert np.isfinite(after).all()
        assert np.abs(after - before).max() > 1e-3  # the clip moved the mesh
        # The GPU graph and the numpy reference agree on the pose the scene holds.
        skel = scene.world.get(inst.entity, __import__("game.components", fromlist=["SkeletonPose"]).SkeletonPose)
        ref = inst.skinned.deform(skel.globals, "lbs")
        assert np.abs(after - ref).max() < 1e-4
        assert scene.renderer.read_pixels().std() > 5.0
    finally:
        scene.release()


def test_demo_runs_a_graph_file(gl_ctx):
    from game.demo import DemoScene

    class _GL:
        ctx = gl_ctx

    scene = DemoScene(_GL(), width=64, height=48, count=1, graph_file=str(ROOT / "config" / "graph_irs_springs.toml"))
    try:
        assert scene.graph_config.name == "irs-springs"
        scene.run_frames(2)
        inst = next(i for i in scene.instances if i.skinned is not None)
        pos = scene.graph.download(inst.deform)[0][:, :3]
        assert np.isfinite(pos).all()
        assert scene.graph.spring_status(inst.deform)["iterations"] > 0  # the spring stage ran
    finally:
        scene.release()
