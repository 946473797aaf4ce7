"""The editor's Weights tool (issue 25 item 6; Shift+W or the Tools panel): the TOOLS-phase system that maps the
editor's input to the weight-editing model (game/editor/weights_tool.py) and keeps the editor in step with it.

* **paint** (the default action): a left-drag on the selected character paints the selected joint's weights with
  the brush (``radius`` metres on the bind surface, ``value``, ``mode`` add | subtract | replace | blur); one
  dab per frame at the pointer, the whole drag one undo step;
* **drag**: a left-drag from a vertex moves it: on release its weights are recomputed (Mohr 2003) so that LBS puts
  it where the pointer left it, unprojected onto the view plane through the vertex; while the pointer moves the
  window draws what LBS can reach (:meth:`WeightsEditing.drag_overlay`: the hull of the q_i = R_i v of the
  influencing joints, its edges, and the reachable point nearest the pointer's target);
* **influence**: a click on a vertex shows its co-movement region over the playing clip (Lewis and Anjyo);
* **spline**: a left-drag on the skin draws an isoline of the selected joint (Bang and Lee 2018) with two anchors
  (its ends) at the brush ``value``; on release the joint's field is solved locally from every isoline drawn for
  it. An anchor's iso-value changes with the action ``{"anchor": i, "iso": v}`` (the panel's sliders): the
  field's precomputed anchor basis re-evaluates it (a product, no new solve), one undo step per anchor's slide.
  :meth:`WeightsEditing.spline_overlay` gives the window the isolines and anchors where the skin is now.

The panel (game/editor/weights_panel.py) and scripts set the joint and the brush with ``weights`` actions
(``{"joint": NAME, "radius": R, "value": V, "mode": M, "action": A}``, any of them), so a recording replays them.
Every change goes on the editor's undo stack; the model re-spawns the character with the new weights, so after an
edit, an undo or a redo the editor's selection follows ``tool.character`` and the heat map of the selected joint
is drawn again. The editor's Save writes the edited weights into the saved .glb (:meth:`WeightsEditing.write_into`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from engine.ecs import World
from engine.input.events import Action, Buttons, EventQueue, PointerDown, PointerMove, PointerUp
from game.editor.state import EditorState

__all__ = ["WeightsEditing", "WEIGHT_MODES", "WEIGHT_ACTIONS", "TOOL_NAME"]

#: the tool's name in the palette (game/editor/state.py TOOLS)
TOOL_NAME = "weights"
#: the brush modes (engine.skinning.weights.paint)
WEIGHT_MODES = ("add", "subtract", "replace", "blur")
#: what a left-drag does with the Weights tool
WEIGHT_ACTIONS = ("paint", "drag", "influence", "spline")


class WeightsEditing:
    """The Weights tool of ``editor`` (a TOOLS-phase system; ``tool``: the model of the selected character, made
    when the tool is first used on it). ``radius`` metres, ``value``, ``mode``, ``action``: the brush."""

    name = "weights_tool"

    def __init__(self, editor: Any) -> None:
        self.editor = editor
        self.tool: Any = None
        self.radius = 0.06
        self.value = 1.0
        self.mode = "add"
        self.action = "paint"
        self._entity: int | None = None  # the tool's character entity the editor was last told about
        self._original: np.ndarray | None = None  # the weights the character came with
        self._heat: Any = None  # the character whose heat map is drawn
        self._stroke = 0
        self._painting = False
        self._drag: tuple[int, np.ndarray] | None = None  # (vertex, view plane through it) while dragging
        self._target: np.ndarray | None = None
        self._preview: Any = None  # the DragResult of the drag in progress at the pointer's target (not applied)
        #: the last influence region (display vertex indices), for the panel and tests
        self.region: np.ndarray | None = None
        #: the selected joint's isolines (engine.skinning.weights.spline.SplineSamples) and their anchor values
        self.splines: list[Any] = []
        self.anchors = np.zeros(0)
        self._isoline: list[tuple[int, np.ndarray]] | None = None  # (triangle, barycentric) of the one drawn

    def reset(self) -> None:
        """Forget the tool (the characters were removed: a file opened, a session restored)."""
        self.tool = self._entity = self._original = self._heat = self._drag = self._target = self.region = None
        self._preview = self._isoline = None
        self.splines, self.anchors = [], np.zeros(0)
        self._painting = False

    # -- the model of the selected character --------------------------------------------------------------
    def ensure(self) -> Any:
        """The model of the editor's selected character (made now when it is another one); None with the reason
        in the messages when it has no skin."""
        from game.editor.weights_tool import WeightsTool

        ed = self.editor
        ch = ed.selected
        if ch is None:
            return None
        if self.tool is not None and self.tool.character.alive and self.tool.character.entity == ch.entity:
            return self.tool
        try:
            tool = WeightsTool(ed.session, ch, undo=ed.undo)
        except ValueError as exc:
            ed.state.say(f"weights: {exc}")
            return None
        self.tool, self._entity, self._original = tool, ch.entity, tool.dense.copy()
        self.splines, self.anchors = [], np.zeros(0)
        return tool

    def edited(self, character: Any) -> bool:
        """The weights of ``character`` differ from the ones it came with."""
        t = self.tool
        return (t is not None and self._original is not None and t.character.alive
                and t.character.entity == character.entity and not np.array_equal(t.dense, self._original))

    def write_into(self, path: str | Path, character: Any) -> bool:
        """Write the edited weights of ``character`` into the .glb at ``path`` (the editor's Save just wrote it:
        its pose clips stay); False when there is nothing to write."""
        from engine.authoring.weights import write_weights

        if not self.edited(character):
            return False
        t = self.tool
        write_weights(path, path, {t.prim.key: (t.prim, t.dense)}, locked={t.prim.key: t.locked})
        return True

    # -- the frame ------------------------------------------------------------------------------------------
    def __call__(self, world: World) -> None:
        state = world.try_resource(EditorState)
        queue = world.try_resource(EventQueue)
        if state is None or queue is None:
            return
        self._follow(state)
        active = state.settings.tool == TOOL_NAME
        if not active:
            self._painting, self._drag, self._preview = False, None, None
            self._hide()
            return
        tool = self.ensure()
        if tool is None:
            return
        moved: tuple[float, float] | None = None
        for e in queue.frame:
            if isinstance(e, Action) and e.name == "weights":
                self._settings(state, e.args)
            elif isinstance(e, PointerDown) and e.button & Buttons.LEFT:
                self._press(state, e.x, e.y)
            elif isinstance(e, PointerMove) and e.buttons & Buttons.LEFT:
                moved = (e.x, e.y)
            elif isinstance(e, PointerUp) and e.button & Buttons.LEFT:
                self._move(state, e.x, e.y)
                moved = None
                self._release(state)
        if moved is not None:  # one dab (one re-spawn of the character) per frame, at the latest pointer
            self._move(state, *moved)
        self._follow(state)
        if self._heat is None or not self._heat.alive or self._heat.entity != self.tool.character.entity:
            self._show()

    def _follow(self, state: EditorState) -> None:
        """An edit, undo or redo re-spawned the tool's character: the selection (and the heat map) follow it."""
        t = self.tool
        if t is None or not t.character.alive or t.character.entity == self._entity:
            return
        if state.selected is None or state.selected == self._entity:
            state.selected = t.character.entity
        self._entity = t.character.entity
        self._heat = None

    def _show(self) -> None:
        if self.editor.session.renderer is None:
            return
        self.tool.show_heat()
        self._heat = self.tool.character

    def _hide(self) -> None:
        h, self._heat = self._heat, None
        if h is not None and h.alive and self.editor.session.renderer is not None:
            h.show_region(None, primitive=self.tool.prim.key if self.tool is not None else None)

    def _settings(self, state: EditorState, args: dict[str, Any]) -> None:
        """A ``weights`` action: joint, radius, value, mode, action (a refused value: a message, nothing set)."""
        try:
            radius = float(args.get("radius", self.radius))
            value = float(args.get("value", self.value))
            mode = str(args.get("mode", self.mode))
            action = str(args.get("action", self.action))
            if not 0.0 < radius <= 10.0:
                raise ValueError(f"radius must be in (0, 10] metres, got {radius}")
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"value must be in [0, 1], got {value}")
            if mode not in WEIGHT_MODES:
                raise ValueError(f"mode must be one of {', '.join(WEIGHT_MODES)}, got {mode!r}")
            if action not in WEIGHT_ACTIONS:
                raise ValueError(f"action must be one of {', '.join(WEIGHT_ACTIONS)}, got {action!r}")
            if "joint" in args:
                self.tool.select_joint(str(args["joint"]))
                self._heat = None  # the heat map of the new joint
                self.splines, self.anchors = [], np.zeros(0)  # isolines belong to one joint's field
            if "anchor" in args:
                self._set_anchor(args["anchor"], args.get("iso"))
        except (ValueError, TypeError, KeyError) as exc:
            state.say(f"weights: {exc}")
            return
        self.radius, self.value, self.mode, self.action = radius, value, mode, action

    def _hit(self, x: float, y: float) -> Any:
        """What the last frame shows at (x, y), when it is the tool's primitive of its character."""
        r = self.editor.session.renderer
        if r is None or not (0 <= x < r.width and 0 <= y < r.height):
            return None
        hit = self.editor.session.pick(int(x), int(y))
        key = self.tool.prim.key
        if hit is None or hit.entity != self.tool.character.entity or \
                (hit.mesh.mesh_index, hit.mesh.primitive) != (key.mesh, key.primitive):
            return None
        return hit

    def _press(self, state: EditorState, x: float, y: float) -> None:
        from engine.input.rays import facing_plane

        hit = self._hit(x, y)
        if hit is None:
            return
        t = self.tool
        if self.action == "paint":
            self._stroke += 1
            self._painting = True
            self._dab(hit)
        elif self.action == "spline":
            self._isoline = [(int(hit.triangle), np.asarray(hit.barycentric, np.float64))]
        elif self.action == "drag":
            v = t.vertex_at(hit)
            p = np.asarray(t.character.vertices()[t.prim.key][v], np.float64)
            cam = self.editor.session.camera
            forward = np.asarray(cam.target, np.float64) - np.asarray(cam.eye, np.float64)
            # the view plane through the vertex (normal along the view direction, towards the eye)
            self._drag, self._target = (v, facing_plane(p, p - forward)), None
        else:
            try:
                self.region = t.influence(t.vertex_at(hit))
            except ValueError as exc:  # e.g. a character a cutscene's timeline plays has no clip of its own
                state.say(f"weights influence refused: {exc}")
                return
            self._heat = t.character  # the region is drawn in the heat map's place until the next change
            state.say(f"influence of vertex {t.vertex_at(hit)}: {len(self.region)} vertices move with it")

    def _move(self, state: EditorState, x: float, y: float) -> None:
        from engine.authoring.view import unproject_point

        if self._painting:
            hit = self._hit(x, y)
            if hit is not None:
                self._dab(hit)
        elif self._isoline is not None:
            hit = self._hit(x, y)
            if hit is not None:
                self._isoline.append((int(hit.triangle), np.asarray(hit.barycentric, np.float64)))
        elif self._drag is not None:
            r = self.editor.session.renderer
            self._target = unproject_point(x, y, self.editor.session.camera, r.width, r.height, self._drag[1])
            try:
                self._preview = None if self._target is None else \
                    self.tool.drag_result(self._drag[0], np.asarray(self._target, np.float64))
            except ValueError:
                self._preview = None

    def drag_overlay(self) -> dict[str, np.ndarray] | None:
        """What the window draws while a vertex drag is in progress (None otherwise): ``hull`` (k, 3) the points
        q_i = R_i v of the influencing joints in the current pose, ``edges`` (E, 2) the convex hull's edges
        between them, ``reached`` (3,) the reachable point nearest ``target`` (3,), the pointer's world point."""
        from game.editor.weights_tool import hull_edges

        res = self._preview
        if self._drag is None or res is None or self._target is None:
            return None
        return {"hull": np.asarray(res.hull, np.float64), "edges": hull_edges(res.hull),
                "reached": np.asarray(res.reached, np.float64), "target": np.asarray(self._target, np.float64)}

    def _release(self, state: EditorState) -> None:
        if self._painting:
            self._painting = False
            self.editor.undo.close()  # the stroke's dabs are one undo step
        elif self._isoline is not None:
            line, self._isoline = self._isoline, None
            self._add_isoline(state, line)
        elif self._drag is not None:
            (v, _), target, self._drag, self._preview = self._drag, self._target, None, None
            if target is None:
                return
            try:
                res = self.tool.drag(v, np.asarray(target, np.float64))
            except ValueError as exc:
                state.say(f"weights drag refused: {exc}")
                return
            miss = float(np.linalg.norm(np.asarray(res.reached) - target))
            state.say(f"dragged vertex {v}" + (f" (reachable {miss * 1000:.1f} mm from the target)" if miss > 1e-4
                                              else ""))

    def _add_isoline(self, state: EditorState, line: list[tuple[int, np.ndarray]]) -> None:
        """A drawn isoline (picked surface points) joins the joint's field with its two end anchors at ``value``."""
        from engine.skinning.weights.spline import SplineSamples

        t = self.tool
        faces = np.array([f for f, _ in line], np.int64)
        bary = np.array([b for _, b in line], np.float64)
        topo = t.prim.skinned.topology()  # its triangles are the display triangles over welded control points
        x = np.einsum("nk,nkd->nd", bary, np.asarray(topo.positions, np.float64)[topo.triangles[faces]])
        along = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(x, axis=0), axis=1))])
        if len(line) < 2 or along[-1] <= 0:
            state.say("weights spline: draw a line across the skin (it needs two distinct points)")
            return
        spline = SplineSamples(faces, bary, along / along[-1], np.array([0.0, 1.0]))
        splines, anchors = self.splines + [spline], np.append(self.anchors, [self.value, self.value])
        try:
            t.spline(splines, anchors, local=True)
        except ValueError as exc:
            state.say(f"weights spline refused: {exc}")
            return
        self.splines, self.anchors = splines, anchors
        state.say(f"isoline {len(splines)} of {t.prim.joint_names[t.joint]} at {self.value:.2f}")

    def _set_anchor(self, index: Any, iso: Any) -> None:
        """An anchor's new iso-value: the field re-evaluated through its anchor basis (ValueError when refused)."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.anchors.size:
            raise ValueError(f"anchor must be an index in [0, {self.anchors.size}) (the isolines' anchors), "
                             f"got {index!r}")
        if isinstance(iso, bool) or not isinstance(iso, (int, float)) or not 0.0 <= iso <= 1.0:
            raise ValueError(f"iso must be a number in [0, 1], got {iso!r}")
        anchors = self.anchors.copy()
        anchors[index] = float(iso)
        self.tool.set_iso(anchors, drag=("anchor", index))
        self.anchors = anchors

    def spline_overlay(self) -> list[dict[str, np.ndarray]]:
        """The selected joint's isolines where the skin is now (the window draws them): per isoline ``points``
        (N, 3) world points and ``anchors`` (2, 3) its anchors' world points with ``isos`` (2,) their values."""
        t = self.tool
        if t is None or not self.splines or not t.character.alive:
            return []
        verts = np.asarray(t.character.vertices()[t.prim.key], np.float64)
        out = []
        for i, sp in enumerate(self.splines):
            pts = np.einsum("nk,nkd->nd", sp.barycentrics, verts[t.prim.triangles[sp.faces]])
            ends = pts[[int(np.argmin(sp.along)), int(np.argmax(sp.along))]]
            out.append({"points": pts, "anchors": ends, "isos": self.anchors[2 * i:2 * i + 2].copy()})
        return out

    def _dab(self, hit: Any) -> None:
        t = self.tool
        try:
            t.paint(t.bind_point(hit), self.radius, self.value, self.mode, stroke=self._stroke)
        except ValueError as exc:
            self.editor.state.say(f"weights paint refused: {exc}")
