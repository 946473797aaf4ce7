"""Incremental surface-edit upload (issue 12): ``DeformerGraph.set_edits`` writes only the changed mesh's rows of
its batch's edit buffer; two meshes' edits stay right after editing one (the buffer equals a full rewrite, and
each mesh solves as the numpy reference with its own edits)."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning.edits import EditStack
from engine.skinning.gpu import records as R
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.springs import SpringParams
from tests.helpers.tube_rig import pose, tube
from tests.unit.test_edit_sets import _bulge, _solver, _stroke_region

pytestmark = pytest.mark.gl
PARAMS = SpringParams(convergence="iterations", max_iterations=60, k_e=4.0)


@pytest.fixture(scope="module")
def rig():
    return tube(rings=17, segments=16)


def _edit_buffer(graph, handle):
    _, batch = graph._where(handle)
    n_dyn = batch.total_groups * 64
    raw = np.frombuffer(batch.buffers["edit"].read(), np.float32)
    return batch, raw.reshape(-1, 2, 4)[:n_dyn]


def test_two_meshes_keep_their_edits(gl_ctx, resources, rig):
    faces, bary, region = _stroke_region(rig)
    skin, posed = pose(rig, bend=0.5)
    n = rig.topology.n_control
    stacks = {}
    for name, height in (("a", 0.05), ("b", -0.03), ("a2", 0.02)):
        _, fr, edit = _bulge(rig, region, faces, bary, posed, height=height)
        stacks[name] = EditStack([edit]).terms(n, fr.attach, fr.rot)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        ha, hb = (graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents,
                                 method="spring", spring=PARAMS) for _ in range(2))
        for h in (ha, hb):
            graph.set_pose(h, skin, posed)
        graph.set_edits(ha, stacks["a"])
        graph.set_edits(hb, stacks["b"])
        graph.set_edits(ha, stacks["a2"])  # edit one mesh again: the other's rows must stay
        batch, rows = _edit_buffer(graph, ha)
        np.testing.assert_array_equal(rows, R.edit_rows(batch.instances, len(rows)))
        ia, ib = (graph._where(h)[0] for h in (ha, hb))
        assert np.abs(rows[ib.dyn_base:ib.dyn_base + n, 0, 3]).max() > 0  # b's edit is in the buffer
        graph.run()
        diag = M.bbox_diagonal(rig.topology.positions)
        for h, name in ((ha, "a2"), (hb, "b")):
            ref, _ = _solver(rig, PARAMS).solve(posed, edits=stacks[name])
            np.testing.assert_allclose(graph.download_control(h, "deformed"), ref, atol=1e-5 * diag, rtol=0)
        # clearing one mesh's edits zeroes only its rows
        graph.set_edits(ha, None)
        _, rows = _edit_buffer(graph, ha)
        assert not rows[ia.dyn_base:ia.dyn_base + n].any()
        np.testing.assert_array_equal(rows[ib.dyn_base:ib.dyn_base + n], R.instance_edit_rows(ib))
    finally:
        graph.release()


def test_edits_survive_a_relayout(gl_ctx, resources, rig):
    """A mesh added after the edits re-lays out the batch: the edits move with their mesh's range."""
    faces, bary, region = _stroke_region(rig)
    skin, posed = pose(rig, bend=0.3)
    _, fr, edit = _bulge(rig, region, faces, bary, posed, height=0.04)
    terms = EditStack([edit]).terms(rig.topology.n_control, fr.attach, fr.rot)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        args = (rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents)
        ha = graph.add_mesh(*args, method="spring", spring=PARAMS)
        graph.set_edits(ha, terms)
        graph.add_mesh(*args, method="spring", spring=PARAMS)
        batch, rows = _edit_buffer(graph, ha)
        np.testing.assert_array_equal(rows, R.edit_rows(batch.instances, len(rows)))
        ia = graph._where(ha)[0]
        np.testing.assert_array_equal(rows[ia.dyn_base:ia.dyn_base + rig.topology.n_control],
                                      R.instance_edit_rows(ia))
        assert rows[ia.dyn_base:ia.dyn_base + rig.topology.n_control, 0, 3].max() > 0
    finally:
        graph.release()
