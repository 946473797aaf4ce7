"""engine.math.mesh: normals with an explicit fallback, the tolerance weld and the CSR builder, by hand."""
from __future__ import annotations

import numpy as np
import pytest

from engine.math.mesh import csr, face_normals, vertex_normals, weld


def _fan_with_loose_vertex() -> tuple[np.ndarray, np.ndarray]:
    """Two triangles in the z = 0 plane (normal +Z), a collapsed triangle and a vertex in no triangle."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [-1, 0, 0], [5, 5, 5], [6, 6, 6]], np.float64)
    tris = np.array([[0, 1, 2], [0, 2, 3], [4, 4, 4]])
    return pos, tris


def test_vertex_normals_fallback_is_explicit():
    pos, tris = _fan_with_loose_vertex()
    zero = vertex_normals(pos, tris)
    up = vertex_normals(pos, tris, fallback=(0.0, 1.0, 0.0))
    assert zero.dtype == np.float32 and zero.shape == (6, 3)
    np.testing.assert_allclose(zero[:4], np.tile([0, 0, 1], (4, 1)), atol=1e-7)
    np.testing.assert_array_equal(zero[4:], 0.0)  # default: no area, no normal
    np.testing.assert_array_equal(up[:4], zero[:4])  # the fallback only touches vertices without area
    np.testing.assert_array_equal(up[4:], [[0, 1, 0], [0, 1, 0]])


def test_face_normals_fallback_and_area_weighting():
    pos, tris = _fan_with_loose_vertex()
    fn = face_normals(pos, tris, fallback=[1.0, 0.0, 0.0])
    np.testing.assert_allclose(fn, [[0, 0, 1], [0, 0, 1], [1, 0, 0]], atol=1e-7)
    # a big and a small face meeting at a vertex: the big one dominates (weights are areas)
    p = np.array([[0, 0, 0], [10, 0, 0], [0, 10, 0], [0, 0, 1], [0, -1, 0]], np.float64)
    n = vertex_normals(p, np.array([[0, 1, 2], [0, 3, 4]]))
    big, small = np.array([0, 0, 1.0]), np.array([1.0, 0, 0])
    expected = 100 * big + 1 * small
    np.testing.assert_allclose(n[0], expected / np.linalg.norm(expected), atol=1e-6)


def test_vertex_normals_display_path_uses_the_fallback_too():
    pos, tris = _fan_with_loose_vertex()
    n = vertex_normals(pos, tris, display_triangles=tris, n_display=6, fallback=(0.0, 0.0, -1.0))
    np.testing.assert_allclose(n[:4], np.tile([0, 0, 1], (4, 1)), atol=1e-7)
    np.testing.assert_array_equal(n[4:], [[0, 0, -1], [0, 0, -1]])


@pytest.mark.parametrize("bad, error", [((0.0, 1.0), ValueError), ((np.nan, 0.0, 1.0), ValueError), ("up", TypeError)])
def test_bad_fallback_is_refused(bad, error):
    pos, tris = _fan_with_loose_vertex()
    with pytest.raises(error, match="fallback"):
        vertex_normals(pos, tris, fallback=bad)


def test_weld_uses_a_distance_not_a_rounding_grid():
    # 0.4999994 and 0.5000003 round to different 6-decimal keys (0.499999, 0.5) but lie 9e-7 apart
    pos = np.array([[0.4999994, 0, 0], [0.5000003, 0, 0], [0.7, 0, 0], [0.4999994, 0, 0]])
    control, first = weld(pos, 1e-6)
    np.testing.assert_array_equal(control, [0, 0, 1, 0])
    np.testing.assert_array_equal(first, [0, 2])
    # transitive: a chain of points each 0.6 apart merges into one with a tolerance of 0.7
    chain = np.stack([np.arange(5) * 0.6, np.zeros(5), np.zeros(5)], 1)
    assert weld(chain, 0.7)[1].tolist() == [0]
    # tolerance 0: only bit-identical positions merge; first-occurrence numbering
    control, first = weld(np.array([[1.0, 0, 0], [0, 0, 0], [1.0, 0, 0]]), 0.0)
    assert control.tolist() == [0, 1, 0] and first.tolist() == [0, 1]
    with pytest.raises(ValueError, match="tolerance"):
        weld(pos, -1.0)


def test_csr_rows_sorted_by_column():
    offset, count, index = csr(np.array([2, 0, 2, 0, 3]), np.array([5, 9, 1, 4, 0]), 4)
    assert offset.dtype == count.dtype == index.dtype == np.int32
    assert count.tolist() == [2, 0, 2, 1] and offset.tolist() == [0, 2, 2, 4]
    rows = [index[o:o + c].tolist() for o, c in zip(offset, count)]
    assert rows == [[4, 9], [], [1, 5], [0]]
    with pytest.raises(ValueError, match="row indices"):
        csr(np.array([4]), np.array([0]), 4)
