"""The demo scene, a showcase of the engine, through :class:`engine.Session`.

``python main.py`` opens a window when a display exists and otherwise runs headless. Three casts:

* the showcase (default): humanoids walking a loop path, waving, stretching and idling, the research's test
  pieces (twisting cylinder, bending plus and box) on pedestals; the camera frames the cast on start. Two carry
  keyed surface edits (:data:`SHOWCASE_EDITS`, issue 12): the idling one breathes (a belly bulge whose weight
  goes 0 -> 1 -> 0 over its clip's loop), the waving one flexes its forearm. Edits are spring forces: they show
  on the spring deformer (a GPU's default; on a software rasteriser the cast starts on LBS and key ``5`` or
  the "Cast" panel switches to springs); the edits stay through every switch;
* ``--characters N``: N characters on a grid (up to 256: a stress test);
* ``--compare [lbs,dqs,irs,spring]``: the comparison mode, the same character and clip once per deformer in
  a row, each labelled with its method (like the research's Fig. 19).

In the window: ``1``-``5`` switch every character to lbs / dqs / rigid / irs / spring, ``C`` toggles the
comparison mode, ``L`` the labels, ``P`` the profiler overlay (``F`` freezes it, ``H`` lists every key);
the "Cast" panel switches one character or all. ``--overlay`` shows the profiler from the start (headless:
drawn into the screenshot); ``--profile F.json`` writes a Perfetto / chrome://tracing trace of the frames
(engine/profile/trace.py). ``--headless --frames N --screenshot out.png`` renders N frames offscreen,
writes the PNG and prints the frame-time summary.

The profiler and the help are docked panels (game/ui/dock.py, as in the editor): the help in a right column,
the profiler along the bottom, the scene's camera image in the central view between them (its ``view_rect``),
framed again on the cast whenever a panel shows or hides, so no panel covers a character at any window size.

The demo only decides the cast and where it stands; the frame (engine/frame.py), the deformation and the
drawing are the Session's.
"""
from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.profile.stats import FrameStats

__all__ = ["DEFAULT_CAST", "SHOWCASE", "SHOWCASE_EDITS", "BindStroke", "bind_stroke_edit", "clip_period",
           "SWITCH_DEFORMERS", "COMPARE_DEFORMERS", "COMPARE_SUBJECT", "Slot",
           "DemoScene", "spawn_cast", "demo_deformer", "frame_camera", "fit_camera", "parse_deformers", "run_demo"]

# The grid cast (--characters N): (character, clip, speed). Humanoids first; the research's test pieces beside.
DEFAULT_CAST = (
    ("humanoid", "walk", 1.0),
    ("humanoid", "wave", 1.0),
    ("humanoid", "idle", 1.0),
    ("humanoid", "stretch", 1.0),
    ("cylinder", "twist", 1.0),
    ("plus", 0, 1.0),
    ("box", 0, 1.0),
    ("humanoid", "walk", 0.8),
)

SPACING = 1.6  # metres between neighbouring characters on the grid


@dataclass(frozen=True)
class Slot:
    """One member of the showcase: ``asset`` playing ``clip`` at ``(x, z)`` turned ``yaw`` degrees; on a
    pedestal ``pedestal`` metres high (0: on the ground); ``loop`` > 0: walks a circle of that radius about
    ``(x, z)`` starting at angle ``yaw`` (degrees), ``speed`` metres per second along it; ``edit``: a key of
    :data:`SHOWCASE_EDITS` ("" for none)."""

    asset: str
    clip: str | int
    x: float
    z: float
    yaw: float = 0.0
    speed: float = 1.0
    pedestal: float = 0.0
    loop: float = 0.0
    edit: str = ""


@dataclass(frozen=True)
class BindStroke:
    """A keyed bulge drawn in a character's bind space: the stroke runs from ``start`` to ``end`` of the way
    between the bind places of joints ``joints`` (names), pushed ``reach`` (model units, bind space) off that
    axis onto the nearest skin; the bulge is ``height`` metres along the surface normal over ``rings`` edges
    of passive region, its weight keyed 0 -> 1 -> 0 over one loop of the character's clip."""

    joints: tuple[str, str]
    start: float
    end: float
    reach: tuple[float, float, float]
    height: float
    rings: int = 3


#: the composed showcase (metres; the camera looks down -Z at it)
SHOWCASE = (
    Slot("humanoid", "walk", 0.2, -2.0, yaw=0.0, loop=1.2),
    Slot("humanoid", "walk", 0.2, -2.0, yaw=180.0, loop=1.2),
    Slot("humanoid", "wave", -1.4, 0.1, yaw=15.0, edit="flex"),
    Slot("humanoid", "stretch", 0.0, 0.5),
    Slot("humanoid", "idle", 1.4, 0.1, yaw=-15.0, edit="breath"),
    Slot("cylinder", "twist", -3.0, -0.3, yaw=20.0, pedestal=0.5),
    Slot("plus", "wave", 2.8, -1.0, yaw=-20.0, pedestal=0.3),
    Slot("box", "bend", -2.3, -2.6, yaw=10.0, pedestal=0.6),
)
#: the showcase's keyed surface edits: breathing (belly and chest rise and fall), a flexing forearm
SHOWCASE_EDITS = {
    "breath": BindStroke(("hips", "chest"), 0.25, 1.0, (0.0, 0.0, 0.4), height=0.035, rings=4),
    "flex": BindStroke(("forearm_L", "hand_L"), 0.2, 0.7, (0.0, 0.0, 0.3), height=0.025, rings=3),
}
#: pedestal footprint (metres): the generated box (0.2 x 0.8 x 0.2) in its rest pose, scaled
PEDESTAL_WIDTH = 0.7
#: the switchable methods, keys 1..5 in this order
SWITCH_DEFORMERS = ("lbs", "dqs", "rigid", "irs", "spring")
COMPARE_DEFORMERS = ("lbs", "dqs", "irs", "spring")
#: the comparison mode's character, clip and start time (seconds: arms raised, the shoulders at work)
COMPARE_SUBJECT = ("humanoid", "stretch", 1.0)
COMPARE_SPACING = 1.5
_LABEL_LIFT = 0.25  # metres above a character's top


def demo_deformer(deformer: str, renderer_name: str) -> str:
    """``auto``: the spring deformer on a GPU, LBS on a software rasteriser (springs cost ~0.6 s per frame
    there for the default cast)."""
    if deformer != "auto":
        return deformer
    return "lbs" if "llvmpipe" in renderer_name else "spring"


def parse_deformers(text: str, *, device: str = "gpu") -> tuple[str, ...]:
    """``"lbs,dqs"`` -> ("lbs", "dqs"): 1 to 8 names of the deformer table that ``device`` runs."""
    from engine.skinning import registry

    names = tuple(t.strip() for t in str(text).split(",") if t.strip())
    if not 1 <= len(names) <= 8:
        raise ValueError(f"--compare takes 1 to 8 comma-separated deformers, got {text!r}")
    for n in names:
        registry.check(n, device)
    return names


def spawn_cast(session: Any, count: int, *, cast=DEFAULT_CAST, asset: str | None = None) -> list[Any]:
    """``count`` characters on a grid facing the camera (cast entries in turn, or ``asset`` ``count`` times),
    each standing on the ground, clips desynchronised."""
    if not 1 <= count <= 256:
        raise ValueError(f"--characters must be in [1, 256], got {count}")
    entries = [(asset, 0, 1.0)] * count if asset else [cast[i % len(cast)] for i in range(count)]
    cols = max(1, math.ceil(math.sqrt(count)))
    rows = math.ceil(count / cols)
    out = []
    for i, (name, clip, speed) in enumerate(entries):
        loaded = session.load(name)
        row, col = divmod(i, cols)
        x = (col - (cols - 1) / 2) * SPACING
        z = -(row - (rows - 1) / 2) * SPACING
        ch = session.spawn(loaded, clip=_clip(loaded, clip), speed=speed, time=0.37 * i * speed,
                           position=(x, 0.0, z), yaw=15.0 * ((i % 3) - 1), on_ground=True)
        out.append(ch)
    return out


def _clip(loaded: Any, clip: str | int) -> str | int | None:
    """``clip`` when the asset has it, else its first clip (None: no clips, the rest pose)."""
    if not loaded.asset.clips:
        return None
    try:
        loaded.asset.clip_index(clip)
    except ValueError:
        return 0
    return clip


def frame_camera(session: Any, *, margin: float = 1.04, yaw: float = 20.0, pitch: float = 16.0,
                 view_rect: tuple[float, float, float, float] | None = None) -> np.ndarray | None:
    """An orbit camera over the cast: aimed at the centre of the first frame's deformed vertices (read back
    once), at the closest distance where they all lie inside the view, ``margin`` around them. ``view_rect``:
    the free rectangle of the frame the camera's image fills (fractions, engine/render/camera.py; the docked
    panels' central view). Returns the vertices framed (a subsample, for :func:`fit_camera` after the view
    rectangle changes; None: nothing to frame)."""
    from engine.render.camera import OrbitCamera

    r = session.renderer
    cam = OrbitCamera(target=np.array([0.0, 0.9, 0.0]), distance=7.0, yaw=yaw, pitch=pitch,
                      aspect=r.width / r.height)
    session.camera = cam
    session.step()
    pts = [p[::5] for ch in session.characters for p in ch.vertices().values() if len(p)]  # read back once
    if not pts:
        return None
    corners = np.concatenate(pts).astype(np.float64)
    cam.view_rect = view_rect
    fit_camera(cam, corners, r.width, r.height, margin=margin)
    return corners


def fit_camera(cam: Any, corners: np.ndarray, width: int, height: int, *, margin: float = 1.04) -> None:
    """Aim the orbit camera ``cam`` (its yaw and pitch kept) at ``corners`` (N, 3) at the closest distance
    where they all lie inside its view rectangle (``cam.view_rect``, else the whole ``width`` x ``height``
    frame) with ``margin`` around them. No frame runs and nothing is read back."""
    from engine.authoring.view import window_points

    lo, hi = corners.min(0), corners.max(0)
    cam.fit(lo, hi, margin=margin)  # the bounding sphere: far enough, then come closer
    centre = cam.target.copy()
    w, h = width, height
    fx, fy, fw, fh = cam.view_rect if getattr(cam, "view_rect", None) is not None else (0.0, 0.0, 1.0, 1.0)
    x0, y0, x1, y1 = fx * w, fy * h, (fx + fw) * w, (fy + fh) * h
    pad = (margin - 1.0) * min(x1 - x0, y1 - y0)

    def place(d: float) -> bool:
        cam.distance, cam.target = d, centre.copy()
        xy = window_points(cam, w, h, corners)  # through the view rectangle's projection
        return bool(np.all(np.isfinite(xy)) and xy[:, 0].min() >= x0 + pad and xy[:, 0].max() <= x1 - pad
                    and xy[:, 1].min() >= y0 + pad and xy[:, 1].max() <= y1 - pad)

    near, far = 0.05 * cam.distance, cam.distance
    if not place(far):
        return  # even the sphere's distance clips a corner (a tall, narrow free area): keep it
    for _ in range(24):
        mid = (near + far) / 2.0
        near, far = (near, mid) if place(mid) else (mid, far)
    place(far)


def bind_stroke_edit(character: Any, stroke: BindStroke, period: float = 1.0) -> tuple[Any, Any]:
    """(primitive, SurfaceEdit) of ``stroke`` on the character's first skinned primitive bound to both of its
    joints: the stroke's points (one per centimetre) land on the bind-pose skin vertex nearest each, and the
    edit is built on the current deformed surface (engine.authoring.surface.surface_edit), its weight keyed 0, 1, 0
    at clip times 0, ``period`` / 2 and ``period`` (seconds: the clip's loop, :func:`clip_period`). ValueError
    when the character lacks the joints or a skinned primitive bound to them, or ``period`` is not > 0."""
    from engine.authoring.surface import SurfaceSamples, surface_edit
    from engine.skinning.edits import Profile

    if not isinstance(stroke, BindStroke):
        raise TypeError(f"stroke must be a BindStroke, got {type(stroke).__name__}")
    if not (isinstance(period, (int, float)) and math.isfinite(period) and period > 0.0):
        raise ValueError(f"period must be a finite number of seconds > 0, got {period!r}")
    names = [n.name for n in character.asset.nodes]
    missing = [j for j in stroke.joints if j not in names]
    if missing:
        raise ValueError(f"{character.name!r} has no joints {missing}")
    nodes = [names.index(j) for j in stroke.joints]
    for sp in character.loaded.skinned:
        skin = [int(j) for j in sp.skin.joints]
        if all(n in skin for n in nodes):
            break
    else:
        raise ValueError(f"{character.name!r} has no skinned primitive bound to {list(stroke.joints)}")
    key = sp.key
    topo = character.topology(key)
    rest = np.asarray(sp.primitive.positions, np.float64)[np.asarray(topo.display_of_control)]
    a, b = (np.asarray(sp.bind_joints, np.float64)[skin.index(n), :3, 3] for n in nodes)
    n = max(2, int(np.linalg.norm(b - a) * abs(stroke.end - stroke.start) / 0.01))
    axis = a + np.linspace(stroke.start, stroke.end, n)[:, None] * (b - a)
    near = (axis + np.asarray(stroke.reach, np.float64))[:, None, :] - rest[None, :, :]
    verts = list(dict.fromkeys(int(v) for v in np.argmin(np.einsum("nvk,nvk->nv", near, near), axis=1)))
    tri = np.asarray(topo.triangles, np.int64)
    faces, bary = [], []
    for v in verts:  # a sample at the vertex itself: a corner of one of its triangles
        f, c = np.argwhere(tri == v)[0]
        faces.append(int(f))
        bary.append(np.eye(3)[c])
    samples = SurfaceSamples(character.entity, key, np.asarray(faces), np.asarray(bary))
    keys = [[0.0, 0.0], [period / 2.0, 1.0], [period, 0.0]]
    edit = surface_edit(character, samples, rings=stroke.rings, profile=Profile("bulge", stroke.height), keys=keys,
                        name=f"{stroke.joints[0]} keyed bulge")
    return key, edit


def clip_period(session: Any, character: Any) -> float:
    """The character's playing clip's duration in seconds (1.0 without a clip or with a zero-length one)."""
    from engine.anim.playback import Playback
    from engine.components import Animator

    playback = session.world.get(character.entity, Animator).playback
    d = float(playback.duration) if isinstance(playback, Playback) else 0.0
    return d if d > 0.0 and math.isfinite(d) else 1.0


def _walk_matrix(slot: Slot, angle: float) -> np.ndarray:
    """Placement on the loop at ``angle`` radians, facing along the path (the models face +Z)."""
    from engine.session import placement_matrix

    x = slot.x + slot.loop * math.sin(angle)
    z = slot.z + slot.loop * math.cos(angle)
    return placement_matrix((x, 0.0, z), yaw=math.degrees(angle) + 90.0)


class DemoScene:
    """The demo's cast in a session: build the showcase, a grid or the comparison row; switch deformers;
    the labels naming each character's method; the walkers' loop path (a system in ANIMATION).

    ``deformer`` is the method the showcase and grid start with (None: the session's default, e.g. a graph
    file). :attr:`characters` are the switchable characters; :attr:`props` (the pedestals) are not switched."""

    WALK_SYSTEM = "demo_walk_path"

    def __init__(self, session: Any, *, deformer: str | None, asset: str | None = None) -> None:
        from engine.skinning import registry

        if deformer is not None:  # None: the session's default (a deformer graph file)
            registry.check(deformer, session.device)
        self.session = session
        self.deformer = deformer
        self.asset = asset
        #: "showcase", "grid" or "compare": what was built last ("none" before)
        self.mode = "none"
        self.characters: list[Any] = []
        self.props: list[Any] = []
        #: the showcase's characters carrying a keyed surface edit (:data:`SHOWCASE_EDITS`)
        self.edited: list[Any] = []
        #: label every character with its name and method outside the comparison mode (the L key)
        self.show_labels = False
        self._walkers: list[tuple[Any, Slot, float]] = []  # (character, slot, angle now)
        self._grid = 0
        self._compare: tuple[str, ...] = COMPARE_DEFORMERS
        self._previous = "showcase"
        self._heights: dict[int, float] = {}
        #: the vertices the camera was framed on last (:func:`frame_camera`; None: nothing framed yet)
        self._framed: np.ndarray | None = None
        from engine.ecs import Phase

        session.add_system(Phase.ANIMATION, self._walk, name=self.WALK_SYSTEM)

    # -- casts ---------------------------------------------------------------------------------------------
    def clear(self) -> None:
        """Remove the cast and the props (their GPU memory is returned)."""
        for ch in self.characters + self.props:
            if ch.alive:
                ch.remove()
        self.characters, self.props, self._walkers, self.edited = [], [], [], []
        self._heights.clear()

    def build_showcase(self) -> list[Any]:
        """The composed showcase (:data:`SHOWCASE`): 8 characters, three on pedestals, two walking a loop."""
        self.clear()
        s = self.session
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i, slot in enumerate(SHOWCASE):
                loaded = s.load(slot.asset)
                lift = 0.0
                if slot.pedestal > 0:
                    lift = slot.pedestal
                    self.props.append(self._pedestal(slot.x, slot.z, slot.pedestal))
                if slot.loop > 0:
                    ch = s.spawn(loaded, clip=_clip(loaded, slot.clip), time=0.31 * i, deformer=self.deformer,
                                 matrix=_walk_matrix(slot, math.radians(slot.yaw)))
                    self._walkers.append((ch, slot, math.radians(slot.yaw)))
                else:
                    ch = s.spawn(loaded, clip=_clip(loaded, slot.clip), time=0.37 * i, speed=slot.speed,
                                 position=(slot.x, lift, slot.z), yaw=slot.yaw, on_ground=True,
                                 deformer=self.deformer)
                self.characters.append(ch)
        self._add_edits()
        self.mode = "showcase"
        return self.characters

    def _add_edits(self) -> None:
        """Give the showcase's edited slots their keyed edit (:data:`SHOWCASE_EDITS`); one that cannot be built
        is skipped with one warning and the demo goes on. A character on another deformer than springs gets
        its edit through a moment on springs and goes back: it acts once the user switches it to springs."""
        todo = [(ch, SHOWCASE_EDITS[slot.edit]) for ch, slot in zip(self.characters, SHOWCASE, strict=True)
                if slot.edit]
        if not todo:
            return
        self.session.settle()  # the surface the strokes land on (deformed once, no time passes)
        failed = []
        for ch, stroke in todo:
            try:
                key, edit = bind_stroke_edit(ch, stroke, clip_period(self.session, ch))
                try:
                    ch.add_edit(key, edit)
                except ValueError:  # not on springs: add it there, then back to the cast's method
                    was = ch.deformer
                    ch.set_deformer("spring")
                    try:
                        ch.add_edit(key, edit)
                    finally:
                        ch.set_deformer(was)
                self.edited.append(ch)
            except (ValueError, TypeError, KeyError, IndexError) as exc:
                failed.append(f"{ch.name} ({stroke.joints[0]}): {exc}")
        if failed:
            warnings.warn(f"demo: the showcase's keyed edits were skipped for {'; '.join(failed)}", RuntimeWarning,
                          stacklevel=3)

    def _pedestal(self, x: float, z: float, height: float) -> Any:
        """A pedestal: the generated box in its rest pose, scaled to PEDESTAL_WIDTH x height."""
        from engine.session import placement_matrix

        box = self.session.load("box")
        m = placement_matrix((x, 0.0, z))
        m[:3, :3] = np.diag([PEDESTAL_WIDTH / 0.2, height / 0.8, PEDESTAL_WIDTH / 0.2])
        return self.session.spawn(box, clip=None, matrix=m, deformer="lbs")

    def build_grid(self, count: int) -> list[Any]:
        """``count`` characters on a grid (:func:`spawn_cast`; ``asset`` instead of the cast when given)."""
        self.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.characters = spawn_cast(self.session, count, asset=self.asset)
        for ch in self.characters:
            if self.deformer is not None and ch.deformer != self.deformer:
                ch.set_deformer(self.deformer)
        self._grid = count
        self.mode = "grid"
        return self.characters

    def build_compare(self, deformers: tuple[str, ...] | None = None) -> list[Any]:
        """The comparison row: :data:`COMPARE_SUBJECT` (or ``asset``) once per deformer, same clip and time,
        left to right in the order given."""
        if deformers is not None:
            self._compare = tuple(deformers)
        if self.mode in ("showcase", "grid"):
            self._previous = self.mode
        self.clear()
        s = self.session
        name, clip, start = (self.asset, 0, 0.0) if self.asset else COMPARE_SUBJECT
        loaded = s.load(name)
        n = len(self._compare)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i, d in enumerate(self._compare):
                x = (i - (n - 1) / 2) * COMPARE_SPACING
                self.characters.append(s.spawn(loaded, clip=_clip(loaded, clip), time=start,
                                               position=(x, 0.0, 0.0), on_ground=True, deformer=d))
        self.mode = "compare"
        return self.characters

    def toggle_compare(self) -> str:
        """Comparison mode on (from the showcase or grid) or back to the cast it replaced; reframes the
        camera. Returns the new mode."""
        if self.mode == "compare":
            self.build_grid(self._grid) if self._previous == "grid" else self.build_showcase()
        else:
            self.build_compare()
        self.frame(getattr(self.session.camera, "view_rect", None))  # in the free view, as before
        return self.mode

    def frame(self, view_rect: tuple[float, float, float, float] | None = None) -> None:
        """Frame the cast (:func:`frame_camera`) in ``view_rect`` (fractions of the frame; None: all of it): the
        comparison row from the front, the others at an angle."""
        if self.mode == "compare":
            self._framed = frame_camera(self.session, margin=1.1, yaw=0.0, pitch=8.0, view_rect=view_rect)
        else:
            self._framed = frame_camera(self.session, view_rect=view_rect)

    def refit(self, view_rect: tuple[float, float, float, float] | None) -> None:
        """The free view changed (a docked panel shown or hidden): the camera's image fills ``view_rect`` and
        comes as close as the cast framed last allows (its yaw and pitch kept; no frame runs)."""
        cam, r = self.session.camera, self.session.renderer
        if cam is None or not hasattr(cam, "view_rect"):
            return
        cam.view_rect = view_rect
        if self._framed is not None:
            fit_camera(cam, self._framed, r.width, r.height, margin=1.1 if self.mode == "compare" else 1.04)

    # -- labels --------------------------------------------------------------------------------------------
    def labels(self) -> list[Any]:
        """The labels to draw: each character's method under its feet in comparison mode; with
        ``show_labels`` name and method above its head (rest height from the asset)."""
        from game.ui.labels import Label

        if self.mode != "compare" and not self.show_labels:
            return []
        out = []
        for ch in self.characters:
            m = ch.matrix
            if self.mode == "compare":  # under the feet: raised arms never cover it
                out.append(Label(tuple(float(v) for v in m[:3, 3]), ch.deformer, below=True))
                continue
            up = float(np.linalg.norm(m[:3, 1]))
            pos = m[:3, 3] + np.array([0.0, self._height(ch) * up + _LABEL_LIFT, 0.0])
            out.append(Label(tuple(float(v) for v in pos), f"{ch.name}: {ch.deformer}"))
        return out

    def _height(self, ch: Any) -> float:
        """The top of the character's rest pose above its placement (model units)."""
        h = self._heights.get(ch.entity)
        if h is None:
            tops = [float(np.max(sp.primitive.positions[:, 1])) for sp in ch.loaded.skinned
                    if len(sp.primitive.positions)]
            h = self._heights[ch.entity] = (max(tops) if tops else 1.8) + ch.loaded.ground_offset
        return h

    # -- the loop path -------------------------------------------------------------------------------------
    def _walk(self, world: Any) -> None:
        """Advance each walker along its circle by one fixed step (placement only; the clip walks in place)."""
        if not self._walkers:
            return
        from engine.components import Placement
        from engine.ecs import Clock

        step = world.resource(Clock).step
        for i, (ch, slot, angle) in enumerate(self._walkers):
            angle += step * slot.speed / slot.loop
            self._walkers[i] = (ch, slot, angle)
            world.get(ch.entity, Placement).matrix = _walk_matrix(slot, angle)

    def release(self) -> None:
        """Take the walk system out of the session's schedule (the characters stay)."""
        if self.WALK_SYSTEM in self.session.schedule:
            self.session.schedule.remove_system(self.WALK_SYSTEM)



# ------------------------------------------------------------------------------------------------ the command
GRID_DEFAULT = 6  # --asset without --characters: that many copies on the grid
#: the demo's docked layout (game/ui/dock.py): the help on the right, the profiler along the bottom, as fractions
#: of the window (left column, right column, bottom row); a hidden panel gives its space back to the view
DOCK_SIZES = (0.22, 0.28, 0.34)


def _check_args(args: argparse.Namespace, headless: bool) -> None:
    frames = args.frames
    if frames is not None and frames < 1:
        raise ValueError(f"--frames must be >= 1, got {frames}")
    if args.width < 16 or args.height < 16 or args.width > 8192 or args.height > 8192:
        raise ValueError(f"--width/--height must be in [16, 8192], got {args.width}x{args.height}")
    if args.characters is not None and not 1 <= args.characters <= 256:
        raise ValueError(f"--characters must be in [1, 256], got {args.characters}")
    if getattr(args, "compare", None) is not None and args.characters is not None:
        raise ValueError("--compare shows one character per deformer; it cannot be combined with --characters")
    if getattr(args, "graph", None) is not None and args.device != "gpu":
        raise ValueError("--graph needs --device gpu")


def _window_keys(scene: DemoScene, panel: Any) -> dict[str, tuple[str, Callable[[], None]]]:
    """The demo's keys in the window (event key names): 1-5 switch everyone, C comparison mode, L labels."""
    digits = ("1", "2", "3", "4", "5")
    out: dict[str, tuple[str, Callable[[], None]]] = {}
    for i, (sym, name) in enumerate(zip(digits, SWITCH_DEFORMERS, strict=True)):
        if name in panel.choices:
            text = "1-5  all: " + " ".join(SWITCH_DEFORMERS) if i == 0 else ""
            out[sym] = (text, _switch_all(panel, name))

    def labels() -> None:
        scene.show_labels = not scene.show_labels

    out["c"] = ("C  comparison mode      L  labels", lambda: print(f"demo: {scene.toggle_compare()}"))
    out["l"] = ("", labels)
    return out


def _switch_all(panel: Any, name: str) -> Callable[[], None]:
    def switch() -> None:
        panel.set_all(name)
        print(f"demo: {panel.message}")
    return switch


def _compare_checkbox(scene: DemoScene) -> None:
    """The cast panel's extra row: the comparison mode and the labels."""
    from imgui_bundle import imgui

    changed, _on = imgui.checkbox("comparison (C)", scene.mode == "compare")
    if changed:
        scene.toggle_compare()
    imgui.same_line()
    _, scene.show_labels = imgui.checkbox("labels (L)", scene.show_labels)


def run_demo(args: argparse.Namespace) -> int:
    from engine import Session
    from engine.gpu.context import display_present
    from engine.paths import check_writable
    from engine.runloop import run_headless, run_window

    headless = bool(args.headless) or not display_present()
    _check_args(args, headless)
    frames = args.frames
    screenshot = args.screenshot or ("out/demo.png" if headless else None)
    # refused now, not after every frame has rendered; nothing is created (no folder, no file) until the frames
    # have run, so a refusal of any other input leaves nothing behind
    if screenshot is not None:
        check_writable("--screenshot", screenshot, suffix=".png", makes_parents=True)
    profile = getattr(args, "profile", None)
    if profile is not None:
        check_writable("--profile", profile, suffix=".json", makes_parents=True)
    compare = getattr(args, "compare", None)
    compare_list = parse_deformers(compare, device=args.device) if compare is not None else None
    show_overlay = bool(getattr(args, "overlay", False))
    if headless and frames is None:
        frames = 120
        print("no display (or --headless): rendering 120 frames offscreen; pass --frames N to change",
              file=sys.stderr)
    graph = getattr(args, "graph", None)
    with Session(device=args.device, width=args.width, height=args.height, window=not headless,
                 headless=headless, title="skinengine demo", graph=graph) as session:
        assert session.ctx is not None  # the demo renders, so the session has a GL context
        gl_renderer = session.ctx.info.get("GL_RENDERER", "")
        deformer = session.default.deformer if graph is not None else demo_deformer(args.deformer, gl_renderer)
        if graph is None:
            from engine.scene import DeformSettings

            session.default = DeformSettings(deformer, session.default.config)
            session.meshes.check(session.default, args.device)
        scene = DemoScene(session, deformer=None if graph is not None else deformer, asset=args.asset)
        if compare_list is not None:
            scene.build_compare(compare_list)
        elif args.characters is not None or args.asset:
            scene.build_grid(args.characters or GRID_DEFAULT)
        else:
            scene.build_showcase()
        what = {"compare": f"comparison of {', '.join(compare_list or ())}",
                "grid": f"{len(scene.characters)} characters on a grid",
                "showcase": f"showcase, {len(scene.characters)} characters"}[scene.mode]
        print(f"demo: {what}; deformer {f'graph {deformer!r}' if graph is not None else deformer} "
              f"on {args.device} ({gl_renderer})")
        scene.frame()  # in the whole frame; the overlay's docked panels refit it into their central view
        session.schedule.history.clear()
        frame_ms, profiler = _run(session, scene, headless=headless, frames=frames, overlay=show_overlay,
                                  profile=profile, run_headless=run_headless, run_window=run_window)
        if screenshot:
            session.save_png(screenshot)
            print(f"wrote {screenshot}")
        if profiler is not None:
            Path(str(profile)).parent.mkdir(parents=True, exist_ok=True)
            profiler.write(profile)
            print(f"wrote {profile} ({len(profiler.frames)} frames; open it in https://ui.perfetto.dev)")
        print(FrameStats.of(frame_ms).summary())
        _print_system_table(session)
    return 0


def _run(session: Any, scene: DemoScene, *, headless: bool, frames: int | None, overlay: bool,
         profile: str | None, run_headless: Callable[..., list[float]],
         run_window: Callable[..., list[float]]) -> tuple[list[float], Any]:
    """Attach the profiler (``--profile``) and the overlay (window, ``--overlay``, comparison labels); run."""
    from engine.profile.trace import Profiler

    profiler = Profiler(session, keep=None if frames is not None else 3600) if profile else None
    ui = None
    try:
        if not headless or overlay or scene.mode == "compare":
            from game.ui.cast import CastPanel
            from game.ui.dock import DockLayout
            from game.ui.labels import draw_labels
            from game.ui.overlay import SessionOverlay

            # the profiler and the help dock around the scene's view (the camera's image fills the central
            # node, refitted to the cast whenever a panel shows or hides), so neither covers a character
            dock = DockLayout(right=("Help (H)",), bottom=("Profiler (P)",), sizes=DOCK_SIZES)
            ui = SessionOverlay(session, profiler=profiler, show_profiler=overlay, dock=dock,
                                on_view_rect=scene.refit)
            r = session.renderer

            def labels() -> None:
                draw_labels(session.camera, r.width, r.height, scene.labels())

            ui.panels.append(labels)
            ui.settle()  # the docked view rectangle holds from the first frame
            if headless:
                return run_headless(session, frames), profiler
            from engine.skinning import registry

            choices = tuple(d for d in SWITCH_DEFORMERS if registry.deformer(d).available(session.device))
            panel = CastPanel(lambda: scene.characters, choices=choices, extra=lambda: _compare_checkbox(scene),
                              on_all=lambda name: setattr(scene, "deformer", name))
            panel.collapsed = True
            ui.panels.append(lambda: panel.draw(pos=(max(8.0, r.width - 310.0), 8.0)))
            return run_window(session, frames, overlay=ui, keys=_window_keys(scene, panel)), profiler
        return run_headless(session, frames) if headless else run_window(session, frames), profiler
    finally:
        if ui is not None:
            ui.release()
        scene.release()
        if profiler is not None:
            profiler.detach()


def _print_system_table(session: Any) -> None:
    from engine.profile.stats import system_table

    rows = system_table(session.schedule.history)
    parts = [f"{name} {stats.mean:.2f}" for name, _phase, stats in rows]
    gpu = session.renderer.gpu_ms
    gpu_txt = ", ".join(f"{k} {v:.2f}" for k, v in gpu.items() if v is not None)
    print("cpu ms per frame (mean): " + ", ".join(parts) + (f" | gpu ms: {gpu_txt}" if gpu_txt else ""))
