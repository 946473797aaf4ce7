"""What every bench prints the same way: the device line, and a median with its spread over the repetitions.

* :func:`device_line`: ``device: GL_RENDERER (GL_VENDOR); N CPUs, LP_NUM_THREADS ...; <repetitions>`` for a GL
  bench, ``device: CPU only (no GL): <processor>; ...`` for a numpy one, so a quoted table says what it ran on
  (llvmpipe's numbers are CPU numbers: they move with the machine's load, the other processes included);
* :class:`Spread` (``Spread.of(samples)``): median, quartiles, min, max and count of some timings, with ``pct``
  = (p75 - p25) / median in percent (the interquartile range: one pre-empted call on a shared machine moves
  the max by 100x, not the quartiles), the figure the tables print as ``spread``: a cell whose spread is large
  is a cell to re-run, not a result;
* :func:`median_of`: the median of a list of samples (a plain float, for the tables' cells);
* :func:`count_stage_calls`: the GL calls one stage of the deformer graph issues from Python (dispatches,
  memory barriers, command barriers, every moderngl call that reaches the driver), counted while it runs.

Numbers to print and compare within one run, never to assert on.
"""
from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["GLCalls", "Spread", "count_stage_calls", "cpu_name", "device_line", "median_of"]


@dataclass(frozen=True)
class Spread:
    """Median, quartiles (numpy's linear interpolation), min and max of ``count`` samples; ``pct`` = (p75 -
    p25) / median x 100 (0 for one sample)."""

    median: float
    p25: float
    p75: float
    min: float
    max: float
    count: int

    @classmethod
    def of(cls, samples: Iterable[float]) -> Spread:
        a = np.asarray(list(samples), np.float64)
        if a.size == 0:
            raise ValueError("Spread.of needs at least one sample, got none")
        p25, med, p75 = np.percentile(a, (25, 50, 75))
        return cls(float(med), float(p25), float(p75), float(a.min()), float(a.max()), int(a.size))

    @property
    def pct(self) -> float:
        return 0.0 if self.median == 0 else 100.0 * (self.p75 - self.p25) / abs(self.median)

    def text(self, digits: int = 3) -> str:
        """``median (min..max)``, e.g. ``1.250 (1.100..1.900)``."""
        return f"{self.median:.{digits}f} ({self.min:.{digits}f}..{self.max:.{digits}f})"


def median_of(samples: Iterable[float]) -> float:
    """The median of the samples (ValueError when there are none)."""
    return Spread.of(samples).median


def cpu_name() -> str:
    """The processor's model name (/proc/cpuinfo where there is one, else ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


def device_line(ctx: Any | None, repetitions: str) -> str:
    """The first line a bench prints: the GL renderer of ``ctx`` (a moderngl context; None for a numpy-only
    bench: the CPU), the CPU count, llvmpipe's thread setting, and ``repetitions`` (how each figure was taken,
    e.g. "median of 10 frames; spread = IQR / median")."""
    if ctx is not None:
        info = ctx.info
        device = f"{info.get('GL_RENDERER')} ({info.get('GL_VENDOR')})"
    else:
        device = f"CPU only (no GL): {cpu_name()}"
    threads = os.environ.get("LP_NUM_THREADS", "default")
    return f"device: {device}; {os.cpu_count()} CPUs, LP_NUM_THREADS {threads}; {repetitions}"


@dataclass
class GLCalls:
    """GL calls counted from Python: ``dispatches`` (``ComputeShader.run`` / ``run_indirect``), ``barriers``
    (``memory_barrier``), ``command_barriers`` (those with GL_COMMAND_BARRIER_BIT) and ``calls`` (every counted
    moderngl call: the dispatches and barriers, image / SSBO bindings (a multi-bind of a range of points is one
    call: engine.gpu.glfunc.MultiBind), uniform writes, buffer writes and copies),
    ``seconds``: wall time inside the stage (Python and driver; on llvmpipe a dispatch runs inside its call)."""

    dispatches: int = 0
    barriers: int = 0
    command_barriers: int = 0
    calls: int = 0
    seconds: float = 0.0


#: moderngl methods that reach the driver, by class name (ComputeShader.run binds the program and dispatches)
_COUNTED = {"ComputeShader": ("run", "run_indirect"), "Context": ("memory_barrier", "copy_buffer"),
            "Texture": ("bind_to_image",), "Buffer": ("bind_to_storage_buffer", "write")}


@contextmanager
def count_stage_calls(context_type: type) -> Iterator[GLCalls]:
    """Count the GL calls of every run of the graph stage whose context is ``context_type`` (e.g.
    ``SpringContext``) inside the ``with`` block; calls outside that stage are not counted."""
    import moderngl

    from engine.gpu.glfunc import MultiBind
    from engine.skinning.gpu import stages
    from engine.skinning.gpu.plan import COMMAND_BARRIER_BIT

    counts = GLCalls()
    inside = [False]
    saved: list[tuple[Any, str, Any]] = []

    def wrap(cls: Any, name: str) -> None:
        original = getattr(cls, name)

        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            if inside[0]:
                counts.calls += 1
                if name.startswith("run"):
                    counts.dispatches += 1
                elif name == "memory_barrier":
                    counts.barriers += 1
                    bits = args[0] if args else kwargs.get("barriers", 0)
                    counts.command_barriers += int(bool(int(bits) & COMMAND_BARRIER_BIT))
            return original(self, *args, **kwargs)

        saved.append((cls, name, original))
        setattr(cls, name, counted)

    for cls_name, names in _COUNTED.items():
        for name in names:
            wrap(getattr(moderngl, cls_name), name)
    for name in ("storage_buffers", "image_textures"):  # GL 4.4 multi-bind: one GL call for a range of points
        wrap(MultiBind, name)
    value = moderngl.Uniform.value  # a property: count its setter (one glProgramUniform)

    def set_value(self: Any, v: Any) -> None:
        if inside[0]:
            counts.calls += 1
        value.fset(self, v)

    saved.append((moderngl.Uniform, "value", value))
    moderngl.Uniform.value = property(value.fget, set_value)
    run: Any = stages._RUN[context_type]

    def counted_run(c: Any) -> None:
        inside[0] = True
        t0 = time.perf_counter()
        try:
            run(c)
        finally:
            counts.seconds += time.perf_counter() - t0
            inside[0] = False

    stages._RUN[context_type] = counted_run
    try:
        yield counts
    finally:
        stages._RUN[context_type] = run
        for cls, name, original in reversed(saved):
            setattr(cls, name, original)
