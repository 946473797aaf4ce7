"""The surface tools (TOOLS phase): strokes on the skin become spring-driven surface edits (research 5.2, 7.3,
7.4), live, undoable and recorded like every other editor edit.

* **bulge**: a left-drag on a character draws a stroke on its skin. While it is drawn, each frame's new window
  points (densified to one per pixel) are asked of the G-buffer with :meth:`engine.Session.pick_async`: the
  query is copied at the start of the next frame and read the frame after, so no frame waits for the GPU, and
  each sample is the (mesh, triangle, barycentric) the user saw under the pointer, also on a moving character.
  Once the last answer is in, the samples go through ``engine.authoring.surface.stroke_samples``' checks (ends
  trimmed; a stroke that leaves the surface, crosses meshes or lands on an unskinned mesh is refused with a
  message) and ``surface_edit`` builds the edit: the faces crossed give the kinematic vertices,
  ``surface_rings`` edges the passive ones, the ring outside the static ones; the kinematic vertices rise by
  the profile (``surface_profile`` "bulge" with the easing ``surface_ease`` -- "quadOut" is the research's
  parabola -- or a travelling "sine" of ``surface_waves`` / ``surface_speed``) along the surface normal at
  the stroke's middle, ``surface_height`` metres, with stiffness ``surface_stiffness``.
* **silhouette**: a left-drag beside an outline of the selected character is an accent stroke
  (``engine.authoring.silhouette.silhouette_edit``: the Laplacian edge filter of the last frame's G-buffer normals,
  masked by the mesh ids, finds the outline; the chain between the outline vertices nearest the stroke's ends
  moves onto it; on the gpu device the filter runs in a shader and only the outline pixels are read back).
  ``surface_solver`` "springs" hands the chain to the spring edit forces; "laplacian" spreads the chain's
  displacement over the region by Laplacian editing once (``silhouette_edit(smooth=True)``, CPU) and makes the
  whole region the edit's targets, so the springs hold the smooth outline and it follows the pose.
* **dragging the stroke as a handle** (bulge tool): a left press within ``surface_grab_px`` window pixels of
  the active bulge's stroke (as drawn now, on the deformed skin) grabs the stroke instead of drawing a new one.
  The pointer's ray meets a plane through the stroke's middle facing the camera; the drag's displacement on it
  (plus the bulge's lift at the press) becomes the edit's height and direction, so each kinematic target is
  its rest place + displacement * the profile's weight at its stroke parameter (the same profile code path as
  the slider), live every frame of the drag. The whole drag is one undo step (an undo mid-drag, or leaving the
  tool, ends it); a click on the stroke changes nothing. Pointer events are read from the editor's event
  queue, so a recording replays the drag.

Drawn strokes live in the world (issue 27 item 2): the active edit keeps its stroke in 3D -- a bulge stroke as
its surface samples (mesh, triangle, barycentric), evaluated on the deformed skin, a silhouette accent stroke as
the world points it was drawn at (on the plane facing the camera through the moved outline). The window draws
the stroke at its current projection (:meth:`SurfaceTool.stroke_window`), so it stays on the limb when the camera
orbits, and a press on it, where it is drawn now, grabs it as the handle.

Edits are stored relative to the vertices' attachment points, so they stay while the character walks. The
region of the active (last) edit is drawn in colour on the deformed mesh (``Character.show_region``: kinematic
green, passive blue, static red). Changing a surface setting (the panel's sliders, ``=`` / ``-`` for the
height, ``R`` / Shift+R for the rings) changes the active edit live; one slider drag is one undo step. Every
edit and every live change is a :class:`game.editor.undo.SnapshotCommand` over the character's edit stacks,
its deformer (the first edit switches the character to the spring deformer: edits are spring forces) and the
surface settings, so Ctrl+Z / Ctrl+Shift+Z restore them exactly, and a recording replays them.

Reading deformed vertices (to build an edit) waits for the frame's deformation once, when the edit is made; a
silhouette stroke reads the last frame's outline once, as the ``edit`` command does. Edits run in the GPU
spring stage or, on the cpu device, in the numpy spring reference.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.authoring.silhouette import silhouette_edit
from engine.authoring.surface import densify, stroke_samples, surface_edit
from engine.authoring.view import unproject_point, unproject_points, window_points
from engine.ecs import World
from engine.input.events import Buttons, EventQueue, PointerDown, PointerMove, PointerUp
from engine.input.rays import facing_plane
from game.editor.state import SURFACE_TOOLS, EditorSettings, EditorState, StrokeInProgress
from game.editor.undo import CommandStack, SnapshotCommand

__all__ = ["SurfaceTool", "ActiveEdit", "LIVE_SETTINGS", "SURFACE_SETTINGS", "surface_profile"]

#: The settings an edit is made from; changing one changes the active edit.
LIVE_SETTINGS = ("surface_profile", "surface_height", "surface_ease", "surface_waves", "surface_speed",
                 "surface_rings", "surface_stiffness")
#: Every surface setting (an undo step restores them all; the solver only matters for the next outline).
SURFACE_SETTINGS = (*LIVE_SETTINGS, "surface_solver")


def surface_profile(settings: EditorSettings) -> Any:
    """The engine.skinning.edits.Profile the settings describe (along the surface normal)."""
    from engine.skinning.edits import Profile

    return Profile(settings.surface_profile, settings.surface_height, settings.surface_ease, False, "normal",
                   settings.surface_waves, settings.surface_speed)


@dataclass(frozen=True)
class ActiveEdit:
    """The edit the surface settings act on: the character's ``entity``, the primitive ``key``, its ``index``
    in that primitive's edit stack, the ``tool`` that made it and, for a bulge, its stroke ``samples``
    (engine.authoring.surface.SurfaceSamples) and, for a laplacian silhouette edit, ``solved`` True (its targets
    are a solved region: only the stiffness changes live); for a silhouette edit, ``points``: its accent stroke
    in the world (on the plane facing the camera through the moved outline, as drawn)."""

    entity: int
    key: Any
    index: int
    tool: str
    samples: Any = None
    solved: bool = False
    #: a silhouette accent stroke's window samples lifted into the world (N, 3) when it was drawn
    points: np.ndarray | None = field(default=None, compare=False)


class _Answered:
    """The session as ``engine.authoring.surface.stroke_samples`` sees it, with the G-buffer's answers to the
    stroke's points already read (asynchronously): its checks run on them, nothing is read again."""

    def __init__(self, session: Any, hits: list[Any]) -> None:
        self.renderer = session.renderer
        self.meshes = session.meshes
        self._hits = hits

    def pick_many(self, points: Any, *, layer: str | None = None) -> list[Any]:
        if len(list(points)) != len(self._hits):  # the densified stroke is the one that was queried
            raise RuntimeError(f"{len(self._hits)} answers for {len(list(points))} stroke samples")
        return self._hits


@dataclass
class _StrokeJob:
    """A bulge stroke whose samples are being read through the G-buffer (one query per frame of drawing)."""

    drawing: StrokeInProgress | None
    points: list[tuple[float, float]] = field(default_factory=list)
    queries: list[Any] = field(default_factory=list)
    finished: bool = False


#: What one undo step restores: (deformer, {primitive: [SurfaceEdit, ...]}, active edit, surface settings).
SurfaceSnapshot = tuple[str, dict[Any, list[Any]], "ActiveEdit | None", dict[str, Any]]


@dataclass
class _Handle:
    """A drag of the active bulge's stroke: the ``press`` point (window pixels), the pyrr ``plane`` through the
    stroke's middle facing the camera, where the press's ray met it (``start``), the edit's world ``lift`` at
    the stroke's middle at the press (height * direction), the kinematic vertices' bone rotations ``rot``
    (K, 3, 3) at the press (a world displacement is encoded with them), the snapshot ``before`` the drag and
    the undo stack's change count at the press (an undo or redo mid-drag ends the drag)."""

    press: tuple[float, float]
    plane: np.ndarray
    start: np.ndarray
    lift: np.ndarray
    rot: np.ndarray
    rot_all: np.ndarray  # (V, 3, 3) every control point's, for the spread passive directions
    before: SurfaceSnapshot
    changes: int
    moved: bool = False


def _in_front(px: np.ndarray) -> np.ndarray:
    """The window points of those in front of the camera (the others are NaN rows)."""
    return px[~np.isnan(px).any(axis=1)]


def _polyline_distance(line: np.ndarray, p: np.ndarray) -> float:
    """Distance from ``p`` to the polyline through ``line`` (N, D) (inf for no points)."""
    if len(line) == 0:
        return float("inf")
    if len(line) == 1:
        return float(np.linalg.norm(line[0] - p))
    a, d = line[:-1], np.diff(line, axis=0)
    length2 = np.einsum("ij,ij->i", d, d)
    t = np.clip(np.einsum("ij,ij->i", p - a, d) / np.where(length2 > 0.0, length2, 1.0), 0.0, 1.0)
    return float(np.linalg.norm(a + t[:, None] * d - p, axis=1).min())


def _arc_middle(points: np.ndarray) -> np.ndarray:
    """The point halfway along the polyline ``points`` (N, 3) by arc length."""
    s = np.r_[0.0, np.cumsum(np.linalg.norm(np.diff(points, axis=0), axis=1))]
    if not s[-1] > 0.0:
        return np.asarray(points[0], np.float64)
    return np.array([np.interp(0.5 * s[-1], s, points[:, k]) for k in range(points.shape[1])])


class SurfaceTool:
    """The TOOLS-phase system of the bulge and silhouette tools on ``session`` (see the module docstring).
    ``character()`` returns the selected Character (the silhouette tool's target); a bulge stroke edits the
    character it is drawn on. ``active`` is the edit the settings act on; ``shown`` the (entity, primitive)
    whose region is drawn; ``waiting`` the strokes waiting a frame for their character's spring deformer."""

    name = "surface_tool"

    def __init__(self, session: Any, character: Callable[[], Any]) -> None:
        self.session = session
        self.character = character
        self.active: ActiveEdit | None = None
        self.shown: tuple[int, Any] | None = None
        #: (tool, samples or accent stroke, snapshot before the edit or None)
        self.waiting: list[tuple[str, Any, SurfaceSnapshot | None]] = []
        self._job: _StrokeJob | None = None
        self._seen: dict[str, Any] | None = None
        self._handle: _Handle | None = None
        #: the bulge stroke's world points and what they were read for (see :meth:`stroke_world`)
        self._world: tuple[Any, np.ndarray] | None = None

    def reset(self) -> None:
        """Forget the active edit, the strokes waiting and any drag (their characters were removed)."""
        self.active = self.shown = self._job = self._handle = self._world = None
        self.waiting.clear()

    # -- the frame ------------------------------------------------------------------------------------------
    def __call__(self, world: World) -> None:
        state = world.try_resource(EditorState)
        if state is None or self.session.renderer is None:
            return
        values = self._values(state.settings)
        previous, self._seen = self._seen, values
        if state.settings.tool not in SURFACE_TOOLS:
            self._job = None
            self.waiting.clear()
            self._cancel_handle(state)
            self._hide()
            return
        if state.settings.tool == "bulge":
            self._handle_input(state)
            self._bulge_input(state)
        else:
            self._cancel_handle(state)
            self._job = None
            self.waiting.extend(("silhouette", stroke, None) for stroke in state.finished)
        self._run_waiting(state)
        if previous is not None and any(values[k] != previous[k] for k in LIVE_SETTINGS):
            self._change(state, previous)
        if self.active is not None and self.shown is None:
            self._show()

    @staticmethod
    def _values(settings: EditorSettings) -> dict[str, Any]:
        return {k: getattr(settings, k) for k in SURFACE_SETTINGS}

    def _find(self, entity: int) -> Any:
        return next((c for c in self.session.characters if c.entity == entity), None)

    # -- bulge strokes: asynchronous G-buffer queries while drawing --------------------------------------------
    def _bulge_input(self, state: EditorState) -> None:
        job = self._job
        if state.finished:
            stroke = state.finished[-1]
            if job is None or job.finished:
                job = _StrokeJob(None)
            self._query(job, [tuple(p) for p in np.asarray(stroke.samples, np.float64)])
            job.finished = True
            self._job = job
        elif state.drawing is not None:
            if job is None or job.drawing is not state.drawing:
                job = self._job = _StrokeJob(state.drawing)
            self._query(job, list(state.drawing.points))
        elif job is not None and not job.finished:
            self._job = None  # dropped (Esc) or refused as a stroke (a message says why)
        job = self._job
        if job is not None and job.finished and all(q.ready for q in job.queries):
            self._job = None
            self._samples(state, job)

    def _query(self, job: _StrokeJob, points: list[tuple[float, float]]) -> None:
        """Ask the G-buffer about the points not asked yet (the stroke densified to one sample per pixel, as
        ``stroke_samples`` densifies it), clipped into the frame."""

        w, h = self.session.renderer.width, self.session.renderer.height
        pts = [(min(max(float(x), 0.0), w - 1.0), min(max(float(y), 0.0), h - 1.0)) for x, y in points]
        done = len(job.points)
        if len(pts) <= done:
            return
        new = densify(np.asarray(pts)) if done == 0 else densify(np.asarray(pts[done - 1:]))[1:]
        job.points = pts
        if len(new):
            job.queries.append(self.session.pick_async(new))

    def _samples(self, state: EditorState, job: _StrokeJob) -> None:

        hits = [hit for q in job.queries for hit in q.result()]
        try:
            samples = stroke_samples(_Answered(self.session, hits), np.asarray(job.points), "bulge")
        except ValueError as exc:
            state.say(f"bulge refused: {exc}")
            return
        self.waiting.append(("bulge", samples, None))

    def _run_waiting(self, state: EditorState) -> None:
        pending, self.waiting = self.waiting, []
        for tool, what, before in pending:
            ch = self._find(what.entity) if tool == "bulge" else self.character()
            if ch is None:
                state.say(f"{tool}: no character to edit")
                continue
            if before is None:
                before = self._snapshot(ch, state)
            try:
                if not self._spring(ch, state, tool):
                    self.waiting.append((tool, what, before))  # the next frame deforms it with springs
                    continue
                if tool == "bulge":
                    label = self._add_bulge(ch, state, what)
                else:
                    label = self._add_silhouette(ch, state, what)
            except ValueError as exc:
                self._restore(ch, state, before)
                state.say(f"{tool} refused: {exc}")
                continue
            self._commit(ch, state, before, label)

    def _add_bulge(self, ch: Any, state: EditorState, samples: Any) -> str:

        st = state.settings
        edit = surface_edit(ch, samples, rings=st.surface_rings, profile=surface_profile(st),
                            stiffness=st.surface_stiffness, name=f"{st.surface_profile} {self._count(ch) + 1}")
        ch.add_edit(samples.key, edit)
        self.active = ActiveEdit(ch.entity, samples.key, len(ch.edits[samples.key]) - 1, "bulge", samples)
        state.say(f"{edit.name}: {edit.kinematic.size} kinematic, {edit.passive.size} passive, "
                  f"{edit.static.size} static")
        return f"{edit.name} on {ch.name}"

    # -- the stroke dragged as a handle --------------------------------------------------------------------
    def _handle_input(self, state: EditorState) -> None:
        """This frame's left-button pointer events: a press on the active bulge's stroke grabs it (the stroke
        the input system started drawing from that press is dropped), moves drag it, the release commits."""
        world = self.session.world
        queue = world.try_resource(EventQueue)
        if queue is None:
            return
        undo = world.resource(CommandStack)
        h = self._handle
        if h is not None and undo.changes != h.changes:  # an undo or redo mid-drag: the stack's state wins
            h = self._handle = None
        presses: list[tuple[float, float]] = []
        for e in queue.frame:
            if isinstance(e, PointerDown) and e.button & Buttons.LEFT:
                h = self._handle = self._grab(state, e.x, e.y)
                if h is not None:
                    presses.append(h.press)
            elif h is None:
                continue
            elif isinstance(e, PointerMove) and e.buttons & Buttons.LEFT:
                self._drag(state, h, e.x, e.y)
            elif isinstance(e, PointerUp) and e.button & Buttons.LEFT:
                self._drag(state, h, e.x, e.y)
                self._release(state, h)
                h = self._handle = None
        if presses:  # those presses drag the handle: they draw no stroke
            def grabbed(p: Any) -> bool:
                return any(float(np.hypot(p[0] - x, p[1] - y)) < 1e-6 for x, y in presses)

            if state.drawing is not None and grabbed(state.drawing.points[0]):
                state.drawing = None
            state.finished[:] = [s for s in state.finished if not grabbed(s.samples[0])]

    def _grab(self, state: EditorState, x: float, y: float) -> _Handle | None:
        """A handle when (x, y) is within ``surface_grab_px`` of the active bulge's stroke, else None."""
        found = self._active_edit()
        if found is None:
            return None
        a, ch, stack = found
        edit = stack.edits[a.index]
        if (a.tool != "bulge" or a.samples is None or edit.profile is None or edit.direction_local is None
                or edit.profile.direction != "normal"):
            return None
        cam, r = self.session.camera, self.session.renderer
        pts = np.asarray(a.samples.positions(ch), np.float64)  # the stroke as drawn now, on the deformed skin
        if _polyline_distance(_in_front(window_points(cam, r.width, r.height, pts)), np.array([x, y])) \
                > state.settings.surface_grab_px:
            return None
        plane = facing_plane(_arc_middle(pts), cam.eye)
        start = unproject_point(x, y, cam, r.width, r.height, plane)
        if start is None:
            return None
        rot_all = np.asarray(ch.edit_frame(a.key)[1], np.float64)
        rot = rot_all[edit.kinematic]
        n = np.einsum("kij,kj->ki", rot, edit.direction_local).mean(axis=0)
        n /= max(float(np.linalg.norm(n)), 1e-12)
        return _Handle((float(x), float(y)), plane, start, edit.profile.height * n, rot, rot_all,
                       self._snapshot(ch, state), self.session.world.resource(CommandStack).changes)

    def _drag(self, state: EditorState, h: _Handle, x: float, y: float) -> None:
        """The pointer at (x, y): the edit's height and direction become the lift at the press plus the drag's
        displacement on the handle's plane (the height clamped to the ``surface_height`` range)."""
        found = self._active_edit()
        cam, r = self.session.camera, self.session.renderer
        hit = unproject_point(x, y, cam, r.width, r.height, h.plane)
        if found is None or hit is None:
            return
        a, _, stack = found
        edit = stack.edits[a.index]
        v = h.lift + (hit - h.start)
        st = state.settings
        st.nudge(surface_height=float(np.linalg.norm(v)) - st.surface_height)  # clamped to its range
        if st.surface_height > 1e-9:  # R^T v per vertex (kinematic, and the spread passive ones)
            edit = edit.redirected(v / np.linalg.norm(v), h.rot_all)
        stack.edits[a.index] = dataclasses.replace(
            edit, profile=dataclasses.replace(edit.profile, height=st.surface_height))
        self._seen = self._values(st)  # the edit already has the new height: no live change to apply
        h.moved = True

    def _release(self, state: EditorState, h: _Handle) -> None:
        found = self._active_edit()
        if found is None or not h.moved:  # a click on the stroke changes nothing
            return
        a, ch, stack = found
        self._commit(ch, state, h.before, f"drag {stack.edits[a.index].name} of {ch.name}")

    def _cancel_handle(self, state: EditorState) -> None:
        """Leaving the bulge tool mid-drag puts the edit back as it was at the press."""
        h, self._handle = self._handle, None
        found = self._active_edit()
        if h is not None and h.moved and found is not None:
            self._restore(found[1], state, h.before)

    # -- silhouette strokes ---------------------------------------------------------------------------------
    def _add_silhouette(self, ch: Any, state: EditorState, stroke: Any) -> str:

        st = state.settings
        solved = st.surface_solver == "laplacian"
        key, edit = silhouette_edit(self.session, ch, np.asarray(stroke.samples, np.float64), rings=st.surface_rings,
                                    stiffness=st.surface_stiffness, name=f"outline {self._count(ch) + 1}",
                                    smooth=solved)
        ch.add_edit(key, edit)
        self.active = ActiveEdit(ch.entity, key, len(ch.edits[key]) - 1, "silhouette", None, solved,
                                 self._lift_accent(ch, key, edit, np.asarray(stroke.samples, np.float64)))
        state.say(f"{edit.name}: {edit.kinematic.size} moved, {edit.passive.size} passive ({st.surface_solver})")
        return f"{edit.name} of {ch.name} ({st.surface_solver})"

    def _lift_accent(self, ch: Any, key: Any, edit: Any, window: np.ndarray) -> np.ndarray | None:
        """The accent stroke's window points on the plane facing the camera through the moved outline vertices
        (as the character stood when it was drawn); None when the view grazes that plane."""
        cam, r = self.session.camera, self.session.renderer
        x = np.asarray(ch.vertices()[key], np.float64)[np.asarray(ch.topology(key).display_of_control)]
        plane = facing_plane(x[np.asarray(edit.kinematic)].mean(axis=0), cam.eye)
        try:
            return unproject_points(window, cam, r.width, r.height, plane, what="accent point",
                                    plane_name="the plane facing the camera")
        except ValueError:
            return None

    # -- the drawn stroke in the world ---------------------------------------------------------------------
    def stroke_world(self) -> np.ndarray | None:
        """The active edit's drawn stroke in the world now (N, 3), or None: a bulge stroke's samples evaluated on
        the character's deformed skin (read again only when the fixed step, the undo stack or the edit changed,
        so a still scene reads nothing per frame), a silhouette accent stroke's points as drawn."""
        found = self._active_edit()
        if found is None:
            return None
        a, ch, stack = found
        if a.tool != "bulge":
            return a.points
        if a.samples is None:
            return None
        token = (id(a), id(stack.edits[a.index]), self.session.clock.step_count,
                 self.session.world.resource(CommandStack).changes)
        if self._world is None or self._world[0] != token:
            if self.session.pose_changed:
                # reading now would run a frame from the drawing (consuming that frame's events): the last
                # points of this stroke, if any, are drawn until the next frame has deformed the skin
                same = self._world is not None and self._world[0][:2] == token[:2]
                return self._world[1] if same and self._world is not None else None
            self._world = (token, np.asarray(a.samples.positions(ch), np.float64))
        return self._world[1]

    def stroke_window(self) -> np.ndarray | None:
        """The active edit's drawn stroke as the current view shows it (window pixels (N, 2), the points behind
        the camera left out), or None: projected every time from :meth:`stroke_world`, so it stays on the limb
        when the camera orbits, pans or zooms."""
        pts = self.stroke_world()
        r = self.session.renderer
        if pts is None or r is None:
            return None
        return _in_front(window_points(self.session.camera, r.width, r.height, pts))

    # -- shared --------------------------------------------------------------------------------------------
    @staticmethod
    def _count(ch: Any) -> int:
        return sum(len(stack) for stack in ch.edits.values())

    def _spring(self, ch: Any, state: EditorState, tool: str) -> bool:
        """True when ``ch`` deforms with springs and its last frame is up to date (an edit is measured on the
        deformed mesh); otherwise switch it (ValueError when refused), and the edit waits a frame."""
        if ch.deformer != "spring":
            ch.set_deformer("spring")
            state.say(f"{tool}: {ch.name} now deforms with springs")
            return False
        # a pose changed this frame (an action before the tools ran): reading vertices now would deform again
        return not getattr(self.session, "_dirty", False)

    def _snapshot(self, ch: Any, state: EditorState) -> SurfaceSnapshot:
        edits = {k: list(stack) for k, stack in ch.edits.items() if len(stack)}
        return (ch.deformer, edits, self.active, self._values(state.settings))

    def _restore(self, ch: Any, state: EditorState, snap: SurfaceSnapshot) -> None:
        deformer, edits, active, values = snap
        ch.clear_edits()
        if ch.deformer != deformer:
            ch.set_deformer(deformer)
        for key, lst in edits.items():
            for e in lst:
                ch.add_edit(key, e)
        state.settings.update(**values)
        self._seen = dict(values)
        self.active = active
        self._hide()

    def _commit(self, ch: Any, state: EditorState, before: SurfaceSnapshot, label: str,
                merge_key: Any = None) -> None:
        undo = self.session.world.resource(CommandStack)
        undo.push(SnapshotCommand(label, functools.partial(self._restore, ch, state), before,
                                  self._snapshot(ch, state), merge_key=merge_key), execute=False)
        self._hide()

    def _active_edit(self) -> tuple[ActiveEdit, Any, Any] | None:
        """(active edit, its Character, its primitive's EditStack), or None when it is gone."""
        a = self.active
        ch = None if a is None else self._find(a.entity)
        stack = None if a is None or ch is None else ch.edits.get(a.key)
        if a is None or stack is None or a.index >= len(stack):
            return None
        return a, ch, stack

    def _respread(self, ch: Any, a: ActiveEdit, edit: Any, changes: dict[str, Any], rings: int) -> Any:
        """The active bulge rebuilt over its new region (rings changed) on the surface without it (its encoded
        rest places, `SurfaceEdit.rest_places`), with the new settings and the edit's own lift direction."""
        assert a.samples is not None
        attach, rot = ch.edit_frame(a.key)
        topo = ch.topology(a.key)
        x = np.asarray(ch.vertices()[a.key], np.float64)[np.asarray(topo.display_of_control)]
        n = np.einsum("kij,kj->ki", np.asarray(rot)[edit.kinematic], edit.direction_local).mean(axis=0)
        new = surface_edit(ch, a.samples, rings=rings, profile=changes["profile"],
                           stiffness=changes["stiffness"], keys=edit.keys, name=edit.name,
                           rest=edit.rest_places(x, attach, rot))
        length = float(np.linalg.norm(n))
        return new.redirected(n / length, rot) if edit.profile.direction == "normal" and length > 0 else new

    def _change(self, state: EditorState, previous: dict[str, Any]) -> None:
        """A surface setting changed: the active edit takes it. Changes of the same settings of the same edit
        fold into one undo step until the stack is closed (a slider released, a stroke, a key nudge)."""
        from engine.skinning import roi

        found = self._active_edit()
        if found is None:
            return
        a, ch, stack = found
        st = state.settings
        before = self._snapshot(ch, state)
        before = (before[0], before[1], before[2], previous)
        edit = stack.edits[a.index]
        try:
            changes: dict[str, Any] = {"stiffness": st.surface_stiffness}
            if edit.profile is not None:
                changes["profile"] = surface_profile(st)
            if not a.solved:
                region = roi.region_around(ch.topology(a.key), edit.kinematic, rings=st.surface_rings)
                changes.update(passive=region.passive, static=region.static)
            if edit.spreads and a.samples is not None and not np.array_equal(changes.get("passive", edit.passive),
                                                                             edit.passive):
                stack.edits[a.index] = self._respread(ch, a, edit, changes, st.surface_rings)  # a new spread
            else:
                stack.edits[a.index] = dataclasses.replace(edit, **changes)
        except ValueError as exc:
            state.settings.update(**previous)
            self._seen = previous
            state.say(f"{edit.name}: {exc}")
            return
        changed = tuple(k for k in LIVE_SETTINGS if previous[k] != getattr(st, k))
        self._commit(ch, state, before, f"{edit.name} of {ch.name}: {', '.join(changed)}",
                     merge_key=("surface", ch.entity, a.key, a.index, changed))

    # -- region display ------------------------------------------------------------------------------------
    def _show(self) -> None:
        from engine.skinning import roi

        found = self._active_edit()
        if found is None:
            return
        a, ch, stack = found
        e = stack.edits[a.index]
        ch.show_region(roi.Region(e.kinematic, e.passive, e.static, np.zeros(0, np.int32)), primitive=a.key)
        self.shown = (ch.entity, a.key)

    def _hide(self) -> None:
        if self.shown is None:
            return
        (entity, key), self.shown = self.shown, None
        ch = self._find(entity)
        if ch is not None:
            ch.show_region(None, primitive=key)
