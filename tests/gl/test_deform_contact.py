"""GPU contact stage (engine.skinning.gpu.stages.contact) vs the numpy reference (engine.skinning.contact after
SpringDeformer's iterations), on small generated tubes bent far enough for their inner sides to meet.

Tolerance: the spring stage's (1e-5 x the bounding-box diagonal, tests/gl/test_deform_spring.py); every weight of
the contact pass is continuous in the positions, so float32 against float64 stays within it.
"""
from __future__ import annotations

import numpy as np
import pytest

from engine.assets.gen.family import TubePose, tube_member
from engine.skinning.family import MemberRig
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.gpu.plan import GraphConfig, default_config, plan
from engine.skinning.metrics import intersecting_pairs
from engine.skinning.springs import SpringDeformer, SpringParams

pytestmark = pytest.mark.gl
TOL = 1e-5


@pytest.fixture(scope="module")
def rig():
    return MemberRig(tube_member("small", radius=0.5, length=4.0, rings=21, segments=12))


def _add(graph, rig, params):
    m = rig.member
    return graph.add_mesh(rig.topology, rig.binding, m.joints, m.weights, np.linalg.inv(m.bind_joints), m.parents,
                          method="spring", spring=params)


def _gpu(gl_ctx, resources, rig, params, poses):
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = _add(graph, rig, params)
        out = []
        for bend in poses:
            posed = rig.member.posed_joints(TubePose("p", bend=bend))
            graph.set_pose(h, (posed @ np.linalg.inv(rig.member.bind_joints)).astype(np.float32), posed)
            graph.run()
            out.append(graph.download_control(h, "deformed").astype(np.float64))
        return out
    finally:
        graph.release()


def _reference(rig, params, bend):
    m = rig.member
    d = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, params)
    return d.solve(m.posed_joints(TubePose("p", bend=bend)))[0].astype(np.float64)


def test_contact_config_puts_one_node_after_the_spring():
    cfg = default_config("spring", contact=True)
    order = [s.node.stage for s in plan(cfg).steps]
    assert order.index("spring") < order.index("contact") < order.index("copy")
    assert "contact" not in [s.node.stage for s in plan(default_config("spring")).steps]
    bad = {"name": "c", "nodes": [
        {"name": "skin", "stage": "skin", "inputs": {"source": "bind"}, "outputs": {"target": "s"},
         "options": {"method": "rigid"}},
        {"name": "contact", "stage": "contact", "inputs": {"source": "s"}, "outputs": {"target": "d"}},
        {"name": "copy", "stage": "copy", "inputs": {"source": "d"}, "outputs": {"target": "positions"}},
        {"name": "fn", "stage": "face_normals", "inputs": {"positions": "positions"}, "outputs": {"target": "f"}},
        {"name": "vn", "stage": "vertex_normals", "inputs": {"positions": "positions", "faces": "f"},
         "outputs": {"target": "normals"}}]}
    with pytest.raises(ValueError, match="contact node needs a spring node"):
        GraphConfig.from_dict(bad)


def test_contact_stage_matches_reference_and_removes_the_crossing(gl_ctx, resources, rig):
    params = SpringParams(contact=True)
    bends = (150.0, 90.0, 0.0)
    gpu = _gpu(gl_ctx, resources, rig, params, bends)
    diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
    tri = rig.topology.triangles
    plain = _reference(rig, SpringParams(), 150.0)
    assert intersecting_pairs(plain, tri).shape[0] > 0  # the case needs contact: the springs alone cross
    for bend, x in zip(bends, gpu):
        ref = _reference(rig, params, bend)
        np.testing.assert_allclose(x, ref, atol=TOL * diag, rtol=0, err_msg=f"bend {bend}")
    assert np.abs(gpu[0] - plain).max() > 1e-3 * diag  # the contact term moved points at 150 deg
    assert intersecting_pairs(gpu[0], tri).shape[0] < intersecting_pairs(plain, tri).shape[0]
    np.testing.assert_allclose(gpu[2], rig.bind_positions, atol=TOL * diag, rtol=0)  # bind stays a fixed point
    # the volume restore ran: the passes alone keep 0.86 of this coarse tube's volume, the restore gives it back
    assert rig.measure(gpu[0], TubePose("p", bend=150.0))["volume_ratio"] > 0.95


def test_contact_off_at_runtime_copies_the_springs_through(gl_ctx, resources, rig):
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = _add(graph, rig, SpringParams(contact=True))
        graph.set_spring(h, SpringParams(contact=False))
        posed = rig.member.posed_joints(TubePose("p", bend=150.0))
        graph.set_pose(h, (posed @ np.linalg.inv(rig.member.bind_joints)).astype(np.float32), posed)
        graph.run()
        x = graph.download_control(h, "deformed").astype(np.float64)
        np.testing.assert_array_equal(x, graph.download_control(h, "sprung"))
    finally:
        graph.release()
    diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
    np.testing.assert_allclose(x, _reference(rig, SpringParams(), 150.0), atol=TOL * diag, rtol=0)


def test_batch_of_instances_with_their_own_contact_parameters(gl_ctx, resources, rig):
    """Two meshes in one batch (one dispatch per pass for both): per-instance passes, thickness and switch."""
    own = [SpringParams(contact=True, contact_passes=2, contact_thickness=1.0), SpringParams(contact=False),
           SpringParams(contact=True)]
    graph = DeformerGraph(gl_ctx, resources)
    posed = rig.member.posed_joints(TubePose("p", bend=150.0))
    try:
        hs = [_add(graph, rig, SpringParams(contact=True)) for _ in own]
        for h, p in zip(hs, own):
            graph.set_spring(h, p)
            graph.set_pose(h, (posed @ np.linalg.inv(rig.member.bind_joints)).astype(np.float32), posed)
        graph.run()
        got = [graph.download_control(h, "deformed").astype(np.float64) for h in hs]
    finally:
        graph.release()
    diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
    refs = [_reference(rig, p, 150.0) for p in own]
    for p, x, ref in zip(own, got, refs):
        np.testing.assert_allclose(x, ref, atol=TOL * diag, rtol=0, err_msg=repr(p))
    assert np.abs(refs[0] - refs[2]).max() > 1e-3 * diag  # the parameters made a difference


def test_contact_switched_on_for_a_mesh_added_without_it_is_refused(gl_ctx, resources, rig):
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = _add(graph, rig, SpringParams())
        with pytest.raises(ValueError, match="no contact node"):
            graph.set_spring(h, SpringParams(contact=True))
        graph.set_spring(h, SpringParams(contact=False, k_s=0.4))  # other changes still apply
    finally:
        graph.release()


@pytest.mark.parametrize("mode", ["warm", "dependent"])
def test_contact_with_warm_start_and_the_frame_dependent_loop(gl_ctx, resources, rig, mode):
    """Across frames the reference carries what the GPU graph does: a warm start the spring stage's own output
    (before contact), the frame-dependent loop the graph's feedback (after contact)."""
    params = (SpringParams(contact=True, warm_start=True, warm_limit=0.2) if mode == "warm"
              else SpringParams(contact=True, mode="dependent"))
    bends = (140.0, 145.0, 150.0)
    gpu = _gpu(gl_ctx, resources, rig, params, bends)
    m = rig.member
    d = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, params)
    diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
    for bend, x in zip(bends, gpu):
        ref, stats = d.solve(m.posed_joints(TubePose("p", bend=bend)))
        np.testing.assert_allclose(x, ref, atol=TOL * diag, rtol=0, err_msg=f"bend {bend}")
    assert stats.warm == (mode == "warm")
