"""Window points to world rays (engine/input/rays.py, pyrr at the boundary): the ray through a pixel passes
through what the G-buffer shows there; plane and box hits; the matrix convention converts both ways."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.gpu.context import GLContext
from engine.input.rays import facing_plane, from_pyrr_matrix, ray_box_hit, ray_plane_hit, to_pyrr_matrix
from tests.conftest import ROOT

pytestmark = pytest.mark.gl


def test_pixel_ray_passes_through_the_surface_it_shows(gl_ctx):
    with Session(gl=GLContext(gl_ctx, None, True), width=80, height=60, strict=True) as s:
        s.spawn(ROOT / "assets" / "box.glb", clip=0)
        s.fit_camera()
        s.render()
        g = s.gbuffer()
        ys, xs = np.nonzero(g["triangle"] >= 0)
        for i in (0, len(ys) // 2, len(ys) - 1):
            y, x = int(ys[i]), int(xs[i])
            r = s.ray(x + 0.5, y + 0.5)
            p = g["position"][y, x].astype(np.float64)
            off = (p - r[0]) - np.dot(p - r[0], r[1]) * r[1]  # distance of the surface point from the ray
            assert np.linalg.norm(off) < 2e-3 * np.linalg.norm(p - r[0])
            assert np.dot(p - r[0], r[1]) > 0


def test_plane_and_box_hits():
    r = np.array([[0.0, 1.0, 5.0], [0.0, 0.0, -1.0]])
    pl = facing_plane(np.array([0.0, 1.0, 0.0]), np.array([0.0, 1.0, 5.0]))
    np.testing.assert_allclose(ray_plane_hit(r, pl), [0.0, 1.0, 0.0], atol=1e-12)
    assert ray_plane_hit(np.array([[0.0, 1.0, 5.0], [0.0, 0.0, 1.0]]), pl) is None  # behind the origin
    np.testing.assert_allclose(ray_box_hit(r, [-1, 0, -1], [1, 2, 1]), [0.0, 1.0, 1.0], atol=1e-12)
    assert ray_box_hit(r, [2, 0, -1], [3, 2, 1]) is None
    m = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(from_pyrr_matrix(to_pyrr_matrix(m)), m)
