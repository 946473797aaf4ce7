"""Extreme spring parameters on both devices (issue 16): the GPU reports a divergence like the CPU solver (the
same iteration, once per mesh, read back a few frames late without waiting), and parameters absurd for the mesh
(stiffness far past its stable bound, a dt float32 cannot step) are refused with the valid range.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine.skinning.config import check_spring_ranges, spring_ranges
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.gpu.status import LAG
from engine.skinning.springs import SpringDeformer, SpringParams, build_rest
from tests.helpers.tube_rig import pose, tube
from tests.unit.test_skinning_springs import fan_rig

pytestmark = pytest.mark.gl


@pytest.fixture(scope="module")
def rig():
    return tube(rings=6, segments=6)


def _add(graph, rig, params):  # noqa: ANN001, ANN202
    return graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents,
                          method="spring", spring=params)


def _cpu(rig, params, posed):  # noqa: ANN001, ANN202
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        x, stats = SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, params).solve(posed)
    return x, stats, [str(w.message) for w in caught if "diverged" in str(w.message)]


def test_gpu_divergence_is_reported_like_the_cpu_once_per_mesh(gl_ctx, resources):
    fan = fan_rig()  # a 128-valent pole: the plain update diverges on both devices
    skin, posed = pose(fan, bend=0.6, twist=0.3)
    params = SpringParams(step_limit=False, max_iterations=400, joint_blend=False)
    _, stats, cpu_msgs = _cpu(fan, params, posed)
    assert stats.diverged and len(cpu_msgs) == 1
    before = resources.live_counts()
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = _add(graph, fan, params)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            for frame in range(LAG + 3):
                graph.set_pose(h, skin, posed)
                graph.run()
                if frame < LAG:  # nothing read before the copy is LAG frames old: the frame never waits
                    assert h.id not in graph.spring_reports.last
        gpu_msgs = [str(w.message) for w in caught if "diverged" in str(w.message)]
        assert len(gpu_msgs) == 1, gpu_msgs  # once per mesh, not once per frame
        report = graph.spring_reports.last[h.id]
        assert report.diverged and report.iterations == stats.iterations
        assert f"diverged at iteration {stats.iterations + 1} (GPU, mesh {h.id}); kept the last good state" \
            in gpu_msgs[0]
        assert f"diverged at iteration {stats.iterations + 1} (" in cpu_msgs[0]
        assert "lower `dt` (now" in gpu_msgs[0] and "safe <" in gpu_msgs[0]
    finally:
        graph.release()
    assert resources.live_counts() == before  # the staging ring is released with the graph


def test_converged_solves_report_no_divergence(gl_ctx, resources, rig):
    skin, posed = pose(rig)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = _add(graph, rig, SpringParams())
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            graph.set_pose(h, skin, posed)
            graph.run()
            graph.download(h)  # waits anyway: the pending status is read now
        assert graph.spring_reports.last[h.id].reason in ("displacement", "max_iterations")
        assert not graph.spring_reports.reported
    finally:
        graph.release()


def test_a_refused_status_read_loses_one_report_not_the_frame(gl_ctx, resources, rig, monkeypatch):
    """A driver that refuses to map a staging copy (seen once on NVIDIA: "cannot map the buffer") costs that
    frame's report only: the frame runs, the refused buffer is released (not reused), later reports arrive."""
    import moderngl

    skin, posed = pose(rig)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = _add(graph, rig, SpringParams())
        graph.set_pose(h, skin, posed)
        graph.run()
        reader = graph.spring_reports
        (item,) = [p for pend in reader._pending.values() for p in pend]
        refused = item.buffer

        def refuse(*args, **kwargs):
            raise moderngl.Error("cannot map the buffer")

        monkeypatch.setattr(refused, "read", refuse)
        assert reader.poll(wait=True) == []          # the refused copy: no report, no exception
        assert not resources.owns(refused)            # released, never handed out again
        assert h.id not in reader.last
        graph.run()
        graph.download(h)                             # a later frame reports as usual
        assert reader.last[h.id].reason in ("displacement", "max_iterations")
    finally:
        graph.release()


@pytest.mark.parametrize("change, message", [
    (dict(k_s=3e38), r"spring\.k_s = 3e\+38 is far above the stable bound on this mesh; valid: \[0, "),
    (dict(k_r=1e30), r"spring\.k_r = 1e\+30 is far above"),
    (dict(dt=1e-300), r"spring\.dt = 1e-300 is below what float32 can step on this mesh; valid: \["),
    (dict(dt=1e-9, integrator="semi_implicit"), r"spring\.dt = 1e-09 is below what float32 can step"),
])
def test_absurd_parameters_are_refused_alike_with_the_range(gl_ctx, resources, rig, change, message):
    params = SpringParams(**change)
    rest = build_rest(rig.topology, rig.binding, rig.bind_joints)
    with pytest.raises(ValueError, match=message) as cpu:
        check_spring_ranges(params, rest)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        with pytest.raises(ValueError, match=message) as gpu:
            _add(graph, rig, params)
        assert str(gpu.value) == str(cpu.value)
        h = _add(graph, rig, SpringParams())
        with pytest.raises(ValueError, match=message):
            graph.set_spring(h, params)
        assert graph.spring_status(h) is not None  # the mesh keeps its valid parameters
    finally:
        graph.release()


def test_extreme_but_valid_parameters_agree_on_both_devices(gl_ctx, resources, rig):
    """Near the edges of the ranges the devices give the same verdict and finite results."""
    skin, posed = pose(rig, bend=0.9)
    rest = build_rest(rig.topology, rig.binding, rig.bind_joints)
    base = SpringParams(max_iterations=40, convergence="iterations")
    ranges = spring_ranges(base, rest)
    cases = [base.replace(k_s=0.5 * ranges["k_s"][1]),                 # stiff, step-limited: stable
             base.replace(dt=2 * ranges["dt"][0]),                     # tiny dt: barely moves
             base.replace(dt=5.0, step_limit=False),                   # plain update far past stable: diverges
             base.replace(dt=5.0)]                                     # the same step-limited: stable
    for params in cases:
        check_spring_ranges(params, rest)
        x_cpu, stats, _ = _cpu(rig, params, posed)
        graph = DeformerGraph(gl_ctx, resources)
        try:
            h = _add(graph, rig, params)
            graph.set_pose(h, skin, posed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                graph.run()
                x_gpu = graph.download_control(h, "deformed")
            gpu_diverged = graph.spring_reports.last[h.id].diverged
        finally:
            graph.release()
        assert np.isfinite(x_gpu).all() and np.isfinite(x_cpu).all()
        assert gpu_diverged == stats.diverged, (params, stats.reason)
