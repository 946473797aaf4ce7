"""Batched display stages, pooled outputs and skinned normals of the GPU deformer graph.

* several meshes of different sizes and assets in one batch: one dispatch per stage for all of them, and every
  mesh's positions / face normals / vertex normals equal the numpy references;
* output ranges: aligned for glBindBufferRange, disjoint, stable while the mesh lives (adding and removing other
  meshes neither moves nor reallocates them; a hole is reused), and the renderer binding them draws the same
  frame as per-mesh buffers given to ``add_mesh``;
* skin option ``normals="skinned"`` (default of the built-in lbs/dqs graphs) equals
  skinning.lbs_normals / dqs_normals of the bind normals, stretch included.
"""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning import skinning as S
from engine.skinning.binding import per_control
from engine.skinning.gpu.graph import DeformerGraph, GraphConfig, default_config, ssbo_offset_alignment
from tests.conftest import count_dispatches
from tests.helpers.tube_rig import pose, tube

pytestmark = pytest.mark.gl
TOL = 1e-5


@pytest.fixture(scope="module")
def rigs():
    # three assets of different sizes (more than one work group each for the big one; seams everywhere)
    return [tube(rings=7, segments=6), tube(rings=4, segments=5, length=0.5, n_joints=2),
            tube(rings=14, segments=11, length=1.4, n_joints=4)]


def _add(graph, rig, **kw):
    return graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents, **kw)


@pytest.mark.parametrize("method,fuse", [("lbs", True), ("lbs", False), ("rigid", True)])
def test_many_meshes_one_dispatch_per_stage_equal_reference(gl_ctx, resources, rigs, method, fuse, monkeypatch):
    graph = DeformerGraph(gl_ctx, resources)
    try:
        cfg = default_config(method, normals="surface" if method == "lbs" else None)
        cfg = GraphConfig.from_dict({**cfg.to_dict(), "fuse": fuse})
        order = [0, 1, 2, 0, 2]  # instances of three assets, two of them twice
        handles = [_add(graph, rigs[k], config=cfg) for k in order]
        poses = [pose(rigs[k], bend=0.3 + 0.2 * i, twist=0.1 * i) for i, k in enumerate(order)]
        for h, (skin, posed) in zip(handles, poses):
            graph.set_pose(h, skin, posed)
        calls = count_dispatches(monkeypatch)
        graph.run()
        # skin, copy, face normals, vertex normals: once each for all five meshes (skin + copy fused for LBS)
        assert len(calls) == (3 if method == "lbs" and fuse else 4)
        for h, k, (_skin, posed) in zip(handles, order, poses):
            rig = rigs[k]
            topo = rig.topology
            ref = S.skin_control_points(method, topo, rig.bind_joints, posed, parents=rig.parents,
                                        binding=rig.binding, joints=rig.joints, weights=rig.weights,
                                        inverse_bind=rig.inverse_bind)
            diag = M.bbox_diagonal(topo.positions)
            p, n = graph.download(h)
            np.testing.assert_allclose(p, M.copy_to_display(topo, ref), atol=TOL * diag, rtol=0)
            fn = graph.download_display(h, "face_normals")
            assert fn.shape == (topo.display_triangles.shape[0], 4)
            np.testing.assert_allclose(fn[:, :3], M.face_normals(p, topo.display_triangles), atol=1e-5, rtol=0)
            nref = M.vertex_normals(ref, topo.triangles, display_triangles=topo.display_triangles,
                                    n_display=topo.n_display)
            np.testing.assert_allclose(n, nref, atol=1e-5, rtol=0)
    finally:
        graph.release()


def _range_bytes(rng) -> np.ndarray:
    buf, off, size = rng
    return np.frombuffer(buf.read(size=size, offset=off), np.float32).reshape(-1, 4)


def test_output_ranges_aligned_disjoint_and_stable(gl_ctx, resources, rigs):
    align = ssbo_offset_alignment(gl_ctx)
    assert 1 <= align <= 256
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h0 = _add(graph, rigs[0], method="lbs")
        r0 = graph.output_ranges(h0)
        pool, glo = r0[0][0], r0[0][0].glo
        h1 = _add(graph, rigs[2], method="lbs")
        h2 = _add(graph, rigs[1], method="lbs")
        hs = [h0, h1, h2]
        ranges = [graph.output_ranges(h) for h in hs]
        assert ranges[0] == r0 and pool.glo == glo  # adding meshes grew the pool in place, h0 kept its range
        spans = []
        for k, (pr, nr) in zip((0, 2, 1), ranges):
            assert pr[0] is pool and nr[0] is not pool  # one pooled buffer per resource
            assert pr[1] % align == 0 and nr[1] % align == 0
            assert pr[2] == nr[2] == 16 * rigs[k].topology.n_display
            assert pr[1] + pr[2] <= pool.size
            spans.append((pr[1], pr[1] + pr[2]))
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # disjoint
        for h, k in zip(hs, (0, 2, 1)):
            graph.set_pose(h, *pose(rigs[k], bend=0.7))
        graph.run()
        for h, (pr, nr) in zip(hs, ranges):
            p, n = graph.download(h)
            pb, nb = _range_bytes(pr), _range_bytes(nr)
            np.testing.assert_array_equal(pb[:, :3], p)
            np.testing.assert_array_equal(nb[:, :3], n)
            assert np.all(pb[:, 3] == 1.0) and np.all(nb[:, 3] == 0.0)
        with pytest.raises(ValueError, match="output_ranges"):
            graph.output_buffers(h0)
        # removing a mesh leaves a hole: the others keep their ranges and results; a fitting mesh reuses it
        graph.remove_mesh(h1)
        assert graph.output_ranges(h0) == ranges[0] and graph.output_ranges(h2) == ranges[2]
        h3 = _add(graph, rigs[0], method="lbs")
        assert graph.output_ranges(h3)[0][1] == ranges[1][0][1]  # first fit: h1's old place
        graph.set_pose(h3, *pose(rigs[0], bend=-0.4))
        graph.set_pose(h2, *pose(rigs[1], bend=0.2))
        graph.run()
        for h, k, bend in ((h0, 0, 0.7), (h2, 1, 0.2), (h3, 0, -0.4)):
            rig = rigs[k]
            ref = S.skin_control_points("lbs", rig.topology, rig.bind_joints, pose(rig, bend=bend)[1],
                                        joints=rig.joints, weights=rig.weights, inverse_bind=rig.inverse_bind)
            diag = M.bbox_diagonal(rig.topology.positions)
            np.testing.assert_allclose(_range_bytes(graph.output_ranges(h)[0])[:, :3],
                                       M.copy_to_display(rig.topology, ref), atol=TOL * diag, rtol=0)
    finally:
        graph.release()


def test_given_buffers_beside_pooled_meshes(gl_ctx, resources, rigs):
    graph = DeformerGraph(gl_ctx, resources)
    rig = rigs[1]
    nd = rig.topology.n_display
    pos_buf = resources.buffer(reserve=16 * nd, label="caller positions")
    nrm_buf = resources.buffer(reserve=16 * nd, label="caller normals")
    try:
        pooled = _add(graph, rigs[0], method="dqs")
        given = _add(graph, rig, method="dqs", positions_buffer=pos_buf, normals_buffer=nrm_buf)
        assert graph.output_buffers(given) == (pos_buf, nrm_buf)
        assert graph.output_ranges(given) == ((pos_buf, 0, 16 * nd), (nrm_buf, 0, 16 * nd))
        graph.set_pose(pooled, *pose(rigs[0], bend=0.5))
        graph.set_pose(given, *pose(rig, bend=-0.8, twist=0.4))
        graph.run()
        p, n = graph.download(given)
        assert np.abs(p - rig.display_positions).max() > 0.05  # posed
        data = np.frombuffer(pos_buf.read(), np.float32).reshape(-1, 4)
        np.testing.assert_array_equal(data[:, :3], p)
        np.testing.assert_array_equal(np.frombuffer(nrm_buf.read(), np.float32).reshape(-1, 4)[:, :3], n)
    finally:
        graph.release()
        assert resources.owns(pos_buf) and resources.owns(nrm_buf)  # the caller's buffers survive the graph
        resources.release(pos_buf)
        resources.release(nrm_buf)


def _normals_reference(method, rig, skin, bind_normals):
    topo = rig.topology
    c = topo.control_of_display
    fn = S.lbs_normals if method == "lbs" else S.dqs_normals
    return fn(bind_normals, per_control(topo, rig.joints)[c], per_control(topo, rig.weights)[c],
              skin.astype(np.float32))


@pytest.mark.parametrize("method", ["lbs", "dqs"])
@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("fuse", [True, False])
def test_skinned_normals_match_reference(gl_ctx, resources, rigs, method, scaled, fuse, monkeypatch):
    rig = rigs[2]
    topo = rig.topology
    # bind normals as a glTF file would give them: smooth normals, slightly perturbed (not the surface's)
    rng = np.random.default_rng(3)
    given = M.vertex_normals(topo.positions, topo.triangles, display_triangles=topo.display_triangles,
                             n_display=topo.n_display) + rng.normal(scale=0.2, size=(topo.n_display, 3))
    given = (given / np.linalg.norm(given, axis=1, keepdims=True)).astype(np.float32)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        cfg = GraphConfig.from_dict({**default_config(method).to_dict(), "fuse": fuse})
        h_given = _add(graph, rig, config=cfg, normals=given, asset_key="given")
        h_default = _add(graph, rig, config=cfg, asset_key="computed")
        skin, posed = pose(rig, bend=0.9, twist=0.7, stretch=1.2)
        if scaled:  # a non-uniformly scaled joint: normals need the cofactor (DQS: the stretch blend)
            posed = posed.copy()
            posed[1] = posed[1] @ np.diag([1.3, 0.8, 1.1, 1.0])
            skin = posed @ rig.inverse_bind
        for h in (h_given, h_default):
            graph.set_pose(h, skin, posed)
        calls = count_dispatches(monkeypatch)
        graph.run()
        assert len(calls) == (1 if fuse else 2)  # skin + copy (or the fused skin_copy): no normal stages
        n = graph.download(h_given)[1]
        nref = _normals_reference(method, rig, skin, given)
        assert np.abs(nref - given).max() > 0.5  # the pose turns the normals
        np.testing.assert_allclose(n, nref, atol=1e-5, rtol=0)
        np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
        # without given normals: the bind surface's normals, skinned
        bind_n = M.vertex_normals(topo.positions, topo.triangles, display_triangles=topo.display_triangles,
                                  n_display=topo.n_display)
        np.testing.assert_allclose(graph.download(h_default)[1], _normals_reference(method, rig, skin, bind_n),
                                   atol=1e-5, rtol=0)
        p = graph.download(h_given)[0]
        ref = S.skin_control_points(method, topo, rig.bind_joints, posed, joints=rig.joints, weights=rig.weights,
                                    inverse_bind=rig.inverse_bind)
        np.testing.assert_allclose(p, M.copy_to_display(topo, ref), atol=TOL * M.bbox_diagonal(topo.positions),
                                   rtol=0)
    finally:
        graph.release()


def test_skinned_normals_bad_inputs_raise(gl_ctx, resources, rigs):
    rig = rigs[0]
    graph = DeformerGraph(gl_ctx, resources)
    try:
        with pytest.raises(ValueError, match=r"normals must be \(\d+,3\)"):
            _add(graph, rig, method="lbs", normals=np.zeros((3, 3), np.float32))
        cfg = default_config("lbs").to_dict()
        cfg["nodes"][0]["options"]["mode"] = "differential"
        with pytest.raises(ValueError, match="mode 'bind'"):
            _add(graph, rig, config=cfg)
    finally:
        graph.release()


def test_renderer_binds_ranges_same_frame_as_given_buffers(gl_ctx, resources, rigs):
    from engine.render.camera import Camera
    from engine.render.renderer import LookSettings, SceneRenderer

    cam = Camera(eye=np.array([0.4, 0.6, 2.4]), target=np.array([0.2, 0.5, 0.0]), fov_y=50.0, near=0.1, far=20.0)
    frames = []
    for use_ranges in (True, False):
        r = SceneRenderer(gl_ctx, resources, 96, 72, look=LookSettings(ground=False, shadows=False))
        graph = DeformerGraph(gl_ctx, resources, programs=r.programs)
        try:
            r.render(cam)
            empty = r.read_pixels()
            for k, x in ((0, -0.3), (2, 0.1), (1, 0.6)):
                rig = rigs[k]
                tri = rig.topology.display_triangles
                nd = rig.topology.n_display
                if use_ranges:
                    h = _add(graph, rig, method="lbs")
                    bufs = None
                else:
                    bufs = (resources.buffer(reserve=16 * nd, label="pos"), resources.buffer(reserve=16 * nd,
                                                                                           label="nrm"))
                    h = _add(graph, rig, method="lbs", positions_buffer=bufs[0], normals_buffer=bufs[1])
                skin, posed = pose(rig, bend=0.6)
                shift = np.eye(4)
                shift[0, 3] = x
                graph.set_pose(h, shift @ skin, shift @ posed)
                r.add_mesh(tri, nd, buffers=graph.output_ranges(h) if use_ranges else bufs,
                           base_color=(0.8, 0.3 + 0.2 * k, 0.2, 1.0))
            if use_ranges:  # ranges of one pooled buffer, at non-zero offsets
                offsets = [m.positions_offset for m in r.meshes.values()]
                assert len({id(m.positions) for m in r.meshes.values()}) == 1 and max(offsets) > 0
            graph.run()
            r.render(cam)
            frames.append(r.read_pixels())
            assert (np.abs(frames[-1].astype(int) - empty).max(axis=2) > 12).mean() > 0.02  # the meshes show
        finally:
            r.release()
            graph.release()
    np.testing.assert_array_equal(frames[0], frames[1])
