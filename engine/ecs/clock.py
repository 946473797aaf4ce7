"""The timestep policy: fixed simulation step with an accumulator, interpolated rendering.

Policy
------
Simulation (clip sampling, pose edits, forward kinematics, skinning matrices, the spring deformer) always
advances by the same fixed step ``clock.step`` (default 1/60 s of simulated time), never by the variable
frame time: the springs' behaviour depends on their timestep (the dissertation keeps it fixed), and a fixed
step makes replays and tests reproducible. Rendering runs once per displayed frame and interpolates between
the last two simulated states with ``clock.alpha`` in [0, 1).

Each displayed frame the caller measures the real elapsed time and hands it in: ``n = clock.tick(real_dt)``.
The clock never reads wall time itself, so tests drive it exactly.

* ``lag += real_dt * time_scale``; ``n = floor(lag / step)`` steps are due; ``lag -= n * step``;
  ``alpha = lag / step``. (A tolerance of 1e-9 step absorbs float round-off so that three ticks of
  step/3 give exactly one step.)
* Spiral-of-death guard: at most ``max_substeps`` steps per frame. When more are due (a hitch, a debugger
  breakpoint, a high time scale), the excess whole steps are dropped: simulated time falls behind real time
  instead of the frame taking ever longer. ``dropped_steps``, ``dropped_time`` and ``overrun_frames`` count it.
* Time scale in (0, 16] (slow motion / fast forward) scales the real time fed to the accumulator; the fixed
  step itself never changes. High scales need ``max_substeps >= scale * step_rate / frame_rate`` or they hit
  the guard.
* Pause freezes the accumulator: ``tick`` returns 0 and alpha keeps its value, so the rendered image holds
  still. ``single_step()`` (paused only) queues exactly one fixed step for the next ``tick``, whatever the
  real dt and time scale; the accumulator is not touched, so resuming continues without a jump.

The schedule runs the fixed-step phases once per due step, calling ``clock.advance()`` before each, so
systems see ``clock.sim_time`` = the time of the state they compute and ``clock.step`` as their dt (see
``engine.ecs.schedule.Schedule.run_frame``). ``interpolate(prev, curr, clock.alpha)`` blends the two
last states for rendering.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Clock", "interpolate", "MAX_TIME_SCALE"]

MAX_TIME_SCALE = 16.0
_EPS = 1e-9  # fraction of a step treated as round-off when counting due steps

A = TypeVar("A", float, "np.ndarray")


def _check_scale(scale: float) -> float:
    s = float(scale)
    if not (math.isfinite(s) and 0.0 < s <= MAX_TIME_SCALE):
        raise ValueError(f"time scale must be in (0, {MAX_TIME_SCALE:g}], got {scale!r}")
    return s


class Clock:
    """Fixed-step clock with accumulator, interpolation alpha, substep cap, pause, single step, time scale.

    Attributes (read-only by convention):
      step             fixed simulation step in seconds
      max_substeps     cap on steps per frame
      sim_time         simulated seconds: step_count * step (during a step: the time being computed)
      step_count       fixed steps advanced since creation
      real_time        sum of the real dts handed to tick
      frame_count      ticks so far
      steps_due        steps this frame still to ``advance()``
      substep          index of the current step within the frame (-1 outside the fixed phases)
      dropped_steps / dropped_time / overrun_frames   spiral-guard counters
    """

    def __init__(self, *, step: float = 1.0 / 60.0, max_substeps: int = 5, time_scale: float = 1.0) -> None:
        step = float(step)
        if not (math.isfinite(step) and 0.0 < step <= 1.0):
            raise ValueError(f"fixed step must be in (0, 1] seconds, got {step!r}")
        if isinstance(max_substeps, bool) or not isinstance(max_substeps, int) or not 1 <= max_substeps <= 1000:
            raise ValueError(f"max_substeps must be an int in [1, 1000], got {max_substeps!r}")
        self.step = step
        self.max_substeps = max_substeps
        self._scale = _check_scale(time_scale)
        self._lag = 0.0
        self._paused = False
        self._queued_single = 0
        self.step_count = 0
        self.real_time = 0.0
        self.real_dt = 0.0
        self.frame_count = 0
        self.steps_due = 0
        self.steps_this_frame = 0
        self.substep = -1
        self.dropped_steps = 0
        self.dropped_time = 0.0
        self.overrun_frames = 0

    # ------------------------------------------------------------------ controls
    @property
    def time_scale(self) -> float:
        return self._scale

    @time_scale.setter
    def time_scale(self, scale: float) -> None:
        self._scale = _check_scale(scale)

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        """Leave pause; any queued single steps are discarded."""
        self._paused = False
        self._queued_single = 0

    def toggle_pause(self) -> bool:
        """Flip pause; return the new state."""
        if self._paused:
            self.resume()
        else:
            self.pause()
        return self._paused

    def single_step(self) -> None:
        """While paused, queue exactly one fixed step for the next ``tick`` (repeat calls queue more)."""
        if not self._paused:
            raise RuntimeError("single_step() needs a paused clock; call pause() first")
        self._queued_single += 1

    # ------------------------------------------------------------------ per frame
    def tick(self, real_dt: float) -> int:
        """Account one displayed frame of ``real_dt`` real seconds; return the number of fixed steps due.

        Steps not yet ``advance()``d from the previous frame are abandoned (counted as dropped)."""
        dt = float(real_dt)
        if not (math.isfinite(dt) and dt >= 0.0):
            raise ValueError(f"real_dt must be a finite number of seconds >= 0, got {real_dt!r}")
        if self.steps_due:  # due last frame but never advanced: already out of the accumulator
            self._count_dropped(self.steps_due)
            self.steps_due = 0
        self.frame_count += 1
        self.real_time += dt
        self.real_dt = dt
        self.substep = -1
        if self._paused:
            n = min(self._queued_single, self.max_substeps)
            self._queued_single -= n
        else:
            self._lag += dt * self._scale
            n = int(math.floor(self._lag / self.step + _EPS))
            # all whole steps leave the accumulator (run or dropped); the fraction stays for alpha
            self._lag = max(0.0, self._lag - n * self.step)
            if n > self.max_substeps:
                self._count_dropped(n - self.max_substeps)
                self.overrun_frames += 1
                n = self.max_substeps
        self.steps_due = n
        self.steps_this_frame = n
        return n

    def advance(self) -> float:
        """Consume one due step: ``step_count += 1``; return the new ``sim_time``. Called by the schedule
        before running the fixed-step phases for that step."""
        if self.steps_due <= 0:
            raise RuntimeError("advance() with no fixed step due; call tick(real_dt) and advance at most its result")
        self.steps_due -= 1
        self.substep = self.steps_this_frame - self.steps_due - 1
        self.step_count += 1
        return self.sim_time

    def end_steps(self) -> None:
        """Mark the end of the fixed-step part of the frame (``substep`` back to -1)."""
        self.substep = -1

    def _count_dropped(self, steps: int) -> None:
        self.dropped_steps += steps
        self.dropped_time += steps * self.step

    # ------------------------------------------------------------------ reading
    @property
    def sim_time(self) -> float:
        return self.step_count * self.step

    @property
    def lag(self) -> float:
        """Simulated seconds accumulated but not yet stepped (in [0, step))."""
        return self._lag

    @property
    def alpha(self) -> float:
        """Render interpolation factor in [0, 1): how far real time is past the last simulated state."""
        return min(self._lag / self.step, math.nextafter(1.0, 0.0))

    def __repr__(self) -> str:
        return (
            f"Clock(step={self.step:.6g}, sim_time={self.sim_time:.4f}, alpha={self.alpha:.3f}, "
            f"scale={self._scale:g}, paused={self._paused}, dropped_steps={self.dropped_steps})"
        )


def interpolate(prev: A, curr: A, alpha: float) -> A:
    """``prev + (curr - prev) * alpha`` for floats or numpy arrays (positions, not rotations: use slerp)."""
    blended: A = prev + (curr - prev) * alpha  # numpy types the array arithmetic as Any
    return blended
