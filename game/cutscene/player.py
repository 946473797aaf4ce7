"""The cutscene player: a document's characters spawned in one :class:`engine.Session`, every track applied at a
timeline position, and the frame drawn through the live camera with the renderer and look of ``render``.

* animation tracks become an :class:`engine.anim.timeline.TimelinePlayback` on the character (the frame's
  ANIMATION phase samples it like any playback);
* pose tracks set the character's pose layer (``Character.set_pose_layer``): per joint the keyed rotation
  deltas, slerped between keys (``smooth`` ease: smoothstep), held outside them;
* edits tracks load an edits file (``edit --save``) and set every edit's weight to the keyed value (linear or
  smooth between keys, held outside), so the weight reaches the spring deformer as its own keys would;
* path tracks place the character's root on the drawn path at the time its timestamps give (``face``: turned
  along the direction of motion, added to its yaw);
* cameras interpolate eye/target/fov between keys (``ease`` of the earlier key: linear or smoothstep), with
  ``follow`` the target is the joint's world position plus the keyed target; near/far are fitted to the
  deformed bounds and the ground put at their lowest point exactly as ``render`` does
  (``Camera.fit_depth``, ``engine.authoring.stage.ground_at_bounds``).

Frame-independent deformers render any frame on its own (:meth:`CutscenePlayer.render`). A frame-dependent
one (springs stepping in time) is simulated shot by shot (:meth:`CutscenePlayer.render_shot`): a fresh player
per shot steps from ``preroll`` seconds before the shot's first frame on a fixed step that divides the frame
interval, and every backend does the same, so their frames agree bit for bit.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from engine.math import quat
from game.cutscene.document import Camera as CameraDoc
from game.cutscene.document import Cutscene, CutsceneError, Shot, Track

__all__ = ["CutscenePlayer", "check_assets", "frame_dependent", "camera_pose", "weight_at", "pose_rotations", "path_at",
           "steps_per_frame"]


def _ease(u: float, ease: str) -> float:
    u = min(max(u, 0.0), 1.0)
    return u * u * (3.0 - 2.0 * u) if ease == "smooth" else u


def _bracket(times: list[float], t: float) -> tuple[int, int, float]:
    """(i, j, u): the keys around ``t`` and the fraction between them (held outside: i == j)."""
    if t <= times[0]:
        return 0, 0, 0.0
    if t >= times[-1]:
        n = len(times) - 1
        return n, n, 0.0
    j = int(np.searchsorted(times, t, side="right"))
    i = j - 1
    return i, j, (t - times[i]) / (times[j] - times[i])


def camera_pose(cam: CameraDoc, t: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(eye, target, fov) of a document camera at time ``t`` (target before ``follow`` is added)."""
    keys = cam.keys
    i, j, u = _bracket([k.time for k in keys], t)
    a, b = keys[i], keys[j]
    w = _ease(u, a.ease)
    eye = np.asarray(a.eye, np.float64) + (np.asarray(b.eye, np.float64) - np.asarray(a.eye, np.float64)) * w
    target = (np.asarray(a.target, np.float64)
              + (np.asarray(b.target, np.float64) - np.asarray(a.target, np.float64)) * w)
    if i == j:  # a key itself: its values exactly, not through the lerp
        eye, target = np.array(a.eye, np.float64), np.array(a.target, np.float64)
        return eye, target, float(a.fov)
    return eye, target, float(a.fov + (b.fov - a.fov) * w)


def weight_at(track: Track, t: float) -> float:
    """An edits track's keyed weight at time ``t``."""
    times = [k["time"] for k in track.keys]
    i, j, u = _bracket(times, t)
    a, b = track.keys[i]["weight"], track.keys[j]["weight"]
    return float(a + (b - a) * _ease(u, track.keys[i]["ease"]))


def glb_pose_deltas(path: Path, clip: str) -> dict[str, list[float]]:
    """The pose layer a posed .glb stands for (``pose ASSET --strokes ... --out POSED.glb`` keys the posed pose into
    its clip ``pose``): per node, the clip's rotation at its start times the inverse of the node's rest rotation
    (``posed = delta * rest``, the pose layer's rule); nodes the pose leaves at rest are left out."""
    from engine.anim import Pose
    from engine.scene import quiet_load

    la = quiet_load(str(path))
    pose = la.samplers[la.asset.clip_index(clip)].sample(0.0, Pose.rest(la.rig))
    delta = quat.normalize(quat.multiply(np.asarray(pose.rotation, np.float64),
                                         quat.conjugate(np.asarray(la.rig.rotation, np.float64))))
    return {la.rig.names[j]: [float(x) for x in q] for j, q in enumerate(delta)
            if la.rig.names[j] and abs(float(q[3])) < 1.0 - 1e-7}


def _key_joints(k: dict[str, Any], doc: Cutscene | None) -> dict[str, Any]:
    if "file" in k:
        if doc is None:
            raise ValueError("a pose key from a .glb file needs its document (for the file's folder)")
        return glb_pose_deltas(doc.resolve(k["file"]), k["clip"])
    return dict(k["joints"])


def pose_rotations(track: Track, names: dict[str, int], count: int, t: float, *,
                   joints: list[dict[str, Any]] | None = None) -> np.ndarray:
    """A pose track's rotation deltas (count, 4) float32 at time ``t`` (identity for joints no key names);
    ``joints``: each key's joints already resolved (pose keys from .glb files), else the keys' own."""
    table = joints if joints is not None else [k["joints"] for k in track.keys]

    def key_rot(i: int) -> np.ndarray:
        r = np.tile(np.array([0.0, 0.0, 0.0, 1.0]), (count, 1))
        for joint, q in table[i].items():
            r[names[joint]] = np.asarray(q, np.float64) / np.linalg.norm(q)
        return r

    i, j, u = _bracket([k["time"] for k in track.keys], t)
    a = key_rot(i)
    if i == j:
        return a.astype(np.float32)
    b = key_rot(j)
    return np.asarray(quat.slerp(a, b, _ease(u, track.keys[i]["ease"])), np.float32)


def path_at(track: Track, t: float) -> tuple[np.ndarray, float | None]:
    """(position, heading yaw in degrees or None) on a path track at timeline time ``t``: the stroke's own
    timing (its timestamps, from its first sample) starting at the track's ``start``."""
    times = np.asarray(track.times, np.float64)
    pts = np.asarray(track.points, np.float64)
    s = times[0] + (t - track.start)
    pos = np.array([np.interp(s, times, pts[:, c]) for c in range(3)])
    if not track.face:
        return pos, None
    k = int(np.clip(np.searchsorted(times, s, side="right") - 1, 0, len(times) - 2))
    d = pts[k + 1] - pts[k]
    if math.hypot(d[0], d[2]) < 1e-9:
        return pos, None
    return pos, math.degrees(math.atan2(d[0], d[2]))


def steps_per_frame(fps: float) -> int:
    """Fixed simulation steps per cutscene frame: the least count making the step at most 1/60 s, so frames fall
    exactly on steps."""
    return max(1, math.ceil(60.0 / fps - 1e-9))


def frame_dependent(doc: Cutscene) -> bool:
    """A character's deformer carries state from frame to frame (springs stepping in time), from the document
    alone (no session)."""
    from engine.scene import DeformSettings
    from engine.skinning.config import DeformerConfig

    return any(DeformSettings(c.deformer, DeformerConfig.from_dict(c.config) if c.config else DeformerConfig(),
                              None).frame_dependent for c in doc.characters)


def _asset_source(doc: Cutscene, asset: str) -> str:
    if asset.lower().endswith((".glb", ".gltf")):
        return str(doc.resolve(asset))
    return asset


def check_assets(doc: Cutscene) -> dict[str, Any]:
    """Load every character's asset (no GL needed) and check what the document names in it: clips, joints,
    edits files. Returns name -> LoadedAsset; CutsceneError naming the key otherwise."""
    from engine.scene import quiet_load
    from engine.skinning.edits import read_edits_file

    loaded: dict[str, Any] = {}
    for i, c in enumerate(doc.characters):
        src = _asset_source(doc, c.asset)
        if src.lower().endswith((".glb", ".gltf")) and not Path(src).is_file():
            raise CutsceneError(f"{doc.name}: characters[{i}].asset: no such file {src}; valid: a generated "
                                "character's name or a .glb/.gltf path relative to the cutscene")
        try:
            loaded[c.name] = quiet_load(src)
        except (ValueError, OSError) as exc:
            raise CutsceneError(f"{doc.name}: characters[{i}].asset: {exc}") from None
    for ti, t in enumerate(doc.tracks):
        la = loaded[t.character]
        if t.type == "animation":
            for si, s in enumerate(t.clips):
                try:
                    la.asset.clip_index(s.clip)
                except (ValueError, IndexError) as exc:
                    raise CutsceneError(f"{doc.name}: tracks[{ti}].clips[{si}].clip: {exc}") from None
        elif t.type == "pose":
            names = _joint_names(la)
            for ki, k in enumerate(t.keys):
                try:
                    joints = _key_joints(k, doc)
                except (ValueError, OSError, IndexError) as exc:
                    raise CutsceneError(f"{doc.name}: tracks[{ti}].keys[{ki}].file: {exc}") from None
                for j in joints:
                    if j not in names:
                        raise CutsceneError(f"{doc.name}: tracks[{ti}].keys[{ki}].joints.{j}: {t.character!r} has no "
                                            f"joint {j!r}; valid: {', '.join(sorted(names)[:40])}")
        elif t.type == "edits":
            try:
                stacks = read_edits_file(doc.resolve(t.file))
            except (ValueError, OSError) as exc:
                raise CutsceneError(f"{doc.name}: tracks[{ti}].file: {exc}") from None
            if t.edit and not any(e.name == t.edit for st in stacks.values() for e in st):
                have = sorted({e.name for st in stacks.values() for e in st})
                raise CutsceneError(f"{doc.name}: tracks[{ti}].edit: no edit named {t.edit!r} in {t.file}; "
                                    f"valid: {', '.join(have) or '(the file has no named edits)'}")
    for ci, cam in enumerate(doc.cameras):
        if cam.follow:
            who, _, joint = cam.follow.partition("/")
            names = _joint_names(loaded[who])
            if joint not in names:
                raise CutsceneError(f"{doc.name}: cameras[{ci}].follow: {who!r} has no joint {joint!r}; valid: "
                                    f"{', '.join(sorted(names)[:40])}")
    return loaded


def _joint_names(loaded: Any) -> dict[str, int]:
    return {n.name: i for i, n in enumerate(loaded.asset.nodes) if n.name}


class CutscenePlayer:
    """A document's scene in a Session: :meth:`seek` applies every track at a timeline position,
    :meth:`render` draws a frame through the live camera. Use as a context manager (releases the session).

    ``width``/``height`` default to the document's; ``device`` "gpu" | "cpu" as everywhere; ``loaded``: the
    assets of :func:`check_assets` (loaded and checked when None). ``session``: play in an existing session (the
    editor's) instead of a new one: the characters are spawned into it and removed by :meth:`release`."""

    def __init__(self, doc: Cutscene, *, device: str = "gpu", width: int | None = None, height: int | None = None,
                 loaded: dict[str, Any] | None = None, step: float | None = None, session: Any = None) -> None:
        from engine import Session
        from engine.anim.timeline import ClipSegment, TimelinePlayback
        from engine.components import Animator
        from engine.skinning.config import DeformerConfig

        self.doc = doc
        self.loaded = loaded if loaded is not None else check_assets(doc)
        self.width = int(width or doc.width)
        self.height = int(height or doc.height)
        self.sub = steps_per_frame(doc.fps)
        self._own = session is None
        if session is None:
            session = Session(device=device, width=self.width, height=self.height, strict=True,
                              step=step if step is not None else 1.0 / (doc.fps * self.sub))
        elif session.renderer is not None:
            self.width, self.height = session.renderer.width, session.renderer.height
        self.session = session
        self.characters: dict[str, Any] = {}
        self.pose_joints: dict[int, list[dict[str, Any]]] = {}
        try:
            self.timelines: dict[str, Any] = {}
            for c in doc.characters:
                cfg = DeformerConfig.from_dict(c.config) if c.config else None
                ch = self.session.spawn(self.loaded[c.name], clip=None, position=c.position, yaw=c.yaw,
                                        deformer=c.deformer, config=cfg)
                self.characters[c.name] = ch
            for t in doc.tracks:
                ch = self.characters[t.character]
                if t.type == "animation":
                    la = self.loaded[t.character]
                    segs = [ClipSegment(la.asset.clip_index(s.clip), s.start, s.end, s.offset, s.speed, s.blend_in,
                                        s.mode) for s in t.clips]
                    tl = TimelinePlayback(la.rig, la.samplers, segs, fps=doc.fps, driven=True)
                    # a playback of its own kind: the frame's ANIMATION phase advances and evaluates any playback
                    self.session.world.get(ch.entity, Animator).playback = tl
                    self.timelines[t.character] = tl
                elif t.type == "edits":
                    self._add_edits(ch, t)
                elif t.type == "pose":  # .glb keys read once
                    self.pose_joints[id(t)] = [_key_joints(k, doc) for k in t.keys]
        except BaseException:
            self.release()
            raise
        self.frame: float | None = None

    def _add_edits(self, ch: Any, track: Track) -> None:
        from engine.skinning.edits import read_edits_file

        stacks = read_edits_file(self.doc.resolve(track.file))
        keys = {k.export_key: k for k in ch.skinned_primitives}
        added = []
        for prim, stack in stacks.items():
            if prim not in keys:
                raise CutsceneError(f"{self.doc.name}: {track.file}: primitives.{prim}: {ch.name!r} has no such "
                                    f"skinned primitive; valid: {sorted(keys)}")
            for edit in stack:
                if not track.edit or edit.name == track.edit:
                    added.append(ch.add_edit(keys[prim], edit))
        track_edits = getattr(self, "_edits", [])
        track_edits.append((track, added))
        self._edits = track_edits

    # -- lifetime ----------------------------------------------------------------------------------------------
    def __enter__(self) -> CutscenePlayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Release the session (a session of its own) or remove the characters spawned into the given one."""
        if self._own:
            self.session.release()
            return
        for ch in self.characters.values():
            if ch.alive:
                ch.remove()
        self.characters.clear()

    @property
    def frame_dependent(self) -> bool:
        """A character's deformer carries state from frame to frame (springs stepping in time)."""
        return bool(self.session.meshes.frame_dependent)

    # -- applying the tracks -------------------------------------------------------------------------------------
    def seek(self, frame: float) -> None:
        """Apply every track at timeline position ``frame`` (frames of the document's fps; time frame / fps)."""
        doc = self.doc
        t = frame / doc.fps
        for c in doc.characters:
            ch = self.characters[c.name]
            tl = self.timelines.get(c.name)
            if tl is not None:
                tl.seek(frame)
            pos, yaw = np.asarray(c.position, np.float64), c.yaw
            for track in doc.tracks:
                if track.character == c.name and track.type == "path":
                    pos, heading = path_at(track, t)
                    if heading is not None:
                        yaw = c.yaw + heading
            ch.place(pos, yaw=yaw)
            for track in doc.tracks:
                if track.character == c.name and track.type == "pose":
                    la = self.loaded[c.name]
                    ch.set_pose_layer(pose_rotations(track, _joint_names(la), la.rig.count, t,
                                                     joints=self.pose_joints.get(id(track))))
        for track, edits in getattr(self, "_edits", []):
            w = weight_at(track, t)
            for e in edits:
                e.keys = np.array([[0.0, w]])
            self.session.mark_pose_changed()
        self.frame = float(frame)

    def camera(self, frame: int, lo: np.ndarray, hi: np.ndarray) -> Any:
        """The live camera of frame ``frame`` (a render Camera, near/far fitted to the box lo..hi)."""
        from engine.render.camera import Camera

        doc = self.doc
        cam = doc.camera(doc.shot_of(frame).camera)
        eye, target, fov = camera_pose(cam, frame / doc.fps)
        if cam.follow:
            who, _, joint = cam.follow.partition("/")
            ch = self.characters[who]
            target = target + ch.joints()[_joint_names(self.loaded[who])[joint]][:3, 3].astype(np.float64)
        return Camera(eye=eye, target=target, fov_y=fov, aspect=self.width / self.height).fit_depth(lo, hi)

    def draw(self, frame: int) -> np.ndarray:
        """Draw the current state as frame ``frame`` (its live camera) and return (H, W, 4) uint8 RGBA."""
        from engine.authoring.stage import ground_at_bounds
        from engine.scene import require_finite

        s = self.session
        for ch in self.characters.values():
            require_finite(ch.vertices())
        box = ground_at_bounds(s)
        if box is None:
            raise CutsceneError(f"{self.doc.name}: the characters have no meshes to render")
        s.camera = self.camera(frame, *box)
        return s.render()

    def render(self, frame: int) -> np.ndarray:
        """Frame ``frame`` on its own (frame-independent deformers): seek, then draw."""
        self._check_frame(frame)
        self.seek(frame)
        return self.draw(frame)

    def render_shot(self, shot: Shot, frames: list[int], preroll: float) -> Iterator[tuple[int, np.ndarray]]:
        """Frame-dependent deformers: simulate from ``preroll`` seconds before the shot's first frame on the fixed
        step and yield (k, image) for each wanted frame of the shot, in order. Use a fresh player per shot."""
        wanted = sorted(k for k in frames if shot.first <= k <= shot.last)
        if not wanted:
            return
        sub = self.sub
        start = shot.first * sub - int(round(preroll * self.doc.fps * sub))
        self.seek(start / sub)
        self.session.settle(render=False)
        n = start
        for k in wanted:
            while n < k * sub:
                n += 1
                self.seek(n / sub)
                self.session.step(1, render=False)
            yield k, self.draw(k)

    def _check_frame(self, frame: int) -> None:
        if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)) or not 0 <= frame < self.doc.frames:
            raise ValueError(f"--frame must be an integer in [0, {self.doc.frames - 1}] ({self.doc.frames} frames), "
                             f"got {frame!r}")
