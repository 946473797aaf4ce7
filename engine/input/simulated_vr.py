"""A simulated headset and controllers played from a RIG.toml script: the VR device of the tests and of anyone
without hardware (:class:`SimulatedHeadset`, a :class:`engine.input.vr.VRDevice`).

RIG.toml, version 1 (positions in metres in tracking space; times in seconds from 0)::

    version = 1
    fps = 90
    brush_radius = 0.15            # optional, pose tool (metres)
    [[hmd]]                         # head keys
    time = 0.0
    position = [0.0, 1.6, 1.2]
    look_at = [0.0, 1.2, 0.0]       # or orientation = [x, y, z, w]
    [[right]]                       # right controller keys (same for [[left]])
    time = 0.0
    position = [0.3, 1.3, 0.4]
    direction = [0.0, 0.0, -1.0]    # its -Z axis; or orientation = [x, y, z, w]
    trigger = 0.0                   # held from this key to the next
    grip = false
    stick = [0.0, 0.0]              # optional: the stick's x, y in [-1, 1], held from this key to the next
    [[actions]]
    time = 0.0
    name = "tool:pose"              # tool:pose | tool:bulge | tool:silhouette | tool:orbit | undo | redo
    [bulge]                         # optional: height (m), rings, radius (m), profile, ease, stiffness
    height = 0.03

Between keys positions interpolate linearly and orientations by slerp; trigger, grip and stick hold from a key to
the next. Frame i is at time i / fps. Bad scripts (not TOML, an unknown key, a wrong type, a non-finite number, keys
not in time order, an unknown action) raise :class:`RigScriptError` with one line naming the file and key.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.input.events import Buttons, TrackedSample, VRButtons
from engine.input.vr import DEFAULT_EYE_SIZE, EyeGeometry, VRFrame, look_rotation
from engine.textfile import check_numbers, read_user_text

__all__ = ["ACTIONS", "RigScriptError", "RigKey", "RigAction", "RigScript", "load_rig_script", "parse_rig_script",
           "SimulatedHeadset", "MAX_SCRIPT_BYTES", "MAX_KEYS", "MAX_TIME", "MAX_FRAMES"]

ACTIONS = ("tool:pose", "tool:bulge", "tool:silhouette", "tool:orbit", "undo", "redo")
MAX_SCRIPT_BYTES = 4 << 20
MAX_KEYS = 100_000
#: the longest script, seconds (an hour)
MAX_TIME = 3600.0
#: the most frames a script may span (an hour at 60 Hz, as a recording)
MAX_FRAMES = 216_000
_MAX_COORD = 1e6
_TOP_KEYS = ("version", "fps", "brush_radius", "hmd", "left", "right", "actions", "bulge")
_HMD_KEYS = ("time", "position", "look_at", "orientation")
_HAND_KEYS = ("time", "position", "direction", "orientation", "trigger", "grip", "stick")
_BULGE_KEYS = ("height", "rings", "radius", "profile", "ease", "stiffness")


class RigScriptError(ValueError):
    """A RIG.toml script that cannot be played; the message names the file and the key."""


@dataclass(frozen=True)
class RigKey:
    """One key of a tracked device: time, position, orientation (x, y, z, w), trigger value, grip and stick
    (x, y)."""

    time: float
    position: np.ndarray
    orientation: np.ndarray
    trigger: float = 0.0
    grip: bool = False
    stick: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class RigAction:
    time: float
    name: str


@dataclass
class RigScript:
    """A parsed script (see the module docstring)."""

    fps: float
    tracks: dict[str, list[RigKey]]
    actions: list[RigAction]
    brush_radius: float = 0.15
    bulge: dict[str, Any] = field(default_factory=dict)
    name: str = "<script>"

    @property
    def end_time(self) -> float:
        """The time of the script's last key or action."""
        times = [k.time for keys in self.tracks.values() for k in keys] + [a.time for a in self.actions]
        return max(times) if times else 0.0

    @property
    def frame_count(self) -> int:
        """Frames until the last key: frame i at i / fps, the last one at or just past the last key."""
        return int(math.ceil(self.end_time * self.fps - 1e-9)) + 1

    def sample(self, device: str, t: float) -> RigKey | None:
        """The device's interpolated key at time ``t`` (None: the device has no keys, it is not tracked)."""
        from engine.math.quat import slerp

        keys = self.tracks.get(device) or []
        if not keys:
            return None
        if t <= keys[0].time:
            return keys[0]
        if t >= keys[-1].time:
            return keys[-1]
        times = np.array([k.time for k in keys])
        i = int(np.searchsorted(times, t, side="right")) - 1
        a, b = keys[i], keys[i + 1]
        span = b.time - a.time
        u = 0.0 if span <= 0 else (t - a.time) / span
        pos = a.position + (b.position - a.position) * u
        q = np.asarray(slerp(a.orientation, b.orientation, u), np.float64)
        return RigKey(t, pos, q / np.linalg.norm(q), a.trigger, a.grip, a.stick)


def _fail(name: str, where: str, msg: str) -> RigScriptError:
    return RigScriptError(f"{name}: {where}: {msg}")


def _number(v: Any, name: str, where: str, *, lo: float = -_MAX_COORD, hi: float = _MAX_COORD) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _fail(name, where, f"expected a number, got {type(v).__name__} {v!r}")
    if not math.isfinite(v):
        raise _fail(name, where, f"expected a finite number, got {v!r}")
    if not lo <= v <= hi:
        raise _fail(name, where, f"{v!r} is outside [{lo:g}, {hi:g}]")
    return float(v)


def _vector(v: Any, n: int, name: str, where: str) -> np.ndarray:
    if not isinstance(v, list) or len(v) != n:
        raise _fail(name, where, f"expected {n} numbers, got {v!r}")
    return np.array([_number(x, name, f"{where}[{i}]") for i, x in enumerate(v)], np.float64)


def _quaternion(v: Any, name: str, where: str) -> np.ndarray:
    q = _vector(v, 4, name, where)
    n = float(np.linalg.norm(q))
    if not n > 1e-6:
        raise _fail(name, where, f"expected a rotation quaternion [x, y, z, w], got {v!r} (length 0)")
    return q / n


def _keys(raw: Any, device: str, name: str) -> list[RigKey]:
    if not isinstance(raw, list) or not all(isinstance(k, dict) for k in raw):
        raise _fail(name, device, f"expected an array of tables [[{device}]], got {type(raw).__name__}")
    if len(raw) > MAX_KEYS:
        raise _fail(name, device, f"{len(raw)} keys, over the limit of {MAX_KEYS}")
    allowed = _HMD_KEYS if device == "hmd" else _HAND_KEYS
    out: list[RigKey] = []
    for i, k in enumerate(raw):
        where = f"{device}[{i}]"
        unknown = sorted(set(k) - set(allowed))
        if unknown:
            raise _fail(name, f"{where}.{unknown[0]}", f"unknown key; a [[{device}]] key takes {', '.join(allowed)}")
        for req in ("time", "position"):
            if req not in k:
                raise _fail(name, f"{where}.{req}", "missing")
        t = _number(k["time"], name, f"{where}.time", lo=0.0, hi=MAX_TIME)
        if out and t < out[-1].time:
            raise _fail(name, f"{where}.time", f"keys must be in time order: {t!r} after {out[-1].time!r}")
        pos = _vector(k["position"], 3, name, f"{where}.position")
        aim = "look_at" if device == "hmd" else "direction"
        if aim in k and "orientation" in k:
            raise _fail(name, f"{where}.orientation", f"give {aim} or orientation, not both")
        if "orientation" in k:
            q = _quaternion(k["orientation"], name, f"{where}.orientation")
        elif aim in k:
            v = _vector(k[aim], 3, name, f"{where}.{aim}")
            direction = v - pos if device == "hmd" else v
            try:
                q = look_rotation(direction)
            except ValueError:
                what = "look_at is the head's position" if device == "hmd" else "direction has no length"
                raise _fail(name, f"{where}.{aim}", what) from None
        else:
            q = np.array([0.0, 0.0, 0.0, 1.0])
        trigger = _number(k.get("trigger", 0.0), name, f"{where}.trigger", lo=0.0, hi=1.0)
        grip = k.get("grip", False)
        if not isinstance(grip, bool):
            raise _fail(name, f"{where}.grip", f"expected true or false, got {grip!r}")
        stick = (0.0, 0.0)
        if "stick" in k:
            raw = k["stick"]
            if not isinstance(raw, list) or len(raw) != 2:
                raise _fail(name, f"{where}.stick", f"expected [x, y], each in [-1, 1], got {raw!r}")
            sx, sy = (_number(v, name, f"{where}.stick", lo=-1.0, hi=1.0) for v in raw)
            stick = (sx, sy)
        out.append(RigKey(t, pos, q, trigger, grip, stick))
    return out


def parse_rig_script(text: str, name: str = "<script>") -> RigScript:
    """Parse RIG.toml text (see the module docstring); RigScriptError naming ``name`` and the key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RigScriptError(f"{name}: not TOML ({exc})") from None
    try:
        check_numbers(data, name)
    except ValueError as exc:
        raise RigScriptError(str(exc)) from None
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise _fail(name, unknown[0], f"unknown key; valid: {', '.join(_TOP_KEYS)}")
    if "version" not in data:
        raise _fail(name, "version", "missing (this engine reads version = 1)")
    if data["version"] != 1 or isinstance(data["version"], bool):
        raise _fail(name, "version", f"unknown version {data['version']!r} (this engine reads version = 1)")
    fps = _number(data.get("fps", 90), name, "fps", lo=1.0, hi=1000.0)
    radius = _number(data.get("brush_radius", 0.15), name, "brush_radius", lo=0.0, hi=100.0)
    if not radius > 0:
        raise _fail(name, "brush_radius", "expected a radius > 0 metres")
    tracks: dict[str, list[RigKey]] = {}
    for device, key in (("head", "hmd"), ("left", "left"), ("right", "right")):
        if key in data:
            tracks[device] = _keys(data[key], key, name)
    if not tracks.get("head"):
        raise _fail(name, "hmd", "the script needs at least one [[hmd]] key (where the head is)")
    actions: list[RigAction] = []
    raw = data.get("actions", [])
    if not isinstance(raw, list) or not all(isinstance(a, dict) for a in raw):
        raise _fail(name, "actions", "expected an array of tables [[actions]]")
    for i, a in enumerate(raw):
        where = f"actions[{i}]"
        unknown = sorted(set(a) - {"time", "name"})
        if unknown:
            raise _fail(name, f"{where}.{unknown[0]}", "unknown key; an action takes time, name")
        if "time" not in a or "name" not in a:
            raise _fail(name, f"{where}.{'time' if 'time' not in a else 'name'}", "missing")
        t = _number(a["time"], name, f"{where}.time", lo=0.0, hi=MAX_TIME)
        if actions and t < actions[-1].time:
            raise _fail(name, f"{where}.time", f"actions must be in time order: {t!r} after {actions[-1].time!r}")
        if not isinstance(a["name"], str) or a["name"] not in ACTIONS:
            raise _fail(name, f"{where}.name", f"unknown action {a['name']!r}; valid: {', '.join(ACTIONS)}")
        actions.append(RigAction(t, a["name"]))
    bulge = data.get("bulge", {})
    if not isinstance(bulge, dict):
        raise _fail(name, "bulge", "expected a table [bulge]")
    unknown = sorted(set(bulge) - set(_BULGE_KEYS))
    if unknown:
        raise _fail(name, f"bulge.{unknown[0]}", f"unknown key; valid: {', '.join(_BULGE_KEYS)}")
    checked: dict[str, Any] = {}
    if "height" in bulge:
        checked["height"] = _number(bulge["height"], name, "bulge.height", lo=-1.0, hi=1.0)
    if "radius" in bulge:
        checked["radius"] = _number(bulge["radius"], name, "bulge.radius", lo=1e-6, hi=100.0)
    if "stiffness" in bulge:
        checked["stiffness"] = _number(bulge["stiffness"], name, "bulge.stiffness", lo=0.0, hi=1e6)
    if "rings" in bulge:
        r = bulge["rings"]
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= 1000:
            raise _fail(name, "bulge.rings", f"expected a whole number of edges in [0, 1000], got {r!r}")
        checked["rings"] = r
    if "rings" in checked and "radius" in checked:
        raise _fail(name, "bulge.radius", "give rings or radius, not both")
    for k in ("profile", "ease"):
        if k in bulge:
            if not isinstance(bulge[k], str):
                raise _fail(name, f"bulge.{k}", f"expected a name, got {bulge[k]!r}")
            checked[k] = bulge[k]
    if checked.get("profile", "bulge") not in ("bulge", "sine"):
        raise _fail(name, "bulge.profile", f"unknown profile {checked['profile']!r}; a VR stroke takes bulge or sine")
    script = RigScript(fps, tracks, actions, radius, checked, name)
    if script.frame_count > MAX_FRAMES:
        raise _fail(name, "fps", f"the script spans {script.frame_count} frames ({script.end_time:g} s at {fps:g} "
                                 f"fps), over the limit of {MAX_FRAMES} frames")
    return script


def load_rig_script(path: str | Path) -> RigScript:
    """Read a RIG.toml script carefully (engine.textfile) and parse it."""
    p = Path(path)
    if not p.exists():
        raise RigScriptError(f"{p}: no such script")
    try:
        text = read_user_text(p, "VR script", max_bytes=MAX_SCRIPT_BYTES, kind="TOML")
    except ValueError as exc:
        raise RigScriptError(str(exc)) from None
    return parse_rig_script(text, p.name)


class SimulatedHeadset:
    """A :class:`engine.input.vr.VRDevice` playing a :class:`RigScript`: frame i at time i / fps; ``frames``
    (None: until the script's last key). Submitted eye textures are counted; haptic pulses are logged in
    :attr:`pulses` (hand, seconds, frame)."""

    name = "simulated"

    def __init__(self, script: RigScript, *, eye_size: int = DEFAULT_EYE_SIZE, frames: int | None = None) -> None:
        self.script = script
        self.fps = script.fps
        self.geometry = EyeGeometry.simulated(eye_size)
        self.frames = script.frame_count if frames is None else int(frames)
        self.index = 0
        self.submitted = 0
        self.pulses: list[tuple[str, float, int]] = []

    def sample_frame(self, i: int) -> VRFrame:
        """Frame ``i``'s samples (head, then the tracked controllers)."""
        t = i / self.fps
        out = VRFrame(t)
        for device in ("head", "left", "right"):
            k = self.script.sample(device, t)
            if k is None:
                continue
            held = VRButtons.GRIP if k.grip else VRButtons.NONE
            out.samples[device] = TrackedSample(t, device, tuple(k.position.tolist()), tuple(k.orientation.tolist()),
                                                Buttons.LEFT if k.trigger >= 0.5 else Buttons.NONE,
                                                float(k.trigger), held, axis=k.stick)
        return out

    def actions_at(self, i: int) -> list[str]:
        """The script's actions due at frame ``i`` (time in (t_{i-1}, t_i]; frame 0 takes those at 0)."""
        t, prev = i / self.fps, (i - 1) / self.fps
        return [a.name for a in self.script.actions
                if (a.time <= t + 1e-9) and (i == 0 or a.time > prev + 1e-9)]

    def wait_poses(self) -> VRFrame | None:
        if self.index >= self.frames:
            return None
        f = self.sample_frame(self.index)
        self.index += 1
        return f

    def submit(self, left: Any, right: Any) -> None:
        self.submitted += 1

    def haptic(self, hand: str, seconds: float) -> None:
        self.pulses.append((hand, float(seconds), self.index - 1))

    def close(self) -> None:
        pass
