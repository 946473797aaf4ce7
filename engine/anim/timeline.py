"""Clip segments on a timeline (a sequencer's animation track): trims, offsets, speeds and crossfades between
segments, sampled at any timeline position; :class:`TimelinePlayback` plays them on a character in place of a
:class:`~engine.anim.playback.Playback` (the frame's ANIMATION phase advances and evaluates it like any other).

A segment covers timeline seconds ``[start, end]``; at timeline time t its clip time is

    offset + (clamp(t, start, end) - start) * speed

(held at the trim ends), mapped into the clip by the segment's wrap ``mode`` (engine.anim.playback.wrap_time).
The live segment at t is the last one starting at or before t (the first one before its start). During
``[start, start + blend_in)`` the live segment fades in from the one before it, which keeps its own clock (held
at its end), with a linear weight ``(t - start) / blend_in``: the engine's crossfade (``blend_poses``), so a
segment with ``blend_in = 0`` is its clip sampled directly.

Positions are frames of a frame rate (``frame / fps`` seconds) rather than seconds, so frame k of a segment
starting at 0 samples its clip at exactly ``offset + k * speed / fps`` (the same float a caller computes for
``render --time``): no rounding of ``k / fps`` in between.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.anim.playback import blend_poses, fade_weights, wrap_time
from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.anim.sampling import ClipSampler

__all__ = ["ClipSegment", "sample_segments", "TimelinePlayback"]


@dataclass(frozen=True)
class ClipSegment:
    """One clip on the timeline: ``clip`` an index into the samplers; times in timeline seconds."""

    clip: int
    start: float
    end: float
    offset: float = 0.0
    speed: float = 1.0
    blend_in: float = 0.0
    mode: str = "clamp"

    def clip_time(self, frame: float, fps: float) -> float:
        """The clip time (before wrapping) at timeline position ``frame`` (frames of ``fps``)."""
        f0 = self.start * fps
        u = min(max(frame, f0), self.end * fps) - f0
        return self.offset + u * self.speed / fps


def _live(segments: Sequence[ClipSegment], time: float) -> int:
    live = 0
    for i, s in enumerate(segments):
        if s.start <= time:
            live = i
    return live


def sample_segments(samplers: Sequence[ClipSampler], segments: Sequence[ClipSegment], frame: float, fps: float,
                    out: Pose, rest: Pose, scratch: Pose | None = None) -> Pose:
    """The local pose of a track of ``segments`` (in time order, not overlapping) at timeline position ``frame``
    (frames of ``fps``), written into ``out``. A sampler writes only the channels its clip animates, so each
    sample starts from ``rest`` (the rig's rest pose), as a Playback's per-clip buffers do; ``scratch`` (a pose
    of the same rig) holds the faded-from segment (allocated when None)."""
    if not segments:
        raise ValueError("a timeline track needs at least one clip segment")
    if not (math.isfinite(frame) and fps > 0):
        raise ValueError(f"timeline position must be finite and fps > 0, got frame={frame!r}, fps={fps!r}")
    time = frame / fps
    i = _live(segments, time)
    seg = segments[i]
    s = samplers[seg.clip]
    out.copy_from(rest)
    s.sample(float(wrap_time(seg.clip_time(frame, fps), s.duration, seg.mode)), out)
    if i == 0 or seg.blend_in <= 0.0 or time >= seg.start + seg.blend_in:
        return out
    prev = segments[i - 1]
    ps = samplers[prev.clip]
    src = (scratch if scratch is not None else rest.copy()).copy_from(rest)
    ps.sample(float(wrap_time(prev.clip_time(frame, fps), ps.duration, prev.mode)), src)
    w = (time - seg.start) / seg.blend_in
    return blend_poses(src, out, w, out)


class TimelinePlayback:
    """Clip segments played on one character: ``frame`` is the timeline position in frames of ``fps``;
    ``advance(dt)`` moves it by ``dt * fps`` (the fixed step) unless ``driven`` (an owner such as the cutscene
    player seeks it before every step instead), ``evaluate`` samples :func:`sample_segments`.
    ``time`` (seconds) and ``local_time`` (the live segment's wrapped clip time) read like a Playback's."""

    def __init__(self, rig: Rig, samplers: Sequence[ClipSampler], segments: Sequence[ClipSegment], *,
                 fps: float, frame: float = 0.0, driven: bool = False) -> None:
        if not segments:
            raise ValueError("a timeline track needs at least one clip segment")
        for s in segments:
            if not 0 <= s.clip < len(samplers):
                raise ValueError(f"clip {s.clip} out of range 0..{len(samplers) - 1}")
        if not (math.isfinite(fps) and fps > 0):
            raise ValueError(f"fps must be a finite number > 0, got {fps!r}")
        self.rig = rig
        self.samplers = list(samplers)
        self.segments = list(segments)
        self.fps = float(fps)
        self.frame = float(frame)
        self.driven = bool(driven)
        self._rest = Pose.rest(rig)
        self._scratch = Pose.rest(rig)

    @property
    def time(self) -> float:
        return self.frame / self.fps

    def seek(self, frame: float) -> None:
        if not math.isfinite(frame):
            raise ValueError(f"frame must be finite, got {frame!r}")
        self.frame = float(frame)

    @property
    def local_time(self) -> float:
        seg = self.segments[_live(self.segments, self.time)]
        return float(wrap_time(seg.clip_time(self.frame, self.fps), self.samplers[seg.clip].duration, seg.mode))

    def advance(self, dt: float) -> None:
        if not math.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt!r}")
        if not self.driven:
            self.frame += dt * self.fps

    def morph_weights(self) -> dict[int, np.ndarray]:
        """The morph weights the live segment's clip gives now (node -> (M,) float32), crossfaded from the
        previous segment's over ``blend_in`` like the pose (Playback.morph_weights)."""
        time = self.time
        i = _live(self.segments, time)
        seg = self.segments[i]
        s = self.samplers[seg.clip]
        out = s.sample_weights(float(wrap_time(seg.clip_time(self.frame, self.fps), s.duration, seg.mode)))
        if i == 0 or seg.blend_in <= 0.0 or time >= seg.start + seg.blend_in:
            return out
        prev = self.segments[i - 1]
        ps = self.samplers[prev.clip]
        src = ps.sample_weights(float(wrap_time(prev.clip_time(self.frame, self.fps), ps.duration, prev.mode)))
        return fade_weights(src, out, (time - seg.start) / seg.blend_in)

    def evaluate(self, out: Pose | None = None) -> Pose:
        pose = out if out is not None else Pose.rest(self.rig)
        return sample_segments(self.samplers, self.segments, self.frame, self.fps, pose, self._rest,
                               self._scratch)
