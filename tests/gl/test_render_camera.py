"""Camera matrices against hand computation; orbit controls; the CLI camera string; fit()."""
from __future__ import annotations

import math

import numpy as np
import pytest

from engine.render.camera import Camera, OrbitCamera, look_at, perspective


def _project(m, p):
    h = m.astype(np.float64) @ np.append(np.asarray(p, np.float64), 1.0)
    return h[:3] / h[3]


def test_look_at_by_hand():
    v = look_at((0, 0, 5), (0, 0, 0))
    expect = np.eye(4)
    expect[2, 3] = -5.0  # translate the world by -eye; axes unchanged
    np.testing.assert_allclose(v, expect, atol=1e-6)
    assert v.dtype == np.float32
    # Eye on +X looking at the origin: view -Z = world -X, so view +Z (backwards) = world +X,
    # right = forward x up = (-1,0,0) x (0,1,0) = (0,0,-1).
    v = look_at((3, 0, 0), (0, 0, 0))
    expect = np.array([[0, 0, -1, 0], [0, 1, 0, 0], [1, 0, 0, -3], [0, 0, 0, 1]], np.float64)
    np.testing.assert_allclose(v, expect, atol=1e-6)
    np.testing.assert_allclose(_project(v, (0, 0, 0)), (0, 0, -3), atol=1e-6)  # target straight ahead
    with pytest.raises(ValueError, match="coincide"):
        look_at((1, 1, 1), (1, 1, 1))


def test_look_at_straight_down_stays_finite():
    v = look_at((0, 5, 0), (0, 0, 0))
    assert np.all(np.isfinite(v))
    np.testing.assert_allclose(_project(v, (0, 0, 0)), (0, 0, -5), atol=1e-6)


def test_perspective_by_hand():
    p = perspective(90.0, 2.0, 1.0, 11.0)
    # f = 1/tan(45 deg) = 1; m00 = f/aspect; m22 = (f+n)/(n-f) = -1.2; m23 = 2fn/(n-f) = -2.2
    expect = np.array([[0.5, 0, 0, 0], [0, 1, 0, 0], [0, 0, -1.2, -2.2], [0, 0, -1, 0]])
    np.testing.assert_allclose(p, expect, atol=1e-6)
    assert _project(p, (0, 0, -1))[2] == pytest.approx(-1.0)
    assert _project(p, (0, 0, -11))[2] == pytest.approx(1.0)
    np.testing.assert_allclose(_project(p, (2, 1, -1))[:2], (1, 1), atol=1e-6)  # frustum corner
    for bad in [dict(fov_y_deg=0), dict(aspect=0), dict(near=0), dict(near=5, far=5)]:
        args = dict(fov_y_deg=60.0, aspect=1.0, near=0.1, far=10.0) | bad
        with pytest.raises(ValueError):
            perspective(**args)


def test_camera_from_string_and_errors():
    cam = Camera.from_string("1,2,3:0,1,0")
    np.testing.assert_allclose(cam.eye, (1, 2, 3))
    np.testing.assert_allclose(cam.target, (0, 1, 0))
    vp = cam.view_projection(aspect=1.5)
    ndc = _project(vp, (0, 1, 0))
    np.testing.assert_allclose(ndc[:2], (0, 0), atol=1e-6)  # the target is at the image centre
    for bad in ["1,2,3", "1,2:0,0,0", "a,b,c:0,0,0", "1,2,3:4,5,6:7"]:
        with pytest.raises(ValueError, match="EX,EY,EZ:TX,TY,TZ"):
            Camera.from_string(bad)


@pytest.mark.parametrize("cls", [Camera, OrbitCamera])
def test_fit_puts_the_box_inside_the_frustum(cls):
    cam = cls(aspect=1.6) if cls is Camera else cls(aspect=1.6, yaw=30, pitch=20)
    lo, hi = np.array([-1.0, 0.0, -0.5]), np.array([2.0, 3.0, 0.5])
    cam.fit(lo, hi)
    vp = cam.view_projection()
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    ndc = np.array([_project(vp, c) for c in corners])
    assert np.all(np.abs(ndc) < 1.0)
    assert np.max(np.abs(ndc[:, :2])) > 0.4  # and it is not tiny
    with pytest.raises(ValueError, match="below"):
        cam.fit(hi, lo)


def test_orbit_eye_positions_and_controls():
    cam = OrbitCamera(target=np.array([1.0, 2.0, 3.0]), yaw=0.0, pitch=0.0, distance=2.0)
    np.testing.assert_allclose(cam.eye, (1, 2, 5), atol=1e-9)
    cam.yaw = 90.0
    np.testing.assert_allclose(cam.eye, (3, 2, 3), atol=1e-9)
    cam.yaw, cam.pitch = 0.0, 90.0
    cam.__post_init__()  # clamps pitch to 89
    assert cam.pitch == 89.0
    cam.pitch = 30.0
    e = cam.eye - cam.target
    assert e[1] == pytest.approx(2.0 * math.sin(math.radians(30)))
    cam.drag(10, 0)
    assert cam.yaw == pytest.approx((-10 * cam.orbit_speed) % 360)
    cam.drag(0, 1000)
    assert cam.pitch == 89.0
    cam.zoom(1)
    assert cam.distance == pytest.approx(2.0 * cam.zoom_factor)
    cam.pitch = 10.0
    eye_before, tgt_before = cam.eye.copy(), cam.target.copy()
    fwd = (tgt_before - eye_before) / np.linalg.norm(tgt_before - eye_before)
    cam.pan(50, -20, viewport_height=500)
    moved = cam.target - tgt_before
    assert np.linalg.norm(moved) > 0
    assert abs(np.dot(moved, fwd)) < 1e-9  # panning moves in the view plane
    np.testing.assert_allclose(cam.eye - cam.target, eye_before - tgt_before, atol=1e-9)
    # dragging right by the full image width moves the target left by the visible width at the target
    cam2 = OrbitCamera(target=np.zeros(3), yaw=0, pitch=0, distance=1.0, fov_y=90.0)
    cam2.pan(100, 0, viewport_height=100)
    np.testing.assert_allclose(cam2.target, (-2.0, 0, 0), atol=1e-9)
    with pytest.raises(ValueError, match="viewport_height"):
        cam.pan(1, 1, viewport_height=0)


def test_orbit_matches_lookat_camera():
    orbit = OrbitCamera(target=np.array([0.0, 1.0, 0.0]), yaw=40, pitch=25, distance=3.0)
    cam = orbit.to_camera()
    np.testing.assert_allclose(orbit.view, cam.view, atol=1e-6)
    np.testing.assert_allclose(orbit.projection_for(2.0), cam.projection_for(2.0), atol=1e-6)
