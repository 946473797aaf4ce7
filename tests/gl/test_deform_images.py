"""The image inputs of the spring and surface-normal stages (gpu_layouts, "spring stage images" and "surface
normal stages"): images of many rows (4 records per row), several assets and instances, pool holes left by a
removed mesh and a re-layout, each result against its numpy reference; and the padded triangle lists that
vertex normals read four at a time.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning import skinning as S
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu import stages as gpu_stages
from engine.skinning.gpu.graph import DeformerGraph, GraphConfig, _padded_lists, default_config
from engine.skinning.springs import SpringDeformer, SpringParams
from tests.helpers.tube_rig import pose, tube

TOL = 1e-5


@pytest.fixture
def small_rows(monkeypatch):
    """4 records per image row: every head, record and state image spans many rows."""
    monkeypatch.setattr(L, "IMAGE_ROW_SHIFT", 2)
    monkeypatch.setattr(L, "IMAGE_ROW_ITEMS", 4)
    monkeypatch.setitem(L.CONSTANTS, "IMAGE_ROW_SHIFT", 2)
    monkeypatch.setattr(gpu_stages, "_DEFINES_CACHE", {})


def _add(graph, rig, **kw):
    return graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents, **kw)


def _spring_reference(rig, params, posed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, params)
    x, stats = d.solve(posed)
    return x, stats


@pytest.mark.gl
def test_spring_images_many_rows_and_relayout(gl_ctx, resources, small_rows):
    big = tube(rings=14, segments=11, length=1.4, n_joints=4)  # 3 work groups
    small = tube(rings=5, segments=5, length=0.6, n_joints=2)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        pa = SpringParams(convergence="iterations", max_iterations=30, dt=0.08)
        pb = SpringParams(convergence="displacement", max_iterations=60, k_s=2.0, k_e=0.0, dt=0.02,
                          integrator="semi_implicit")
        hs = [_add(graph, big, method="spring", spring=pa), _add(graph, small, method="spring", spring=pb),
              _add(graph, big, method="spring", spring=pa)]
        rigs = [big, small, big]
        prm = [pa, pb, pa]
        batch = next(iter(graph._batches.values()))
        for name in ("sheads", "spoints", "sslots", "spring_ring", "spring_frame"):
            assert batch.images[name].height > 1, name
        poses = [pose(big, bend=0.9), pose(small, bend=-0.7, twist=0.3), pose(big, bend=0.3)]
        for step in range(2):  # second pass: after removing the middle mesh (pools re-packed)
            for h, (skin, posed) in zip(hs, poses):
                if h is not None:
                    graph.set_pose(h, skin, posed)
            graph.run()
            for h, r, p, (_, posed) in zip(hs, rigs, prm, poses):
                if h is None:
                    continue
                ref, stats = _spring_reference(r, p, posed)
                assert graph.spring_status(h)["iterations"] == stats.iterations
                diag = M.bbox_diagonal(r.topology.positions)
                np.testing.assert_allclose(graph.download(h)[0], M.copy_to_display(r.topology, ref),
                                           atol=TOL * diag, rtol=0)
            if step == 0:
                graph.remove_mesh(hs[1])
                hs[1] = None
    finally:
        graph.release()


@pytest.mark.gl
@pytest.mark.parametrize("crease", [None, 0.6])
def test_normal_images_many_rows_and_holes(gl_ctx, resources, small_rows, crease):
    rigs = [tube(rings=14, segments=11, length=1.4, n_joints=4), tube(rings=4, segments=5, length=0.5, n_joints=2)]
    graph = DeformerGraph(gl_ctx, resources)
    try:
        cfg = default_config("rigid").to_dict()
        for n in cfg["nodes"]:
            if n["stage"] == "vertex_normals" and crease is not None:
                n["options"]["crease_angle"] = crease
        cfg = GraphConfig.from_dict(cfg)
        order = [0, 1, 0, 1]
        hs = [_add(graph, rigs[k], config=cfg) for k in order]
        graph.remove_mesh(hs[1])  # holes in the display and face pools
        hs[1] = None
        hs.append(_add(graph, rigs[1], config=cfg))  # takes the hole
        order.append(1)
        batch = next(iter(graph._batches.values()))
        for name in ("fheads", "vheads", "ntris", "nverts", "nfaces"):
            assert batch.images[name].height > 1, name
        for i, (h, k) in enumerate(zip(hs, order)):
            if h is not None:
                graph.set_pose(h, *pose(rigs[k], bend=0.4 + 0.3 * i, twist=0.2 * i))
        graph.run()
        for i, (h, k) in enumerate(zip(hs, order)):
            if h is None:
                continue
            rig = rigs[k]
            topo = rig.topology
            posed = pose(rig, bend=0.4 + 0.3 * i, twist=0.2 * i)[1]
            ref = S.skin_control_points("rigid", topo, rig.bind_joints, posed, parents=rig.parents,
                                        binding=rig.binding, joints=rig.joints, weights=rig.weights,
                                        inverse_bind=rig.inverse_bind)
            p, n = graph.download(h)
            np.testing.assert_allclose(graph.download_display(h, "face_normals")[:, :3],
                                       M.face_normals(p, topo.display_triangles), atol=1e-5, rtol=0)
            nref = M.vertex_normals(ref, topo.triangles, display_triangles=topo.display_triangles,
                                    n_display=topo.n_display, crease_angle=crease)
            np.testing.assert_allclose(n, nref, atol=1e-5, rtol=0)
    finally:
        graph.release()


def test_padded_lists_keep_order_and_start_at_texels():
    offset = np.array([0, 3, 3, 8])
    count = np.array([3, 0, 5, 1])
    index = np.arange(9) * 10
    first, lists = _padded_lists(offset, count, index)
    w = L.NORMAL_LIST_WIDTH
    flat = lists.reshape(-1)
    for o, c, f in zip(offset, count, first):
        np.testing.assert_array_equal(flat[f * w:f * w + c], index[o:o + c])
        assert np.all(flat[f * w + c:f * w + -(-c // w) * w] == -1)
    assert lists.shape == (int(sum(-(-c // w) for c in count)), w)


@pytest.mark.gl
def test_vertex_normals_of_previous_faces_survive_relayout(gl_ctx, resources):
    # vertex normals gather faces from the face resource's image copy, which a re-layout rebuilds: reading
    # faces@previous, the first frame after adding or removing a mesh must see the faces of the frame before
    # (the face SSBO keeps them), not a blank image
    rig, other = tube(rings=9, segments=7, length=1.0, n_joints=3), tube(rings=5, segments=5, n_joints=2)
    cfg = GraphConfig.from_dict({"name": "prev_faces", "outputs": {"positions": "positions", "normals": "normals"},
                                 "nodes": [
        {"name": "skin", "stage": "skin", "inputs": {"source": "bind"}, "outputs": {"target": "skinned"},
         "options": {"method": "lbs"}},
        {"name": "copy", "stage": "copy", "inputs": {"source": "skinned"}, "outputs": {"target": "positions"}},
        {"name": "fn", "stage": "face_normals", "inputs": {"positions": "positions"}, "outputs": {"target": "faces"}},
        {"name": "vn", "stage": "vertex_normals", "inputs": {"positions": "positions", "faces": "faces@previous"},
         "outputs": {"target": "normals"}}]})
    topo = rig.topology

    def normals_of(p):  # vertex normals (reference) of the surface with display positions p
        return M.vertex_normals(p[topo.display_of_control], topo.triangles,
                                display_triangles=topo.display_triangles, n_display=topo.n_display)

    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = _add(graph, rig, config=cfg)
        poses = [pose(rig, bend=0.2), pose(rig, bend=0.9, twist=0.4), pose(rig, bend=-0.5)]
        graph.set_pose(h, *poses[0])
        graph.run()
        before = graph.download(h)[0]
        added = None
        for k, change in enumerate(("add", "remove")):  # each re-lays the pools out
            if change == "add":
                added = _add(graph, other, config=cfg)
                graph.set_pose(added, *pose(other, bend=0.3))
            else:
                graph.remove_mesh(added)
            graph.set_pose(h, *poses[k + 1])
            graph.run()
            p, n = graph.download(h)
            ref = normals_of(before)
            assert np.abs(ref - normals_of(p)).max() > 0.1  # the pose changed: last frame's faces are told apart
            np.testing.assert_allclose(n, ref, atol=1e-5, rtol=0)
            before = p
    finally:
        graph.release()
