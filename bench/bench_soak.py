"""Soak and churn (issue 16): memory and GL objects stay flat over a long run, add/remove cycles leak nothing,
and hostile inputs are refused at a steady cost. Prints tables; asserts nothing (the tests keep the rules).

Run: ``.venv/bin/python bench/bench_soak.py [--frames 3000] [--cycles 500] [--deformer spring] [--device gpu]``.

* soak: one character playing its clip for ``--frames`` frames (render off), the resident size (VmRSS) and
  the live GL objects sampled every tenth of the run, and the springs' GPU status reports counted;
* churn: ``--cycles`` spawn + step + remove cycles, live GL objects and resident size before and after;
* hostile: per case the time to refuse a generated hostile file (a 65537-node chain, a QUADRATIC sampler, a
  1e30 inverse-bind translation, a graph file with ``nodes = 5``) and the one-line message.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench`, `engine` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _rss_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _live() -> int:
    from engine.gpu.resources import live_objects

    return sum(live_objects().values())


def soak(asset: str, frames: int, deformer: str, device: str) -> list[tuple[int, float, int, int]]:
    """(frame, RSS MiB, live GL objects, spring reports so far) every tenth of the run."""
    import warnings

    from engine import Session

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with Session(device=device, render=False, deformer=deformer) as s:
            s.spawn(asset, clip=0)
            every = max(1, frames // 10)
            for f in range(1, frames + 1):
                s.step(1, render=False)
                if f % every == 0 or f == frames:
                    reports = len(s.graph.spring_reports.last) if s.graph is not None else 0
                    rows.append((f, _rss_mib(), _live(), reports))
    return rows


def churn(asset: str, cycles: int, deformer: str, device: str) -> tuple[tuple[float, int], tuple[float, int]]:
    """((RSS, live objects) after the first cycle, the same after the last)."""
    from engine import Session

    with Session(device=device, render=True, width=64, height=64, deformer=deformer) as s:
        loaded = s.load(asset)
        first = (0.0, 0)
        for c in range(cycles):
            ch = s.spawn(loaded, clip=0)
            s.step(1)
            ch.remove()
            s.step(1)
            if c == 0:
                first = (_rss_mib(), _live())
        return first, (_rss_mib(), _live())


def hostile(folder: Path) -> list[tuple[str, float, str]]:
    """(case, ms to refuse, the error line) for generated hostile files."""
    import contextlib
    import io

    import numpy as np

    from engine.assets.writer import FLOAT
    from game import cli
    from tests.helpers.hostile import append_accessor, skinned_document, write_gltf

    cases: dict[str, list[str]] = {}
    doc, binary = skinned_document()
    doc["animations"][0]["samplers"][0]["interpolation"] = "QUADRATIC"
    cases["QUADRATIC sampler"] = ["inspect", str(write_gltf(folder, doc, binary, "quadratic.gltf"))]
    doc, binary = skinned_document()
    ibm = np.tile(np.eye(4, dtype=np.float32), (2, 1, 1))
    ibm[1, 0, 3] = 1e30
    binary, acc = append_accessor(doc, binary, ibm.transpose(0, 2, 1), FLOAT, "MAT4")
    doc["skins"][0]["inverseBindMatrices"] = acc
    cases["1e30 inverse bind"] = ["export-frame", str(write_gltf(folder, doc, binary, "ibm.gltf")), "--device",
                                  "cpu", "--out", str(folder / "x.npz")]
    doc, binary = skinned_document()
    n = 65537
    doc["nodes"] = [{"name": f"n{i}", "children": [i + 1]} for i in range(n - 1)] + [{"name": "leaf"}]
    doc["scenes"] = [{"nodes": [0]}]
    doc.pop("skins", None)
    doc.pop("animations", None)
    cases["65537-node chain"] = ["inspect", str(write_gltf(folder, doc, binary, "chain.gltf"))]
    graph = folder / "graph.toml"
    graph.write_text("nodes = 5\n")
    cases["graph nodes = 5"] = ["--headless", "--frames", "1", "--graph", str(graph)]
    out = []
    for name, argv in cases.items():
        err = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stderr(err):
            status = cli.run(argv)
        ms = (time.perf_counter() - t0) * 1e3
        line = err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"(exit {status})"
        out.append((name, ms, line[:110]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--asset", default=None, help="glTF file (default: the generated cylinder)")
    ap.add_argument("--frames", type=int, default=3000, help="soak frames (default 3000)")
    ap.add_argument("--cycles", type=int, default=500, help="spawn/remove cycles (default 500)")
    ap.add_argument("--deformer", default="spring", help="deformer of the soak and churn (default spring)")
    ap.add_argument("--device", default="gpu", choices=("gpu", "cpu"))
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: soak,churn,hostile")
    args = ap.parse_args(argv)
    if args.frames < 1 or args.cycles < 1:
        ap.error(f"--frames and --cycles must be >= 1, got {args.frames}, {args.cycles}")
    skip = {s for s in args.skip.split(",") if s}
    from engine.assets.library import character_path

    asset = args.asset or str(character_path("cylinder"))
    if "soak" not in skip:
        print(f"soak: {args.frames} frames of {Path(asset).name} ({args.deformer}, {args.device})")
        print(f"{'frame':>7} {'RSS MiB':>9} {'GL objects':>11} {'spring reports':>15}")
        for f, rss, live, reports in soak(asset, args.frames, args.deformer, args.device):
            print(f"{f:>7} {rss:>9.1f} {live:>11} {reports:>15}")
    if "churn" not in skip:
        (rss0, live0), (rss1, live1) = churn(asset, args.cycles, args.deformer, args.device)
        print(f"\nchurn: {args.cycles} spawn/step/remove cycles")
        print(f"{'':>12} {'RSS MiB':>9} {'GL objects':>11}")
        print(f"{'after 1':>12} {rss0:>9.1f} {live0:>11}\n{'after last':>12} {rss1:>9.1f} {live1:>11}")
    if "hostile" not in skip:
        print("\nhostile inputs: time to refuse, and the message")
        with tempfile.TemporaryDirectory() as tmp:
            for name, ms, line in hostile(Path(tmp)):
                print(f"{name:<20} {ms:>8.0f} ms  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
