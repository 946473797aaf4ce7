"""`python main.py bench scene [--characters 1,8,32,64] [--deformer lbs,dqs] [--quick]`: the frame as the cast grows.

For each deformer (one table each) and each N in ``--characters``, N walking humanoids on a grid (the demo's
layout, framed by the demo's camera) run ``--frames`` timed frames of one fixed step through an
:class:`engine.Session` (the demo's frame, each frame ending with ``ctx.finish()``). Per frame, median over the
timed frames, milliseconds:

``anim`` ``skel`` ``deform`` ``render``  CPU time of the phases ANIMATION, SKELETON, DEFORM, RENDER from the
            schedule's timings (DEFORM includes DEFORM_FRAME, which the timings charge to it:
            ``deform_frame_system``: interpolation, skin matrices, the deformer graph's pose upload and dispatch;
            RENDER = ``render_system``: the renderer's passes);
``cpu``     the schedule's whole frame (all phases);
``wait``    ``ctx.finish()`` after the frame: the GPU work still queued;
``wall``    the frame end to end;
``gl``      the part of ``cpu`` inside the GL: the ``deformer graph`` scope + ``render_system`` (on a software
            rasteriser like llvmpipe the driver runs compute and rasterisation there, on the calling thread);
``py``      the Python side of the frame: ``cpu`` - ``gl`` (clip sampling, forward kinematics, interpolation,
            skin matrices; numpy included): what grows with the cast in Python;
``main``    CPU time of the main thread (``time.thread_time``: Python and the driver's front end; rasteriser
            worker threads excluded);
``py/ch``   ``py`` / N.

Then ``py(Nmax) / py(1)``: how the Python-side cost grows with the cast (the target for 64 against 1 is
<= 4x: the per-character work is batched), and the cost of an idle ``cpu_scope`` (outside a recorded
frame: profiling off) and of a recorded one, in microseconds (minimum over repeats of the mean of a loop).

``--quick`` (CI): N = 1, 8 at 160x90, LBS, 3 timed frames. Times are wall-clock on a shared machine: compare
within one run. Asserts nothing.
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings
from typing import Any

from engine.ecs import Phase
from engine.profile import FrameTimings, cpu_scope, use_timings
from engine.profile.trace import GRAPH_SCOPE

__all__ = ["main", "measure_cast", "scope_cost", "parse_counts"]

DEFAULT_COUNTS = (1, 8, 32, 64)
PHASES = {"anim": Phase.ANIMATION, "skel": Phase.SKELETON, "deform": Phase.DEFORM, "render": Phase.RENDER}
COLUMNS = (*PHASES, "cpu", "wait", "wall", "gl", "py", "main", "py/ch")


def parse_counts(text: str) -> tuple[int, ...]:
    """``"1,8,32"`` -> (1, 8, 32); each in [1, 256]."""
    try:
        counts = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise ValueError(f"--characters takes comma-separated integers, got {text!r}") from None
    if not counts or any(not 1 <= n <= 256 for n in counts):
        raise ValueError(f"--characters must list integers in [1, 256], got {text!r}")
    return counts


def scope_cost(loops: int = 100_000, repeat: int = 5) -> tuple[float, float]:
    """(idle, recorded) cost of one ``with cpu_scope(...)`` in microseconds, the empty loop subtracted."""

    def run(n: int, scoped: bool) -> float:
        t0 = time.perf_counter_ns()
        if scoped:
            for _ in range(n):
                with cpu_scope("bench"):
                    pass
        else:
            for _ in range(n):
                pass
        return (time.perf_counter_ns() - t0) / n / 1e3

    empty = min(run(loops, False) for _ in range(repeat))
    idle = min(run(loops, True) for _ in range(repeat)) - empty
    recorded = []
    for _ in range(repeat):
        with use_timings(FrameTimings()):
            recorded.append(run(loops, True))
    return idle, min(recorded) - empty


def measure_cast(session: Any, count: int, deformer: str, frames: int) -> dict[str, float]:
    """Spawn ``count`` walking humanoids with ``deformer``, run ``frames`` timed frames; median ms per column
    (see the module docstring). The characters are removed again."""
    from game.demo import frame_camera, spawn_cast

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chars = spawn_cast(session, count, cast=(("humanoid", "walk", 1.0),))
    try:
        for ch in chars:
            if ch.deformer != deformer:
                ch.set_deformer(deformer)
        frame_camera(session)
        session.step(2)  # warm-up: programs linked, buffers sized
        session.ctx.finish()
        history = session.schedule.history
        history.clear()
        rows: dict[str, list[float]] = {k: [] for k in COLUMNS if k != "py/ch"}
        passes: dict[str, list[float]] = {}  # GPU ms per renderer pass (timer queries, a few frames old)
        for _ in range(frames):
            w0, p0 = time.perf_counter_ns(), time.thread_time_ns()
            session.step()
            w1 = time.perf_counter_ns()
            session.ctx.finish()
            w2, p1 = time.perf_counter_ns(), time.thread_time_ns()
            f = history.last
            assert f is not None
            for col, phase in PHASES.items():
                rows[col].append(f.phase_ms(phase))
            gl = f.scope_ms(GRAPH_SCOPE) + f.system_ms("render_system")
            rows["cpu"].append(f.total_ms)
            rows["wait"].append((w2 - w1) / 1e6)
            rows["wall"].append((w2 - w0) / 1e6)
            rows["gl"].append(gl)
            rows["py"].append(f.total_ms - gl)
            rows["main"].append((p1 - p0) / 1e6)
            for name, ms in session.require_renderer().gpu_ms.items():
                passes.setdefault(name, []).append(ms)
        out = {k: statistics.median(v) for k, v in rows.items()}
        out["py/ch"] = out["py"] / count
        out.update({f"gpu {name}": statistics.median(v) for name, v in passes.items()})
        return out
    finally:
        for ch in chars:
            ch.remove()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench scene", description=__doc__.splitlines()[0])
    ap.add_argument("--characters", default=None, help="comma-separated cast sizes (default 1,8,32,64)")
    ap.add_argument("--deformer", default=None,
                    help="comma-separated deformers of the table, one table each (default lbs,dqs)")
    ap.add_argument("--frames", type=int, default=None, help="timed frames per case (default 20; --quick 3)")
    ap.add_argument("--width", type=int, default=None, help="frame width (default 640; --quick 160)")
    ap.add_argument("--height", type=int, default=None, help="frame height (default 360; --quick 90)")
    ap.add_argument("--quick", action="store_true", help="N = 1, 8, LBS, tiny frame, 3 frames (CI)")
    args = ap.parse_args(argv)

    from engine import Session
    from engine.skinning import registry

    counts = parse_counts(args.characters) if args.characters else ((1, 8) if args.quick else DEFAULT_COUNTS)
    deformers = tuple(d.strip() for d in (args.deformer or ("lbs" if args.quick else "lbs,dqs")).split(",")
                      if d.strip())
    for d in deformers:
        registry.check(d, "gpu")
    frames = args.frames if args.frames is not None else (3 if args.quick else 20)
    if frames < 1:
        raise ValueError(f"--frames must be >= 1, got {frames}")
    width = args.width or (160 if args.quick else 640)
    height = args.height or (90 if args.quick else 360)

    with Session(device="gpu", width=width, height=height, strict=True) as session:
        assert session.ctx is not None  # a gpu session
        print(f"device: {session.ctx.info.get('GL_RENDERER')}; {width}x{height}, {frames} timed frames per case, "
              "median ms per frame")
        cols = COLUMNS
        for deformer in deformers:
            print(f"\ndeformer {deformer}")
            head = f"{'N':>4}" + "".join(f"{c:>9}" for c in cols)
            print(head)
            print("-" * len(head))
            results = {}
            for n in counts:
                results[n] = r = measure_cast(session, n, deformer, frames)
                print(f"{n:>4}" + "".join(f"{r[c]:>9.2f}" for c in cols), flush=True)
                gpu = {k[4:]: v for k, v in r.items() if k.startswith("gpu ") and v >= 0.005}
                if gpu:  # where the GPU's part of `wait` goes: the renderer's passes (GL timer queries)
                    print("      render passes, GPU ms: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                                  sorted(gpu.items(), key=lambda kv: -kv[1])))
            lo, hi = min(counts), max(counts)
            if hi > lo and results[lo]["py"] > 0:
                ratio = results[hi]["py"] / results[lo]["py"]
                print(f"python-side cpu, {hi} characters against {lo}: {ratio:.2f}x "
                      f"({results[hi]['py']:.2f} / {results[lo]['py']:.2f} ms; target for 64 vs 1: <= 4x)")
    idle, recorded = scope_cost(20_000 if args.quick else 200_000)
    print(f"\ncpu_scope cost: {idle:.3f} us idle (profiling off), {recorded:.3f} us recorded into a frame")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
