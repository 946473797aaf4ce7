"""The camera's view rectangle (the docked editor's central view): the image fills exactly that part of the
frame, so window pixels, unprojection and pixel-to-metre lengths agree with a frame of the rectangle's size."""
from __future__ import annotations

import numpy as np
import pytest

from engine.authoring.view import pixels_to_metres, unproject_point, window_points
from engine.render.camera import Camera, OrbitCamera, check_view_rect


def test_the_image_fills_the_rectangle():
    cam = OrbitCamera(target=np.array([0.0, 1.0, 0.0]), yaw=20.0, pitch=10.0, distance=3.0)
    pts = np.random.default_rng(1).normal([0.0, 1.0, 0.0], 0.4, (20, 3))
    full_w, full_h = 1000, 600
    x, y, w, h = 250, 60, 500, 400  # the central view in window pixels
    alone = window_points(cam, w, h, pts)  # the image alone, in a frame of the rectangle's size
    cam.view_rect = check_view_rect((x / full_w, y / full_h, w / full_w, h / full_h))
    inside = window_points(cam, full_w, full_h, pts)
    np.testing.assert_allclose(inside, alone + [x, y], atol=1e-6)
    # a window point unprojects to the same world point either way
    plane = np.array([0.0, 0.0, 1.0, 0.0])  # pyrr plane: z = 0
    hit = unproject_point(inside[0, 0], inside[0, 1], cam, full_w, full_h, plane)
    cam2 = OrbitCamera(target=cam.target, yaw=20.0, pitch=10.0, distance=3.0)
    want = unproject_point(alone[0, 0], alone[0, 1], cam2, w, h, plane)
    np.testing.assert_allclose(hit, want, atol=1e-6)
    # a brush of 40 pixels is as long in metres as in the rectangle's own frame
    assert pixels_to_metres(40, cam, full_h, cam.target) == pytest.approx(pixels_to_metres(40, cam2, h, cam.target))


def test_a_look_at_camera_carries_it_too():
    cam = Camera(view_rect=(0.0, 0.5, 0.5, 0.5))
    assert cam.view_rect == (0.0, 0.5, 0.5, 0.5)
    p = cam.projection_for(2.0)
    assert np.isfinite(p).all()
    assert OrbitCamera(view_rect=(0.1, 0.1, 0.5, 0.5)).to_camera().view_rect == (0.1, 0.1, 0.5, 0.5)


@pytest.mark.parametrize("bad", [(0.5, 0.0, 0.6, 1.0), (0.0, 0.0, 0.0, 1.0), (0, 0, 1), ("a", 0, 1, 1),
                                 (float("nan"), 0, 1, 1), (-0.1, 0, 0.5, 0.5)])
def test_bad_rectangles_are_refused(bad):
    with pytest.raises(ValueError, match="view_rect"):
        check_view_rect(bad)
    with pytest.raises(ValueError, match="view_rect"):
        OrbitCamera(view_rect=bad)
