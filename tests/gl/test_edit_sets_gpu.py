"""The GPU spring stage honours surface-edit sets as the numpy reference does (issue 12 item 3): a bulge on a
bent tube, the static ring held exactly, the same vertices as engine.skinning.springs within 1e-5 of the
bounding-box diagonal, for the explicit and semi-implicit integrators and the displacement scheme."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning.edits import EditStack
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.springs import SpringParams
from tests.helpers.tube_rig import pose, tube
from tests.unit.test_edit_sets import _bulge, _solver, _stroke_region

pytestmark = pytest.mark.gl
TOL = 1e-5


@pytest.fixture(scope="module")
def rig():
    return tube(rings=17, segments=16)


@pytest.mark.parametrize("params", [
    SpringParams(convergence="iterations", max_iterations=80, k_e=4.0),
    SpringParams(convergence="iterations", max_iterations=60, k_e=4.0, integrator="semi_implicit", damping=0.2),
    SpringParams(convergence="displacement", max_iterations=300, k_e=4.0, dt=0.08),
], ids=["explicit", "semi_implicit", "displacement"])
def test_gpu_sets_equal_reference(gl_ctx, resources, rig, params):
    faces, bary, region = _stroke_region(rig)
    skin, posed = pose(rig, bend=0.5)
    _, fr, edit = _bulge(rig, region, faces, bary, posed, height=0.05)
    ref_solver = _solver(rig, params)
    terms = EditStack([edit]).terms(rig.topology.n_control, fr.attach, fr.rot)
    assert terms.held is not None and terms.held.sum() == region.static.size
    ref, _ = ref_solver.solve(posed, edits=terms)
    x0 = ref_solver.rigid(fr)
    diag = M.bbox_diagonal(rig.topology.positions)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents,
                           method="spring", spring=params)
        graph.set_pose(h, skin, posed)
        graph.set_edits(h, terms)
        graph.run()
        gpu = graph.download_control(h, "deformed")
        np.testing.assert_allclose(gpu, ref, atol=TOL * diag, rtol=0)
        np.testing.assert_allclose(gpu[region.static], x0[region.static], atol=1e-6 * diag, rtol=0)
        assert np.abs(gpu[region.kinematic] - x0[region.kinematic]).max() > 0.03  # the bulge is there
        # clearing the edits releases the boundary: the plain solve again
        graph.set_edits(h, None)
        graph.run()
        plain, _ = _solver(rig, params).solve(posed)
        np.testing.assert_allclose(graph.download_control(h, "deformed"), plain, atol=TOL * diag, rtol=0)
    finally:
        graph.release()
