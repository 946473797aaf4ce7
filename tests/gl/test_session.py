"""engine.Session, the scripting API: spawn, play, deform (GPU and numpy agree), render, pick, read back with
typed keys, switch deformers, remove (GPU memory returned), refuse bad input without changing the scene,
interpolate between fixed steps, hot-reload shaders; and the README's example runs as written."""
from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from engine import Session
from engine.components import PrimitiveKey, SkeletonPose
from engine.frame import interpolate_matrices
from engine.gpu.context import GLContext
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

W, H = 96, 72


@pytest.fixture()
def gl(gl_ctx):
    return GLContext(gl_ctx, None, True)


def _session(gl, **kw) -> Session:
    return Session(gl=gl, width=W, height=H, strict=True, **kw)


def test_spawn_step_render_pick_and_read_back(gl):
    with _session(gl) as s:
        ch = s.spawn("cylinder", clip="bend", on_ground=True)
        assert ch.primitives and all(isinstance(k, PrimitiveKey) for k in ch.primitives)
        key = ch.skinned_primitives[0]
        assert key.export_key == f"node{key.node}_mesh{key.mesh}_prim{key.primitive}"
        before = ch.vertices()[key].copy()
        s.fit_camera()
        s.step(20)
        after = ch.vertices()[key]
        assert after.dtype == np.float32 and after.shape == before.shape
        assert np.abs(after - before).max() > 1e-2  # the clip bent it
        img = s.render()
        assert img.shape == (H, W, 4) and img[..., :3].std() > 5
        g = s.gbuffer()
        hit_px = np.argwhere(g["triangle"] >= 0)
        assert len(hit_px) > 30
        y, x = hit_px[len(hit_px) // 2]
        hit = s.pick(int(x), int(y))
        assert hit is not None and hit.entity == ch.entity and hit.triangle == g["triangle"][y, x]
        assert (hit.node, hit.mesh_index, hit.primitive) == tuple(key)
        # the picked point is on the deformed mesh the read-back returns
        tri = ch.asset.meshes[key.mesh].primitives[key.primitive].indices[hit.triangle]
        p = (np.asarray(hit.barycentric, np.float64)[:, None] * after[tri]).sum(0)
        assert np.linalg.norm(p - hit.position) < 1e-3


def test_gpu_and_numpy_sessions_agree(gl):
    out = {}
    for device in ("gpu", "cpu"):
        with _session(gl, device=device, render=False) as s:
            ch = s.spawn("cylinder", clip="twist", time=0.4, speed=0.0)
            out[device] = ch.vertices()
    assert out["gpu"].keys() == out["cpu"].keys()
    for k in out["gpu"]:
        np.testing.assert_allclose(out["gpu"][k], out["cpu"][k], atol=1e-4)


def test_remove_returns_gpu_memory(gl):
    with _session(gl) as s:
        keep = s.spawn("box", clip=0)
        s.step()
        counts = []
        for _ in range(3):
            ch = s.spawn("cylinder", clip="twist", deformer="spring", position=(2.0, 0.0, 0.0))
            s.step()
            ch.remove()
            s.step()
            counts.append(s.live_gpu_objects())
        # the first cycle compiles and caches the spring programs; after that nothing grows
        assert counts[1] == counts[2] == counts[0]
        assert not ch.alive and keep.alive
        with pytest.raises(ValueError, match="was removed"):
            ch.vertices()


def test_bad_input_is_refused_and_the_scene_survives(gl):
    with _session(gl) as s:
        ch = s.spawn("cylinder", clip="twist")
        s.step()
        n_meshes = len(s.renderer.meshes)
        with pytest.raises(ValueError, match="unknown deformer 'nope'; valid: lbs"):
            s.spawn("cylinder", deformer="nope")
        with pytest.raises(ValueError, match="does not run on --device gpu"):
            s.spawn("cylinder", deformer="arap")
        with pytest.raises(ValueError, match="no clip 'dance'"):
            s.spawn("cylinder", clip="dance")
        with pytest.raises(ValueError, match="neither a .gltf/.glb file nor a generated character"):
            s.spawn("no-such-character")
        with pytest.raises(ValueError, match="does not run on --device gpu"):
            ch.set_deformer("arap")
        assert ch.deformer == "lbs" and len(s.characters) == 1 and len(s.renderer.meshes) == n_meshes
        ch.set_deformer("dqs")
        assert ch.deformer == "dqs"
        s.step()
        assert np.isfinite(next(iter(ch.vertices().values()))).all()
        with pytest.raises(ValueError, match="position must be three finite numbers"):
            ch.place((0.0, float("nan"), 0.0))
        with pytest.raises(ValueError, match="width must be an integer in"):
            Session(gl=gl, width=0)


def test_real_time_frames_draw_the_pose_interpolated_by_alpha(gl):
    with _session(gl, device="cpu", render=False) as s:
        ch = s.spawn("cylinder", clip="twist")
        key = ch.skinned_primitives[0]
        s.step(3)
        s.frame(s.clock.step * 0.5)  # half a step: no fixed step is due, alpha = 0.5
        assert s.clock.alpha == pytest.approx(0.5)
        drawn = ch.vertices()[key]
        skel = s.world.get(ch.entity, SkeletonPose)
        sp = ch.loaded.skinned[0]
        expect = sp.deform(interpolate_matrices(skel.previous, skel.globals, 0.5), "lbs")
        np.testing.assert_allclose(drawn, expect, atol=1e-5)
        assert np.abs(drawn - sp.deform(skel.globals, "lbs")).max() > 1e-4  # not the last step itself


def test_shader_hot_reload_keeps_the_old_program_on_error(gl, tmp_path):
    root = tmp_path / "shaders"
    shutil.copytree(ROOT / "shaders", root)
    with _session(gl, shaders=root) as s:
        s.spawn("box", clip=0)
        s.fit_camera()
        first = s.render()
        frag = root / "render" / "compose.frag"
        frag.write_text(frag.read_text() + "\n// edited\n")
        results = s.reload_shaders()
        assert results and all(r.ok for r in results)
        frag.write_text(frag.read_text() + "\nthis is not GLSL;\n")
        results = s.reload_shaders()
        assert results and not any(r.ok for r in results) and "compose.frag" in results[0].error
        again = s.render()  # the previous programs still draw the same frame
        assert np.abs(again.astype(int) - first.astype(int)).max() <= 1


def test_readme_example_runs_as_written(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("True "), r.stdout
    assert (tmp_path / "out" / "quickstart.png").stat().st_size > 1000
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / "examples" / "quickstart.py").read_text().split('"""', 2)[2].strip()
    assert example in readme  # the README shows exactly the tested script
