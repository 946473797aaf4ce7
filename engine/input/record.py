"""Recorded editor sessions: a documented, versioned JSON-lines file (``.jsonl``), written while a person works
in the editor (``main.py --record FILE``) and read by ``main.py replay FILE`` and the tool tests.

Format, version 2 (one JSON object per line, UTF-8; version 1 files, which have no ``vr`` key, read as before):

* line 1, the header::

    {"format": "skinengine-session", "version": 2, "engine": "0.1.0",
     "window": {"width": 1280, "height": 720}, "step": 0.016666666666666666,
     "camera": {"target": [x, y, z], "yaw": DEG, "pitch": DEG, "distance": M, "fov": DEG,
                "eye": [x, y, z], "up": [0, 1, 0]},
     "assets": [{"source": "humanoid", "clip": "idle", "time": 0.0, "speed": 1.0,
                 "position": [0, 0, 0], "yaw": 0.0, "deformer": "lbs"}],
     "editor": {"tool": "pose", "brush_radius": 60.0, "epsilon_px": 8.0}}

  ``camera`` is the orbit camera (target, yaw, pitch, distance, vertical fov); ``eye`` and ``up`` are there for
  other readers (and are enough on their own: without ``yaw`` the orbit is computed from eye and target).
  ``assets`` are the characters in spawn order: ``source`` a generated character's name or a .gltf/.glb path
  as it was given; for a file also ``path`` (its absolute path when recorded) and ``sha256`` (of its bytes).
  ``replay`` looks for the file beside the recording first, then as given, then at ``path``, then by its
  name beside the recording, and warns when the file found has another hash. ``editor`` holds the editor
  settings at the start (every key optional; game.editor.EditorSettings lists them). ``step`` is the fixed
  simulation step in seconds. ``vr`` (version 2, VR sessions only; the ``vr`` command's ``--record``): the
  device (``"simulated"`` or ``"openvr"``), ``fps``, the eye geometry ``eyes`` (``width``, ``height``, ``near``,
  ``far``, ``eye_to_head`` (2,4,4) and OpenVR-ordered projection tangents ``raw`` (2,4), left eye first), the
  ``tracking_to_world`` 4x4 at the start, ``brush_radius`` (m), ``bulge`` settings and ``probe_size``
  (the controller camera's pixels); its frames hold ``tracked`` events (head, left, right: position,
  orientation, ``pressure`` = trigger value, ``controls`` = VR buttons (grip 1, menu 2, primary 4, secondary 8,
  stick 16), ``axis`` = stick x, y) and ``{"type": "action", "name": "vr", "args": {"name": "tool:bulge"}}``.
* then, in order, device events and tool/UI actions, each an :mod:`engine.input.events` dict
  (``{"type": "pointer_down", "t": 12.5, "x": 640.0, "y": 360.0, "button": 1, ...}``; ``t`` seconds on one
  monotonic clock, never decreasing), and after each displayed frame's events a frame line
  ``{"type": "frame", "dt": 0.0166}`` with the real seconds that frame ran;
* the last line ``{"type": "end", "frames": N}``; a file without it was cut off.

Tool and panel actions are ``{"type": "action", "name": ..., "args": {...}}`` events; the names the editor runs
are listed in game/editor/systems.py (``tool``, ``set``, ``undo``, ...; the surface tools add ``end_edit``, a
slider released, and ``surface_nudge``, a key stepping a surface setting) and game/editor/editor.py (the
character actions). They need no new field, so the format stays version 1; ``editor`` in the header may hold
the surface tools' ``surface_*`` settings (game.editor.EditorSettings), which older files leave at their
defaults.

Replay feeds each frame's events to the editor's INPUT-phase systems and runs the frame with its recorded dt,
so the clock, every tool and the result are exactly those of the session. A hand-written file may leave out
the frame lines: its events are then grouped into frames of one fixed ``step`` by their timestamps.

Errors: a missing or broken header, an unknown version, invalid JSON, a truncated file, an unknown event
type or a bad field raise :class:`RecordError` (a ValueError) whose message names the file and line.

Limits (each refused with its value and the limit): the file is read by :mod:`engine.textfile` (a regular file
of at most MAX_FILE_BYTES; each line JSON nested at most MAX_JSON_DEPTH deep); every number on every line is
finite and within +-MAX_VALUE (positions, times, pixels); a frame's dt and the time between two events are at
most MAX_GAP seconds; a file replays at most MAX_FRAMES frames (one hour at 60 Hz).
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from engine.input.events import EventError, InputEvent, event_from_dict
from engine.textfile import MAX_JSON_DEPTH, check_numbers, json_depth, read_user_text

__all__ = ["FORMAT", "VERSION", "RecordError", "RecordHeader", "RecordedFrame", "Recording", "read_recording",
           "parse_recording", "Recorder", "MAX_FILE_BYTES", "MAX_VALUE", "MAX_GAP", "MAX_FRAMES"]

FORMAT = "skinengine-session"
VERSION = 2
#: the versions this engine reads (1: editor sessions before VR; 2 adds the header's ``vr``)
READABLE_VERSIONS = (1, 2)
_HEADER_KEYS = {"format", "version", "engine", "window", "step", "camera", "assets", "editor", "vr"}
_VR_KEYS = {"device", "fps", "eyes", "tracking_to_world", "brush_radius", "bulge", "probe_size"}
_ASSET_KEYS = {"source", "clip", "time", "speed", "position", "yaw", "deformer", "path", "sha256"}
MAX_FILE_BYTES = 256 << 20
#: largest magnitude of any number in a recording (metres, pixels, seconds, degrees)
MAX_VALUE = 1e9
#: longest frame dt and longest pause between two events, seconds
MAX_GAP = 3600.0
MAX_FRAMES = 216_000


class RecordError(ValueError):
    """A recording that cannot be read; the message names the file and line."""


def _vec(d: dict[str, Any], key: str, n: int, where: str) -> list[float]:
    v = d.get(key)
    if (not isinstance(v, list) or len(v) != n
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)):
        raise ValueError(f"{where}.{key} must be {n} finite numbers, got {v!r}")
    return [float(x) for x in v]


def _num(d: dict[str, Any], key: str, where: str, default: float | None = None) -> float:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{where}.{key} must be a finite number, got {v!r}")
    return float(v)


@dataclass
class RecordHeader:
    """The first line: what the session started from."""

    width: int
    height: int
    camera: dict[str, Any]
    assets: list[dict[str, Any]]
    step: float = 1.0 / 60.0
    editor: dict[str, Any] = field(default_factory=dict)
    engine: str = "unknown"
    version: int = VERSION
    vr: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"format": FORMAT, "version": self.version, "engine": self.engine,
             "window": {"width": self.width, "height": self.height}, "step": self.step,
             "camera": self.camera, "assets": self.assets, "editor": self.editor}
        if self.vr is not None:
            d["vr"] = self.vr
        return d

    @classmethod
    def from_dict(cls, d: Any) -> RecordHeader:
        """Validate a header dict; ValueError naming the bad key."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError(f'the first line must be the header {{"format": "{FORMAT}", "version": {VERSION}, ...}}')
        version = d.get("version")
        if isinstance(version, bool) or version not in READABLE_VERSIONS:
            raise ValueError(f"unknown version {version!r} (this engine reads versions "
                             f"{', '.join(map(str, READABLE_VERSIONS))})")
        extra = sorted(set(d) - _HEADER_KEYS)
        if extra:
            raise ValueError(f"header has unknown key(s) {extra}")
        win = d.get("window")
        if not isinstance(win, dict):
            raise ValueError("header.window must be {\"width\": W, \"height\": H}")
        size = []
        for k in ("width", "height"):
            v = win.get(k)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 8192:
                raise ValueError(f"header.window.{k} must be an integer in [1, 8192], got {v!r}")
            size.append(v)
        step = _num(d, "step", "header", 1.0 / 60.0)
        if not 1e-4 <= step <= 1.0:
            raise ValueError(f"header.step must be in [1e-4, 1] seconds, got {step!r}")
        cam = d.get("camera")
        if not isinstance(cam, dict):
            raise ValueError("header.camera must be an object (target, yaw, pitch, distance, fov or eye, target)")
        _vec(cam, "target", 3, "header.camera")
        if "yaw" in cam:
            for k in ("yaw", "pitch", "distance"):
                _num(cam, k, "header.camera")
        else:
            _vec(cam, "eye", 3, "header.camera")
        fov = _num(cam, "fov", "header.camera", 45.0)
        if not 1.0 <= fov <= 179.0:
            raise ValueError(f"header.camera.fov must be in [1, 179] degrees, got {fov!r}")
        assets = d.get("assets")
        if not isinstance(assets, list) or not assets:
            raise ValueError("header.assets must be a list of at least one character")
        for i, a in enumerate(assets):
            where = f"header.assets[{i}]"
            if not isinstance(a, dict) or not isinstance(a.get("source"), str) or not a["source"]:
                raise ValueError(f"{where} must be an object with a \"source\" (a generated name or a path)")
            extra = sorted(set(a) - _ASSET_KEYS)
            if extra:
                raise ValueError(f"{where} has unknown key(s) {extra}")
            if "position" in a:
                _vec(a, "position", 3, where)
            for k in ("time", "speed", "yaw"):
                if k in a:
                    _num(a, k, where)
            for k in ("path", "sha256"):
                if k in a and not isinstance(a[k], str):
                    raise ValueError(f"{where}.{k} must be a string, got {type(a[k]).__name__}")
        editor = d.get("editor", {})
        if not isinstance(editor, dict):
            raise ValueError("header.editor must be an object")
        eng = d.get("engine", "unknown")
        vr = d.get("vr")
        if vr is not None:
            if version < 2:
                raise ValueError("header.vr needs version 2")
            _check_vr(vr)
        return cls(size[0], size[1], cam, assets, step, editor, str(eng), int(version), vr)


def _check_vr(vr: Any) -> None:
    """The header's ``vr`` object (ValueError naming the key)."""
    if not isinstance(vr, dict):
        raise ValueError("header.vr must be an object")
    extra = sorted(set(vr) - _VR_KEYS)
    if extra:
        raise ValueError(f"header.vr has unknown key(s) {extra}")
    missing = sorted(_VR_KEYS - set(vr) - {"bulge"})
    if missing:
        raise ValueError(f"header.vr misses {missing}")
    if vr["device"] not in ("simulated", "openvr"):
        raise ValueError(f"header.vr.device must be simulated or openvr, got {vr['device']!r}")
    fps = _num(vr, "fps", "header.vr")
    if not 1.0 <= fps <= 1000.0:
        raise ValueError(f"header.vr.fps must be in [1, 1000], got {fps!r}")
    if not _num(vr, "brush_radius", "header.vr") > 0:
        raise ValueError("header.vr.brush_radius must be > 0")
    p = vr["probe_size"]
    if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 256:
        raise ValueError(f"header.vr.probe_size must be an integer in [1, 256], got {p!r}")
    if not isinstance(vr.get("bulge", {}), dict):
        raise ValueError("header.vr.bulge must be an object")
    t = vr["tracking_to_world"]
    if (not isinstance(t, list) or len(t) != 4 or not all(isinstance(r, list) and len(r) == 4 for r in t)
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                       for r in t for x in r)):
        raise ValueError("header.vr.tracking_to_world must be a 4x4 list of finite numbers")
    from engine.input.vr import EyeGeometry

    EyeGeometry.from_dict(vr["eyes"], "header.vr.eyes")


@dataclass
class RecordedFrame:
    """One displayed frame: its events in order and the real seconds it ran."""

    dt: float
    events: list[InputEvent] = field(default_factory=list)


@dataclass
class Recording:
    """A parsed file: the header and the frames; ``path`` is where it was read from (None: from text)."""

    header: RecordHeader
    frames: list[RecordedFrame]
    path: Path | None = None

    @property
    def events(self) -> list[InputEvent]:
        return [e for f in self.frames for e in f.events]


def _bucket(events: list[tuple[int, InputEvent]], step: float, name: str = "<recording>") -> list[RecordedFrame]:
    """Events without frame lines: frames of one fixed step by timestamp, from the first event."""
    if not events:
        return []
    t0 = events[0][1].t
    count = (events[-1][1].t - t0) / step + 1
    if not count <= MAX_FRAMES:
        raise RecordError(f"{name}:{events[-1][0]}: the events span {count:.0f} frames of {step:g} s, over the "
                          f"limit of {MAX_FRAMES} frames")
    frames: list[RecordedFrame] = []
    for _line, e in events:
        k = int(math.floor((e.t - t0) / step + 1e-9))
        while len(frames) <= k:
            frames.append(RecordedFrame(step))
        frames[k].events.append(e)
    return frames


def parse_recording(lines: Iterable[str], *, name: str = "<recording>") -> Recording:
    """Parse the lines of a recording (see the module docstring); RecordError naming ``name`` and the line."""
    header: RecordHeader | None = None
    frames: list[RecordedFrame] = []
    pending: list[tuple[int, InputEvent]] = []  # (line, event) since the last frame line
    framed = False
    ended = False
    last_t = -math.inf
    lineno = 0

    def fail(line: int, msg: str) -> RecordError:
        return RecordError(f"{name}:{line}: {msg}")

    for lineno, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text:
            continue
        if ended:
            raise fail(lineno, "a line after the end line")
        depth = json_depth(text)
        if depth > MAX_JSON_DEPTH:
            raise fail(lineno, f"invalid JSON (nested {depth} levels deep, over the limit of {MAX_JSON_DEPTH})")
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            what = "invalid JSON" if raw.endswith("\n") else "truncated line"
            raise fail(lineno, f"{what} ({exc.msg} at column {exc.colno})") from None
        except ValueError as exc:  # an integer of more digits than Python converts
            raise fail(lineno, f"invalid JSON ({str(exc).splitlines()[0]})") from None
        try:
            check_numbers(d, "the line", max_abs=MAX_VALUE)
        except ValueError as exc:
            raise fail(lineno, str(exc).removeprefix("the line: ")) from None
        if header is None:
            try:
                header = RecordHeader.from_dict(d)
            except ValueError as exc:
                raise fail(lineno, str(exc)) from None
            continue
        kind = d.get("type") if isinstance(d, dict) else None
        if kind == "frame":
            dt = d.get("dt")
            if (set(d) != {"type", "dt"} or isinstance(dt, bool) or not isinstance(dt, (int, float))
                    or not math.isfinite(dt) or dt < 0):
                raise fail(lineno, f'a frame line is {{"type": "frame", "dt": SECONDS >= 0}}, got {text:.80}')
            if dt > MAX_GAP:
                raise fail(lineno, f"a frame dt of {dt!r} s is over the limit of {MAX_GAP:g} s")
            if len(frames) >= MAX_FRAMES:
                raise fail(lineno, f"more than {MAX_FRAMES} frames, over the limit of {MAX_FRAMES}")
            framed = True
            frames.append(RecordedFrame(float(dt), [e for _, e in pending]))
            pending = []
            continue
        if kind == "end":
            count = d.get("frames")
            if framed and count != len(frames):
                raise fail(lineno, f"the end line says {count!r} frames, the file has {len(frames)}")
            if framed and pending:
                raise fail(pending[0][0], "events after the last frame line (no frame line closes them)")
            ended = True
            continue
        try:
            e = event_from_dict(d)
        except (EventError, TypeError, ValueError, OverflowError) as exc:
            raise fail(lineno, str(exc)) from None
        if e.t < last_t:
            raise fail(lineno, f"timestamps must not decrease: t={e.t!r} after t={last_t!r}")
        if last_t > -math.inf and e.t - last_t > MAX_GAP:
            raise fail(lineno, f"t={e.t!r} is {e.t - last_t:g} s after the previous event, over the limit of "
                               f"{MAX_GAP:g} s")
        last_t = e.t
        pending.append((lineno, e))
    if header is None:
        raise RecordError(f"{name}:{max(lineno, 1)}: empty file: no header line")
    if not ended:
        raise RecordError(f"{name}:{lineno}: truncated: the file ends without its end line "
                          '{"type": "end", "frames": N} (the recording was cut off)')
    if not framed:
        frames = _bucket(pending, header.step, name)
    return Recording(header, frames)


def read_recording(path: str | Path) -> Recording:
    """Read and check a recording file (RecordError with the line number when it is bad)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no recording at {str(p)!r}")
    try:  # the careful reader: a regular file (not a FIFO or device), at most MAX_FILE_BYTES, UTF-8
        text = read_user_text(p, "recording", max_bytes=MAX_FILE_BYTES, kind="JSON-lines")
    except ValueError as exc:
        raise RecordError(str(exc)) from None
    rec = parse_recording(text.splitlines(keepends=True), name=p.name)
    rec.path = p
    return rec


class Recorder:
    """Writes a recording: the header when made, then :meth:`frame` per displayed frame, the end line on
    :meth:`close` (a context manager). Each frame is flushed, so a crash leaves a file that says it was cut
    off."""

    def __init__(self, path: str | Path, header: RecordHeader) -> None:
        if not isinstance(header, RecordHeader):
            raise TypeError(f"header must be a RecordHeader, got {type(header).__name__}")
        RecordHeader.from_dict(json.loads(json.dumps(header.to_dict())))  # refuse a header it could not read
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: IO[str] | None = self.path.open("w", encoding="utf-8")
        self.frames = 0
        self._write(header.to_dict())

    def _write(self, d: dict[str, Any]) -> None:
        assert self._f is not None
        self._f.write(json.dumps(d, separators=(", ", ": ")) + "\n")

    def frame(self, events: Sequence[InputEvent], dt: float) -> None:
        """Append one frame: its events, then its frame line."""
        if self._f is None:
            raise ValueError(f"the recording {self.path.name!r} is closed")
        if not (math.isfinite(dt) and dt >= 0):
            raise ValueError(f"dt must be a finite number of seconds >= 0, got {dt!r}")
        for e in events:
            self._write(e.to_dict())
        self._write({"type": "frame", "dt": float(dt)})
        self._f.flush()
        self.frames += 1

    def close(self) -> None:
        """Write the end line and close (idempotent)."""
        if self._f is None:
            return
        self._write({"type": "end", "frames": self.frames})
        self._f.close()
        self._f = None

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def file_identity(source: str) -> dict[str, str]:
    """For a character spawned from a file: its absolute path and the SHA-256 of its bytes (a recording then
    finds it from another folder and can tell another file of the same name); {} for a generated name."""
    import hashlib

    from engine.assets.library import CHARACTERS

    p = Path(source)
    if source in {c.name for c in CHARACTERS} or not p.is_file():
        return {}
    return {"path": str(p.resolve()), "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}


def resolve_source(asset: dict[str, Any], base: Path | None) -> str:
    """Where a recorded character's file is now: beside the recording (``base``), as given, at the recorded
    absolute ``path``, or by its name beside the recording; ValueError naming every place looked at when none
    holds it. A file whose SHA-256 differs from the recorded one is used with a warning."""
    import hashlib
    import logging

    from engine.assets.library import CHARACTERS

    source = str(asset["source"])
    if source in {c.name for c in CHARACTERS}:
        return source
    p = Path(source)
    places = [base / p] if base is not None and not p.is_absolute() else []
    places.append(p)
    if asset.get("path"):
        places.append(Path(asset["path"]))
    if base is not None:
        places.append(base / p.name)
    found = next((q for q in places if q.is_file()), None)
    if found is None:
        looked = ", ".join(dict.fromkeys(str(q) for q in places))
        raise ValueError(f"asset {source!r} not found (looked at: {looked})")
    want = asset.get("sha256")
    if want and hashlib.sha256(found.read_bytes()).hexdigest() != want:
        logging.getLogger(__name__).warning("%s differs from the file recorded (its SHA-256 changed)", found)
    return str(found)
