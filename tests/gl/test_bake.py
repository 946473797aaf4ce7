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
    from game.commands.export_frame import export_frame

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


def test_deferred_layout_lays_out_a_block_once(gl_ctx, monkeypatch):
    """A bake block of instances is laid out once (not once per add: that made baking quadratic), and the
    deferred layout gives the same frames as adding the instances one by one."""
    from engine.scene import add_to_graph
    from engine.skinning.gpu.pools import Batch

    calls = []
    real = Batch.layout
    monkeypatch.setattr(Batch, "layout", lambda self: (calls.append(1), real(self))[1])
    with Session(gl=GLContext(gl_ctx, None, True), render=False, deformer="lbs", strict=True) as s:
        ch = s.spawn(CYLINDER, clip="bend", speed=0.0, mode="clamp")
        calls.clear()
        out = bake(s, ch, np.linspace(0.0, 1.0, 11), memory_mb=256.0)  # one block; 0.5 is frame 5
        assert len(calls) == 1
        sp = ch.loaded.skinned[0]
        settings = s.meshes.settings[ch.entity]
        from engine.skinning.gpu.graph import DeformerGraph

        graph = DeformerGraph(s.ctx, s.resources, programs=s.programs)
        try:
            calls.clear()
            hs = [add_to_graph(graph, sp, ch.loaded, settings) for _ in range(3)]  # eager: one layout each
            assert len(calls) == 3
            from engine.bake import pose_matrices

            g = pose_matrices(ch, np.array([0.5]))[0]
            for h in hs:
                graph.set_pose(h, sp.skin_matrices(g), g[sp.skin.joints])
            graph.run()
            key = ch.skinned_primitives[0]
            for h in hs:
                np.testing.assert_allclose(graph.download(h)[0], out[key][5], atol=1e-5)
        finally:
            graph.release()


def test_add_instances_and_holes(gl_ctx):
    """add_instances copies a mesh cheaply; removing some leaves holes the next adds reuse (first fit)."""
    from engine.scene import add_to_graph
    from engine.skinning.gpu.graph import DeformerGraph

    with Session(gl=GLContext(gl_ctx, None, True), render=False, deformer="lbs", strict=True) as s:
        ch = s.spawn(CYLINDER, clip="bend", speed=0.0, mode="clamp")
        sp = ch.loaded.skinned[0]
        graph = DeformerGraph(s.ctx, s.resources, programs=s.programs)
        try:
            first = add_to_graph(graph, sp, ch.loaded, s.meshes.settings[ch.entity])
            hs = [first] + graph.add_instances(first, 5)
            with pytest.raises(ValueError, match="count"):
                graph.add_instances(first, -1)
            ranges = [graph.output_ranges(h)[0][1] for h in hs]
            assert len(set(ranges)) == 6 and ranges == sorted(ranges)
            with graph.deferred_layout():
                graph.remove_mesh(hs[1])
                graph.remove_mesh(hs[3])
                more = graph.add_instances(first, 2)
            again = sorted(graph.output_ranges(h)[0][1] for h in more)
            assert again == [ranges[1], ranges[3]]  # the holes, not the end of the pool
        finally:
            graph.release()


@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_spring_bake_stays_frame_independent_with_warm_start(gl_ctx, device):
    """``[spring] warm_start = true`` makes a live session start each frame from the last one; a bake turns it
    off (engine.bake.frame_independent): with several blocks reusing the instances (or the cached numpy deformer)
    every baked frame equals the bake without the warm start, and the single frame of a fresh session (what
    export-frame writes); played one at a time in the session, the frames start warm and differ a little."""
    from engine.skinning.config import DeformerConfig

    warm = DeformerConfig().with_overrides(spring_warm_start=True, spring_warm_limit=3.0)
    times = parse_times("0.3:0.5:0.05")
    out = {}
    for name, cfg in (("warm", warm), ("cold", DeformerConfig())):
        with Session(gl=GLContext(gl_ctx, None, True), device=device, render=False, deformer="spring", config=cfg,
                     strict=True) as s:
            ch = s.spawn(CYLINDER, clip="bend", speed=0.0, mode="clamp")
            key = ch.skinned_primitives[0]
            out[name] = bake(s, ch, times, memory_mb=0.05)[key]  # blocks of a frame or two
            if name == "warm":
                live = []
                for t in times:
                    ch.play("bend", time=float(t), speed=0.0)
                    live.append(ch.vertices()[key])
    np.testing.assert_array_equal(out["warm"], out["cold"])
    with Session(gl=GLContext(gl_ctx, None, True), device=device, render=False, deformer="spring", config=warm,
                 strict=True) as s:
        ch = s.spawn(CYLINDER, clip="bend", time=float(times[-1]), speed=0.0, mode="clamp")
        np.testing.assert_allclose(out["warm"][-1], ch.vertices()[ch.skinned_primitives[0]], atol=2e-5,
                                   rtol=0)
    diff = np.abs(np.array(live) - out["warm"]).max(axis=(1, 2))
    assert diff[0] < 2e-5 and diff[1:].max() > 0.0  # the first live frame is cold, the later ones warm
