"""The editor's Weights tool (issue 25 item 6), headless through the editor's own input (pointer events and
actions in the session's queue, as the window pushes them): Shift+W picks the tool and shows the joint's heat
map; a brush stroke paints the joint (one undo step for the whole stroke); Ctrl+Z restores the weights bit for
bit and Ctrl+Shift+Z brings the stroke back; a vertex drag and an influence click; Save writes the edited weights
and Open gives them back."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.authoring.view import window_points
from engine.input.events import Action, Buttons, KeyDown, Modifiers, PointerDown, PointerMove, PointerUp, now
from engine.skinning.weights.io import primitive_weights
from game.editor import Editor
from tests.helpers.weights_asset import tube_asset

pytestmark = pytest.mark.gl

W, H = 200, 150


def _frame(ed, *events):
    ed.queue.extend(events)
    ed.session.step()


def _pixel(ed, world):
    x, y = window_points(ed.session.camera, W, H, np.asarray(world)[None])[0]
    return float(x), float(y)


def _stroke(ed, points):
    (x0, y0), rest = points[0], points[1:]
    _frame(ed, PointerDown(now(), x0, y0))
    for x, y in rest:
        _frame(ed, PointerMove(now(), x, y, buttons=Buttons.LEFT))
    _frame(ed, PointerUp(now(), *points[-1]))


def test_weights_tool_paints_undoes_drags_and_saves(tmp_path):
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=17, sides=8)
    with Session(width=W, height=H, strict=True, deformer="lbs") as s:
        ed = Editor(s)
        ed.spawn(str(src), clip="wave", time=0.5, speed=0.0)
        ed.frame_camera()
        s.step()
        _frame(ed, KeyDown(now(), "w", Modifiers.SHIFT))  # the Weights tool
        assert ed.state.settings.tool == "weights"
        tool = ed.weights.tool
        assert tool is not None and ed.weights._heat is not None  # the heat map of the heaviest joint is shown
        before = tool.dense.copy()
        _frame(ed, Action(now(), "weights", {"joint": "Arm.L2", "radius": 0.2, "value": 1.0, "mode": "replace"}))
        _frame(ed, Action(now(), "weights", {"mode": "sideways"}))  # refused: said, nothing set
        assert ed.weights.mode == "replace" and "mode must be one of" in ed.state.messages[-1]
        j = tool.prim.joint_index("Arm.L2")
        # a stroke along the tube near Arm.L2 (x = 0.5): the surface under the pointer on the live character
        key = tool.prim.key
        verts = tool.character.vertices()[key]
        near = np.argsort(np.abs(tool.prim.positions[:, 0] - 0.5) + np.abs(tool.prim.positions[:, 2] - 0.1))[:1]
        p = verts[int(near[0])]
        pts = [_pixel(ed, p + np.array([dx, 0.0, 0.0])) for dx in (-0.06, -0.02, 0.02, 0.06)]
        _stroke(ed, pts)
        tool = ed.weights.tool
        painted = tool.dense.copy()
        assert np.abs(painted - before).max() > 0.1 and painted[:, j].max() > before[:, j].max() - 1e-9
        assert (painted[:, j] >= before[:, j] - 1e-9).all()  # replace with 1.0 only raises the joint
        assert ed.undo.history == ["paint Arm.L2"]  # the dabs of one stroke: one undo step
        assert ed.selected.entity == tool.character.entity  # the selection follows the re-spawned character
        # Ctrl+Z restores the weights exactly; Ctrl+Shift+Z brings the stroke back
        _frame(ed, KeyDown(now(), "z", Modifiers.CTRL))
        np.testing.assert_array_equal(ed.weights.tool.dense, before)
        assert ed.selected.entity == ed.weights.tool.character.entity
        _frame(ed, KeyDown(now(), "z", Modifiers.CTRL | Modifiers.SHIFT))
        np.testing.assert_array_equal(ed.weights.tool.dense, painted)
        # Mohr's drag: a vertex dragged 1 cm up in the view plane
        _frame(ed, Action(now(), "weights", {"action": "drag"}))
        tool = ed.weights.tool
        v_world = tool.character.vertices()[key]
        v = int(np.argmin(np.abs(tool.prim.positions[:, 0] - 0.62) + np.abs(tool.prim.positions[:, 2] - 0.1)))
        a = _pixel(ed, v_world[v])
        b = _pixel(ed, v_world[v] + np.array([0.0, 0.03, 0.0]))
        _stroke(ed, [a, ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2), b])
        tool = ed.weights.tool
        assert ed.undo.history[-1].startswith("drag vertex "), (ed.undo.history, ed.state.messages)
        dragged = tool.dense.copy()
        assert np.abs(dragged - painted).max() > 1e-4
        # influence: a click on a vertex shows the vertices that move with it
        _frame(ed, Action(now(), "weights", {"action": "influence"}))
        c = _pixel(ed, tool.character.vertices()[key][v])
        _frame(ed, PointerDown(now(), *c))
        _frame(ed, PointerUp(now(), *c))
        assert ed.weights.region is not None and len(ed.weights.region) > 0
        assert ed.state.messages[-1].startswith("influence of vertex")
        # Save writes the edited weights; Open gives them back
        out = tmp_path / "saved.glb"
        ed.save(out)
        ed.open(out)
        s.step()
        _frame(ed, Action(now(), "tool", {"name": "weights"}))
        np.testing.assert_allclose(ed.weights.tool.dense, dragged, atol=1e-6)
    from engine.scene import load_asset

    (prim,) = primitive_weights(load_asset(out))
    np.testing.assert_allclose(prim.dense(), dragged, atol=1e-6)
    (orig,) = primitive_weights(load_asset(src))
    np.testing.assert_allclose(orig.dense(), before, atol=1e-6)  # the source file is untouched


WINDOW = r'''
import json, sys
from pyglet.window import key
from engine import Session
from game.editor import Editor
from game.editor.window import run_editor_window

out = {}
with Session(window=True, width=640, height=480, title="weights panel") as s:
    ed = Editor(s)
    ed.spawn(sys.argv[1], clip="wave", speed=0.0)
    ed.frame_camera()

    def before(i, window):
        if i == 2:
            window.dispatch_event("on_key_press", key.W, key.MOD_SHIFT)
            window.dispatch_event("on_key_release", key.W, key.MOD_SHIFT)
        if i == 3:  # a drag in progress and an isoline: the window draws the hull and the line (no exception)
            import numpy as np
            from engine.input.rays import facing_plane
            w = ed.weights
            t = w.tool
            p = np.asarray(t.character.vertices()[t.prim.key][40], np.float64)
            w._drag, w._target = (40, facing_plane(p, p + np.array([0.0, 0.0, 1.0]))), p + [0.0, 0.2, 0.0]
            w._preview = t.drag_result(40, w._target)
            w._add_isoline(ed.state, [(10, np.full(3, 1 / 3)), (11, np.full(3, 1 / 3)), (30, np.full(3, 1 / 3))])
            out["drawn"] = [w.drag_overlay() is not None, len(w.spline_overlay())]
        if i == 5:
            out["tool"] = ed.state.settings.tool
            out["joint"] = None if ed.weights.tool is None else int(ed.weights.tool.joint)
            out["heat"] = ed.weights._heat is not None

    run_editor_window(ed, frames=7, before_frame=before, persist_layout=False)
    out["messages"] = ed.state.messages
print("RESULT " + json.dumps(out))
'''


def test_weights_panel_draws_in_the_window(tmp_path):
    """Shift+W in the real window (Xvfb): the Tools panel draws the weights controls, the heat map shows."""
    import json

    from tests.helpers.xvfb import run_under_xvfb

    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=9, sides=6)
    r = run_under_xvfb(WINDOW.replace("sys.argv[1]", repr(str(src))))
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    res = json.loads(lines[-1][len("RESULT "):])
    assert res["tool"] == "weights" and res["joint"] is not None and res["heat"], res["messages"]
    assert res["drawn"] == [True, 1], res["messages"]


def test_weights_drag_shows_the_hull_and_the_reachable_point(tmp_path):
    """While a vertex drag is in progress the tool exposes what the window draws: the hull points q_i = R_i v of
    the influencing joints, its edges and the reachable point, equal to the model's DragResult; the drag's
    release applies it (LBS puts the vertex at that point) and the overlay goes."""
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=9, sides=6)
    with Session(width=W, height=H, strict=True, deformer="lbs") as s:
        ed = Editor(s)
        ed.spawn(str(src), clip="wave", time=0.5, speed=0.0)
        ed.frame_camera()
        s.step()
        _frame(ed, KeyDown(now(), "w", Modifiers.SHIFT))
        _frame(ed, Action(now(), "weights", {"action": "drag"}))
        tool = ed.weights.tool
        key = tool.prim.key
        v_world = tool.character.vertices()[key]
        v = int(np.argmin(np.abs(tool.prim.positions[:, 0] - 0.62) + np.abs(tool.prim.positions[:, 2] - 0.1)))
        a = _pixel(ed, v_world[v])
        b = _pixel(ed, v_world[v] + np.array([0.0, 0.2, 0.0]))  # far: outside what LBS can reach
        assert ed.weights.drag_overlay() is None
        _frame(ed, PointerDown(now(), *a))
        _frame(ed, PointerMove(now(), *b, buttons=Buttons.LEFT))
        ov = ed.weights.drag_overlay()
        assert ov is not None
        picked = ed.weights._drag[0]
        res = ed.weights.tool.drag_result(picked, ov["target"])
        np.testing.assert_array_equal(ov["hull"], res.hull)
        np.testing.assert_array_equal(ov["reached"], res.reached)
        assert ov["hull"].shape == (int((tool.dense[picked] > 0).sum()), 3)
        assert ov["edges"].shape[1] == 2 and ov["edges"].max() < len(ov["hull"])
        assert not res.inside and np.linalg.norm(ov["reached"] - ov["target"]) > 1e-3
        _frame(ed, PointerUp(now(), *b))
        assert ed.weights.drag_overlay() is None
        live = ed.weights.tool.character.vertices()[key][picked]
        np.testing.assert_allclose(live, ov["reached"], atol=1e-4)


def test_weights_spline_with_anchors(tmp_path):
    """The spline action: a drag around the tube draws an isoline of the joint at the brush value (the field meets
    it within 0.02 at the picked points); an anchor's slide re-evaluates the field (the far end's samples follow
    the new value, linearly along the line); the overlay gives the line on the live skin; undo goes back."""
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=17, sides=8)
    with Session(width=W, height=H, strict=True, deformer="lbs") as s:
        ed = Editor(s)
        ed.spawn(str(src), clip="wave", time=0.0, speed=0.0)
        ed.frame_camera()
        s.step()
        _frame(ed, KeyDown(now(), "w", Modifiers.SHIFT))
        _frame(ed, Action(now(), "weights", {"joint": "Arm.L2", "action": "spline", "value": 0.8}))
        tool = ed.weights.tool
        key = tool.prim.key
        verts = tool.character.vertices()[key]
        bind = tool.prim.positions  # the upper front of the tube (the camera looks at it from above), at rest
        a = int(np.argmin(np.abs(bind[:, 0] - 0.45) + np.abs(bind[:, 1] - 0.07) + np.abs(bind[:, 2] - 0.07)))
        b = int(np.argmin(np.abs(bind[:, 0] - 0.6) + np.abs(bind[:, 1] - 0.07) + np.abs(bind[:, 2] - 0.07)))
        pts = [_pixel(ed, verts[a] + (verts[b] - verts[a]) * u) for u in np.linspace(0.0, 1.0, 6)]
        before = tool.dense.copy()
        _stroke(ed, pts)
        tool = ed.weights.tool
        assert len(ed.weights.splines) == 1, ed.state.messages
        np.testing.assert_array_equal(ed.weights.anchors, [0.8, 0.8])
        j = tool.prim.joint_index("Arm.L2")
        sp = ed.weights.splines[0]
        at = np.einsum("nk,nk->n", sp.barycentrics, tool.dense[tool.prim.triangles[sp.faces], j])
        assert np.abs(at - 0.8).max() <= 0.02 and ed.undo.history[-1] == "spline Arm.L2"
        ov = ed.weights.spline_overlay()
        live = tool.character.vertices()[key]
        assert len(ov) == 1 and ov[0]["points"].shape == (len(sp.faces), 3)
        np.testing.assert_allclose(ov[0]["points"][0], sp.barycentrics[0] @ live[tool.prim.triangles[sp.faces[0]]])
        # the end anchor slides to 0.3: the samples follow the line from 0.8 to 0.3
        _frame(ed, Action(now(), "weights", {"anchor": 1, "iso": 0.3}))
        _frame(ed, Action(now(), "weights", {"anchor": 7, "iso": 0.3}))  # refused: said, nothing changed
        assert "anchor must be an index" in ed.state.messages[-1]
        tool = ed.weights.tool
        np.testing.assert_array_equal(ed.weights.anchors, [0.8, 0.3])
        at = np.einsum("nk,nk->n", sp.barycentrics, tool.dense[tool.prim.triangles[sp.faces], j])
        assert np.abs(at - (0.8 + (0.3 - 0.8) * sp.along)).max() <= 0.02
        # undo: the slide, then the line
        _frame(ed, KeyDown(now(), "z", Modifiers.CTRL))
        _frame(ed, KeyDown(now(), "z", Modifiers.CTRL))
        np.testing.assert_array_equal(ed.weights.tool.dense, before)
