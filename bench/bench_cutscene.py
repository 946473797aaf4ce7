"""Cutscene benchmark: frames per second of ``cutscene render`` for each backend on this machine.

The example cutscene (assets/cutscenes/example.toml: two humanoids, LBS and springs with a breathing edit) at
``--width`` x ``--height`` (default 1280x720), ``--frames`` frames from the start of its follow shot, drawn into a
fresh PNG folder per run (so nothing is resumed) by: serial, ``process`` with ``--workers`` processes, and
``ray`` with as many when Ray is installed. Cases run in interleaved rounds (the machine's drift lands on each
alike); each figure is the median over the rounds of frames drawn / wall seconds of the drawing, which includes
starting the workers, loading the characters and compiling the shaders in each one (what a render pays; the
longer the render, the less it weighs). The speedup is against serial in the same rounds.

A cluster's throughput: frames are independent (frame-independent deformers), so N nodes like this one draw about
N x (the process figure), less the driver's PNG writing and network; frame-dependent cutscenes scale by shots.

Run: ``python main.py bench cutscene [--width 1280 --height 720 --frames 12 --rounds 2 --workers 2]``.
Asserts nothing.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import device_line


def main(argv: list[str] | None = None) -> int:
    from engine.paths import checkout_root
    from game.cutscene.document import load
    from game.cutscene.render import plan_output, render_cutscene

    ap = argparse.ArgumentParser(prog="bench cutscene", description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=720)
    ap.add_argument("--frames", type=int, default=12, help="frames per run (default 12)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    ap.add_argument("--workers", type=int, default=2, help="workers of the process and ray backends (default 2)")
    ap.add_argument("--device", default="gpu", choices=("gpu", "cpu"))
    args = ap.parse_args(argv)
    root = checkout_root() or Path(__file__).resolve().parents[1]
    doc = load(root / "assets" / "cutscenes" / "example.toml")
    doc.width, doc.height = args.width, args.height
    first = doc.shots()[1].first
    frames = list(range(first, min(doc.frames, first + args.frames)))
    cases = [("serial", 1), ("process", args.workers)]
    if importlib.util.find_spec("ray") is not None:
        cases.append(("ray", args.workers))
    import moderngl

    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    print(device_line(ctx, f"median of {args.rounds} interleaved rounds of {len(frames)} frames"))
    ctx.release()
    print(f"cutscene: {doc.name} at {args.width}x{args.height}, frames {frames[0]}..{frames[-1]}, device "
          f"{args.device}" + ("" if len(cases) == 3 else "; ray: not installed (pip install '.[ray]')"))
    fps: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(args.rounds):
        for name, workers in cases:
            with tempfile.TemporaryDirectory() as tmp:
                out = plan_output(tmp + "/", None, args.width, args.height)
                t0 = time.perf_counter()
                render_cutscene(doc, out, frames, backend=name, workers=workers, device=args.device)
                fps[name].append(len(frames) / (time.perf_counter() - t0))
    base = statistics.median(fps["serial"])
    print(f"{'backend':<10} {'workers':>7} {'frames/s':>9} {'min..max':>13} {'vs serial':>9}")
    for name, workers in cases:
        med = statistics.median(fps[name])
        print(f"{name:<10} {workers:>7} {med:>9.2f} {min(fps[name]):>6.2f}..{max(fps[name]):<6.2f} "
              f"{med / base:>8.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
