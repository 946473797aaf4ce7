"""Baking many frames in one process (engine/bake.py, ``export-frame --times/--frames``): every frame equals the
single-frame export at its time, on the GPU (blocks of frames per dispatch) and with numpy; frame-dependent
graphs step in order; the npz holds a leading frame axis and the times; a folder gets one OBJ per frame."""
from __future__ import annotations

import argparse

import numpy as np
import pytest

from engine import Session
from engine.bake import bake, parse_times
from engine.gpu.context import GLContext
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

CYLINDER = ROOT / "assets" / "cylinder.glb"


@pytest.mark.parametrize("device, deformer", [("gpu", "lbs"), ("gpu", "dqs"), ("gpu", "rigid"), ("cpu", "lbs")])
def test_baked_frames_equal_single_frames(gl_ctx, device, deformer):
    times = parse_times("0:1:0.25")
    assert np.allclose(times, [0, 0.25, 0.5, 0.75, 1.0])
    with Session(gl=GLContext(gl_ctx, None, True), device=device, render=False, deformer=deformer,
                 strict=True) as s:
        ch = s.spawn(CYLINDER, clip="bend", speed=0.0, mode="clamp")
        out = bake(s, ch, times, memory_mb=0.5)  # a small budget: several blocks
        key = ch.skinned_primitives[0]
        assert out[key].shape == (5, ch.asset.meshes[key.mesh].primitives[key.primitive].vertex_count, 3)
        for i, t in enumerate(times):
            ch.play("bend", time=float(t), speed=0.0)
            np.testing.assert_allclose(out[key][i], ch.vertices()[key], atol=2e-5)
        assert np.abs(out[key][0] - out[key][-1]).max() > 1e-2


def test_frame_dependent_graph_steps_in_order(gl_ctx):
    from engine.skinning.config import DeformerConfig

    cfg = DeformerConfig().with_overrides(spring_mode="dependent", spring_iterations=5)
    with Session(gl=GLContext(gl_ctx, None, True), render=False, deformer="spring", config=cfg, strict=True) as s:
        ch = s.spawn(CYLINDER, clip="bend", speed=0.0)
        assert s.meshes.settings[ch.entity].frame_dependent
        out = bake(s, ch, [0.2, 0.4, 0.6])
        v = next(iter(out.values()))
        assert np.isfinite(v).all() and np.abs(v[0] - v[2]).max() > 1e-3


def test_export_frame_times_writes_a_frame_axis_and_obj_folder(tmp_path):
    from engine.tools.export_frame import export_frame

    base = dict(asset=str(CYLINDER), clip="bend", time=0.0, deformer="lbs", device="cpu", config=None,
                spring_iterations=None, spring_dt=None)
    assert export_frame(argparse.Namespace(**base, out=str(tmp_path / "f.npz"), times="0:0.5:0.25",
                                           frames=None)) == 0
    d = np.load(tmp_path / "f.npz")
    keys = [k for k in d.files if k != "times"]
    assert len(keys) == 1 and d[keys[0]].shape[0] == 3 and d[keys[0]].dtype == np.float32
    np.testing.assert_allclose(d["times"], [0.0, 0.25, 0.5])
    assert export_frame(argparse.Namespace(**base, out=str(tmp_path / "objs") + "/", times=None, frames=2)) == 0
    assert sorted(p.name for p in (tmp_path / "objs").iterdir()) == ["frame_0000.obj", "frame_0001.obj"]
    with pytest.raises(ValueError, match="--times must be START:STOP:STEP"):
        parse_times("0:1")
    with pytest.raises(ValueError, match="not both"):
        export_frame(argparse.Namespace(**base, out=str(tmp_path / "g.npz"), times="0:1:0.5", frames=2))
