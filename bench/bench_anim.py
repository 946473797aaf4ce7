"""Animation benchmark: clip sampling + FK (+ skinning matrices) per frame, 1 and 64 instances.

Synthetic rigs of 20 and 80 joints (tests.helpers.synthetic_asset: T/R/S LINEAR channels on every joint, 30 keys).
"1 instance" is ``ClipSampler.sample`` + ``global_matrices`` + ``skin_matrices``; "64 batched" is
``sample_batch`` + ``global_matrices_batched`` + batched ``skin_matrices`` for 64 characters at different times;
"64 looped" runs the single-instance path 64 times, for comparison.

Run: ``.venv/bin/python bench/bench_anim.py [--repeat 200]``. Prints the device line (CPU only: numpy) and a
table (median, p95 and spread = (p75 - p25) / median over the timed frames); asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench`, `engine` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Spread, device_line  # noqa: E402
from engine.anim.fk import global_matrices, global_matrices_batched, skin_matrices  # noqa: E402
from engine.anim.pose import Pose  # noqa: E402
from engine.anim.rig import Rig  # noqa: E402
from engine.anim.sampling import ClipSampler  # noqa: E402
from tests.helpers.synthetic_asset import make_asset  # noqa: E402


def measure(fn: Callable[[int], object], repeat: int) -> tuple[Spread, float]:
    """(median / min / max, p95) milliseconds of ``fn(frame)`` over ``repeat`` frames after one warm-up."""
    fn(0)  # warm-up
    samples = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter_ns()
        fn(i)
        samples[i] = (time.perf_counter_ns() - t0) / 1e6
    return Spread.of(samples), float(np.percentile(samples, 95))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200, help="frames timed per row")
    ap.add_argument("--instances", type=int, default=64)
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.instances < 1:
        ap.error(f"--repeat and --instances must be >= 1, got {args.repeat} and {args.instances}")
    dt = 1 / 60
    n_inst = args.instances

    print(device_line(None, f"median of {args.repeat} frames per row ({max(5, args.repeat // 10)} for the looped "
                            "rows) after one warm-up; spread = (p75 - p25) / median"))
    print(f"{'rig':>10} {'case':>18} {'median ms':>10} {'p95 ms':>9} {'spread':>7} {'ms/char':>9}")
    for joints in (20, 80):
        _bench_rig(joints, n_inst, args.repeat, dt)


def _bench_rig(joints: int, n_inst: int, repeat: int, dt: float) -> None:
    """Print the three rows of one synthetic rig of ``joints`` joints."""
    asset = make_asset(joints, n_keys=30, duration=2.0)
    rig = Rig.from_asset(asset)
    sampler = ClipSampler(rig, asset.clips[0])
    skin = asset.skins[0]
    pose = Pose.rest(rig)

    def single(frame: int) -> None:
        sampler.sample((frame * dt) % sampler.duration, pose)
        skin_matrices(global_matrices(rig, pose), skin)

    T = np.broadcast_to(rig.translation, (n_inst, rig.count, 3)).copy()
    R = np.broadcast_to(rig.rotation, (n_inst, rig.count, 4)).copy()
    S = np.broadcast_to(rig.scale, (n_inst, rig.count, 3)).copy()
    offsets = np.linspace(0, sampler.duration, n_inst, endpoint=False)

    def batched(frame: int) -> None:
        sampler.sample_batch((frame * dt + offsets) % sampler.duration, T, R, S)
        skin_matrices(global_matrices_batched(rig, T, R, S), skin)

    poses = [Pose.rest(rig) for _ in range(n_inst)]

    def looped(frame: int) -> None:
        for k, p in enumerate(poses):
            sampler.sample((frame * dt + offsets[k]) % sampler.duration, p)
            skin_matrices(global_matrices(rig, p), skin)

    label = f"{joints} joints"
    for case, fn, count, rep in [("1 instance", single, 1, repeat),
                                 (f"{n_inst} batched", batched, n_inst, repeat),
                                 (f"{n_inst} looped", looped, n_inst, max(5, repeat // 10))]:
        t, p95 = measure(fn, rep)
        print(f"{label:>10} {case:>18} {t.median:10.3f} {p95:9.3f} {t.pct:6.0f}% {t.median / count:9.4f}")


if __name__ == "__main__":
    main()
