"""Numpy reference deformers: cost of one skinning call on synthetic meshes (1.8k to 90k control points).

Run: ``.venv/bin/python bench/bench_reference.py [--sizes 1.8k,5.6k,16k,90k] [--deformers lbs,dqs,rigid,irs]
[--repeat 5]`` or ``python main.py bench reference [...]``. Prints the device line (CPU only: numpy) and a
table of milliseconds per call (median, min, spread = (p75 - p25) / median over the ``--repeat`` calls);
asserts nothing.

Each case is a closed-around tube subdivided into rings x segments, driven by a chain of joints along it,
bound once (planar binding + smoothing) and posed with a bend and a twist at every joint.

Rows are pluggable: ``DEFORMERS`` maps a name to a factory taking the `Case` and returning a zero-argument
callable that performs one call; `register` adds one (e.g. the spring deformer), so its timings land in
the same table.
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
from engine.skinning.binding import bind  # noqa: E402
from engine.skinning.meshprep import prepare_mesh  # noqa: E402
from engine.skinning.skinning import dqs, irs, lbs, rigid  # noqa: E402
from engine.skinning.types import Binding, MeshTopology  # noqa: E402

SIZES: dict[str, tuple[int, int]] = {
    "1.8k": (30, 60),
    "5.6k": (70, 80),
    "16k": (125, 128),
    "90k": (300, 300),
}
"""Case name -> (rings, segments); control points = rings * segments."""


@dataclass
class Case:
    """One synthetic character: topology, skeleton (bind and pose), skin weights and a binding."""

    name: str
    topology: MeshTopology
    bind_joints: np.ndarray  # (J,4,4) float32
    posed_joints: np.ndarray  # (J,4,4) float32
    parents: np.ndarray  # (J,)
    skin_mats: np.ndarray  # (J,4,4) float32
    joints: np.ndarray  # (V,4) int32 per control point
    weights: np.ndarray  # (V,4) float32 per control point
    binding: Binding


def _rot(axis: tuple[float, float, float], ang: float) -> np.ndarray:
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(ang) * k + (1 - np.cos(ang)) * k @ k


def make_case(name: str, rings: int, segs: int, *, n_joints: int = 5, length: float = 4.0,
              radius: float = 0.25) -> Case:
    """Tube along +Y with rings x segs control points and a chain of n_joints joints (the last one a leaf)."""
    th = 2 * np.pi * np.arange(segs) / segs
    y = np.linspace(0.0, length, rings)
    pos = np.stack(np.broadcast_arrays(radius * np.cos(th)[None], y[:, None], radius * np.sin(th)[None]), -1)
    pos = pos.reshape(-1, 3).astype(np.float32)
    i, k = np.meshgrid(np.arange(rings - 1), np.arange(segs), indexing="ij")
    a, b = i * segs + k, i * segs + (k + 1) % segs
    tris = np.concatenate([np.stack([a, a + segs, b], -1).reshape(-1, 3),
                           np.stack([b, a + segs, b + segs], -1).reshape(-1, 3)])
    topo = prepare_mesh(pos, tris)

    spacing = length / n_joints
    jy = np.arange(n_joints) * spacing
    bind_joints = np.tile(np.eye(4), (n_joints, 1, 1))
    bind_joints[:, 1, 3] = jy
    parents = np.arange(n_joints) - 1
    # pose: every joint bends 30 degrees about z and twists 45 degrees about its bone (local y)
    local = np.tile(np.eye(4), (n_joints, 1, 1))
    local[:, 1, 3] = np.r_[0.0, np.full(n_joints - 1, spacing)]
    for j in range(1, n_joints):  # set-up only
        local[j, :3, :3] = _rot((0, 0, 1), np.radians(30)) @ _rot((0, 1, 0), np.radians(45))
    posed = np.empty_like(local)
    posed[0] = local[0]
    for j in range(1, n_joints):
        posed[j] = posed[parents[j]] @ local[j]
    skin = posed @ np.linalg.inv(bind_joints)

    # LBS weights: linear blend between the two joints around each point's height
    yy = topo.positions[:, 1] / spacing
    j0 = np.clip(np.floor(yy - 0.5), 0, n_joints - 1).astype(np.int32)
    j1 = np.minimum(j0 + 1, n_joints - 1)
    w1 = np.clip(yy - 0.5 - j0, 0.0, 1.0).astype(np.float32)
    joints = np.stack([j0, j1, np.zeros_like(j0), np.zeros_like(j0)], 1)
    weights = np.stack([1 - w1, w1, np.zeros_like(w1), np.zeros_like(w1)], 1)

    bj32 = bind_joints.astype(np.float32)
    binding = bind(topo, bj32, parents, method="planar", smooth_passes=3)
    return Case(name, topo, bj32, posed.astype(np.float32), parents, skin.astype(np.float32), joints, weights, binding)


Factory = Callable[[Case], Callable[[], object]]

DEFORMERS: dict[str, Factory] = {
    "lbs": lambda c: lambda: lbs(c.topology.positions, c.joints, c.weights, c.skin_mats),
    "dqs": lambda c: lambda: dqs(c.topology.positions, c.joints, c.weights, c.skin_mats),
    "rigid": lambda c: lambda: rigid(c.binding, c.bind_joints, c.posed_joints),
    "irs": lambda c: lambda: irs(c.binding, c.bind_joints, c.posed_joints, c.parents),
    "irs+lc": lambda c: lambda: irs(c.binding, c.bind_joints, c.posed_joints, c.parents, length_correction=True),
}
"""Row name -> factory(case) -> one call. Other deformers register here (see `register`)."""


def register(name: str, factory: Factory) -> None:
    """Add a row to the table: factory(case) returns a zero-argument callable doing one deformer call."""
    if name in DEFORMERS:
        raise ValueError(f"deformer {name!r} is already registered")
    DEFORMERS[name] = factory


def time_call(fn: Callable[[], object], repeat: int) -> Spread:
    """Wall time in milliseconds of `repeat` calls after one warm-up call (median, min, max)."""
    fn()
    samples = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        samples[i] = (time.perf_counter_ns() - t0) / 1e6
    return Spread.of(samples)


def run(sizes: list[str], deformers: list[str], repeat: int) -> list[tuple[str, str, int, Spread]]:
    """Rows (deformer, case, control points, timing of one call in ms)."""
    rows = []
    for size in sizes:
        rings, segs = SIZES[size]
        case = make_case(size, rings, segs)
        for name in deformers:
            rows.append((name, size, case.topology.n_control, time_call(DEFORMERS[name](case), repeat)))
    return rows


def format_table(rows: list[tuple[str, str, int, Spread]]) -> str:
    """The device line, then one line per row: median and min ms, spread, ns per control point."""
    count = rows[0][3].count if rows else 0
    head = (f"{'deformer':<12} {'case':>6} {'points':>8} {'median ms':>10} {'min ms':>8} {'spread':>7} "
            f"{'ns/point':>9}")
    lines = [device_line(None, f"median of {count} calls per cell after one warm-up; spread = (p75 - p25) / median"),
             head]
    for name, size, n, t in rows:
        lines.append(f"{name:<12} {size:>6} {n:>8d} {t.median:>10.2f} {t.min:>8.2f} {t.pct:>6.0f}% "
                     f"{t.median * 1e6 / n:>9.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(SIZES), help=f"comma-separated subset of {','.join(SIZES)}")
    ap.add_argument("--deformers", default=",".join(DEFORMERS), help="comma-separated rows to time")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per cell (after one warm-up)")
    args = ap.parse_args(argv)
    sizes = [s for s in args.sizes.split(",") if s]
    names = [d for d in args.deformers.split(",") if d]
    bad = [s for s in sizes if s not in SIZES] + [d for d in names if d not in DEFORMERS]
    if bad:
        ap.error(f"unknown size/deformer {bad}; sizes: {list(SIZES)}, deformers: {list(DEFORMERS)}")
    if args.repeat < 1:
        ap.error(f"--repeat must be >= 1, got {args.repeat}")
    print(format_table(run(sizes, names, args.repeat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
