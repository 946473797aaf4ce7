"""The strokes file (issue 11 item 9): strokes and the camera they were drawn with, as JSON, for the ``pose`` and
``edit`` commands and the tests that drive the tools without a window.

Format, version 1::

    {"version": 1,
     "camera": {"eye": [x, y, z], "target": [x, y, z], "up": [0, 1, 0], "fov": DEG, "width": W, "height": H},
     "brush_radius": R,
     "strokes": [{"role": "baseline", "space": "world" | "window",
                  "points": [[x, y, z], ...] | [[px, py], ...], "times": [...]}]}

* ``camera`` is the ``render`` command's: perspective with vertical ``fov`` degrees (default 45), looking from
  ``eye`` to ``target`` with ``up`` (default +Y), a ``width`` x ``height`` pixel window. It is required when a
  stroke is in window space, optional otherwise.
* World points are metres (3 numbers); window points are pixels (2 numbers), row 0 at the top.
* ``times`` (optional) are seconds, one per point, increasing.
* ``brush_radius`` is metres for world strokes and pixels for window strokes (> 0).
* Which ``role`` values are allowed is the caller's (``pose``: baseline/offset; ``edit``: surface/silhouette);
  any other key of a stroke is kept in :attr:`StrokeSpec.extra` for the caller to validate, as are unknown
  top-level keys in :attr:`StrokeFile.extra`.

Every problem raises :class:`StrokeFileError` (a ValueError) whose message says what is wrong and where, e.g.
``strokes[1].points[3]: expected 2 numbers (window space), got [1, 2, 3]``.

Limits (refused with the count and the limit): the file is read by :mod:`engine.textfile` (a regular file of at
most MAX_FILE_BYTES, JSON nested at most MAX_JSON_DEPTH deep); at most MAX_STROKES strokes and MAX_POINTS points
per stroke; coordinates, radii and times within +-MAX_COORD / MAX_TIME (metres, pixels, seconds) so that the
fitting and unprojection arithmetic never overflows. Parsing does not fit curves: the
caller turns :attr:`StrokeSpec.points` into :class:`engine.input.strokes.Stroke` (and unprojects window strokes).
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.textfile import MAX_JSON_DEPTH, parse_json, read_user_text

__all__ = ["StrokeFileError", "CameraSpec", "StrokeSpec", "StrokeFile", "parse_stroke_file", "load_stroke_file",
           "STROKE_FILE_VERSION", "SPACES", "MAX_POINTS", "MAX_STROKES", "MAX_FILE_BYTES", "MAX_COORD", "MAX_TIME"]

STROKE_FILE_VERSION = 1
SPACES = ("world", "window")
_DIM = {"world": 3, "window": 2}
_UNITS = {"world": "world space", "window": "window space"}
_TOP_KEYS = ("version", "camera", "brush_radius", "strokes")
_CAMERA_KEYS = ("eye", "target", "up", "fov", "width", "height")
_STROKE_KEYS = ("role", "space", "points", "times")
#: points per stroke: a mouse sampled at 1 kHz for 10 s; fitting a stroke is linear in its kept points
MAX_POINTS = 10_000
MAX_STROKES = 1_000
MAX_FILE_BYTES = 32 << 20
#: largest coordinate (metres for world points, pixels for window points) and brush radius
MAX_COORD = 1e6
#: largest |time| in seconds
MAX_TIME = 1e9


class StrokeFileError(ValueError):
    """A strokes file that cannot be used; the message names the place (``strokes[1].points[3]: ...``)."""


@dataclass(frozen=True)
class CameraSpec:
    """The camera of a strokes file: the ``render`` command's perspective camera and window size, as plain data
    (input does not import render: :meth:`engine.render.camera.Camera.from_spec` makes the camera)."""

    eye: np.ndarray
    target: np.ndarray
    up: np.ndarray
    fov: float
    width: int
    height: int

    @property
    def aspect(self) -> float:
        return self.width / self.height


@dataclass(frozen=True)
class StrokeSpec:
    """One stroke as written: ``points`` (N, 3) metres or (N, 2) pixels, float64; ``times`` (N,) or None;
    ``index`` its position in the file's list (for messages); ``extra`` its other keys, unvalidated."""

    role: str
    space: str
    points: np.ndarray
    times: np.ndarray | None
    index: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """The stroke's place in the file, for messages: ``strokes[i]``."""
        return f"strokes[{self.index}]"


@dataclass(frozen=True)
class StrokeFile:
    """A parsed strokes file. ``camera`` is None when the file has none (then no stroke is in window space)."""

    version: int
    camera: CameraSpec | None
    brush_radius: float | None
    strokes: tuple[StrokeSpec, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def by_role(self, role: str) -> list[StrokeSpec]:
        """The strokes with ``role``, in file order."""
        return [s for s in self.strokes if s.role == role]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _within(v: Any, limit: float) -> bool:
    """A JSON number (not bool) that is finite and at most ``limit`` in magnitude (huge ints included)."""
    return _is_number(v) and (abs(v) <= limit if isinstance(v, int) else math.isfinite(v) and abs(v) <= limit)


def _number(v: Any, where: str, limit: float = MAX_COORD) -> float:
    if not _is_number(v):
        raise StrokeFileError(f"{where}: expected a number, got {_short(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise StrokeFileError(f"{where}: expected a finite number, got {_short(v)}")
    if not _within(v, limit):
        raise StrokeFileError(f"{where}: {_short(v)} is outside [-{limit:g}, {limit:g}]; expected a finite number")
    return float(v)


def _vector(v: Any, n: int, where: str, what: str = "") -> np.ndarray:
    if not isinstance(v, list) or len(v) != n or not all(_is_number(x) for x in v):
        raise StrokeFileError(f"{where}: expected {n} numbers{what}, got {_short(v)}")
    if not all(isinstance(x, int) or math.isfinite(x) for x in v):
        raise StrokeFileError(f"{where}: expected finite numbers, got {_short(v)}")
    if not all(_within(x, MAX_COORD) for x in v):
        raise StrokeFileError(f"{where}: {_short(v)} is outside [-{MAX_COORD:g}, {MAX_COORD:g}]; expected finite "
                              "numbers")
    return np.asarray(v, np.float64)


def _positive_int(v: Any, where: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 16384:
        raise StrokeFileError(f"{where}: expected a whole number of pixels in [1, 16384], got {_short(v)}")
    return int(v)


def _parse_camera(raw: Any) -> CameraSpec:
    if not isinstance(raw, dict):
        raise StrokeFileError(f"camera: expected an object with {', '.join(_CAMERA_KEYS)}, got {_short(raw)}")
    unknown = sorted(set(raw) - set(_CAMERA_KEYS))
    if unknown:
        raise StrokeFileError(f"camera: unknown key {_short(unknown[0])} (expected {', '.join(_CAMERA_KEYS)})")
    for key in ("eye", "target", "width", "height"):
        if key not in raw:
            raise StrokeFileError(f"camera: missing {key!r}")
    eye = _vector(raw["eye"], 3, "camera.eye")
    target = _vector(raw["target"], 3, "camera.target")
    up = _vector(raw.get("up", [0.0, 1.0, 0.0]), 3, "camera.up")
    fov = _number(raw.get("fov", 45.0), "camera.fov")
    if not 1.0 <= fov <= 170.0:
        raise StrokeFileError(f"camera.fov: expected degrees in [1, 170], got {raw['fov']!r}")
    width = _positive_int(raw["width"], "camera.width")
    height = _positive_int(raw["height"], "camera.height")
    forward = target - eye
    if not np.linalg.norm(forward) > 1e-9:
        raise StrokeFileError(f"camera: eye and target coincide at {eye.tolist()}")
    scale = float(np.linalg.norm(forward)) * max(float(np.linalg.norm(up)), 1e-300)
    if not float(np.linalg.norm(np.cross(forward, up))) > 1e-9 * scale:
        raise StrokeFileError(f"camera.up: {up.tolist()} is zero or parallel to the view direction")
    return CameraSpec(eye, target, up, fov, width, height)


def _parse_stroke(raw: Any, i: int, roles: Collection[str]) -> StrokeSpec:
    where = f"strokes[{i}]"
    if not isinstance(raw, dict):
        raise StrokeFileError(f"{where}: expected an object with role, space and points, got {_short(raw)}")
    for key in ("role", "space", "points"):
        if key not in raw:
            raise StrokeFileError(f"{where}: missing {key!r}")
    role, space = raw["role"], raw["space"]
    if not isinstance(role, str) or role not in roles:
        raise StrokeFileError(f"{where}.role: unknown role {_short(role)} (expected {' or '.join(map(repr, roles))})")
    if not isinstance(space, str) or space not in SPACES:
        raise StrokeFileError(f"{where}.space: unknown space {_short(space)} (expected 'world' or 'window')")
    dim = _DIM[space]
    pts = raw["points"]
    if not isinstance(pts, list):
        raise StrokeFileError(f"{where}.points: expected a list of points, got {_short(pts)}")
    if len(pts) < 2:
        raise StrokeFileError(f"{where}.points: a stroke needs at least two points, got {len(pts)}")
    if len(pts) > MAX_POINTS:
        raise StrokeFileError(f"{where}.points: {len(pts)} points, over the limit of {MAX_POINTS} per stroke")
    points = np.stack([_vector(p, dim, f"{where}.points[{k}]", f" ({_UNITS[space]})") for k, p in enumerate(pts)])
    if not np.linalg.norm(np.diff(points, axis=0), axis=1).max() > 0:
        raise StrokeFileError(f"{where}.points: the stroke has zero length (all its points coincide)")
    times = None
    if "times" in raw:
        tr = raw["times"]
        if not isinstance(tr, list) or len(tr) != len(pts):
            got = f"{len(tr)} values" if isinstance(tr, list) else repr(tr)
            raise StrokeFileError(f"{where}.times: expected {len(pts)} numbers (one per point), got {got}")
        times = np.array([_number(t, f"{where}.times[{k}]", MAX_TIME) for k, t in enumerate(tr)], np.float64)
        bad = np.flatnonzero(np.diff(times) <= 0)
        if len(bad):
            k = int(bad[0]) + 1
            raise StrokeFileError(f"{where}.times[{k}]: times must increase, got {tr[k - 1]!r} then {tr[k]!r}")
    extra = {k: v for k, v in raw.items() if k not in _STROKE_KEYS}
    return StrokeSpec(str(role), str(space), points, times, i, extra)


def parse_stroke_file(data: Any, *, roles: Collection[str], required: Collection[str] = (),
                      brush_radius: bool = True) -> StrokeFile:
    """Validate a decoded strokes file (the JSON object) and return it as a :class:`StrokeFile`.

    ``roles``: the stroke roles the caller accepts; ``required``: roles that must occur at least once;
    ``brush_radius``: whether the file must give ``brush_radius``. Raises :class:`StrokeFileError`."""
    if not roles:
        raise ValueError("roles must name at least one accepted stroke role")
    if not isinstance(data, Mapping):
        raise StrokeFileError(f"expected a JSON object with version, camera, brush_radius and strokes, "
                              f"got {type(data).__name__}")
    if "version" not in data:
        raise StrokeFileError(f"missing 'version' (this engine reads version {STROKE_FILE_VERSION})")
    version = data["version"]
    if not _is_number(version) or version != STROKE_FILE_VERSION:
        raise StrokeFileError(f"version: unsupported version {_short(version)} (this engine reads version "
                              f"{STROKE_FILE_VERSION})")
    raw_strokes = data.get("strokes")
    if not isinstance(raw_strokes, list):
        raise StrokeFileError(f"strokes: expected a list of strokes, got {_short(raw_strokes)}")
    if len(raw_strokes) > MAX_STROKES:
        raise StrokeFileError(f"strokes: {len(raw_strokes)} strokes, over the limit of {MAX_STROKES}")
    strokes = tuple(_parse_stroke(s, i, roles) for i, s in enumerate(raw_strokes))
    for role in required:
        if not any(s.role == role for s in strokes):
            raise StrokeFileError(f"strokes: no {role!r} stroke (the file needs at least one)")
    camera = None
    if data.get("camera") is not None:
        camera = _parse_camera(data["camera"])
    else:
        window = [s for s in strokes if s.space == "window"]
        if window:
            raise StrokeFileError(f"{window[0].where}: window-space points need a 'camera' in the file")
    radius = None
    if "brush_radius" in data:
        radius = _number(data["brush_radius"], "brush_radius")
        if not radius > 0:
            raise StrokeFileError(f"brush_radius: expected a number > 0 (at most {MAX_COORD:g}), got "
                                  f"{_short(data['brush_radius'])}")
    elif brush_radius:
        raise StrokeFileError("missing 'brush_radius' (metres for world strokes, pixels for window strokes)")
    extra = {k: v for k, v in data.items() if k not in _TOP_KEYS}
    return StrokeFile(int(version), camera, radius, strokes, extra)


def load_stroke_file(path: str | Path, *, roles: Collection[str], required: Collection[str] = (),
                     brush_radius: bool = True) -> StrokeFile:
    """Read and validate the strokes file at ``path`` (see :func:`parse_stroke_file`) the careful way
    (:mod:`engine.textfile`): a missing file, a folder, a FIFO or device, a file over MAX_FILE_BYTES, bytes that
    are not UTF-8 and unreadable JSON (with the line and column) all raise :class:`StrokeFileError`."""
    p = Path(path)
    try:
        text = read_user_text(p, "strokes file", max_bytes=MAX_FILE_BYTES, kind="JSON")
        data = parse_json(text, p.name, max_depth=MAX_JSON_DEPTH, label="not JSON")
    except StrokeFileError:
        raise
    except ValueError as e:
        raise StrokeFileError(str(e)) from None
    try:
        return parse_stroke_file(data, roles=roles, required=required, brush_radius=brush_radius)
    except StrokeFileError as e:
        raise StrokeFileError(f"{p.name}: {e}") from None
