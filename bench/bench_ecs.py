"""ECS micro-benchmarks: query iteration for 1k entities (cached / rebuilt), lookups, schedule overhead.

Run: ``.venv/bin/python bench/bench_ecs.py [--entities 1000] [--repeat 200]``. Prints the device line (CPU only)
and a table (mean, p50, p95, max and spread = (p75 - p25) / p50 over the timed calls); asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` and `engine` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Spread, device_line  # noqa: E402
from engine.ecs import Clock, Phase, Schedule, World  # noqa: E402
from engine.profile import FrameStats  # noqa: E402


@dataclass
class Transform:
    x: float = 0.0


@dataclass
class Velocity:
    v: float = 1.0


@dataclass
class Hidden:
    pass


def measure(fn: Callable[[], object], repeat: int) -> tuple[FrameStats, Spread]:
    """Statistics of ``repeat`` calls of ``fn`` (ms) after one warm-up call."""
    fn()  # warm-up
    samples = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        samples[i] = (time.perf_counter_ns() - t0) / 1e6
    return FrameStats.of(samples), Spread.of(samples)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args(argv)
    if args.entities < 1 or args.repeat < 1:
        ap.error(f"--entities and --repeat must be >= 1, got {args.entities} and {args.repeat}")
    n = args.entities

    world = World()
    ents = [world.spawn(Transform(float(i)), Velocity()) for i in range(n)]
    for e in ents[::10]:
        world.add(e, Hidden())

    def iterate() -> None:
        for _e, (t, v) in world.query(Transform, Velocity):
            t.x += v.v

    def iterate_without() -> None:
        for _e, (t, v) in world.query(Transform, Velocity, without=(Hidden,)):
            t.x += v.v

    def rebuild() -> None:  # structural change on Velocity, then a query that must rebuild its rows
        world.add(ents[0], Velocity())
        for _e, (t, v) in world.query(Transform, Velocity):
            t.x += v.v

    def lookups() -> None:
        g = world.get
        for e in ents:
            g(e, Transform)

    schedule = Schedule()
    for p in Phase:
        for k in range(3):
            schedule.add_system(p, lambda w: None, name=f"{p.name.lower()}_{k}")
    clock = Clock()

    def frame() -> None:
        schedule.run_frame(world, clock, 1 / 60)

    rows = [
        (f"query 2 types, {n} entities, cached", measure(iterate, args.repeat)),
        (f"query 2 types + without, {n} entities", measure(iterate_without, args.repeat)),
        (f"query after invalidation (rebuild), {n}", measure(rebuild, args.repeat)),
        (f"world.get x {n}", measure(lookups, args.repeat)),
        (f"schedule.run_frame, {3 * len(Phase)} empty systems", measure(frame, args.repeat)),
    ]
    w = max(len(r[0]) for r in rows)
    print(device_line(None, f"{args.repeat} calls per row after one warm-up; spread = (p75 - p25) / p50"))
    print(f"{'case':<{w}}  {'mean ms':>9} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} {'spread':>7}  per item")
    for name, (st, sp) in rows:
        per = (f"{st.mean * 1e6 / n:8.1f} ns/entity" if "run_frame" not in name
               else f"{st.mean * 1e6 / 21:8.1f} ns/system")
        print(f"{name:<{w}}  {st.mean:9.4f} {st.p50:9.4f} {st.p95:9.4f} {st.max:9.4f} {sp.pct:6.0f}%  {per}")


if __name__ == "__main__":
    main()
