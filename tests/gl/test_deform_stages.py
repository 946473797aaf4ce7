"""Every GPU stage equals its numpy reference (float32 tolerance 1e-5 of the bounding-box diagonal)."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning import skinning as S
from engine.skinning.gpu.graph import DeformerGraph, GraphConfig, default_config
from tests.helpers.tube_rig import pose, tube

pytestmark = pytest.mark.gl
TOL = 1e-5


@pytest.fixture(scope="module")
def rig():
    return tube(rings=7, segments=6)


def _add(graph, rig, **kw):
    return graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents, **kw)


def _reference(method, rig, posed, **opts):
    return S.skin_control_points(method, rig.topology, rig.bind_joints, posed, parents=rig.parents,
                                 binding=rig.binding, joints=rig.joints, weights=rig.weights,
                                 inverse_bind=rig.inverse_bind, **opts)


@pytest.mark.parametrize("method", ["lbs", "dqs", "rigid", "irs"])
def test_skin_copy_normals_match_reference(gl_ctx, resources, rig, method):
    graph = DeformerGraph(gl_ctx, resources)
    try:
        # unfused, so that the control points are written and can be read back
        cfg = GraphConfig.from_dict({**default_config(method, normals="surface").to_dict(), "fuse": False})
        h = _add(graph, rig, config=cfg)
        skin, posed = pose(rig, bend=0.8, twist=0.5, stretch=1.1)
        graph.set_pose(h, skin, posed)
        graph.run()
        p, n = graph.download(h)
        topo = rig.topology
        ref = _reference(method, rig, posed)
        diag = M.bbox_diagonal(topo.positions)
        assert np.abs(ref - topo.positions).max() > 0.05 * diag  # the pose really deforms
        np.testing.assert_allclose(graph.download_control(h, "skinned"), ref, atol=TOL * diag, rtol=0)
        np.testing.assert_allclose(p, M.copy_to_display(topo, ref), atol=TOL * diag, rtol=0)
        fn = graph.download_display(h, "face_normals")[:, :3]
        np.testing.assert_allclose(fn, M.face_normals(p, topo.display_triangles), atol=1e-5, rtol=0)
        nref = M.vertex_normals(ref, topo.triangles, display_triangles=topo.display_triangles,
                                n_display=topo.n_display)
        np.testing.assert_allclose(n, nref, atol=1e-5, rtol=0)
    finally:
        graph.release()


def test_bind_pose_is_identity_and_seams_weld(gl_ctx, resources, rig):
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = _add(graph, rig, method="lbs")
        graph.set_pose(h, np.tile(np.eye(4), (3, 1, 1)), rig.bind_joints)
        graph.run()
        p, n = graph.download(h)
        np.testing.assert_allclose(p, rig.display_positions, atol=1e-6)
        # seam copies share a control point, hence position and (smooth) normal
        topo = rig.topology
        assert topo.n_display > topo.n_control
        c = topo.control_of_display
        first = topo.display_of_control[c]
        np.testing.assert_array_equal(p, p[first])
        np.testing.assert_allclose(n, n[first], atol=1e-6)
    finally:
        graph.release()


@pytest.mark.parametrize("opts", [{"length_correction": True}, {"blend": "matrix"},
                                  {"influence": (0.8, 0.3)}])
def test_irs_options(gl_ctx, resources, rig, opts):
    cfg = default_config("irs").to_dict()
    cfg["nodes"][0]["options"].update(opts)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = _add(graph, rig, config=GraphConfig.from_dict(cfg))
        skin, posed = pose(rig, bend=1.1, twist=0.2)
        graph.set_pose(h, skin, posed)
        graph.run()
        diag = M.bbox_diagonal(rig.topology.positions)
        np.testing.assert_allclose(graph.download_control(h, "skinned"), _reference("irs", rig, posed, **opts),
                                   atol=TOL * diag, rtol=0)
    finally:
        graph.release()


def _box():
    """A unit cube with split normals: 24 display vertices, 8 control points, hard 90-degree edges."""
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float32)
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    pos, tris = [], []
    for f in faces:
        base = len(pos)
        pos += [corners[i] for i in f]
        tris += [[base, base + 1, base + 2], [base, base + 2, base + 3]]
    return np.array(pos, np.float32), np.array(tris, np.int64)


@pytest.mark.parametrize("crease", [None, 0.5])
def test_vertex_normals_crease(gl_ctx, resources, crease):
    pos, tris = _box()
    topo = M.prepare_mesh(pos, tris)
    cfg = default_config("lbs", normals="surface").to_dict()
    if crease is not None:
        cfg["nodes"][3]["options"]["crease_angle"] = crease
    graph = DeformerGraph(gl_ctx, resources)
    try:
        d = topo.n_display
        joints = np.zeros((d, 4), np.uint16)
        weights = np.zeros((d, 4), np.float32)
        weights[:, 0] = 1
        h = graph.add_mesh(topo, None, joints, weights, np.eye(4)[None], np.array([-1]),
                           config=GraphConfig.from_dict(cfg))
        rot = np.eye(4)
        rot[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]
        graph.set_pose(h, rot[None], rot[None])
        graph.run()
        p, n = graph.download(h)
        np.testing.assert_allclose(p, pos @ rot[:3, :3].T, atol=1e-6)
        ref = M.vertex_normals(p[topo.display_of_control], topo.triangles, crease_angle=crease,
                               display_triangles=topo.display_triangles, n_display=d)
        np.testing.assert_allclose(n, ref, atol=1e-5)
        # with the crease the cube keeps flat faces (unit axis normals), without it normals are diagonal
        assert (np.abs(n).max(1) > 0.999).all() == (crease is not None)
    finally:
        graph.release()


def test_given_output_buffers_and_release(gl_ctx, resources, rig):
    before = resources.live_counts().get("buffer", 0)
    graph = DeformerGraph(gl_ctx, resources)
    pos_buf = resources.buffer(reserve=16 * rig.topology.n_display, label="renderer positions")
    nrm_buf = resources.buffer(reserve=16 * rig.topology.n_display, label="renderer normals")
    h = _add(graph, rig, method="lbs", positions_buffer=pos_buf, normals_buffer=nrm_buf)
    assert graph.output_buffers(h) == (pos_buf, nrm_buf)
    skin, posed = pose(rig)
    graph.set_pose(h, skin, posed)
    graph.run()
    data = np.frombuffer(pos_buf.read(), np.float32).reshape(-1, 4)
    np.testing.assert_allclose(data[:, :3], graph.download(h)[0])
    assert np.all(data[:, 3] == 1.0)
    with pytest.raises(ValueError, match="bytes"):
        _add(graph, rig, method="lbs", positions_buffer=resources.buffer(reserve=16, label="tiny"))
    graph.release()
    # the given buffers survive the graph; everything the graph made is gone
    assert resources.owns(pos_buf) and resources.owns(nrm_buf)
    resources.release(pos_buf)
    resources.release(nrm_buf)
    assert resources.live_counts().get("buffer", 0) == before + 1  # the "tiny" one of the failed call


def test_bad_inputs_raise(gl_ctx, resources, rig):
    graph = DeformerGraph(gl_ctx, resources)
    try:
        with pytest.raises(ValueError, match="method"):
            _add(graph, rig, method="blend")
        with pytest.raises(ValueError, match="binding"):
            graph.add_mesh(rig.topology, None, rig.joints, rig.weights, rig.inverse_bind, rig.parents,
                           method="rigid")
        h = _add(graph, rig, method="lbs")
        with pytest.raises(ValueError, match=r"\(3,4,4\)"):
            graph.set_pose(h, np.eye(4)[None], np.eye(4)[None])
    finally:
        graph.release()
