"""Clip playback: a running clock per character, wrap modes, speed (negative plays backwards) and crossfades.

``Playback.time`` is an unbounded clock in clip seconds (it advances by ``dt * speed``); ``local_time`` maps it
into ``[0, duration]`` by the mode:

- ``loop``: ``time mod duration`` (negative times wrap to the end),
- ``clamp``: ``clip(time, 0, duration)`` (holds the first/last frame),
- ``pingpong``: forwards then backwards with period ``2 * duration``.

``crossfade(to_clip, duration)`` starts the target clip (at ``start_time``) and blends from the current clip,
which keeps playing, with a weight ramping from 0 to 1 over ``duration`` seconds of *real* time (``dt``, not
scaled by speed). A crossfade started during another one fades from a frozen snapshot of the current blend, so
nothing pops. Blending lerps translation and scale and slerps rotations on the shortest arc
(:func:`blend_poses`).

Everything that runs per frame is vectorized over nodes; :func:`wrap_time` also takes arrays (one time per
instance) for the batched path of many characters.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.anim.sampling import ClipSampler
from engine.assets.model import Asset
from engine.math import quat
from engine.math.numerics import quiet_underflow

__all__ = ["MODES", "RAMPS", "Playback", "blend_poses", "fade_weights", "wrap_time"]

MODES = ("loop", "clamp", "pingpong")
RAMPS = ("linear", "smooth")


def _check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"playback mode {mode!r} is not valid; valid modes: {', '.join(MODES)}")
    return mode


def wrap_time(time: np.ndarray | float, duration: float, mode: str) -> np.ndarray | float:
    """Map clock time(s) into ``[0, duration]`` by ``mode`` ("loop" | "clamp" | "pingpong").

    A zero-length clip always gives 0. Works on scalars and arrays (returns the same kind).
    """
    _check_mode(mode)
    if not (duration >= 0 and math.isfinite(duration)):
        raise ValueError(f"duration must be finite and >= 0, got {duration!r}")
    t = np.asarray(time, np.float64)
    if duration == 0:
        out = np.zeros_like(t)
    elif mode == "loop":
        out = np.mod(t, duration)
    elif mode == "clamp":
        out = np.clip(t, 0.0, duration)
    else:
        x = np.mod(t, 2 * duration)
        out = np.where(x <= duration, x, 2 * duration - x)
    return float(out) if out.ndim == 0 else out


@quiet_underflow
def blend_poses(a: Pose, b: Pose, w: float | np.ndarray, out: Pose | None = None) -> Pose:
    """``(1 - w) a + w b`` per node: lerp translation/scale, slerp rotation on the shortest arc.

    ``w`` is a scalar or one weight per node ``(N,)`` (a mask for partial-body blends). ``out`` may be ``a`` or
    ``b``; a new pose is returned when it is None.
    """
    w = np.asarray(w, np.float32)
    if w.ndim > 1 or (w.ndim == 1 and w.shape[0] != a.count):
        raise ValueError(f"blend weight must be a scalar or ({a.count},), got shape {w.shape}")
    if a.count != b.count:
        raise ValueError(f"cannot blend poses of {a.count} and {b.count} nodes")
    wv = w[..., None] if w.ndim else w
    t = a.translation + wv * (b.translation - a.translation)
    s = a.scale + wv * (b.scale - a.scale)
    r = quat.slerp(a.rotation, b.rotation, w)
    if out is None:
        return Pose(t, r, s)
    out.translation[...] = t
    out.rotation[...] = r
    out.scale[...] = s
    return out


class Playback:
    """Plays the clips of one rig (one compiled :class:`ClipSampler` per clip) on one character.

    Attributes: ``clip`` (index into ``samplers``), ``time`` (clock, clip seconds), ``speed`` (clip seconds per
    second; negative plays backwards), ``mode`` ("loop" | "clamp" | "pingpong").
    """

    def __init__(self, rig: Rig, samplers: Sequence[ClipSampler], clip: int = 0, *, time: float = 0.0,
                 speed: float = 1.0, mode: str = "loop") -> None:
        if not samplers:
            raise ValueError("Playback needs at least one clip sampler (the asset has no clips)")
        self.rig = rig
        self.samplers = list(samplers)
        self._poses = [Pose.rest(rig) for _ in self.samplers]  # per-clip buffers; unanimated channels = rest
        self._snapshot: Pose | None = None
        self.clip = self._check_clip(clip)
        self.time = float(time)
        self.speed = speed
        self.mode = mode
        # crossfade state
        self._from_clip: int | None = None
        self._from_time = 0.0
        self._from_speed = 1.0
        self._fade_elapsed = 0.0
        self._fade_duration = 0.0
        self._ramp = "linear"

    @classmethod
    def for_asset(cls, rig: Rig, asset: Asset, clip: int | str = 0, **kwargs: object) -> Playback:
        """Compile a sampler for every clip of ``asset``; ``clip`` by index or name."""
        samplers = [ClipSampler(rig, c) for c in asset.clips]
        return cls(rig, samplers, asset.clip_index(clip) if asset.clips else 0, **kwargs)  # type: ignore[arg-type]

    # -- validated attributes -------------------------------------------------------------------------------
    def _check_clip(self, clip: int) -> int:
        if not isinstance(clip, (int, np.integer)) or not 0 <= clip < len(self.samplers):
            raise ValueError(f"clip {clip!r} out of range 0..{len(self.samplers) - 1}")
        return int(clip)

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._mode = _check_mode(value)

    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        if not math.isfinite(value):
            raise ValueError(f"speed must be finite, got {value!r}")
        self._speed = float(value)

    @property
    def duration(self) -> float:
        return self.samplers[self.clip].duration

    @property
    def local_time(self) -> float:
        """The clock mapped into the current clip by the mode."""
        return float(wrap_time(self.time, self.duration, self.mode))

    # -- crossfade ------------------------------------------------------------------------------------------
    @property
    def fading(self) -> bool:
        return self._from_clip is not None or self._snapshot is not None

    @property
    def fade_weight(self) -> float:
        """Weight of the current (target) clip: 1 when no crossfade is running."""
        if not self.fading:
            return 1.0
        x = min(self._fade_elapsed / self._fade_duration, 1.0)
        return x * x * (3 - 2 * x) if self._ramp == "smooth" else x

    def crossfade(self, to_clip: int, duration: float, *, start_time: float = 0.0, ramp: str = "linear") -> None:
        """Switch to ``to_clip`` (starting at ``start_time``), blending from the current pose over ``duration``
        seconds. ``duration == 0`` switches at once. ``ramp``: "linear" or "smooth" (smoothstep)."""
        to_clip = self._check_clip(to_clip)
        if not (duration >= 0 and math.isfinite(duration)):
            raise ValueError(f"crossfade duration must be finite and >= 0, got {duration!r}")
        if ramp not in RAMPS:
            raise ValueError(f"crossfade ramp {ramp!r} is not valid; valid: {', '.join(RAMPS)}")
        if duration == 0:
            self._end_fade()
        elif self.fading:
            self._snapshot = self.evaluate()  # freeze the current blend and fade from it
            self._from_clip = None
        else:
            self._from_clip, self._from_time, self._from_speed = self.clip, self.time, self.speed
        self._fade_elapsed = 0.0
        self._fade_duration = float(duration)
        self._ramp = ramp
        self.clip = to_clip
        self.time = float(start_time)

    def _end_fade(self) -> None:
        self._from_clip = None
        self._snapshot = None

    # -- per frame ------------------------------------------------------------------------------------------
    def advance(self, dt: float) -> None:
        """Advance the clock by ``dt`` seconds of real time (fixed step from the caller's clock)."""
        if not math.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt!r}")
        self.time += dt * self.speed
        if self.fading:
            self._from_time += dt * self._from_speed
            self._fade_elapsed += abs(dt)
            if self._fade_elapsed >= self._fade_duration:
                self._end_fade()

    def sample_clip(self, clip: int, time: float) -> Pose:
        """The pose of ``clip`` at clock ``time`` (wrapped by the mode), in that clip's reused buffer."""
        s = self.samplers[clip]
        return s.sample(float(wrap_time(time, s.duration, self.mode)), self._poses[clip])

    def morph_weights(self) -> dict[int, np.ndarray]:
        """The morph weights the playing clip(s) give now: node -> (M,) float32 (nodes without a weights
        channel are absent). During a crossfade from a clip, nodes both clips animate are lerped by the fade
        weight; a crossfade started during another one takes the target's weights."""
        s = self.samplers[self.clip]
        out = s.sample_weights(float(wrap_time(self.time, s.duration, self.mode)))
        if self._from_clip is not None:
            f = self.samplers[self._from_clip]
            src = f.sample_weights(float(wrap_time(self._from_time, f.duration, self.mode)))
            fade_weights(src, out, self.fade_weight)
        return out

    def evaluate(self, out: Pose | None = None) -> Pose:
        """The current local pose (with any crossfade applied), written into ``out`` or a new pose."""
        target = self.sample_clip(self.clip, self.time)
        if not self.fading:
            return target.copy() if out is None else out.copy_from(target)
        w = self.fade_weight
        if self._snapshot is not None:
            source = self._snapshot
        else:
            assert self._from_clip is not None
            source = self.sample_clip(self._from_clip, self._from_time)
            if self._from_clip == self.clip:  # same buffer: take a copy before blending
                source = source.copy()
                target = self.sample_clip(self.clip, self.time)
        return blend_poses(source, target, w, out)


def fade_weights(source: dict[int, np.ndarray], target: dict[int, np.ndarray], a: float) -> dict[int, np.ndarray]:
    """Crossfade morph weights in place: every node both dicts animate becomes ``source + a (target - source)``
    in ``target`` (nodes only the target animates keep its weights); returns ``target``."""
    f = np.float32(a)
    for node, w in source.items():
        if node in target and target[node].shape == w.shape:
            target[node] = (w + f * (target[node] - w)).astype(np.float32)
    return target
