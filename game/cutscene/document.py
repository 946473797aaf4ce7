"""The cutscene document: a versioned, diff-friendly TOML file (``format = "skinengine-cutscene"``, version 1).

Top level: ``format``, ``version``, ``fps``, ``duration`` (seconds; ``frames = round(duration * fps)``, frame k
is at time k / fps), ``width``, ``height`` and the tables ``[[characters]]``, ``[[tracks]]``, ``[[cameras]]``,
``[[cuts]]``, ``[[events]]`` (the README's Cutscenes section lists every key). Reading is careful (the one reader,
engine/textfile.py): every problem is a :class:`CutsceneError` (a ValueError) whose one line names the file, the
key as a path (``tracks[0].clips[1].start``), the bad value and what is valid. Unknown keys are refused with the
valid ones, so a misspelt key never passes silently.

This module checks what the file alone can tell (types, ranges, order, references between tables); what needs
the assets (the clip and joint names, the edits file's primitives) is checked by :func:`check_assets` in
game/cutscene/player.py when the characters are loaded. ``to_dict``/``save`` write the same layout back, so
load -> save -> load gives an equal document.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from engine.skinning import registry
from engine.textfile import read_user_text

__all__ = ["FORMAT", "VERSION", "TRACK_TYPES", "EASES", "CLIP_MODES", "MAX_FILE_BYTES", "CutsceneError", "Character",
           "Segment", "Track", "CameraKey", "Camera", "Cut", "Event", "Shot", "Cutscene", "load", "loads",
           "frame_at_or_after"]

FORMAT = "skinengine-cutscene"
VERSION = 1
TRACK_TYPES = ("animation", "pose", "edits", "path")
EASES = ("linear", "smooth")
CLIP_MODES = ("clamp", "loop", "pingpong")
MAX_FILE_BYTES = 16 << 20
MAX_FPS = 240.0
MAX_DURATION = 3600.0
MAX_COORD = 1e6
MAX_SPEED = 1e3


class CutsceneError(ValueError):
    """A document the engine cannot play; the message is one line naming the key and what is valid."""


def frame_at_or_after(time: float, fps: float) -> int:
    """The first frame k with k / fps >= time (a hair of rounding tolerance, so 1.5 s at 24 fps is frame 36)."""
    return int(math.ceil(round(time * fps, 6)))


# ------------------------------------------------------------------------------------------------ readers
class _Reader:
    """Typed access to one table of the parsed TOML, naming every key by its path in messages."""

    def __init__(self, data: Any, where: str, name: str) -> None:
        if not isinstance(data, dict):
            raise CutsceneError(f"{name}: {where or 'the document'} must be a table, got {_kind(data)}")
        self.data, self.where, self.name = data, where, name

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, message: str) -> CutsceneError:
        return CutsceneError(f"{self.name}: {self.path(key)}: {message}")

    def known(self, keys: tuple[str, ...]) -> None:
        for k in self.data:
            if k not in keys:
                raise self.fail(k, f"unknown key; valid keys here: {', '.join(keys)}")

    def has(self, key: str) -> bool:
        return key in self.data

    def number(self, key: str, default: float | None = None, *, lo: float = -MAX_COORD, hi: float = MAX_COORD,
               lo_open: bool = False) -> float:
        if key not in self.data:
            if default is None:
                raise self.fail(key, "missing; it is required")
            return float(default)
        v = self.data[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self.fail(key, f"must be a finite number, got {_short(v)}")
        ok = (lo < v if lo_open else lo <= v) and v <= hi
        if not ok:
            bracket = "(" if lo_open else "["
            raise self.fail(key, f"{_short(v)} is out of range; valid: {bracket}{lo:g}, {hi:g}]")
        return float(v)

    def integer(self, key: str, default: int | None = None, *, lo: int, hi: int) -> int:
        if key not in self.data:
            if default is None:
                raise self.fail(key, "missing; it is required")
            return default
        v = self.data[key]
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise self.fail(key, f"must be an integer in [{lo}, {hi}], got {_short(v)}")
        return int(v)

    def text(self, key: str, default: str | None = None, *, choices: tuple[str, ...] | None = None,
             empty: bool = False) -> str:
        if key not in self.data:
            if default is None:
                raise self.fail(key, "missing; it is required")
            return default
        v = self.data[key]
        if not isinstance(v, str) or (not empty and not v) or len(v) > 4096:
            raise self.fail(key, f"must be a {'' if empty else 'non-empty '}string, got {_short(v)}")
        if choices is not None and v not in choices:
            raise self.fail(key, f"{v!r} is not valid; valid: {', '.join(choices)}")
        return v

    def vec3(self, key: str, default: tuple[float, float, float] | None = None) -> tuple[float, float, float]:
        if key not in self.data:
            if default is None:
                raise self.fail(key, "missing; it is required (three numbers [x, y, z])")
            return default
        v = self.data[key]
        if (not isinstance(v, list) or len(v) != 3
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                           and abs(x) <= MAX_COORD for x in v)):
            raise self.fail(key, f"must be three finite numbers [x, y, z], got {_short(v)}")
        return (float(v[0]), float(v[1]), float(v[2]))

    def tables(self, key: str) -> list[_Reader]:
        v = self.data.get(key, [])
        if not isinstance(v, list):
            raise self.fail(key, f"must be an array of tables ([[{self.path(key)}]]), got {_kind(v)}")
        return [_Reader(x, f"{self.path(key)}[{i}]", self.name) for i, x in enumerate(v)]

    def table(self, key: str) -> dict[str, Any]:
        v = self.data.get(key, {})
        if not isinstance(v, dict):
            raise self.fail(key, f"must be a table, got {_kind(v)}")
        return v


def _kind(v: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean"}.get(type(v), type(v).__name__)


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


# ------------------------------------------------------------------------------------------------- tables
@dataclass
class Character:
    """``[[characters]]``: a named character placed in the scene with its deformer."""

    name: str
    asset: str
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw: float = 0.0
    deformer: str = "lbs"
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "asset": self.asset, "position": list(self.position),
                             "yaw": self.yaw, "deformer": self.deformer}
        if self.config:
            d["config"] = self.config
        return d


@dataclass
class Segment:
    """``[[tracks.clips]]``: clip time ``offset + (t - start) * speed`` for timeline t in [start, end] (held at
    the trim ends; ``mode`` maps it into the clip), crossfaded from the previous segment over ``blend_in``."""

    clip: str | int
    start: float
    end: float
    offset: float = 0.0
    speed: float = 1.0
    blend_in: float = 0.0
    mode: str = "clamp"

    def to_dict(self) -> dict[str, Any]:
        return {"clip": self.clip, "start": self.start, "end": self.end, "offset": self.offset,
                "speed": self.speed, "blend_in": self.blend_in, "mode": self.mode}


@dataclass
class Track:
    """``[[tracks]]``: one character's animation clips, pose keys, edit-weight keys or path.

    ``keys`` hold plain dicts: pose ``{"time", "joints": {name: [x, y, z, w]}, "ease"}`` (or ``{"time", "file",
    "clip", "ease"}``: the pose of a posed .glb's clip at its start, against its rest pose), edits
    ``{"time", "weight", "ease"}``; a path track has ``points`` (N,3) and ``times`` (N,) (the stroke's
    timestamps, seconds from its first sample) placed on the timeline at ``start``."""

    character: str
    type: str
    clips: list[Segment] = field(default_factory=list)
    keys: list[dict[str, Any]] = field(default_factory=list)
    file: str = ""
    edit: str = ""
    points: list[tuple[float, float, float]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    start: float = 0.0
    face: bool = False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"character": self.character, "type": self.type}
        if self.type == "animation":
            d["clips"] = [c.to_dict() for c in self.clips]
        elif self.type == "path":
            d.update(start=self.start, face=self.face, times=list(self.times), points=[list(p) for p in self.points])
        else:
            if self.type == "edits":
                d["file"] = self.file
                if self.edit:
                    d["edit"] = self.edit
            d["keys"] = [dict(k) for k in self.keys]
        return d


@dataclass
class CameraKey:
    time: float
    eye: tuple[float, float, float]
    target: tuple[float, float, float]
    fov: float = 45.0
    ease: str = "linear"

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "eye": list(self.eye), "target": list(self.target), "fov": self.fov,
                "ease": self.ease}


@dataclass
class Camera:
    """``[[cameras]]``: keyed eye/target/fov; ``follow`` "character/joint" makes the target that joint's world
    position plus the keyed target (an offset then)."""

    name: str
    keys: list[CameraKey]
    follow: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "follow": self.follow, "keys": [k.to_dict() for k in self.keys]}


@dataclass
class Cut:
    time: float
    camera: str


@dataclass
class Event:
    time: float
    name: str


@dataclass(frozen=True)
class Shot:
    """The frames ``first..last`` (inclusive) seen through ``camera``."""

    camera: str
    first: int
    last: int


@dataclass
class Cutscene:
    """A parsed, checked cutscene document. ``path`` is the file it came from (assets and edits files are
    relative to its folder); it is not part of the document."""

    fps: float
    duration: float
    width: int
    height: int
    characters: list[Character]
    tracks: list[Track]
    cameras: list[Camera]
    cuts: list[Cut] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    path: Path | None = field(default=None, compare=False)

    @property
    def frames(self) -> int:
        return int(round(self.duration * self.fps))

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else "cutscene"

    def time_of(self, frame: int) -> float:
        return frame / self.fps

    def character(self, name: str) -> Character:
        for c in self.characters:
            if c.name == name:
                return c
        raise KeyError(name)

    def camera(self, name: str) -> Camera:
        for c in self.cameras:
            if c.name == name:
                return c
        raise KeyError(name)

    def resolve(self, relative: str) -> Path:
        """A path named in the document, relative to the document's folder."""
        p = Path(relative)
        if p.is_absolute() or self.path is None:
            return p
        return self.path.parent / p

    def shots(self) -> list[Shot]:
        """The shots in time order: each cut's camera from its first frame to the frame before the next cut
        (inclusive); without cuts the first camera is live throughout."""
        n = self.frames
        cuts = self.cuts or [Cut(0.0, self.cameras[0].name)]
        firsts = [0] + [frame_at_or_after(c.time, self.fps) for c in cuts[1:]]
        if cuts[0].time > 0:  # before the first cut, its camera is live already
            firsts[0] = 0
        out = []
        for i, c in enumerate(cuts):
            last = (firsts[i + 1] - 1) if i + 1 < len(cuts) else n - 1
            if last >= firsts[i]:
                out.append(Shot(c.camera, firsts[i], last))
        return out

    def shot_of(self, frame: int) -> Shot:
        for s in self.shots():
            if s.first <= frame <= s.last:
                return s
        raise ValueError(f"frame {frame} is outside the cutscene's frames 0..{self.frames - 1}")

    def event_frames(self) -> list[dict[str, Any]]:
        """``[{"time": t, "frame": k, "name": ...}]``, k the first frame at or after t, in time order."""
        return [{"time": e.time, "frame": frame_at_or_after(e.time, self.fps), "name": e.name}
                for e in sorted(self.events, key=lambda e: e.time)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": VERSION, "fps": self.fps, "duration": self.duration,
            "width": self.width, "height": self.height,
            "characters": [c.to_dict() for c in self.characters],
            "tracks": [t.to_dict() for t in self.tracks],
            "cameras": [c.to_dict() for c in self.cameras],
            "cuts": [{"time": c.time, "camera": c.camera} for c in self.cuts],
            "events": [{"time": e.time, "name": e.name} for e in self.events],
        }

    def dumps(self) -> str:
        return tomli_w.dumps(_drop_empty(self.to_dict()))

    def save(self, path: str | Path) -> Path:
        """Write the document as TOML (the same layout :func:`load` reads)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.dumps())
        return p


def _drop_empty(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if not (isinstance(v, list) and not v)}


# ------------------------------------------------------------------------------------------------- parsing
TOP_KEYS = ("format", "version", "fps", "duration", "width", "height", "characters", "tracks", "cameras", "cuts",
            "events")


def load(path: str | Path) -> Cutscene:
    """Read and check the cutscene file at ``path`` (CutsceneError naming the key)."""
    p = Path(path)
    if p.suffix.lower() != ".toml":
        raise CutsceneError(f"{p}: a cutscene is a .toml file, got {p.suffix or 'no suffix'!r}")
    text = read_user_text(p, "cutscene", max_bytes=MAX_FILE_BYTES, kind="TOML")
    doc = loads(text, name=p.name)
    doc.path = p
    return doc


def loads(text: str, *, name: str = "cutscene") -> Cutscene:
    """Parse and check a cutscene document from TOML text; ``name`` labels messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CutsceneError(f"{name}: invalid TOML: {exc}") from None
    return parse(data, name=name)


def parse(data: Any, *, name: str = "cutscene") -> Cutscene:
    """Check a parsed document (a dict as TOML gives it)."""
    r = _Reader(data, "", name)
    r.known(TOP_KEYS)
    fmt = r.text("format")
    if fmt != FORMAT:
        raise r.fail("format", f"{fmt!r} is not a cutscene; valid: {FORMAT!r}")
    version = r.integer("version", lo=0, hi=2**31)
    if version != VERSION:
        newer = " (written by a newer version of the engine)" if version > VERSION else ""
        raise r.fail("version", f"{version} is not supported{newer}; valid: {VERSION}")
    fps: float = r.number("fps", lo=0.0, hi=MAX_FPS, lo_open=True)
    if isinstance(r.data["fps"], int):  # 24 stays 24 (info --json, a saved file), 29.97 stays a float
        fps = int(r.data["fps"])
    duration = r.number("duration", lo=0.0, hi=MAX_DURATION, lo_open=True)
    width = r.integer("width", lo=1, hi=8192)
    height = r.integer("height", lo=1, hi=8192)
    if round(duration * fps) < 1:
        raise r.fail("duration", f"{duration:g} s at {fps:g} fps is no frame; valid: duration * fps >= 0.5")

    characters = [_character(c) for c in r.tables("characters")]
    if not characters:
        raise r.fail("characters", "missing; a cutscene needs at least one [[characters]]")
    _unique(r, "characters", [c.name for c in characters])
    names = [c.name for c in characters]

    tracks = [_track(t, names, duration) for t in r.tables("tracks")]
    for i, t in enumerate(tracks):
        for j in range(i):
            if tracks[j].character == t.character and tracks[j].type == t.type and t.type in ("pose", "path"):
                raise r.fail(f"tracks[{i}]", f"a second {t.type} track for {t.character!r} (tracks[{j}]); "
                                             f"valid: one {t.type} track per character")

    for i, t in enumerate(tracks):
        deformer = characters[names.index(t.character)].deformer
        if t.type == "edits" and deformer != "spring":
            raise r.fail(f"tracks[{i}].character", f"surface edits are spring forces, and {t.character!r} deforms "
                                                  f"with {deformer!r}; valid: its deformer = \"spring\"")

    cameras = [_camera(c, names) for c in r.tables("cameras")]
    if not cameras:
        raise r.fail("cameras", "missing; a cutscene needs at least one [[cameras]]")
    _unique(r, "cameras", [c.name for c in cameras])
    cam_names = [c.name for c in cameras]

    cuts: list[Cut] = []
    for c in r.tables("cuts"):
        c.known(("time", "camera"))
        cut = Cut(c.number("time", lo=0.0, hi=MAX_DURATION), c.text("camera"))
        if cut.camera not in cam_names:
            raise c.fail("camera", f"cut to unknown camera {cut.camera!r}; valid: {', '.join(cam_names)}")
        if cut.time >= duration:
            raise c.fail("time", f"{cut.time:g} is at or after the end ({duration:g} s); valid: [0, duration)")
        if cuts and cut.time <= cuts[-1].time:
            raise c.fail("time", f"{cut.time:g} is not after the previous cut's {cuts[-1].time:g}; "
                                 "valid: cuts in increasing time")
        if cuts and frame_at_or_after(cut.time, fps) == frame_at_or_after(cuts[-1].time, fps):
            raise c.fail("time", f"{cut.time:g} falls on the same frame as the previous cut; valid: at least one "
                                 f"frame (1/{fps:g} s) apart")
        cuts.append(cut)

    events = []
    for e in r.tables("events"):
        e.known(("time", "name"))
        ev = Event(e.number("time", lo=0.0, hi=MAX_DURATION), e.text("name"))
        if ev.time > duration:
            raise e.fail("time", f"{ev.time:g} is after the end ({duration:g} s); valid: [0, duration]")
        events.append(ev)
    return Cutscene(fps=fps, duration=duration, width=width, height=height, characters=characters, tracks=tracks,
                    cameras=cameras, cuts=cuts, events=events)


def _unique(r: _Reader, key: str, names: list[str]) -> None:
    for i, n in enumerate(names):
        if n in names[:i]:
            raise r.fail(f"{key}[{i}].name", f"{n!r} is used twice; valid: a name of its own")


def _character(c: _Reader) -> Character:
    c.known(("name", "asset", "position", "yaw", "deformer", "config"))
    ch = Character(name=c.text("name"), asset=c.text("asset"), position=c.vec3("position", (0.0, 0.0, 0.0)),
                   yaw=c.number("yaw", 0.0, lo=-1e5, hi=1e5), deformer=c.text("deformer", "lbs"),
                   config=c.table("config"))
    valid = registry.names()
    if ch.deformer not in valid:
        raise c.fail("deformer", f"unknown deformer {ch.deformer!r}; valid: {', '.join(valid)}")
    if ch.config:
        from engine.skinning.config import DeformerConfig

        try:
            DeformerConfig.from_dict(ch.config)
        except (ValueError, TypeError) as exc:
            raise c.fail("config", str(exc)) from None
    return ch


def _ordered(r: _Reader, key: str, times: list[float]) -> None:
    for i in range(1, len(times)):
        if times[i] <= times[i - 1]:
            raise r.fail(f"{key}[{i}].time", f"{times[i]:g} is not after {times[i - 1]:g}; valid: keys in strictly "
                                             "increasing time")


def _track(t: _Reader, names: list[str], duration: float) -> Track:
    kind = t.text("type", choices=TRACK_TYPES)
    allowed = {"animation": ("character", "type", "clips"),
               "pose": ("character", "type", "keys"),
               "edits": ("character", "type", "keys", "file", "edit"),
               "path": ("character", "type", "points", "times", "start", "face")}[kind]
    t.known(allowed)
    who = t.text("character")
    if who not in names:
        raise t.fail("character", f"unknown character {who!r}; valid: {', '.join(names)}")
    track = Track(character=who, type=kind)
    if kind == "animation":
        for s in t.tables("clips"):
            s.known(("clip", "start", "end", "offset", "speed", "blend_in", "mode"))
            clip = s.data.get("clip")
            if isinstance(clip, bool) or not isinstance(clip, (str, int)) or clip == "" or (
                    isinstance(clip, int) and not 0 <= clip < 2**31):
                raise s.fail("clip", f"must be a clip name or index >= 0, got {_short(clip)}")
            seg = Segment(clip=clip, start=s.number("start", lo=0.0, hi=MAX_DURATION),
                          end=s.number("end", lo=0.0, hi=MAX_DURATION), offset=s.number("offset", 0.0),
                          speed=s.number("speed", 1.0, lo=-MAX_SPEED, hi=MAX_SPEED),
                          blend_in=s.number("blend_in", 0.0, lo=0.0, hi=MAX_DURATION),
                          mode=s.text("mode", "clamp", choices=CLIP_MODES))
            if seg.end <= seg.start:
                raise s.fail("end", f"{seg.end:g} is not after start {seg.start:g}; valid: end > start")
            if track.clips and seg.start < track.clips[-1].end:
                prev = track.clips[-1]
                raise s.fail("start", f"segment [{seg.start:g}, {seg.end:g}] overlaps the previous one "
                                      f"[{prev.start:g}, {prev.end:g}] on this track; valid: start >= "
                                      f"{prev.end:g} (segments in time order; blend_in crossfades without overlap)")
            track.clips.append(seg)
        if not track.clips:
            raise t.fail("clips", "missing; an animation track needs at least one [[tracks.clips]]")
    elif kind in ("pose", "edits"):
        for k in t.tables("keys"):
            if kind == "pose":
                k.known(("time", "joints", "ease", "file", "clip"))
                joints = k.table("joints")
                if k.has("file"):  # a posed .glb: its clip's pose against its rest pose (player.glb_pose_deltas)
                    if joints:
                        raise k.fail("joints", "give joints or file (a posed .glb), not both")
                    track.keys.append({"time": k.number("time", lo=0.0, hi=MAX_DURATION), "file": k.text("file"),
                                       "clip": k.text("clip", "pose"), "ease": k.text("ease", "linear",
                                                                                       choices=EASES)})
                    continue
                for j, q in joints.items():
                    if (not isinstance(q, list) or len(q) != 4 or not all(
                            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in q)
                            or math.sqrt(sum(float(x) ** 2 for x in q)) < 1e-6):
                        raise k.fail(f"joints.{j}", f"must be a rotation quaternion [x, y, z, w] (finite, not "
                                                    f"zero), got {_short(q)}")
                key: dict[str, Any] = {"time": k.number("time", lo=0.0, hi=MAX_DURATION),
                                       "joints": {j: [float(x) for x in q] for j, q in joints.items()},
                                       "ease": k.text("ease", "linear", choices=EASES)}
            else:
                k.known(("time", "weight", "ease"))
                key = {"time": k.number("time", lo=0.0, hi=MAX_DURATION),
                       "weight": k.number("weight", lo=-1e3, hi=1e3), "ease": k.text("ease", "linear", choices=EASES)}
            track.keys.append(key)
        if not track.keys:
            raise t.fail("keys", f"missing; a {kind} track needs at least one [[tracks.keys]]")
        _ordered(t, "keys", [k["time"] for k in track.keys])
        if kind == "edits":
            track.file = t.text("file")
            track.edit = t.text("edit", "", empty=True)
    else:
        track.start = t.number("start", 0.0, lo=0.0, hi=MAX_DURATION)
        face = t.data.get("face", False)
        if not isinstance(face, bool):
            raise t.fail("face", f"must be true or false, got {_short(face)}")
        track.face = face
        pts, times = t.data.get("points"), t.data.get("times")
        if not isinstance(pts, list) or len(pts) < 2:
            raise t.fail("points", f"must be at least two points [[x, y, z], ...], got {_short(pts)}")
        for i in range(len(pts)):
            track.points.append(_Reader({"p": pts[i]}, t.path(f"points[{i}]"), t.name).vec3("p"))
        if not isinstance(times, list) or len(times) != len(pts):
            raise t.fail("times", f"must be one timestamp per point ({len(pts)} numbers), got {_short(times)}")
        for i, x in enumerate(times):
            track.times.append(_Reader({f"times[{i}]": x}, t.where, t.name).number(f"times[{i}]", lo=0.0,
                                                                                    hi=MAX_DURATION))
            if i and track.times[i] <= track.times[i - 1]:
                raise t.fail(f"times[{i}]", f"{x:g} is not after {track.times[i - 1]:g}; valid: strictly "
                                            "increasing timestamps")
    return track


def _camera(c: _Reader, names: list[str]) -> Camera:
    c.known(("name", "follow", "keys"))
    cam = Camera(name=c.text("name"), follow=c.text("follow", "", empty=True), keys=[])
    if cam.follow:
        who, _, joint = cam.follow.partition("/")
        if not joint or who not in names:
            raise c.fail("follow", f"{cam.follow!r} must be \"character/joint\" with a character of "
                                   f"{', '.join(names)}")
    for k in c.tables("keys"):
        k.known(("time", "eye", "target", "fov", "ease"))
        key = CameraKey(time=k.number("time", lo=0.0, hi=MAX_DURATION), eye=k.vec3("eye"), target=k.vec3("target"),
                        fov=k.number("fov", 45.0, lo=1.0, hi=170.0), ease=k.text("ease", "linear", choices=EASES))
        if not cam.follow and math.dist(key.eye, key.target) < 1e-9:
            raise k.fail("target", "equals the eye; valid: a target away from the eye")
        cam.keys.append(key)
    if not cam.keys:
        raise c.fail("keys", "missing; a camera needs at least one [[cameras.keys]]")
    _ordered(c, "keys", [k.time for k in cam.keys])
    return cam
