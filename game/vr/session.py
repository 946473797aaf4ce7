"""The VR session (research 7.5): a VR device feeding the one event model, the VR tools over the one frame, and
the stereo frame.

Each displayed frame: the device's ``wait_poses`` gives one :class:`~engine.input.events.TrackedSample` per
tracked device (head, left, right controller) and the script's actions; they are pushed into the session's
event queue, and :meth:`engine.Session.frame` runs the one schedule: the VR tools system (TOOLS phase) reads
them, then animation, skeleton and deformation run once, and the stereo system (RENDER phase) renders the
G-buffer and composes once per eye into the eye textures (two passes, see engine/render/stereo.py), each eye
under its own profiler scope (``vr eye left`` / ``vr eye right``); the device then gets both textures.

Tools (the right controller draws; its trigger value >= 0.5 holds a stroke, sampled every frame):

* ``pose``: line of action (research 7.2) directly in 3D: the first stroke is the baseline, the second the
  offset; both are world strokes, RDP-reduced at 0.01 m times the world scale, posed through
  :meth:`engine.session.Character.apply_line_of_action` with :func:`engine.authoring.posing.frame_reference`,
  exactly as the ``pose`` command poses world strokes (the same world strokes give the same pose).
* ``bulge``: while the stroke is drawn the controller camera (engine/render/probe.py, ``probe_size`` pixels
  square) looks along the controller's -Z axis and reads the surface under its centre; the samples become the
  desktop's surface stroke (:class:`engine.authoring.surface.SurfaceSamples`) and
  :func:`engine.authoring.surface.surface_edit` builds the bulge (the script's [bulge] settings); the first
  edit switches the character to the spring deformer, as the editor does. A short haptic pulse marks the
  first sample that lands on the skin.
* ``silhouette``: an accent stroke drawn in the air beside an outline as the left eye sees it (research 7.3):
  the left eye's G-buffer is drawn again, the stroke projected into it and
  :func:`engine.authoring.silhouette.silhouette_edit` (the desktop's) moves the outline onto it.
* ``orbit`` draws nothing (navigation is the grips').
* ``undo`` / ``redo`` actions step back and forth through poses and edits.

The hand menu (game/vr/hand_menu.py: an imgui panel on a quad riding on the left controller) switches tools and
sets the active tool's parameters; the right controller points at it and its trigger clicks.

Navigation: both grips held grab the world: the tracking-to-world transform follows the hands (move, turn
about the vertical, scale kept between 0.1x and 10x), so a script without grips draws in world coordinates. One
grip with its stick pushed moves: the LEFT grip flies (:data:`FLY_SPEED`); the RIGHT grip aims a teleport: while
its stick is pushed (at least :data:`STICK_DOWN` from the centre) a parabola leaves the right controller along its
pointing direction (:func:`teleport_arc`: launch speed :data:`TELEPORT_SPEED`, gravity 9.81, both scaled with the
world) and shows as a tube; releasing the stick (or the grip) moves the head, horizontally, to where the arc
meets the ground (world y = 0); an arc that never lands moves nothing. A controller's primary button pressed
undoes, its menu button redoes.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.ecs.schedule import Phase
from engine.input.events import Action, TrackedSample, VRButtons
from engine.input.vr import EyeGeometry, VRDevice, VRFrame, pose_matrix
from engine.profile.stats import cpu_scope

__all__ = ["VRSession", "bulge_profile", "TOOLS", "STROKE_EPSILON", "TRIGGER_DOWN", "DEFAULT_BRUSH_RADIUS", "VRStroke",
           "teleport_arc", "FLY_SPEED", "TELEPORT_SPEED", "STICK_DOWN"]

log = logging.getLogger(__name__)

TOOLS = ("pose", "bulge", "silhouette", "orbit")
#: RDP epsilon of a 3D stroke at world scale 1 (research 7.1: 0.01 m for a 1 m^3 volume)
STROKE_EPSILON = 0.01
TRIGGER_DOWN = 0.5
DEFAULT_BRUSH_RADIUS = 0.15
_SCALE_RANGE = (0.1, 10.0)
#: flying speed (tracking metres per second) at full stick with one grip held
FLY_SPEED = 1.5
#: launch speed (tracking metres per second) of the teleport parabola
TELEPORT_SPEED = 6.0
#: the stick counts as pushed from this distance from its centre
STICK_DOWN = 0.5
_GRAVITY = 9.81
_ARC_STEP = 1.0 / 60.0  # seconds between the arc's samples
_ARC_STEPS = 240        # at most 4 s of flight


def teleport_arc(origin: np.ndarray, direction: np.ndarray, scale: float = 1.0,
                 ground: float = 0.0) -> tuple[np.ndarray, np.ndarray | None]:
    """The teleport parabola from ``origin`` along ``direction`` (world space; launch speed TELEPORT_SPEED and
    gravity 9.81 m/s^2, both times the world ``scale``): (its points (N, 3) up to the landing, the landing
    point on the plane y = ``ground`` or None when it does not land within 4 s of flight)."""
    p0 = np.asarray(origin, np.float64)
    d = np.asarray(direction, np.float64)
    v = d / max(float(np.linalg.norm(d)), 1e-12) * TELEPORT_SPEED * scale
    t = np.arange(_ARC_STEPS + 1) * _ARC_STEP
    pts = p0 + v * t[:, None]
    pts[:, 1] -= 0.5 * _GRAVITY * scale * t * t
    below = np.flatnonzero(pts[:, 1] <= ground)
    if p0[1] <= ground or not len(below):
        return pts, None
    k = int(below[0])
    a, b = pts[k - 1], pts[k]
    u = (a[1] - ground) / (a[1] - b[1])  # crossing the plane between samples k-1 and k
    land = a + (b - a) * u
    land[1] = ground
    return np.vstack([pts[:k], land]), land


@dataclass
class VRStroke:
    """A stroke being drawn: world points and their times, and (bulge) the controller camera's hits."""

    tool: str
    points: list[np.ndarray] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    hits: list[Any] = field(default_factory=list)
    snapped: bool = False


class VRSession:
    """VR over an :class:`engine.Session` holding one character (see the module docstring).

    ``session`` must render at the eyes' size (``device.geometry``); ``recorder``: an
    :class:`engine.input.record.Recorder` that gets every frame's events."""

    def __init__(self, session: Any, character: Any, device: VRDevice, *, brush_radius: float = DEFAULT_BRUSH_RADIUS,
                 bulge: dict[str, Any] | None = None, probe_size: int = 16, recorder: Any = None,
                 tracking_to_world: np.ndarray | None = None, hand_menu: bool = True) -> None:
        from engine.render.probe import ProbeRenderer
        from engine.render.stereo import StereoTargets

        self.s = session
        self.ch = character
        self.device = device
        self.geometry: EyeGeometry = device.geometry
        self.brush_radius = float(brush_radius)
        self.bulge = dict(bulge or {})
        self.tracking_to_world = np.eye(4) if tracking_to_world is None else np.asarray(tracking_to_world, np.float64)
        self.tool = "pose"
        self.recorder = recorder
        renderer = session.require_renderer()
        if (renderer.width, renderer.height) != (self.geometry.width, self.geometry.height):
            session.resize(self.geometry.width, self.geometry.height)
        self.targets = StereoTargets(session.resources, self.geometry.width, self.geometry.height)
        self.probe = ProbeRenderer(renderer, probe_size)
        from game.vr.tubes import StrokeTubes

        self.tubes = StrokeTubes(renderer)
        from game.vr.hand_menu import HandMenu

        self.menu = HandMenu(self, TOOLS) if hand_menu else None
        self.samples: dict[str, TrackedSample] = {}
        self.stroke: VRStroke | None = None
        self.baseline: Any = None  # the pose tool's baseline stroke, waiting for its offset
        self.strokes: list[tuple[str, Any]] = []  # every finished stroke: (role, world Stroke)
        self.undo_stack: list[tuple[str, Any]] = []
        self.redo_stack: list[tuple[str, Any]] = []
        self.eye_views = np.stack([np.eye(4, dtype=np.float32)] * 2)
        self.eye_projections = np.stack([self.geometry.projection(0), self.geometry.projection(1)])
        self.frames = 0
        self._grab: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        #: the teleport being aimed (the right grip with its stick pushed): where its arc lands, or None
        self.teleport_target: np.ndarray | None = None
        self._aiming = False
        self._dt = 1.0 / float(device.fps)
        #: False: the VR systems skip (the session runs as a plain one; bench vr's mono case)
        self.active = True
        session.add_system(Phase.TOOLS, self._tools_system, name="vr_tools")
        session.add_system(Phase.RENDER, self._stereo_system, name="vr_stereo")

    # -- the loop ----------------------------------------------------------------------------------------
    def frame(self, actions: list[str] | None = None) -> bool:
        """Run one displayed frame (False: the device has no more frames)."""
        f: VRFrame | None = self.device.wait_poses()
        if f is None:
            return False
        events: list[Any] = [f.samples[d] for d in ("head", "left", "right") if d in f.samples]
        events += [Action(f.t, "vr", {"name": a}) for a in (actions or [])]
        self.run_events(events)
        return True

    def run_events(self, events: list[Any]) -> None:
        """One frame from its events (a device's samples and actions, or a recording's)."""
        self.s.events.extend(events)
        if self.recorder is not None:
            self.recorder.frame(events, self._dt)
        self.s.frame(self._dt, render=False, interpolate=False)
        self.device.submit(self.targets.textures[0], self.targets.textures[1])
        self.frames += 1

    def finish(self) -> None:
        """End the run: a stroke still held is finished as if its trigger were released."""
        if self.stroke is not None:
            self._end_stroke()

    def release(self) -> None:
        if self.menu is not None:
            self.menu.release()
        self.tubes.release()
        self.probe.release()
        self.targets.release()

    # -- poses of the devices ------------------------------------------------------------------------------
    def world_pose(self, device: str) -> np.ndarray | None:
        """The device's 4x4 pose in world space (None: not tracked)."""
        smp = self.samples.get(device)
        if smp is None:
            return None
        return self.tracking_to_world @ pose_matrix(smp.position, smp.orientation)

    @property
    def world_scale(self) -> float:
        return float(np.cbrt(abs(np.linalg.det(self.tracking_to_world[:3, :3]))))

    # -- systems -------------------------------------------------------------------------------------------
    def _tools_system(self, world: Any) -> None:
        if not self.active:
            return
        before = {h: (s.controls if s is not None else VRButtons.NONE)
                  for h, s in ((h, self.samples.get(h)) for h in ("left", "right"))}
        for e in self.s.events.frame:
            if isinstance(e, TrackedSample):
                self.samples[e.device] = e
            elif isinstance(e, Action) and e.name == "vr":
                self._action(str(e.args.get("name", "")))
        for hand, held in before.items():  # buttons pressed this frame: primary undoes, menu redoes
            smp = self.samples.get(hand)
            pressed = (smp.controls & ~held) if smp is not None else VRButtons.NONE
            if pressed & VRButtons.PRIMARY:
                self._action("undo")
            if pressed & VRButtons.MENU:
                self._action("redo")
        self._navigate()
        right = self.samples.get("right")
        on_menu = False
        if self.menu is not None:
            with cpu_scope("vr hand menu"):
                on_menu = self.menu.update(right, self._dt)
            for name, value in self.menu.take_actions():
                self._action(name, value)
        drawing = right is not None and right.pressure >= TRIGGER_DOWN and self._grab is None
        drawing = drawing and not (on_menu and self.stroke is None)  # the trigger clicks the menu instead
        if drawing:
            assert right is not None
            if self.stroke is None:
                self.stroke = VRStroke(self.tool)
            self._sample_stroke(right)
        elif self.stroke is not None:
            self._end_stroke()

    def _stereo_system(self, world: Any) -> None:
        head = self.samples.get("head")
        if head is None or not self.active:
            return
        r = self.s.renderer
        if (r.width, r.height) != (self.geometry.width, self.geometry.height):  # a mirror window was resized
            r.resize(self.geometry.width, self.geometry.height)
        hp = pose_matrix(head.position, head.orientation)
        for eye, label in ((0, "vr eye left"), (1, "vr eye right")):
            with cpu_scope(label):
                view = self.geometry.view(eye, hp, self.tracking_to_world)
                self.eye_views[eye] = view
                from engine.render.stereo import EyeCamera

                r.render(EyeCamera(view, self.eye_projections[eye]))
                self.targets.capture(eye, r)

    # -- actions, navigation ---------------------------------------------------------------------------
    def _action(self, name: str, value: Any = None) -> None:
        if name == "set:brush_radius":
            self.brush_radius = float(value)
        elif name == "set:bulge.height":
            self.bulge["height"] = float(value)
        elif name == "set:bulge.rings":
            self.bulge.pop("radius", None)
            self.bulge["rings"] = int(value)
        elif name.startswith("tool:"):
            tool = name.split(":", 1)[1]
            if tool not in TOOLS:
                raise ValueError(f"unknown VR tool {tool!r}; valid: {', '.join(TOOLS)}")
            if self.stroke is not None:
                self._end_stroke()
            self.tool = tool
            self.baseline = None
        elif name == "undo":
            self._undo(self.undo_stack, self.redo_stack)
        elif name == "redo":
            self._undo(self.redo_stack, self.undo_stack)
        else:
            raise ValueError(f"unknown VR action {name!r}")

    def _navigate(self) -> None:
        """Both grips: grab the world (see the module docstring)."""
        hands = [self.samples.get(h) for h in ("left", "right")]
        held = all(h is not None and h.controls & VRButtons.GRIP for h in hands)
        if not held:
            self._grab = None
            self._fly(hands)
            self._teleport(hands)
            return
        self._cancel_teleport()
        pa, pb = (np.asarray(h.position, np.float64) for h in hands)  # type: ignore[union-attr]
        if self._grab is None:
            t = self.tracking_to_world
            wa, wb = (t @ np.append(pa, 1.0))[:3], (t @ np.append(pb, 1.0))[:3]
            self._grab = (wa, wb, t.copy())
            return
        wa, wb, t0 = self._grab
        dt_, dw = pb - pa, wb - wa
        lt, lw = float(np.linalg.norm(dt_)), float(np.linalg.norm(dw))
        if lt < 1e-6 or lw < 1e-6:
            return
        base = float(np.cbrt(abs(np.linalg.det(t0[:3, :3]))))
        s = float(np.clip(lw / lt, _SCALE_RANGE[0] * base, _SCALE_RANGE[1] * base))
        yaw = math.atan2(dw[0], dw[2]) - math.atan2(dt_[0], dt_[2])
        c, si = math.cos(yaw), math.sin(yaw)
        rot = np.array([[c, 0.0, si], [0.0, 1.0, 0.0], [-si, 0.0, c]])
        m = np.eye(4)
        m[:3, :3] = rot * s
        m[:3, 3] = (wa + wb) / 2.0 - m[:3, :3] @ ((pa + pb) / 2.0)
        self.tracking_to_world = m

    def _fly(self, hands: list[TrackedSample | None]) -> None:
        """The left grip alone held and its stick pushed: fly along the head's horizontal forward (stick y) and
        sideways (stick x), FLY_SPEED tracking metres per second (scaled with the world)."""
        head = self.samples.get("head")
        left, right = hands
        if head is None or left is None or not left.controls & VRButtons.GRIP or left.axis == (0.0, 0.0):
            return
        if right is not None and right.controls & VRButtons.GRIP:
            return
        m = pose_matrix(head.position, head.orientation)
        fwd, side = -m[:3, 2], m[:3, 0]
        fwd[1] = side[1] = 0.0
        fwd /= max(float(np.linalg.norm(fwd)), 1e-9)
        side /= max(float(np.linalg.norm(side)), 1e-9)
        x, y = left.axis
        step = (fwd * y + side * x) * FLY_SPEED * self._dt
        self.tracking_to_world[:3, 3] += self.tracking_to_world[:3, :3] @ step

    def _teleport(self, hands: list[TrackedSample | None]) -> None:
        """The right grip alone held with its stick pushed aims (the arc shows); released, the head moves to
        where the arc lands (see the module docstring)."""
        left, right = hands
        aiming = (right is not None and bool(right.controls & VRButtons.GRIP)
                  and not (left is not None and left.controls & VRButtons.GRIP)
                  and float(np.hypot(*right.axis)) >= STICK_DOWN)
        if aiming:
            pose = self.world_pose("right")
            assert pose is not None
            pts, self.teleport_target = teleport_arc(pose[:3, 3], -pose[:3, 2], self.world_scale)
            self._aiming = True
            if self.stroke is None:  # a stroke being drawn keeps the live tube
                self.tubes.show_live(pts, "offset" if self.teleport_target is not None else "baseline")
            return
        if not self._aiming:
            return
        target, head = self.teleport_target, self.world_pose("head")
        self._cancel_teleport()
        if target is None or head is None:
            return
        move = target - head[:3, 3]
        move[1] = 0.0  # horizontally: the head keeps its height above the ground
        self.tracking_to_world[:3, 3] += move

    def _cancel_teleport(self) -> None:
        if self._aiming and self.stroke is None:
            self.tubes.hide_live()
        self._aiming = False
        self.teleport_target = None

    # -- strokes ---------------------------------------------------------------------------------------------
    def _sample_stroke(self, right: TrackedSample) -> None:
        assert self.stroke is not None
        pose = self.tracking_to_world @ pose_matrix(right.position, right.orientation)
        self.stroke.points.append(pose[:3, 3].copy())
        self.stroke.times.append(float(right.t))
        if self.stroke.tool in ("bulge", "silhouette"):
            from engine.render.probe import ProbeCamera

            with cpu_scope("vr controller camera"):
                hit = self.probe.centre(ProbeCamera(pose), entities=(self.ch.entity,))
            self.stroke.hits.append(hit)
            if hit is not None and not self.stroke.snapped:
                self.stroke.snapped = True
                self.device.haptic("right", 0.005)
            on_skin = [np.asarray(h.position, np.float64) for h in self.stroke.hits if h is not None]
            self.tubes.show_live(np.asarray(on_skin).reshape(-1, 3), "surface")
        else:
            role = "offset" if self.stroke.tool == "pose" and self.baseline is not None else "baseline"
            self.tubes.show_live(np.asarray(self.stroke.points), role)

    def _end_stroke(self) -> None:
        stroke, self.stroke = self.stroke, None
        assert stroke is not None
        self.tubes.hide_live()
        if stroke.tool == "pose":
            self._pose_stroke(stroke)
        elif stroke.tool == "bulge":
            self._bulge_stroke(stroke)
        elif stroke.tool == "silhouette":
            self._silhouette_stroke(stroke)

    def _fit(self, stroke: VRStroke) -> Any:
        from engine.input.strokes import Stroke, StrokeError

        scale = self.world_scale
        eps = None if abs(scale - 1.0) < 1e-12 else STROKE_EPSILON * scale
        try:
            return Stroke.fit(np.asarray(stroke.points), np.asarray(stroke.times), epsilon=eps)
        except StrokeError as e:
            log.warning("VR: stroke dropped (%s)", e)
            return None

    def _pose_stroke(self, stroke: VRStroke) -> None:
        from engine.authoring.posing import frame_reference, posing_plane, skeleton_root

        fitted = self._fit(stroke)
        if fitted is None:
            return
        along = fitted.point(np.linspace(0.0, 1.0, 48))
        if self.baseline is None:
            self.baseline = fitted
            self.strokes.append(("baseline", fitted))
            self.tubes.add(along, "baseline")
            return
        baseline, self.baseline = self.baseline, None
        self.strokes.append(("offset", fitted))
        self.tubes.add(along, "offset")
        head = self.world_pose("head")
        cam = _HeadCamera(head if head is not None else np.eye(4))
        plane = posing_plane(skeleton_root(self.ch), cam)
        reference = frame_reference(baseline, fitted, plane)
        layer = self.ch.pose_layer
        before = None if layer is None else layer.rotation.copy()
        try:
            self.ch.apply_line_of_action(baseline, fitted, brush_radius=self.brush_radius * self.world_scale,
                                         reference=reference)
        except ValueError as e:
            log.warning("VR: pose strokes dropped (%s)", e)
            return
        self.undo_stack.append(("pose", before))
        self.redo_stack.clear()

    def _bulge_stroke(self, stroke: VRStroke) -> None:
        from engine.authoring.surface import SurfaceSamples, surface_edit
        from engine.components import PrimitiveKey

        hits = [h for h in stroke.hits if h is not None and h.entity == self.ch.entity]
        if not hits:
            log.warning("VR: the bulge stroke never touched the character")
            return
        keys = [(h.node, h.mesh_index, h.primitive) for h in hits]
        best = max(set(keys), key=keys.count)  # the primitive most of the stroke is on
        used = [h for h, k in zip(hits, keys) if k == best]
        bary = np.clip(np.array([h.barycentric for h in used], np.float64), 0.0, None)
        bary /= np.maximum(bary.sum(1, keepdims=True), 1e-12)
        key = PrimitiveKey(*best)
        samples = SurfaceSamples(self.ch.entity, key, np.array([h.triangle for h in used], np.int64), bary,
                                 used[0].mesh_id)
        if self.ch.deformer != "spring":
            self.ch.set_deformer("spring")
        opts: dict[str, Any] = {k: self.bulge[k] for k in ("rings", "radius", "stiffness") if k in self.bulge}
        try:
            edit = surface_edit(self.ch, samples, profile=bulge_profile(self.bulge), **opts)
        except ValueError as e:
            log.warning("VR: bulge stroke dropped (%s)", e)
            return
        self.ch.add_edit(key, edit)
        self.strokes.append(("surface", samples))
        self.tubes.add(samples.positions(self.ch), "surface")
        self.undo_stack.append(("edit", (key, edit)))
        self.redo_stack.clear()

    def _silhouette_stroke(self, stroke: VRStroke) -> None:
        """An accent stroke drawn in the air beside an outline as the LEFT eye sees it (research 7.3): the eye's
        G-buffer is drawn again, the stroke projected into it, and the desktop's silhouette edit built."""
        from engine.authoring.silhouette import silhouette_edit
        from engine.authoring.view import window_points
        from engine.render.stereo import EyeCamera

        head = self.samples.get("head")
        pts = np.asarray(stroke.points, np.float64)
        if head is None or len(pts) < 2:
            return
        view = self.geometry.view(0, pose_matrix(head.position, head.orientation), self.tracking_to_world)
        cam = EyeCamera(view, self.eye_projections[0])
        r = self.s.renderer
        saved = self.s.camera
        try:
            self.s.camera = cam
            r.render(cam)
            px = window_points(cam, r.width, r.height, pts)
            px = px[~np.isnan(px).any(axis=1)]
            if len(px) < 2:
                log.warning("VR: the silhouette stroke is not in front of the left eye")
                return
            opts: dict[str, Any] = {k: self.bulge[k] for k in ("rings", "radius", "stiffness") if k in self.bulge}
            # built before the switch to the springs: the eye's G-buffer names the meshes as registered now
            key, edit = silhouette_edit(self.s, self.ch, px, **opts)
        except ValueError as e:
            log.warning("VR: silhouette stroke dropped (%s)", e)
            return
        finally:
            self.s.camera = saved
        if self.ch.deformer != "spring":
            self.ch.set_deformer("spring")
        self.ch.add_edit(key, edit)
        self.strokes.append(("silhouette", pts))
        self.tubes.add(pts, "surface")
        self.undo_stack.append(("edit", (key, edit)))
        self.redo_stack.clear()

    def _undo(self, source: list[tuple[str, Any]], target: list[tuple[str, Any]]) -> None:
        if not source:
            return
        kind, data = source.pop()
        if kind == "pose":
            layer = self.ch.pose_layer
            now = None if layer is None else layer.rotation.copy()
            self.ch.set_pose_layer(data)
            target.append(("pose", now))
        elif kind == "edit":
            key, edit = data
            stack = self.ch.edits.get(key)
            if stack is not None and any(e is edit for e in stack):
                kept = [e for e in stack if e is not edit]
                self.ch.clear_edits(key)
                for e in kept:
                    self.ch.add_edit(key, e)
            else:
                self.ch.add_edit(key, edit)
            target.append(("edit", data))


def bulge_profile(settings: dict[str, Any], where: str = "bulge") -> Any:
    """The edit profile of a script's [bulge] settings (engine.skinning.edits.Profile; default height 0.02 m);
    ValueError naming ``where`` and the key."""
    from engine.skinning.edits import EASINGS, Profile

    ease = settings.get("ease", "quadOut")
    if ease not in EASINGS:
        raise ValueError(f"{where}.ease: unknown easing {ease!r}; valid: {', '.join(EASINGS)}")
    return Profile(settings.get("profile", "bulge"), height=float(settings.get("height", 0.02)), ease=ease)


class _HeadCamera:
    """The head's pose as the posing plane's camera (eye and a target along its -Z)."""

    def __init__(self, pose: np.ndarray) -> None:
        self.eye = pose[:3, 3].copy()
        self.target = self.eye - pose[:3, 2]
