"""Skin-weight tools: solve and update times of each tool on the humanoid (16k) and the dense humanoid (90k).

Run: ``.venv/bin/python bench/bench_weights.py [--assets humanoid,humanoid_dense] [--repeat 5] [--bbw]`` or
``python main.py bench weights [...]``. Prints the device line (CPU: numpy/scipy; every weight tool runs on the
CPU) and one table per asset: milliseconds per call (median (min..max) over ``--repeat`` calls after a warm-up;
one-off solves such as the heat weights run once). Asserts nothing.

Rows: a brush stroke's update (paint replace within 5% of the diagonal), one smoothing iteration, normalize,
limit 4, prune, mirror x; Mohr's drag of one vertex (4 influences: the linear system; 8: the LP); the spline field
of one joint (two isolines: the factorisation and anchor basis, global and local) and an anchor drag (w = c + K a:
what the editor runs while an anchor moves; the issue's budget is 50 ms at 16k); the co-movement score of every
vertex over 30 frames; automatic heat weights (and BBW with ``--bbw``, minutes at 90k).
"""
from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` and `engine` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Spread, device_line  # noqa: E402

ASSETS = ("humanoid", "humanoid_dense")


def _time(fn: Callable[[], object], repeat: int) -> Spread:
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return Spread.of(out)


def _once(fn: Callable[[], object]) -> Spread:
    t0 = time.perf_counter()
    fn()
    return Spread.of([(time.perf_counter() - t0) * 1e3])


def run_asset(name: str, repeat: int, bbw: bool) -> list[tuple[str, Spread]]:
    from engine.scene import load_asset
    from engine.skinning.weights import auto, influence, mohr, paint
    from engine.skinning.weights.io import primitive_weights
    from engine.skinning.weights.spline import SplineField, SplineSamples
    from engine.skinning.weights.table import normalize

    loaded = load_asset(name)
    prim = primitive_weights(loaded)[0]
    dense = prim.dense()
    lock = np.zeros(prim.n_joints, bool)
    pos = prim.positions.astype(np.float64)
    diag = float(np.linalg.norm(np.ptp(pos, axis=0)))
    edges = paint.edge_graph(prim.positions, prim.triangles)
    j = int(np.argmax(dense.sum(0)[1:])) + 1
    centre = pos[int(np.argmax(dense[:, j]))]
    fall = paint.brush_falloff(pos, centre, 0.05 * diag)
    rows: list[tuple[str, Spread]] = []
    work = dense.copy()  # the editor's stroke updates its weights in place, row by row
    rows.append((f"brush stroke update ({int((fall > 0).sum())} vertices)",
                 _time(lambda: paint.paint(work, j, fall, 0.8, "replace", lock, inplace=True), repeat)))
    rows.append(("smooth, 1 iteration", _time(lambda: paint.smooth(dense, edges, 1, lock), repeat)))
    rows.append(("normalize", _time(lambda: normalize(dense, lock), repeat)))
    rows.append(("limit 4", _time(lambda: paint.limit(dense, 4, lock), repeat)))
    rows.append(("prune 0.01", _time(lambda: paint.prune(dense, 0.01, lock), repeat)))
    rows.append(("mirror x", _time(lambda: paint.mirror(dense, pos, prim.joint_names, "x", "+", lock), repeat)))
    rng = np.random.default_rng(0)
    mats = np.tile(np.eye(4, dtype=np.float32), (prim.n_joints, 1, 1))
    for k in range(prim.n_joints):
        q, _ = np.linalg.qr(np.eye(3) + 0.3 * rng.normal(size=(3, 3)))
        mats[k, :3, :3] = q * np.sign(np.linalg.det(q))
    v = int(np.argmax(dense[:, j]))
    for k in (4, 8):
        js = np.argsort(-dense[v])[:k]
        prev = np.full(k, 1.0 / k)
        target = mohr.hull_points(prim.positions[v], mats, js).mean(axis=0)
        rows.append((f"Mohr drag, {k} influences",
                     _time(functools.partial(mohr.drag_vertex, prim.positions[v], mats, js, prev, target), repeat)))
    topo = prim.skinned.topology()
    jp = prim.bind_joint_positions()[j]
    tri = topo.triangles
    cen = topo.positions[tri].mean(axis=1)
    dist = np.linalg.norm(cen - jp, axis=1)
    shells = []
    for r in (0.04 * diag, 0.08 * diag):
        f = np.flatnonzero(np.abs(dist - r) < 0.004 * diag)
        shells.append(SplineSamples(f, np.full((f.size, 3), 1 / 3), np.linspace(0, 1, f.size), np.zeros(1)))
    cur = dense[topo.display_of_control, j]
    for local in (False, True):
        holder: dict[str, SplineField] = {}

        def setup(local: bool = local, holder: dict[str, SplineField] = holder) -> None:
            holder["f"] = SplineField(topo.positions, tri, cur, shells, local=local, topology=topo)

        rows.append((f"spline field solve, {'local' if local else 'global'}", _once(setup)))
        field = holder["f"]
        rows.append((f"spline anchor drag, {'local' if local else 'global'} ({field.free.size} free)",
                     _time(functools.partial(field.weights, np.array([0.9, 0.1])), repeat)))
    traj = pos[None] + 0.01 * rng.normal(size=(30, 1, 3)) * np.arange(1, 4)[None, None, :] + \
        0.001 * rng.normal(size=(30, pos.shape[0], 3))
    rows.append(("co-movement score, 30 frames", _time(lambda: influence.comovement(traj[:, 0], traj), repeat)))
    par = prim.skinned.parents
    jpos = prim.bind_joint_positions()
    rows.append(("heat weights (solve, once)", _once(lambda: auto.heat_weights(topo.positions, tri, jpos, par))))
    if bbw:
        rows.append(("bbw weights (igl.bbw, once)", _once(lambda: auto.bbw_weights(topo.positions, tri, jpos, par))))
    return rows


def format_table(name: str, n: int, rows: list[tuple[str, Spread]]) -> str:
    width = max(len(r[0]) for r in rows)
    lines = [f"{name} ({n} vertices): ms, median (min..max)", f"{'tool':<{width}}  time"]
    lines += [f"{label:<{width}}  {s.text(3)}" for label, s in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--assets", default=",".join(ASSETS), help=f"comma-separated subset of {','.join(ASSETS)}")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per row (after one warm-up)")
    ap.add_argument("--bbw", action="store_true", help="also time igl.bbw (slow: minutes at 90k)")
    args = ap.parse_args(argv)
    names = [a for a in args.assets.split(",") if a]
    bad = [a for a in names if a not in ASSETS]
    if bad:
        ap.error(f"unknown asset(s) {bad}; valid: {list(ASSETS)}")
    if args.repeat < 1:
        ap.error(f"--repeat must be >= 1, got {args.repeat}")
    print(device_line(None, f"median of {args.repeat} calls after a warm-up; one-off solves run once"))
    from engine.scene import load_asset

    for name in names:
        n = sum(p.vertex_count for m in load_asset(name).asset.meshes for p in m.primitives)
        print(format_table(name, n, run_asset(name, args.repeat, args.bbw)))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
