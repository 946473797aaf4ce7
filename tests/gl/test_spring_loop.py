"""The spring iteration loop without a pass of its own (issue: the spring deformer at GPU speed, step 1).

One frame of the spring stage issues the frame pass (whose work group 0 also resets the convergence and loop
state), the volume pre-pass (with the volume term), one dispatch per iteration and the resolve: no convergence
dispatches, no command barriers, and nothing bound or uploaded between the iterations (two GL calls per iteration:
the dispatch and its memory barrier), whatever ``check_every`` is. Within a frame no buffer or image is bound
twice to one point, every frame binds afresh (other stages change the bindings between frames), and uniforms
that did not change are not sent again. The GPU still equals the numpy reference (engine.skinning.springs) at
I = 1, 7 and 50, and the volume sums added per work group and region (``volume_reduce = "group"``) give exactly
the per-point atomics' result (fixed-point sums).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from bench.common import count_stage_calls
from engine.gpu.glfunc import MultiBind, multi_bind
from engine.skinning import meshprep as M
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.gpu.plan import default_config
from engine.skinning.gpu.stages import SpringContext
from engine.skinning.springs import SpringDeformer, SpringParams
from tests.helpers.tube_rig import pose, tube

pytestmark = pytest.mark.gl
TOL = 1e-5  # of the bounding-box diagonal (float32 GPU vs float64 reference; tests/gl/test_deform_spring.py)


@pytest.fixture(scope="module")
def rig():
    return tube(rings=8, segments=6)


def _graph(gl_ctx, resources, rig, params, check_every, **options):
    cfg = default_config("spring").to_dict()
    cfg["nodes"][1]["options"]["check_every"] = check_every
    cfg["nodes"][1]["options"].update(options)
    graph = DeformerGraph(gl_ctx, resources)
    h = graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents,
                       config=cfg, spring=params)
    skin, posed = pose(rig)
    graph.set_pose(h, skin, posed)
    return graph, h, posed


def _frame_counts(gl_ctx, resources, rig, params, check_every):
    graph, _, _ = _graph(gl_ctx, resources, rig, params, check_every)
    try:
        graph.run()  # first frame: programs compiled, pools built
        with count_stage_calls(SpringContext) as n:
            graph.run()
        return n
    finally:
        graph.release()


@pytest.mark.parametrize("k_v", [1.0, 0.0], ids=["volume", "no-volume"])
def test_one_frame_dispatches_and_barriers(gl_ctx, resources, rig, k_v):
    pre = 1 if k_v else 0
    counts = {}
    for it in (1, 50):
        for every in (1, 7, 50):
            n = _frame_counts(gl_ctx, resources, rig, SpringParams(convergence="iterations", max_iterations=it,
                                                                   k_v=k_v), every)
            # frame (which also resets the convergence and loop state: no reset pass since issue 24's GL-call
            # cut), the pre-pass, one dispatch per iteration, the last of which resolves (no resolve pass for the
            # "iterations" scheme)
            assert n.dispatches == 1 + pre + it, (it, every, n)
            assert n.command_barriers == 0, (it, every, n)
            # one barrier per iteration dispatch and the frame pass's (+ the volume upload's)
            assert n.barriers == 1 + pre + it + pre, (it, every, n)
            counts[it, every] = n.calls
    for every in (1, 7, 50):
        assert counts[1, every] == counts[1, 1]  # check_every costs no GL call
        assert counts[50, every] - counts[1, every] == 2 * 49  # per iteration: the dispatch and its barrier only


def _reference(rig, params, posed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, params).solve(posed)


@pytest.mark.parametrize("check_every", [1, 3])
@pytest.mark.parametrize("iterations", [1, 7, 50])
def test_gpu_equals_reference_at_each_iteration_count(gl_ctx, resources, rig, iterations, check_every):
    params = SpringParams(convergence="iterations", max_iterations=iterations)
    graph, h, posed = _graph(gl_ctx, resources, rig, params, check_every)
    try:
        graph.run()
        ref, stats = _reference(rig, params, posed)
        st = graph.spring_status(h)
        assert st["iterations"] == stats.iterations == iterations
        assert st["reason"] == "max_iterations"
        diag = M.bbox_diagonal(rig.topology.positions)
        np.testing.assert_allclose(graph.download_control(h, "deformed"), ref, atol=TOL * diag, rtol=0)
        graph.run()  # a second frame starts from the reset loop state and gives the same result
        np.testing.assert_allclose(graph.download_control(h, "deformed"), ref, atol=TOL * diag, rtol=0)
    finally:
        graph.release()


def test_displacement_stop_with_check_every_matches_reference(gl_ctx, resources, rig):
    # the check runs in the last work group of every third dispatch: the instance stops at the first checked
    # iteration at or after the reference's, its groups exit at entry for the rest of the frame
    params = SpringParams(convergence="displacement", max_iterations=300, dt=0.08)
    graph, h, posed = _graph(gl_ctx, resources, rig, params, 3)
    try:
        graph.run()
        ref, stats = _reference(rig, params, posed)
        st = graph.spring_status(h)
        assert st["reason"] == "displacement"
        assert st["iterations"] % 3 == 0 and stats.iterations <= st["iterations"] < stats.iterations + 3
        diag = M.bbox_diagonal(rig.topology.positions)
        np.testing.assert_allclose(graph.download_control(h, "deformed"), ref, atol=1e-4 * diag, rtol=0)
    finally:
        graph.release()


@pytest.mark.parametrize("iterations", [1, 7, 50])
def test_volume_sums_per_group_equal_per_point(gl_ctx, resources, rig, iterations):
    params = SpringParams(convergence="iterations", max_iterations=iterations)  # the volume term is on by default
    out = {}
    for mode in ("group", "point"):
        graph, h, posed = _graph(gl_ctx, resources, rig, params, 1, volume_reduce=mode)
        try:
            graph.run()
            out[mode] = graph.download_control(h, "deformed")
        finally:
            graph.release()
    ref, _ = _reference(rig, params, posed)
    np.testing.assert_array_equal(out["group"], out["point"])  # integer sums: the same bits
    diag = M.bbox_diagonal(rig.topology.positions)
    np.testing.assert_allclose(out["group"], ref, atol=TOL * diag, rtol=0)


def test_volume_reduce_option_refuses_unknown_values(gl_ctx, resources, rig):
    with pytest.raises(ValueError, match=r"volume_reduce = 'atomic' .*; valid: 'auto', 'group', 'point'"):
        _graph(gl_ctx, resources, rig, SpringParams(), 1, volume_reduce="atomic")


def _bindings(monkeypatch, graph):
    """(SSBO binds, image binds, uniform writes) of one frame's spring stage, each bind as (point, object)."""
    import moderngl

    from engine.skinning.gpu import stages

    log = {"ssbo": [], "image": [], "uniform": 0}
    inside = [False]
    ssbo, image, value = moderngl.Buffer.bind_to_storage_buffer, moderngl.Texture.bind_to_image, moderngl.Uniform.value

    def bind_ssbo(self, binding=0, *args, **kwargs):
        if inside[0]:
            log["ssbo"].append((binding, id(self)))
        return ssbo(self, binding, *args, **kwargs)

    def bind_image(self, unit, *args, **kwargs):
        if inside[0]:
            log["image"].append((unit, id(self)))
        return image(self, unit, *args, **kwargs)

    def set_value(self, v):
        log["uniform"] += int(inside[0])
        value.fset(self, v)

    multi = {"ssbo": MultiBind.storage_buffers, "image": MultiBind.image_textures}

    def multi_bind_of(kind):
        def bind_range(self, first, objects):
            if inside[0]:
                log[kind].extend((first + i, id(o)) for i, o in enumerate(objects) if o is not None)
            return multi[kind](self, first, objects)
        return bind_range

    run = stages._RUN[SpringContext]

    def spring_run(c):
        inside[0] = True
        try:
            run(c)
        finally:
            inside[0] = False

    monkeypatch.setattr(moderngl.Buffer, "bind_to_storage_buffer", bind_ssbo)
    monkeypatch.setattr(moderngl.Texture, "bind_to_image", bind_image)
    monkeypatch.setattr(moderngl.Uniform, "value", property(value.fget, set_value))
    monkeypatch.setattr(MultiBind, "storage_buffers", multi_bind_of("ssbo"))
    monkeypatch.setattr(MultiBind, "image_textures", multi_bind_of("image"))
    monkeypatch.setitem(stages._RUN, SpringContext, spring_run)
    graph.run()
    monkeypatch.undo()
    return log


def test_each_binding_once_per_frame_and_unchanged_uniforms_not_resent(gl_ctx, resources, rig, monkeypatch):
    params = SpringParams(convergence="iterations", max_iterations=7, k_v=1.0)
    graph, _, _ = _graph(gl_ctx, resources, rig, params, 1)
    try:
        graph.run()  # first frame: programs compiled, uniforms sent
        frames = [_bindings(monkeypatch, graph) for _ in range(2)]
    finally:
        graph.release()
    for log in frames:
        for kind in ("ssbo", "image"):
            assert len(set(log[kind])) == len(log[kind]), (kind, log[kind])  # no point bound twice to one object
        assert len(log["ssbo"]) >= 10 and len(log["image"]) >= 6  # every frame binds what it uses afresh
        assert log["uniform"] == 0  # same counts and options: nothing re-sent
    assert frames[0]["ssbo"] == frames[1]["ssbo"] and frames[0]["image"] == frames[1]["image"]


def test_multi_bind_and_one_by_one_bindings_give_the_same_frames(gl_ctx, resources, rig, monkeypatch):
    """The spring stage binds its buffers and images with two GL 4.4 multi-bind calls (engine.gpu.glfunc); where a
    context lacks them it binds one by one: both give the same frames bit for bit, over frames with the warm start
    and the volume term."""
    from engine.skinning.gpu.stages import spring as spring_stage

    params = SpringParams(convergence="displacement", max_iterations=20, k_v=1.0)
    outs = {}
    for mode in ("multi", "single"):
        if mode == "single":
            class NoMultiBind:
                available = False
            monkeypatch.setattr(spring_stage, "multi_bind", lambda ctx: NoMultiBind())
        graph, h, _ = _graph(gl_ctx, resources, rig, params, 1)
        try:
            frames = []
            for _ in range(3):
                graph.run()
                frames.append(graph.download_control(h, "deformed"))
            outs[mode] = np.stack(frames)
        finally:
            graph.release()
    assert multi_bind(gl_ctx).available  # GL 4.5 here: the first run did use multi-bind
    np.testing.assert_array_equal(outs["multi"], outs["single"])


@pytest.mark.parametrize("k", [1, 5])
def test_an_instance_capped_below_the_frame_resolves_its_own_cap(gl_ctx, resources, rig, k):
    """Two instances in one batch, iteration caps 7 and 30, checked only after the frame's last dispatch: the
    capped one keeps running (its lanes idle past 7) into the last dispatch, whose check accepts its state after 7
    iterations, an older ring image than the one that dispatch wrote; the group that checks it copies that state
    (spring_iterate.glsl, RESOLVE_IN_LOOP). Both equal the reference at their own caps."""
    cfg = default_config("spring").to_dict()
    cfg["nodes"][1]["options"].update(check_every=50, iterations_per_dispatch=k)
    graph = DeformerGraph(gl_ctx, resources)
    caps = (7, 30)
    try:
        handles = [graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind,
                                  rig.parents, config=cfg,
                                  spring=SpringParams(convergence="iterations", max_iterations=cap, k_v=0.0))
                   for cap in caps]
        skin, posed = pose(rig)
        for h in handles:
            graph.set_pose(h, skin, posed)
        graph.run()
        diag = M.bbox_diagonal(rig.topology.positions)
        for h, cap in zip(handles, caps):
            params = SpringParams(convergence="iterations", max_iterations=cap, k_v=0.0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # K > 1: the tiled reference (springs.tiles)
                ref, stats = SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents,
                                            params).solve(posed, block=k if k > 1 else None)
            assert graph.spring_status(h)["iterations"] == stats.iterations == cap
            np.testing.assert_allclose(graph.download_control(h, "deformed"), ref, atol=TOL * diag, rtol=0)
        # the capped instance is not the other's state: the copy took its own cap's image
        assert np.abs(graph.download_control(handles[0], "deformed")
                      - graph.download_control(handles[1], "deformed")).max() > 10 * TOL * diag
    finally:
        graph.release()
