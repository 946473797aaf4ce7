"""The editor's stroke input and posing tool on the humanoid, driven by events: two strokes pose the arm,
Ctrl+Z restores the exact pose, Ctrl+Shift+Z the posed one; unusable strokes are refused with a message."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.input.events import Action, Buttons, KeyDown, Modifiers, PointerDown, PointerMove, PointerUp
from game.editor import Editor

HAND_L = 8


def _stroke(ed: Editor, s: Session, points, t0: float) -> float:
    t = t0
    ed.queue.push(PointerDown(t, *points[0]))
    s.step()
    for p in points[1:]:
        t += 1 / 60
        ed.queue.push(PointerMove(t, *p, buttons=Buttons.LEFT))
        s.step()
    ed.queue.push(PointerUp(t + 1 / 60, *points[-1]))
    s.step()
    return t + 0.1


def _line(a, b, n=10):
    return [tuple(np.round(np.asarray(a) + (np.asarray(b) - np.asarray(a)) * k / (n - 1), 1)) for k in range(n)]


@pytest.fixture()
def editor():
    with Session(width=640, height=480, strict=True) as s:
        ed = Editor(s, settings={"brush_radius": 12.0})
        ed.spawn("humanoid", clip="idle", speed=0.0)  # held: the pose changes only by edits
        ed.frame_camera()
        s.step()
        yield ed


def _state(ed: Editor):
    ch = ed.session.characters[0]
    return ch.vertices(), ch.local_pose()


def _same(a, b) -> bool:
    (va, pa), (vb, pb) = a, b
    return all(np.array_equal(va[k], vb[k]) for k in va) and np.array_equal(pa.rotation, pb.rotation)


def test_two_strokes_pose_the_arm_and_undo_restores_the_exact_pose(editor):
    ed, s = editor, editor.session
    rest = _state(ed)
    hand0 = s.characters[0].joints()[HAND_L, :3, 3].copy()
    t = _stroke(ed, s, _line((349, 148), (411, 216)), 1.0)
    assert ed.state.strokes and not ed.undo.can_undo  # the baseline waits for its offset
    t = _stroke(ed, s, _line((349, 148), (404, 94)), t)
    assert not ed.state.strokes and ed.undo.history == ["pose 3 joints of humanoid"]
    posed = _state(ed)
    hand1 = s.characters[0].joints()[HAND_L, :3, 3]
    assert hand1[1] > hand0[1] + 0.4  # the hand went up
    ed.queue.push(KeyDown(t, "z", Modifiers.CTRL))
    s.step()
    assert _same(_state(ed), rest)
    ed.queue.push(KeyDown(t + 0.1, "z", Modifiers.CTRL | Modifiers.SHIFT))
    s.step()
    assert _same(_state(ed), posed)
    ed.queue.push(Action(t + 0.2, "undo"))
    ed.queue.push(Action(t + 0.3, "undo"))
    s.step()
    assert _same(_state(ed), rest) and ed.state.messages[-1] == "nothing to undo"


def test_unusable_strokes_are_refused_with_a_message(editor):
    ed, s = editor, editor.session
    t = _stroke(ed, s, [(100.0, 100.0), (100.0, 100.0)], 1.0)  # a click: no stroke, no complaint
    assert not ed.state.strokes and not ed.state.messages
    t = _stroke(ed, s, _line((20, 20), (60, 40)), t)  # far from every joint
    t = _stroke(ed, s, _line((20, 20), (60, 10)), t)
    assert ed.state.messages[-1].startswith("pose refused: the baseline selects no joint")
    assert not ed.undo.can_undo and not ed.state.strokes
    ed.queue.push(Action(t, "set", {"brush_radius": -4}))
    s.step()
    assert "brush_radius must be a number in [1, 2000]" in ed.state.messages[-1]
    assert ed.state.settings.brush_radius == 12.0


def test_the_orbit_tool_does_not_draw(editor):
    ed, s = editor, editor.session
    yaw = s.camera.yaw
    ed.queue.push(KeyDown(0.5, "o"))
    s.step()
    assert ed.state.settings.tool == "orbit"
    _stroke(ed, s, _line((300, 200), (340, 200)), 1.0)
    assert not ed.state.strokes and s.camera.yaw != yaw


def test_character_actions_switch_deformer_and_parameters_undoably(editor):
    ed, s = editor, editor.session
    ch = s.characters[0]
    ed.queue.push(Action(1.0, "deformer", {"name": "dqs"}))
    s.step()
    assert ch.deformer == "dqs"
    for i, k in enumerate((0.3, 0.35, 0.4)):  # a slider drag: one undo step
        ed.queue.push(Action(2.0 + i, "config", {"spring_k_s": k}))
        s.step()
    assert ch.config.spring.k_s == 0.4 and len(ed.undo) == 2
    ed.queue.push(Action(3.0, "config", {"spring_k_s": -1.0}))
    ed.queue.push(Action(3.1, "deformer", {"name": "nope"}))
    s.step()
    assert ch.config.spring.k_s == 0.4 and ch.deformer == "dqs" and len(ed.undo) == 2
    assert ed.state.messages[-2].startswith("config: ") and ed.state.messages[-1].startswith("deformer: ")
    ed.undo.undo()
    assert ch.config.spring.k_s == 0.5
    ed.undo.undo()
    assert ch.deformer == "lbs"
    ed.queue.push(Action(4.0, "scrub", {"time": 0.25}))
    s.step()
    assert ch.time == 0.25


def test_dragging_a_knot_reposes_live_and_is_one_undo_step(editor):
    ed, s = editor, editor.session
    rest = _state(ed)
    t = _stroke(ed, s, _line((349, 148), (411, 216)), 1.0)
    t = _stroke(ed, s, _line((349, 148), (404, 94)), t)
    posed = _state(ed)
    hand_posed = s.characters[0].joints()[HAND_L, :3, 3].copy()
    offset = ed.state.editable[1]
    kx, ky = offset.knots[-1]
    ed.queue.push(PointerDown(t, kx + 2, ky))  # within the pick distance of the offset's end knot
    s.step()
    assert ed.state.knot_drag == (1, len(offset.knots) - 1) and ed.state.drawing is None
    hands = []
    for i in range(1, 6):  # drag the hand end to the right: the pose follows every frame
        ed.queue.push(PointerMove(t + 0.02 * i, kx + 2 + 8 * i, ky + 4 * i, buttons=Buttons.LEFT))
        s.step()
        hands.append(s.characters[0].joints()[HAND_L, 0, 3])
    ed.queue.push(PointerUp(t + 0.2, kx + 42, ky + 20))
    s.step()
    assert ed.state.knot_drag is None and np.all(np.diff(hands) > 0)  # live feedback: the hand moved each frame
    assert s.characters[0].joints()[HAND_L, 0, 3] > hand_posed[0] + 0.05
    assert ed.undo.history == ["pose 3 joints of humanoid", "drag a knot of humanoid's line of action"]
    dragged = _state(ed)
    ed.undo.undo()
    assert _same(_state(ed), posed) and np.array_equal(ed.state.editable[1].knots, offset.knots)
    ed.undo.redo()
    assert _same(_state(ed), dragged)
    ed.undo.undo()
    ed.undo.undo()
    assert _same(_state(ed), rest) and ed.state.editable == []
    # a second, separate drag is its own undo step
    ed.undo.redo()
    ed.queue.push(PointerDown(t + 1, kx + 1, ky))
    ed.queue.push(PointerMove(t + 1.1, kx + 10, ky, buttons=Buttons.LEFT))
    ed.queue.push(PointerUp(t + 1.2, kx + 10, ky))
    s.step()
    ed.queue.push(PointerDown(t + 2, kx + 10, ky))
    ed.queue.push(PointerMove(t + 2.1, kx + 20, ky, buttons=Buttons.LEFT))
    ed.queue.push(PointerUp(t + 2.2, kx + 20, ky))
    s.step()
    assert len(ed.undo) == 3 and ed.undo.cursor == 3


def test_the_selected_character_is_the_one_posed():
    from game.editor.window import select_at

    with Session(width=640, height=480, strict=True) as s:
        ed = Editor(s, settings={"brush_radius": 12.0})
        a = ed.spawn("humanoid", clip="idle", speed=0.0, position=(-0.6, 0.0, 0.0))
        b = ed.spawn("humanoid", clip="idle", speed=0.0, position=(0.6, 0.0, 0.0))
        ed.frame_camera()
        s.step()
        assert ed.selected is a  # nothing selected: the first character
        cam, (w, h) = s.camera, (640, 480)

        def px(p):
            c = cam.projection_for(w / h) @ cam.view @ np.r_[p, 1.0]
            return float((c[0] / c[3] + 1) * 0.5 * w), float((1 - c[1] / c[3]) * 0.5 * h)

        gb = b.joints()[:, :3, 3]
        hit = select_at(ed, *px(gb[2]))  # a click on b's chest
        assert hit is not None and hit.entity == b.entity
        s.step()
        assert ed.selected is b and ed.state.selected == b.entity
        shoulder, hand = px(gb[6]), px(gb[8])
        arm = float(np.hypot(hand[0] - shoulder[0], hand[1] - shoulder[1]))
        up = (shoulder[0] + 0.35 * arm, shoulder[1] - 0.95 * arm)
        a_before = a.joints().copy()
        t = _stroke(ed, s, _line(shoulder, hand), 1.0)
        _stroke(ed, s, _line(shoulder, up), t)
        assert b.joints()[HAND_L, 1, 3] > gb[HAND_L, 1] + 0.3 and np.array_equal(a.joints(), a_before)
        assert select_at(ed, 2.0, 2.0) is None  # the background keeps the selection
        ed.queue.push(Action(9.0, "select", {"entity": 999}))
        s.step()
        assert ed.selected is b and "no entity 999" in ed.state.messages[-1]


def test_the_posing_plane_moves_and_turns_and_strokes_land_on_it():
    from types import SimpleNamespace

    from engine.input.strokes import Stroke
    from engine.render.camera import Camera
    from game.editor.posing import posing_plane, unproject_stroke

    root = np.array([0.0, 1.0, 0.0])
    cam = SimpleNamespace(eye=np.array([0.0, 1.0, 4.0]), target=np.array([0.0, 1.0, 0.0]))
    p = posing_plane(root, cam)
    np.testing.assert_allclose(p.normal, [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(p.point, root)
    # parallel to the image plane: the normal is the viewing direction even when the root is off the view's axis
    aside = posing_plane(root, SimpleNamespace(eye=np.array([2.0, 3.0, 4.0]), target=np.array([2.0, 3.0, 0.0])))
    np.testing.assert_allclose(aside.normal, [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(aside.point, root)
    moved = posing_plane(root, cam, offset=0.5, turn=90.0)
    np.testing.assert_allclose(moved.normal, [1, 0, 0], atol=1e-12)  # turned about +Y
    np.testing.assert_allclose(moved.point, root + [0.5, 0, 0], atol=1e-12)
    tilted = posing_plane(root, cam, tilt=30.0)
    np.testing.assert_allclose(tilted.normal, [0, -0.5, np.sqrt(0.75)], atol=1e-12)  # about the camera's right
    for pl in (p, moved, tilted):
        axes = np.stack([pl.right, pl.up, pl.normal])
        np.testing.assert_allclose(axes @ axes.T, np.eye(3), atol=1e-12)
    camera = Camera(eye=(0.3, 1.4, 4.0), target=(0.0, 1.0, 0.0), aspect=640 / 480)
    stroke = Stroke.fit([(300.0, 200.0), (340.0, 230.0), (380.0, 215.0)], window_height=480)
    for pl in (posing_plane(root, camera, offset=0.25), posing_plane(root, camera, turn=20.0, tilt=-15.0)):
        s3 = unproject_stroke(stroke, camera, 640, 480, pl.pyrr)
        assert np.abs((s3.knots - pl.point) @ pl.normal).max() < 1e-6
