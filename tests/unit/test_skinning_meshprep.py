"""Mesh preparation: welding, CSR adjacency, defect counts, copy-to-display and reference normals."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning.meshprep import (
    copy_to_display,
    degenerate_triangles,
    face_normals,
    prepare_mesh,
    vertex_normals,
)


def tube(rings: int = 6, segs: int = 8, length: float = 1.0, radius: float = 0.25, seam: bool = False,
         caps: bool = False):
    """Open (or capped) tube along +Y with outward counter-clockwise faces; seam=True duplicates the first
    column of every ring as glTF does at a UV seam."""
    ncol = segs + 1 if seam else segs
    th = 2 * np.pi * np.arange(ncol) / segs
    y = np.linspace(0.0, length, rings)
    pos = np.stack(np.broadcast_arrays(radius * np.cos(th)[None], y[:, None], radius * np.sin(th)[None]),
                   -1).reshape(-1, 3)
    i, k = np.meshgrid(np.arange(rings - 1), np.arange(segs), indexing="ij")
    a, b = i * ncol + k, i * ncol + (k + 1) % ncol
    tris = np.concatenate([np.stack([a, a + ncol, b], -1).reshape(-1, 3),
                           np.stack([b, a + ncol, b + ncol], -1).reshape(-1, 3)])
    if caps:
        n = pos.shape[0]
        pos = np.vstack([pos, [[0, 0, 0], [0, length, 0]]])
        kk = np.arange(segs)
        top = (rings - 1) * ncol
        tris = np.concatenate([tris, np.stack([np.full(segs, n), kk, (kk + 1) % ncol], -1),
                               np.stack([np.full(segs, n + 1), top + (kk + 1) % ncol, top + kk], -1)])
    return pos.astype(np.float32), tris.astype(np.int32)


def test_quad_adjacency_by_hand():
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    topo = prepare_mesh(pos, np.array([[0, 1, 2], [0, 2, 3]]))
    np.testing.assert_array_equal(topo.edges, [[0, 1], [0, 2], [0, 3], [1, 2], [2, 3]])
    nbrs = [topo.adj_index[o : o + c].tolist() for o, c in zip(topo.adj_offset, topo.adj_count)]
    assert nbrs == [[1, 2, 3], [0, 2], [0, 1, 3], [0, 2]]
    faces = [topo.face_index[o : o + c].tolist() for o, c in zip(topo.face_offset, topo.face_count)]
    assert faces == [[0, 1], [0], [0, 1], [1]]
    assert topo.report["boundary_edges"] == 4
    assert topo.report["nonmanifold_edges"] == 0
    assert topo.report["degenerate_triangles"] == 0
    assert topo.adj_index.dtype == np.int32 and topo.edges.dtype == np.int32


def test_weld_seam_columns():
    pos, tris = tube(rings=5, segs=8, seam=True)
    topo = prepare_mesh(pos, tris)
    assert topo.n_display == 5 * 9 and topo.n_control == 5 * 8
    # the seam column (index 8 of every ring) welds onto column 0
    ring = np.arange(5) * 9
    np.testing.assert_array_equal(topo.control_of_display[ring + 8], topo.control_of_display[ring])
    # representatives are first occurrences and reproduce the positions
    np.testing.assert_array_equal(topo.control_of_display[topo.display_of_control], np.arange(topo.n_control))
    np.testing.assert_allclose(copy_to_display(topo, topo.positions), pos, atol=1e-6)
    # welded tube: closed around, open at both ends (2 rings of 8 boundary edges), 2-manifold
    assert topo.report["boundary_edges"] == 16
    assert topo.report["nonmanifold_edges"] == 0
    assert topo.report["welded_vertices"] == 5
    # every interior vertex has 6 neighbours in this triangulation
    assert topo.adj_count[8:-8].min() == 6 and topo.adj_count.sum() == 2 * topo.edges.shape[0]


def test_no_seam_keeps_order():
    pos, tris = tube(rings=4, segs=6, caps=True)
    topo = prepare_mesh(pos, tris)
    np.testing.assert_array_equal(topo.control_of_display, np.arange(pos.shape[0]))
    np.testing.assert_array_equal(topo.triangles, tris)
    assert topo.report["boundary_edges"] == 0


def test_weld_tolerance_is_relative_to_bbox():
    pos = np.array([[0, 0, 0], [10, 0, 0], [0, 10, 0], [0, 0, 10], [0, 0, 0]], np.float32)
    diag = np.sqrt(300.0)
    tris = np.array([[0, 1, 2], [4, 2, 3]])
    pos[4] = [0.5e-3 * diag, 0, 0]
    assert prepare_mesh(pos, tris, weld_tolerance=1e-3).n_control == 4
    assert prepare_mesh(pos, tris, weld_tolerance=0.25e-3).n_control == 5
    assert prepare_mesh(pos, tris).n_control == 5  # default 1e-6 keeps them apart
    with pytest.raises(ValueError, match="weld_tolerance"):
        prepare_mesh(pos, tris, weld_tolerance=0.5)
    with pytest.raises(ValueError, match=r"\[0, 4\]"):
        prepare_mesh(pos, np.array([[0, 1, 7]]))


def test_defects_are_counted_not_fatal():
    pos = np.array(
        [
            [0, 0, 0], [1, 0, 0], [0, 1, 0],  # good triangle 0
            [1, 0, 0],  # duplicate of 1 -> after welding triangle (1, 3, 2) repeats a control point
            [2, 0, 0],  # collinear with 0 and 1 -> zero area triangle
            [0, 0, 1], [0, 0, -1],  # two more faces on edge (0, 2) -> non-manifold
            [5, 5, 5],  # isolated
        ],
        np.float32,
    )
    tris = np.array([[0, 1, 2], [1, 3, 2], [0, 1, 4], [0, 2, 5], [0, 6, 2]])
    topo = prepare_mesh(pos, tris)
    r = topo.report
    assert r["control_points"] == 7
    assert r["degenerate_triangles"] == 2
    assert r["isolated_vertices"] == 1
    assert r["nonmanifold_edges"] == 1  # edge (0,2) has 3 faces
    assert topo.triangles.shape == (5, 3)  # degenerate triangles kept
    np.testing.assert_array_equal(degenerate_triangles(topo.positions, topo.triangles),
                                  [False, True, True, False, False])
    # boundary: edges with exactly one non-collapsed face: (1,2),(0,5),(2,5),(0,6),(2,6),(0,4),(1,4) -> 7
    assert r["boundary_edges"] == 7


def test_copy_to_display_shape_check():
    pos, tris = tube(rings=3, segs=5, seam=True)
    topo = prepare_mesh(pos, tris)
    vals = np.arange(topo.n_control * 2, dtype=np.float32).reshape(-1, 2)
    out = copy_to_display(topo, vals)
    assert out.shape == (topo.n_display, 2)
    np.testing.assert_array_equal(out[5], vals[0])  # seam column of ring 0 copies control 0
    with pytest.raises(ValueError, match="rows"):
        copy_to_display(topo, vals[:-1])


def test_face_normals_by_hand():
    pos = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [0, 0, 3], [4, 0, 0]], np.float32)
    n = face_normals(pos, np.array([[0, 1, 2], [0, 3, 1], [0, 1, 4]]))
    np.testing.assert_allclose(n, [[0, 0, 1], [0, 1, 0], [0, 0, 0]], atol=1e-7)


def test_vertex_normals_area_weighted_by_hand():
    # vertex 0 shared by a triangle in the xy plane (area 2) and one in the xz plane (area 0.5)
    pos = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [0, 0, -1], [1, 0, 0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 4, 3]])
    n = vertex_normals(pos, tris)
    fn = np.array([0.0, 0.0, 1.0]) * 2.0 + np.array([0.0, 1.0, 0.0]) * 0.5
    np.testing.assert_allclose(n[0], fn / np.linalg.norm(fn), atol=1e-6)
    np.testing.assert_allclose(n[2], [0, 0, 1], atol=1e-6)


def test_vertex_normals_tube_radial_and_smooth_across_uv_seam():
    pos, tris = tube(rings=5, segs=16, seam=True)
    topo = prepare_mesh(pos, tris)
    smooth = vertex_normals(topo.positions, topo.triangles)
    mid = (np.abs(topo.positions[:, 1] - 0.5) < 1e-6)
    radial = topo.positions[mid] * [1, 0, 1]
    np.testing.assert_allclose(smooth[mid], radial / np.linalg.norm(radial, axis=1, keepdims=True), atol=1e-5)
    # per display vertex with a crease: the UV seam stays smooth (faces agree within the crease angle)
    disp = vertex_normals(topo.positions, topo.triangles, crease_angle=np.radians(60),
                          display_triangles=topo.display_triangles, n_display=topo.n_display)
    np.testing.assert_allclose(disp, copy_to_display(topo, smooth), atol=1e-5)
    # without welding, the seam vertices only see one side: visibly different
    naive = vertex_normals(pos, tris)
    assert np.abs(naive - disp).max() > 0.1


def test_vertex_normals_crease_keeps_hard_edges_of_a_cube():
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float32)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    pos, tris = [], []
    for q in quads:  # split vertices per face, as a glTF cube with flat normals has
        base = len(pos)
        pos.extend(corners[list(q)])
        tris += [[base, base + 1, base + 2], [base, base + 2, base + 3]]
    pos, tris = np.array(pos, np.float32), np.array(tris)
    topo = prepare_mesh(pos, tris)
    assert topo.n_control == 8 and topo.n_display == 24 and topo.report["boundary_edges"] == 0
    expected = np.repeat(np.array(face_normals(pos, tris)[::2]), 4, axis=0)
    hard = vertex_normals(topo.positions, topo.triangles, crease_angle=np.radians(30),
                          display_triangles=topo.display_triangles, n_display=topo.n_display)
    np.testing.assert_allclose(hard, expected, atol=1e-6)
    assert np.allclose(np.abs(expected).sum(1), 1.0)  # axis-aligned face normals
    soft = vertex_normals(topo.positions, topo.triangles, display_triangles=topo.display_triangles, n_display=24)
    # without a crease every copy of a corner shares one normal, pointing out of the cube's corner
    for c in range(8):
        copies = soft[topo.control_of_display == c]
        np.testing.assert_allclose(copies, np.repeat(copies[:1], 3, axis=0), atol=1e-6)
        np.testing.assert_array_equal(np.sign(copies[0]), np.sign(topo.positions[c] - 0.5))
    assert not np.allclose(soft, hard, atol=0.1)
    with pytest.raises(ValueError, match="crease_angle"):
        vertex_normals(topo.positions, topo.triangles, crease_angle=4.0,
                       display_triangles=topo.display_triangles, n_display=24)
