"""The editor's surface tools (issue 12 in the editor, game/editor/surface.py) on the cylinder: a bulge stroke read
through asynchronous G-buffer queries (a synchronous query would fail the test) becomes an undoable edit with its
region shown; live height changes fold into one undo step per drag; undo and redo restore the exact edits and
deformer; a stroke off the surface is refused with a message; an accent stroke beside the outline moves it; a drag
that starts on the drawn stroke moves it as a handle (one undo step)."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.input.events import Action, Buttons, KeyDown, Modifiers, PointerDown, PointerMove, PointerUp
from engine.render.camera import OrbitCamera
from game.editor import Editor
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

W, H = 240, 240
CYLINDER = ROOT / "assets" / "cylinder.glb"


def _px(cam, p):
    c = cam.projection_for(W / H) @ cam.view @ np.r_[p, 1.0]
    return float((c[0] / c[3] + 1) * 0.5 * W), float((1 - c[1] / c[3]) * 0.5 * H)


def _drag(ed, s, points, t=0.0):
    ed.queue.push(PointerDown(t, *points[0]))
    s.step()
    for p in points[1:]:
        t += 0.016
        ed.queue.push(PointerMove(t, *p, buttons=Buttons.LEFT))
        s.step()
    ed.queue.push(PointerUp(t + 0.01, *points[-1]))
    s.step()


def _editor(s, tool="bulge"):
    ed = Editor(s, settings={"tool": tool, "surface_rings": 2, "surface_height": 0.03})
    ch = ed.spawn(str(CYLINDER), clip=None)
    s.camera = OrbitCamera(target=np.array([0.0, 0.5, 0.0]), yaw=0.0, pitch=0.0, distance=1.2, fov_y=45.0,
                           aspect=W / H)
    s.step()
    return ed, ch


def _no_sync_queries(s, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a synchronous G-buffer query stalls the frame")

    monkeypatch.setattr(s, "pick_many", refuse)
    monkeypatch.setattr(s, "pick", refuse)
    monkeypatch.setattr(s.renderer, "query_many", refuse)


def _edits(ch):
    return {k: [e.to_dict() for e in st] for k, st in ch.edits.items() if len(st)}


def test_bulge_stroke_makes_an_undoable_live_edit(monkeypatch):
    with Session(width=W, height=H, strict=True) as s:
        ed, ch = _editor(s)
        _no_sync_queries(s, monkeypatch)
        cam = s.camera
        stroke = [_px(cam, [0.0, y, 0.1]) for y in np.linspace(0.35, 0.65, 8)]
        rest = {k: v.copy() for k, v in ch.vertices().items()}
        _drag(ed, s, stroke)
        assert not ed.undo.history  # the last answers arrive a frame later; the deformer switches first
        s.step(3)
        assert ed.undo.history == [f"bulge 1 on {ch.name}"], ed.state.messages
        assert ch.deformer == "spring"
        key = ch.skinned_primitives[0]
        edit = ch.edits[key].edits[0]
        assert edit.kinematic.size > 5 and edit.passive.size > edit.kinematic.size and edit.static.size > 0
        assert edit.profile.type == "bulge" and edit.profile.height == pytest.approx(0.03)
        assert (ch.entity, key) == ed.surface.shown  # the region is drawn on the mesh
        assert (ch.entity, key) in s._marks
        first = _edits(ch)
        x = ch.vertices()[key]
        moved = np.linalg.norm(x - rest[key], axis=1)
        topo = ch.topology(key)
        kin_display = np.isin(np.asarray(topo.control_of_display), edit.kinematic)
        assert moved[kin_display].max() > 0.01  # the front of the tube rose
        assert x[kin_display, 2].mean() > rest[key][kin_display, 2].mean() + 0.005
        # a slider drag: three heights, one undo step; released, the next change is another step
        for h in (0.035, 0.04, 0.05):
            ed.queue.push(Action(0.5, "set", {"surface_height": h}))
            s.step()
        ed.queue.push(Action(0.6, "end_edit", {}))
        ed.queue.push(KeyDown(0.6, "r", Modifiers.NONE))  # one more ring
        s.step()
        assert ed.undo.history == [f"bulge 1 on {ch.name}", f"bulge 1 of {ch.name}: surface_height",
                                   f"bulge 1 of {ch.name}: surface_rings"]
        edit2 = ch.edits[key].edits[0]
        assert edit2.profile.height == pytest.approx(0.05) and edit2.passive.size > edit.passive.size
        assert np.array_equal(edit2.kinematic, edit.kinematic)
        last = _edits(ch)
        # undo all three: the edit, its height and rings, and the deformer go back exactly
        for _ in range(2):
            ed.queue.push(KeyDown(0.7, "z", Modifiers.CTRL))
            s.step()
        assert _edits(ch) == first and ed.state.settings.surface_height == pytest.approx(0.03)
        ed.queue.push(KeyDown(0.8, "z", Modifiers.CTRL))
        s.step()
        assert _edits(ch) == {} and ch.deformer == "lbs" and ed.surface.active is None
        assert np.array_equal(ch.vertices()[key], rest[key])
        for _ in range(3):
            ed.queue.push(KeyDown(0.9, "z", Modifiers.CTRL | Modifiers.SHIFT))
            s.step()
        assert _edits(ch) == last and ch.deformer == "spring"
        assert ed.state.settings.surface_height == pytest.approx(0.05) and ed.state.settings.surface_rings == 3


def test_a_stroke_off_the_surface_is_refused(monkeypatch):
    with Session(width=W, height=H, strict=True) as s:
        ed, ch = _editor(s)
        _no_sync_queries(s, monkeypatch)
        _drag(ed, s, [(10.0, 10.0), (30.0, 20.0), (50.0, 12.0)])
        s.step(2)
        assert not ed.undo.history and not ch.edits and ch.deformer == "lbs"
        assert any(m.startswith("bulge refused:") and "hits no surface" in m for m in ed.state.messages)


def test_an_accent_stroke_moves_the_outline():
    with Session(width=W, height=H, strict=True) as s:
        ed, ch = _editor(s, tool="silhouette")
        cam = s.camera
        accent = [_px(cam, [0.125, y, 0.0]) for y in np.linspace(0.35, 0.65, 7)]  # 2.5 cm right of the outline
        _drag(ed, s, accent)
        s.step(2)
        assert ed.undo.history == [f"outline 1 of {ch.name} (springs)"], ed.state.messages
        key = ch.skinned_primitives[0]
        edit = ch.edits[key].edits[0]
        topo = ch.topology(key)
        x = np.asarray(ch.vertices()[key], np.float64)[np.asarray(topo.display_of_control)]
        x0 = np.asarray(topo.positions, np.float64)
        chain = edit.kinematic
        assert chain.size >= 5 and np.all(x0[chain, 0] > 0.09)  # the right outline column
        assert x[chain, 0].mean() > x0[chain, 0].mean() + 0.01  # moved out towards the stroke
        far = x0[:, 0] < -0.05
        assert np.abs(x[far] - x0[far]).max() < 1e-3  # the far side stays



def test_on_the_cpu_device_the_bulge_runs_in_the_numpy_springs():
    with Session(width=W, height=H, device="cpu", strict=True) as s:
        ed, ch = _editor(s)
        key = ch.skinned_primitives[0]
        rest = ch.vertices()[key].copy()
        _drag(ed, s, [_px(s.camera, [0.0, y, 0.1]) for y in np.linspace(0.4, 0.6, 5)])
        s.step(3)
        assert ed.undo.history == [f"bulge 1 on {ch.name}"], ed.state.messages
        assert np.abs(ch.vertices()[key] - rest).max() > 0.005


def test_dragging_the_stroke_moves_the_kinematic_vertices_as_a_handle(monkeypatch):
    with Session(width=W, height=H, strict=True) as s:
        ed, ch = _editor(s)
        _no_sync_queries(s, monkeypatch)
        cam = s.camera
        _drag(ed, s, [_px(cam, [0.0, y, 0.1]) for y in np.linspace(0.35, 0.65, 8)])
        s.step(6)
        assert ed.undo.history == [f"bulge 1 on {ch.name}"], ed.state.messages
        key = ch.skinned_primitives[0]
        edit = ch.edits[key].edits[0]
        topo = ch.topology(key)
        kin = np.isin(np.asarray(topo.control_of_display), edit.kinematic)
        before_edits = _edits(ch)
        attach, rot = ch.edit_frame(key)
        before_targets = edit.targets(attach, rot)
        x0 = ch.vertices()[key].copy()
        # press on the stroke's middle as drawn now (on the raised skin), drag 30 pixels to the right
        mid = ed.surface.active.samples.positions(ch)
        x, y = _px(cam, mid[len(mid) // 2])
        _drag(ed, s, [(x + dx, y) for dx in (0.0, 10.0, 20.0, 30.0)], t=1.0)
        assert ed.undo.history == [f"bulge 1 on {ch.name}", f"drag bulge 1 of {ch.name}"], ed.state.messages
        assert len(ch.edits[key].edits) == 1  # the press grabbed the stroke: no new stroke, no new edit
        dragged = ch.edits[key].edits[0]
        moved = dragged.targets(attach, rot) - before_targets
        assert moved[:, 0].max() > 0.01 and np.all(moved[:, 0] > -1e-9)  # targets follow the drag (+x) ...
        weights = dragged.profile.amount(dragged.param) / dragged.profile.height
        assert np.allclose(moved[:, 0], moved[:, 0].max() * weights / weights.max(), atol=1e-6)  # ... by profile
        s.step(20)
        x1 = ch.vertices()[key]
        assert x1[kin, 0].mean() > x0[kin, 0].mean() + 0.005  # the kinematic vertices moved along the drag
        ed.queue.push(KeyDown(2.0, "z", Modifiers.CTRL))
        s.step()
        assert ed.undo.cursor == 1  # one undo step undid the whole drag
        assert _edits(ch) == before_edits
        assert np.array_equal(ch.edits[key].edits[0].targets(attach, rot), before_targets)
        s.step(20)
        assert np.abs(ch.vertices()[key][kin] - x0[kin]).max() < 1e-3


def test_a_handle_drag_within_one_frame_draws_no_stroke_and_a_press_off_the_stroke_draws_one():
    with Session(width=W, height=H, strict=True) as s:
        ed, ch = _editor(s)
        cam = s.camera
        _drag(ed, s, [_px(cam, [0.0, y, 0.1]) for y in np.linspace(0.35, 0.65, 8)])
        s.step(6)
        key = ch.skinned_primitives[0]
        height = ch.edits[key].edits[0].profile.height
        mid = ed.surface.active.samples.positions(ch)
        x, y = _px(cam, mid[len(mid) // 2])
        ed.queue.push(PointerDown(1.0, x, y))  # press, move and release all in one frame
        ed.queue.push(PointerMove(1.01, x, y - 15.0, buttons=Buttons.LEFT))
        ed.queue.push(PointerUp(1.02, x, y - 15.0))
        s.step(4)
        assert ed.undo.history == [f"bulge 1 on {ch.name}", f"drag bulge 1 of {ch.name}"], ed.state.messages
        dragged = ch.edits[key].edits[0]
        assert len(ch.edits[key].edits) == 1 and dragged.profile.height != pytest.approx(height)
        # a stroke drawn away from the handle (beside the tube) is a new stroke: refused off the surface
        _drag(ed, s, [(10.0, 10.0), (30.0, 20.0), (50.0, 12.0)], t=2.0)
        s.step(2)
        assert any(m.startswith("bulge refused:") for m in ed.state.messages)
        assert ch.edits[key].edits[0] is dragged


def test_drawn_surface_strokes_stay_on_the_skin_when_the_camera_orbits():
    """Issue 27 item 2: the bulge stroke is kept as surface samples and drawn at its current projection; after
    an orbit it is where the skin is (not where it was on the screen) and a press there still grabs it."""
    from engine.authoring.view import window_points

    with Session(width=W, height=H, strict=True) as s:
        ed, ch = _editor(s)
        _drag(ed, s, [_px(s.camera, [0.0, y, 0.1]) for y in np.linspace(0.35, 0.65, 8)])
        s.step(6)
        assert ed.undo.history == [f"bulge 1 on {ch.name}"], ed.state.messages
        old = ed.surface.stroke_window()
        np.testing.assert_allclose(ed.surface.stroke_world(), ed.surface.active.samples.positions(ch), atol=1e-9)
        s.camera.drag(120.0, 0.0)  # orbit about 36 degrees
        s.step()
        world = ed.surface.stroke_world()
        np.testing.assert_allclose(world, ed.surface.active.samples.positions(ch), atol=1e-9)  # on the skin now
        new = ed.surface.stroke_window()
        np.testing.assert_allclose(new, window_points(s.camera, W, H, world), atol=1e-9)
        assert np.abs(new - old).max() > 10.0  # moved on the screen with the limb
        assert len(ed.undo.history) == 1  # following the view is no edit
        x, y = new[len(new) // 2]
        _drag(ed, s, [(x + dx, y) for dx in (0.0, 8.0, 16.0)], t=1.0)
        assert ed.undo.history[-1] == f"drag bulge 1 of {ch.name}", ed.state.messages
        ed.undo.undo()  # the drawn stroke comes back with its edit, drawn once the frame deformed the skin
        s.step()
        assert ed.surface.active is not None and ed.surface.stroke_window() is not None


def test_an_accent_stroke_is_kept_in_the_world():
    from engine.authoring.view import window_points

    with Session(width=W, height=H, strict=True) as s:
        ed, ch = _editor(s, tool="silhouette")
        accent = np.array([_px(s.camera, [0.125, y, 0.0]) for y in np.linspace(0.35, 0.65, 7)])
        _drag(ed, s, [tuple(p) for p in accent])
        s.step(2)
        assert len(ed.undo.history) == 1, ed.state.messages
        world = ed.surface.stroke_world()
        assert world is not None
        drawn = ed.surface.stroke_window()
        assert np.abs(drawn[[0, -1]] - accent[[0, -1]]).max() < 1e-6  # as drawn, from the camera it was drawn with
        assert np.abs(world[:, 2]).max() < 0.05 and np.ptp(world[:, 2]) < 2e-3  # beside the outline, facing us
        s.camera.drag(120.0, 60.0)  # orbit sideways and up
        s.step()
        np.testing.assert_allclose(ed.surface.stroke_window(), window_points(s.camera, W, H, world), atol=1e-9)
        assert np.abs(ed.surface.stroke_window() - drawn).max() > 5.0  # not where it was on the screen
