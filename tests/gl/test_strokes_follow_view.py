"""Strokes live in the world (issue 27 item 2): after a pose, the editable strokes' knots are kept as 3D
points on the posing plane; when the camera orbits the window strokes are projected again, so they stay on
the limb; a knot dragged after the orbit goes back onto the plane the pose was drawn on, so the pose changes
only as far as the knot moved."""
from __future__ import annotations

import numpy as np

from engine import Session
from engine.authoring.view import window_points
from engine.input.events import Buttons, PointerDown, PointerMove, PointerUp
from game.editor import Editor

HAND_L = 8


def _stroke(ed: Editor, s: Session, points, t0: float) -> float:
    t = t0
    ed.queue.push(PointerDown(t, points[0][0], points[0][1]))
    s.step()
    for p in points[1:]:
        t += 1 / 60
        ed.queue.push(PointerMove(t, p[0], p[1], buttons=Buttons.LEFT))
        s.step()
    ed.queue.push(PointerUp(t + 1 / 60, points[-1][0], points[-1][1]))
    s.step()
    return t + 0.1


def _line(a, b, n=10):
    return [tuple(np.round(np.asarray(a) + (np.asarray(b) - np.asarray(a)) * k / (n - 1), 1)) for k in range(n)]


def test_strokes_stay_on_the_limb_when_the_camera_orbits():
    with Session(width=640, height=480, strict=True) as s:
        ed = Editor(s, settings={"brush_radius": 12.0})
        ch = ed.spawn("humanoid", clip="idle", speed=0.0)
        ed.frame_camera()
        s.step()
        t = _stroke(ed, s, _line((349, 148), (411, 216)), 1.0)
        t = _stroke(ed, s, _line((349, 148), (404, 94)), t)
        assert ed.undo.history == ["pose 3 joints of humanoid"]
        before = [st.knots.copy() for st in ed.state.editable]
        world = ed.posing.world
        assert world is not None
        # the knots in the world lie on the posing plane and project to the drawn knots
        for k3, k2 in zip(world.knots, before):
            assert np.abs((k3 - world.plane.point) @ world.plane.normal).max() < 1e-6
            np.testing.assert_allclose(window_points(s.camera, 640, 480, k3), k2, atol=1e-3)
        posed = ch.joints().copy()
        s.camera.drag(120.0, 0.0)  # orbit about 36 degrees
        s.step()
        after = [st.knots for st in ed.state.editable]
        for k3, k2, k2_old in zip(world.knots, after, before):
            np.testing.assert_allclose(k2, window_points(s.camera, 640, 480, k3), atol=1e-6)  # where the limb is
            assert np.abs(k2 - k2_old).max() > 20.0  # ... not where they were on the screen
        assert np.array_equal(ch.joints(), posed) and len(ed.undo.history) == 1  # following the view is no edit
        # a knot picked where it is drawn now; moved by a few pixels: the pose changes a little, not jumps
        kx, ky = after[1][-1]
        ed.queue.push(PointerDown(t, kx, ky))
        s.step()
        assert ed.state.knot_drag == (1, len(after[1]) - 1)
        ed.queue.push(PointerMove(t + 0.02, kx + 1.0, ky, buttons=Buttons.LEFT))
        s.step()
        ed.queue.push(PointerUp(t + 0.04, kx + 1.0, ky))
        s.step()
        assert ed.undo.history[-1] == "drag a knot of humanoid's line of action", ed.state.messages
        moved = np.linalg.norm(ch.joints()[HAND_L, :3, 3] - posed[HAND_L, :3, 3])
        assert 0.0 < moved < 0.05
        # the other stroke's knots stayed on the pose's plane
        np.testing.assert_allclose(ed.posing.world.knots[0], world.knots[0], atol=1e-6)
        np.testing.assert_allclose((ed.posing.world.knots[1] - world.plane.point) @ world.plane.normal, 0, atol=1e-6)
        # undo of the drag restores the strokes of the pose, then they follow the view again
        ed.undo.undo()
        s.step()
        np.testing.assert_array_equal(ch.joints(), posed)
        for k3, k2 in zip(world.knots, ed.state.editable):
            np.testing.assert_allclose(k2.knots, window_points(s.camera, 640, 480, k3), atol=1e-6)
