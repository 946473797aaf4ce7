"""ECS micro-benchmarks: query iteration for 1k entities (cached / rebuilt), lookups, schedule overhead.

Run: ``.venv/bin/python bench/bench_ecs.py [--entities 1000] [--repeat 200]``. Prints a table; asserts nothing.
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.ecs import Clock, Phase, Schedule, World
from engine.profile import FrameStats


@dataclass
class Transform:
    x: float = 0.0


@dataclass
class Velocity:
    v: float = 1.0


@dataclass
class Hidden:
    pass


def measure(fn: Callable[[], object], repeat: int) -> FrameStats:
    fn()  # warm-up
    samples = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        samples[i] = (time.perf_counter_ns() - t0) / 1e6
    return FrameStats.of(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
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
        ("schedule.run_frame, 21 empty systems", measure(frame, args.repeat)),
    ]
    w = max(len(r[0]) for r in rows)
    print(f"{'case':<{w}}  {'mean ms':>9} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9}  per item")
    for name, st in rows:
        per = (f"{st.mean * 1e6 / n:8.1f} ns/entity" if "run_frame" not in name
               else f"{st.mean * 1e6 / 21:8.1f} ns/system")
        print(f"{name:<{w}}  {st.mean:9.4f} {st.p50:9.4f} {st.p95:9.4f} {st.max:9.4f}  {per}")


if __name__ == "__main__":
    main()
