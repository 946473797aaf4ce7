"""Strokes (engine/input/strokes.py): RDP keeps what a tolerance says, the composite Bezier interpolates the kept
points with C1 and C2 joints, t is arc length, and frames are orthonormal, smooth and defined on a circle, a
helix, a straight line and a cusp; bad strokes are refused with a message."""
from __future__ import annotations

import numpy as np
import pytest

from engine.input.strokes import Stroke, StrokeError, rdp, window_epsilon


def test_rdp_keeps_corners_and_drops_collinear_points():
    x = np.linspace(0, 10, 101)
    pts = np.c_[x, np.where(x < 5, 0.0, x - 5)]  # a corner at x = 5
    keep = rdp(pts, 0.01)
    np.testing.assert_array_equal(keep, [0, 50, 100])
    noisy = pts + np.random.default_rng(1).normal(0, 0.001, pts.shape)
    assert len(rdp(noisy, 0.05)) == 3
    assert len(rdp(noisy, 0.0)) > 50
    assert window_epsilon(540) == pytest.approx(4.0) and window_epsilon(1080) == pytest.approx(8.0)


def test_bezier_interpolates_kept_points_with_c2_joints():
    a = np.linspace(0, 1.5 * np.pi, 40)
    s = Stroke.fit(np.c_[np.cos(a), np.sin(a), 0.2 * a], epsilon=0.02)
    c = s.control_points
    assert len(c) >= 3
    np.testing.assert_allclose(s.knots, s.samples[s.kept])
    u = s._u
    h = np.diff(u)
    for i in range(len(c) - 1):  # derivatives w.r.t. the chord-length parameter match across joints
        d_end = 3 * (c[i, 3] - c[i, 2]) / h[i]
        d_start = 3 * (c[i + 1, 1] - c[i + 1, 0]) / h[i + 1]
        np.testing.assert_allclose(d_end, d_start, atol=1e-9)
        dd_end = 6 * (c[i, 3] - 2 * c[i, 2] + c[i, 1]) / h[i] ** 2
        dd_start = 6 * (c[i + 1, 2] - 2 * c[i + 1, 1] + c[i + 1, 0]) / h[i + 1] ** 2
        np.testing.assert_allclose(dd_end, dd_start, atol=1e-8)


def test_t_is_arc_length():
    a = np.linspace(0, np.pi, 200)
    s = Stroke.fit(np.c_[np.cos(a), np.sin(a), np.zeros_like(a)], epsilon=1e-4)
    assert s.length == pytest.approx(np.pi, rel=1e-3)
    t = np.linspace(0, 1, 51)
    p = s.point(t)
    steps = np.linalg.norm(np.diff(p, axis=0), axis=1)
    np.testing.assert_allclose(steps, s.length / 50, rtol=2e-3)
    np.testing.assert_allclose(s.point(0.0), [1, 0, 0], atol=1e-9)
    np.testing.assert_allclose(s.point(1.0), [-1, 0, 0], atol=1e-9)
    tc, dist = s.closest(np.array([0.0, 2.0, 0.0]))
    assert tc == pytest.approx(0.5, abs=2e-3) and dist == pytest.approx(1.0, abs=1e-4)
    assert s.time(0.5) == pytest.approx(99.5, abs=1.0)  # default timestamps: the sample index


def _check_frames(f):
    assert np.isfinite(f).all()
    np.testing.assert_allclose(f.transpose(0, 2, 1) @ f, np.broadcast_to(np.eye(3), f.shape), atol=1e-9)
    np.testing.assert_allclose(np.linalg.det(f), 1.0, atol=1e-9)


def test_frames_on_circle_helix_line_and_cusp():
    a = np.linspace(0, 2 * np.pi * 0.9, 300)
    circle = Stroke.fit(np.c_[np.cos(a), np.sin(a), np.zeros_like(a)], epsilon=1e-4)
    f = circle.frames(np.linspace(0, 1, 40), reference=np.array([-1.0, 0.0, 0.0]))
    _check_frames(f)
    p = circle.point(np.linspace(0, 1, 40))
    np.testing.assert_allclose(f[:, :, 1], -p / np.linalg.norm(p, axis=1, keepdims=True), atol=1e-2)  # N -> centre
    helix = Stroke.fit(np.c_[np.cos(a), np.sin(a), 0.3 * a], epsilon=1e-4)
    fh = helix.frames(np.linspace(0, 1, 200))
    _check_frames(fh)
    assert np.abs(np.diff(fh, axis=0)).max() < 0.1  # smooth: no flips
    line = Stroke.fit([[0, 0, 0], [0, 1, 0], [0, 2, 0]])
    fl = line.frames(np.linspace(0, 1, 5))
    _check_frames(fl)
    np.testing.assert_allclose(fl, np.broadcast_to(fl[0], fl.shape), atol=1e-12)  # constant on a straight line
    np.testing.assert_allclose(fl[0][:, 0], [0, 1, 0])
    cusp = Stroke.fit([[0, 0, 0], [1, 0, 0], [2, 0, 0], [1, 0.0001, 0], [0, 0, 0]], epsilon=0.0)
    _check_frames(cusp.frames(np.linspace(0, 1, 50)))
    assert np.isfinite(cusp.tangent(np.linspace(0, 1, 50))).all()


@pytest.mark.parametrize("points, needle", [
    ([], "shape"),
    ([[1.0, 2.0]], "at least two points"),
    ([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]], "zero length"),
    ([[1.0, 2.0, 3.0, 4.0], [0, 0, 0, 0]], r"2 \(window\) or 3 \(world\)"),
    ([[0.0, 0.0], [float("nan"), 1.0]], "point 1 is not finite"),
])
def test_bad_strokes_are_refused_with_a_message(points, needle):
    with pytest.raises(StrokeError, match=needle):
        Stroke.fit(points)
