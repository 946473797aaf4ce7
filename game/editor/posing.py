"""The posing tool (TOOLS phase): two window strokes -> a line of action on the selected character.

The first finished stroke of the pose tool is the baseline, the second the offset (research 7.2). Both are
unprojected onto the posing plane -- through the skeleton's root (its top-most skin joint), parallel to the
image plane, then moved and turned by the editor settings ``plane_offset``, ``plane_turn``, ``plane_tilt`` -- and
handed to the line-of-action solver (engine/anim/posing.py through ``Character.apply_line_of_action``), with
the brush radius converted from window pixels to metres at the plane's centre and the frames' reference normal
of the authoring kit (the plane, the root, the unprojection, the pixel-to-metre conversion and the reference are
engine/authoring/'s, shared with the ``pose`` command, so a pair poses the same from either). The baseline
selects the joint chain it follows; the brush only decides which chain. The change to the character's pose
layer is one undoable command (:class:`game.editor.undo.SnapshotCommand` over the layer's rotations), so
undo restores the exact pose.

A pair that cannot pose (the baseline selects no joint, a stroke misses the plane) is refused with a message
in ``EditorState.messages``; the frame goes on and the strokes are dropped.

Strokes live in the world: the last pose's knots are kept as 3D points on the posing plane they were drawn
on (:class:`WorldStrokes`). When the view changes (an orbit, a pan, a zoom, the docked view resized), the
editable window strokes are projected again from those points, so they stay on the limb; a knot dragged after
that is unprojected onto the plane the pose was made on (not the one facing the new view), so the pose changes
only as the knot moves.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from engine.authoring.posing import (
    PosingPlane,
    brush_metres,
    frame_reference,
    posing_plane,
    skeleton_root,
    unproject_stroke,
)
from engine.authoring.view import unproject_points, window_points
from engine.ecs import World
from engine.frame import View
from engine.input.strokes import Stroke
from game.editor.state import EditorState
from game.editor.undo import CommandStack, SnapshotCommand

__all__ = ["PosingTool", "WorldStrokes", "view_key"]


#: What one undo step of the pose tool restores: the pose layer's rotations (None: no layer), the window
#: strokes of the last pose (their knots can be dragged), the rotations before that pose (the base a knot
#: drag re-solves from) and their knots in the world (:class:`WorldStrokes`).
PoseSnapshot = tuple[Any, Any, Any, Any]


def view_key(view: View) -> tuple[Any, ...]:
    """What window pixels of a world point depend on: the camera's view and projection, the frame's size."""
    cam, r = view.camera, view.renderer
    return (np.asarray(cam.view, np.float64).tobytes(), float(cam.fov_y), getattr(cam, "view_rect", None),
            int(r.width), int(r.height))


@dataclass(frozen=True)
class WorldStrokes:
    """The last pose's window strokes kept in the world: each stroke's knots unprojected onto ``plane`` (the
    posing plane they were drawn on), with the knots' times; ``posed`` is the view they were drawn in,
    ``shown`` the view the editable window strokes were last projected for."""

    knots: tuple[np.ndarray, np.ndarray]
    times: tuple[np.ndarray, np.ndarray]
    plane: PosingPlane
    posed: tuple[Any, ...]
    shown: tuple[Any, ...]

    @classmethod
    def lift(cls, pair: tuple[Stroke, Stroke], view: View, plane: PosingPlane) -> WorldStrokes:
        r = view.renderer
        knots = tuple(unproject_points(s.knots, view.camera, r.width, r.height, plane.pyrr,
                                       plane_name="the posing plane") for s in pair)
        key = view_key(view)
        return cls((knots[0], knots[1]), (pair[0].times[pair[0].kept], pair[1].times[pair[1].kept]), plane, key, key)

    def project(self, view: View) -> tuple[Stroke, Stroke] | None:
        """The window strokes through the knots as ``view`` shows them (None: a knot behind the camera or the
        projected stroke degenerate)."""
        from engine.input.strokes import StrokeError

        r = view.renderer
        out = []
        for k3, t in zip(self.knots, self.times):
            px = window_points(view.camera, r.width, r.height, k3)
            if np.isnan(px).any():
                return None
            try:
                out.append(Stroke.fit(px, t, epsilon=0.0, window_height=r.height))
            except StrokeError:
                return None
        return out[0], out[1]


class PosingTool:
    """The TOOLS-phase system of the pose tool. ``character()`` returns the Character to pose (the editor's
    selection) or None.

    Each pose is one undoable command; dragging a knot of the last pose's baseline or offset re-solves that
    pose from the rotations it started from (live, every frame of the drag), and the whole drag is one more
    undo step. Undo restores the exact pose layer and the strokes shown with it."""

    name = "pose_tool"

    def __init__(self, character: Callable[[], Any]) -> None:
        self.character = character
        #: the last solve (engine.anim.posing.LineOfAction), for drawing the selected joints
        self.last: Any = None
        #: the window strokes of the last pose (baseline, offset)
        self.last_pair: tuple[Stroke, Stroke] | None = None
        #: the pose layer's rotations before the last pose (None: no layer)
        self.base: np.ndarray | None = None
        #: the last pose's strokes in the world (they follow the view; None: no pose to adjust)
        self.world: WorldStrokes | None = None
        self._dragging = False

    def __call__(self, world: World) -> None:
        state = world.try_resource(EditorState)
        if state is None:
            return
        if state.knot_drag is None and not state.strokes and len(state.editable) == 2:
            self.follow_view(world, state)  # in every tool: an orbit with the orbit tool moves the view too
        if state.settings.tool != "pose":
            return
        if state.knots_moved and len(state.editable) == 2 and self.last_pair is not None:
            self.reshape(world, state)
        if state.knot_drag is None and (self._dragging or state.knots_moved):
            world.resource(CommandStack).close()  # the drag ended: it was one undo step
        self._dragging = state.knot_drag is not None
        for stroke in state.finished:
            state.strokes.append(stroke)
            if len(state.strokes) >= 2:
                baseline, offset = state.strokes[:2]
                state.strokes.clear()
                self.pose(world, state, baseline, offset)

    # -- undo states ---------------------------------------------------------------------------------------
    def _snapshot(self, ch: Any) -> PoseSnapshot:
        layer = ch.pose_layer
        return (None if layer is None else layer.rotation.copy(), self.last_pair, self.base, self.world)

    def _restore(self, ch: Any, state: EditorState, snap: PoseSnapshot) -> None:
        rotation, pair, base, world = snap
        ch.set_pose_layer(rotation)
        self.last_pair, self.base, self.world = pair, base, world
        state.editable[:] = list(pair) if pair is not None else []
        state.knot_drag = None

    def _solve(self, world: World, ch: Any, state: EditorState, baseline: Stroke, offset: Stroke,
               plane: PosingPlane | None = None) -> tuple[Any, PosingPlane]:
        """Unproject both window strokes onto ``plane`` (default: the posing plane for this view and the
        settings) and pose ``ch``; the solve and the plane (ValueError when refused)."""
        view = world.resource(View)
        w, h = view.renderer.width, view.renderer.height
        cam = view.camera
        plane = self.plane(ch, cam, state) if plane is None else plane
        b3, o3 = (unproject_stroke(s, cam, w, h, plane.pyrr) for s in (baseline, offset))
        radius = brush_metres(state.settings.brush_radius, cam, h, plane)
        res = ch.apply_line_of_action(b3, o3, brush_radius=radius, reference=frame_reference(b3, o3, plane))
        return res, plane

    @staticmethod
    def plane(ch: Any, camera: Any, state: EditorState) -> PosingPlane:
        """The posing plane of ``ch`` for the current camera and settings."""
        st = state.settings
        return posing_plane(skeleton_root(ch), camera, offset=st.plane_offset, turn=st.plane_turn,
                            tilt=st.plane_tilt)

    def _target(self, world: World, state: EditorState) -> Any:
        ch = self.character()
        if ch is None:
            state.say("pose: no character to pose")
        elif world.resource(View).renderer is None:
            state.say("pose: needs a renderer (window strokes)")
            return None
        return ch

    # -- edits ---------------------------------------------------------------------------------------------
    def pose(self, world: World, state: EditorState, baseline: Stroke, offset: Stroke) -> None:
        """Apply one baseline/offset pair of window strokes as an undoable edit (a message when refused)."""
        ch = self._target(world, state)
        if ch is None:
            return
        before = self._snapshot(ch)
        base = before[0]
        try:
            result, plane = self._solve(world, ch, state, baseline, offset)
            lifted = WorldStrokes.lift((baseline, offset), world.resource(View), plane)
        except ValueError as exc:  # StrokeError is a ValueError
            self._restore(ch, state, before)
            state.say(f"pose refused: {exc}")
            return
        self.last, self.last_pair, self.base, self.world = result, (baseline, offset), base, lifted
        state.editable[:] = [baseline, offset]
        undo = world.resource(CommandStack)
        undo.push(SnapshotCommand(f"pose {len(result.selected)} joints of {ch.name}",
                                  functools.partial(self._restore, ch, state), before, self._snapshot(ch)),
                  execute=False)
        state.say(f"posed {len(result.selected)} joints")

    def reshape(self, world: World, state: EditorState) -> None:
        """A knot of the last pose's strokes moved: pose again from the same base with the edited strokes."""
        ch = self._target(world, state)
        if ch is None:
            return
        before = self._snapshot(ch)
        baseline, offset = state.editable
        view = world.resource(View)
        # after the view changed, the knots go back onto the plane the pose was drawn on
        kept = self.world.plane if self.world is not None and self.world.posed != view_key(view) else None
        ch.set_pose_layer(self.base)
        try:
            result, plane = self._solve(world, ch, state, baseline, offset, kept)
            lifted = WorldStrokes.lift((baseline, offset), view, plane)
        except ValueError as exc:
            self._restore(ch, state, before)
            state.say(f"knot refused: {exc}")
            return
        if kept is not None:  # still the pose's plane, as drawn from the view the pose was made in
            lifted = replace(lifted, posed=self.world.posed if self.world is not None else lifted.posed)
        self.last, self.last_pair, self.world = result, (baseline, offset), lifted
        undo = world.resource(CommandStack)
        undo.push(SnapshotCommand(f"drag a knot of {ch.name}'s line of action",
                                  functools.partial(self._restore, ch, state), before, self._snapshot(ch),
                                  merge_key=("knots", ch.entity)), execute=False)

    def follow_view(self, world: World, state: EditorState) -> None:
        """The view changed since the editable strokes were projected: project them again from their knots in
        the world, so they stay on the limb (not an edit: the pose and the undo history stay)."""
        view = world.try_resource(View)
        if self.world is None or view is None or view.renderer is None or view.camera is None:
            return
        key = view_key(view)
        if key == self.world.shown:
            return
        pair = self.world.project(view)
        if pair is None:  # a knot behind the camera: keep the last projection until it is in front again
            return
        self.world = replace(self.world, shown=key)
        self.last_pair = pair
        state.editable[:] = list(pair)
