"""GPU spring stage with acceleration="momentum" (heavy ball on the explicit update, FLAG_MOMENTUM) against the
numpy reference: same iterations, same stop reason and positions within 1e-5 of the bounding-box diagonal, on
a bent and twisted tube, in the frame-independent and frame-dependent modes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.springs import SpringDeformer, SpringParams
from tests.helpers.tube_rig import pose, tube

pytestmark = pytest.mark.gl
TOL = 1e-5


@pytest.fixture(scope="module")
def rig():
    return tube(rings=8, segments=6)


def _gpu(gl_ctx, resources, rig, params, skin, posed, frames=1):
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents,
                           method="spring", spring=params)
        for _ in range(frames):
            graph.set_pose(h, skin, posed)
            graph.run()
        return graph.download_control(h, "deformed"), graph.spring_status(h)
    finally:
        graph.release()


def _reference(rig, params, posed, frames=1):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, params)
        for _ in range(frames):
            x, stats = d.solve(posed)
    return x, stats


@pytest.mark.parametrize("case", [
    dict(convergence="iterations", max_iterations=30, momentum=0.8),
    dict(convergence="displacement", max_iterations=300, dt=0.08, momentum=0.7),
    dict(convergence="displacement", max_iterations=300, momentum=0.8, mode="dependent"),
], ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_momentum_matches_reference(gl_ctx, resources, rig, case):
    params = SpringParams(**{"integrator": "explicit", "dt": 1 / 30, "acceleration": "momentum", **case})
    skin, posed = pose(rig, bend=0.9, twist=0.6)
    frames = 2 if params.mode == "dependent" else 1
    gpu, st = _gpu(gl_ctx, resources, rig, params, skin, posed, frames)
    ref, stats = _reference(rig, params, posed, frames)
    diag = M.bbox_diagonal(rig.topology.positions)
    assert st["iterations"] == stats.iterations, (st, stats)
    assert st["reason"] == stats.reason
    np.testing.assert_allclose(gpu, ref, atol=TOL * diag, rtol=0)


def test_momentum_changes_the_path_on_gpu(gl_ctx, resources, rig):
    skin, posed = pose(rig, bend=0.9, twist=0.6)
    plain = SpringParams(integrator="explicit", dt=1 / 30, convergence="iterations", max_iterations=10)
    a, _ = _gpu(gl_ctx, resources, rig, plain, skin, posed)
    b, _ = _gpu(gl_ctx, resources, rig, plain.replace(acceleration="momentum", momentum=0.8), skin, posed)
    diag = M.bbox_diagonal(rig.topology.positions)
    assert np.abs(a - b).max() > 100 * TOL * diag  # the flag reaches the shader
