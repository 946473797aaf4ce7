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
    from engine import Session
    from engine.components import SkeletonPose
    from game.demo import frame_camera, spawn_cast

    class _GL:  # the session only needs .ctx from the context wrapper
        ctx = gl_ctx

    with Session(gl=_GL(), width=96, height=64, device=device, deformer="lbs", strict=True) as s:
        chars = spawn_cast(s, 2)
        frame_camera(s)
        ch = chars[0]
        key = ch.skinned_primitives[0]
        before = ch.vertices()[key].copy()  # the GPU path reads the graph's output back only for the test
        s.step(10)
        after = ch.vertices()[key]
        assert np.isfinite(after).all()
        assert np.abs(after - before).max() > 1e-3  # the clip moved the mesh
        # The GPU graph and the numpy reference agree on the pose the scene holds.
        skel = s.world.get(ch.entity, SkeletonPose)
        sp = ch.loaded.skinned[0]
        ref = sp.deform(skel.globals, "lbs")
        assert np.abs(after - ref).max() < 1e-4
        assert s.renderer.read_pixels().std() > 5.0


def test_demo_runs_a_graph_file(gl_ctx):
    from engine import Session
    from game.demo import spawn_cast

    class _GL:
        ctx = gl_ctx

    with Session(gl=_GL(), width=64, height=48, graph=ROOT / "config" / "graph_irs_springs.toml",
                 strict=True) as s:
        assert s.default.graph.name == "irs-springs"
        (ch,) = spawn_cast(s, 1)
        s.step(2)
        inst = s.meshes.instances[ch.entity][0]
        pos = s.graph.download(inst.deform)[0][:, :3]
        assert np.isfinite(pos).all()
        assert s.graph.spring_status(inst.deform)["iterations"] > 0  # the spring stage ran
