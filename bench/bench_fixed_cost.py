"""`python bench/bench_fixed_cost.py [--frames N] [--counts 1,8]`: the compose pass's fixed-cost cuts, before and
after, in one process.

The one-character frame of ``bench render`` (CesiumMan, the default look: ground, grid, contact shadows) with the
compose pass as it was ("before": the blob drawn every frame, every per-frame uniform written every frame) and as
it is ("after": the backdrop-with-blobs cache of :class:`engine.render.passes.compose.ContactShadows`, uniforms
written on change), alternating frame by frame so that the machine's drift lands on both alike, for a walking
crowd ("animated": new bounds, so new blobs, every frame: the cache never fills and costs nothing) and the same
crowd paused ("still": the blobs come from the cache). Before each timed frame one untimed frame of the same
variant settles it (the cache fills on the second frame with an unchanged key). Each cell is the median of the
timed frames (ms, one ``ctx.finish()`` per frame); ``after/before`` is the median of the per-pair ratios. ``cpu``
columns: the process's CPU time per frame (every thread: Python, llvmpipe's rasteriser threads): on llvmpipe that
is the frame's work, and unlike wall time it hardly moves with the other processes on a shared machine.
Both variants draw the same pixels (tests/gl/test_compose_fixed_cost.py). Asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` and `engine` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_render import ASSET, PHASE_S, SIZES, Crowd  # noqa: E402
from bench.common import Spread, device_line  # noqa: E402


class _WriteAlways:
    """The uniform writes as they were: every call writes."""

    def reset(self, prog) -> None:  # noqa: ANN001
        pass

    def set(self, prog, name: str, value) -> None:  # noqa: ANN001
        from engine.render.programs import set_uniform

        set_uniform(prog, name, value)

    def matrix(self, prog, name: str, m) -> None:  # noqa: ANN001
        from engine.render.programs import set_matrix

        set_matrix(prog, name, m)


def run_case(ctx, w: int, h: int, n: int, still: bool, frames: int) -> dict[str, list[float]]:  # noqa: ANN001
    """Timed frames (ms) of each variant, interleaved; ``hits``: [frames the blob cache served]."""
    crowd = Crowd(ctx, w, h, n)
    if still:
        for i, ch in enumerate(crowd.characters):
            ch.play(0, time=PHASE_S * i, speed=0.0)
    comp = crowd.renderer.compose_pass
    blobs = comp.blobs
    after = (blobs.cached, blobs.note, comp.uniforms)
    before = (lambda key: False, lambda key: False, _WriteAlways())
    out: dict[str, list[float]] = {"before": [], "after": [], "before_cpu": [], "after_cpu": []}
    for _ in range(4):
        crowd.frame()
        ctx.finish()
    for _ in range(frames):
        for name, (cached, note, uniforms) in (("before", before), ("after", after)):
            blobs.cached, blobs.note, comp.uniforms = cached, note, uniforms
            crowd.frame()  # settle: the cache fills on the second frame with an unchanged key
            ctx.finish()
            t0, c0 = time.perf_counter(), time.process_time()
            crowd.frame()
            ctx.finish()
            out[name].append((time.perf_counter() - t0) * 1e3)
            out[name + "_cpu"].append((time.process_time() - c0) * 1e3)
    blobs.cached, blobs.note, comp.uniforms = after
    out["hits"] = [float(blobs.cache_hits)]
    crowd.release()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_fixed_cost", description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=30, help="timed frames per variant and case (default 30)")
    ap.add_argument("--counts", default="1,8", help="characters per case, comma-separated (default 1,8)")
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.counts.split(",") if x]
    if args.frames < 1 or not counts or min(counts) < 1:
        ap.error(f"--frames and --counts must be >= 1, got {args.frames} and {args.counts!r}")
    if not ASSET.is_file():
        print(f"{ASSET} not found: the benchmark needs ../shared/gltf-samples/CesiumMan.glb")
        return 1
    from engine.gpu.context import egl_context

    ctx = egl_context(430)
    print(device_line(ctx, f"{args.frames} interleaved frame pairs per case; median ms; spread = IQR / median"))
    print(f"{'size':>10}{'N':>4}{'scene':>10}{'before':>9}{'spread':>8}{'after':>9}{'spread':>8}{'after/before':>14}"
          f"{'cpu before':>12}{'cpu after':>11}{'cpu a/b':>9}")
    for w, h in SIZES:
        for n in counts:
            for still in (False, True):
                t = run_case(ctx, w, h, n, still, args.frames)
                b, a = Spread.of(t["before"]), Spread.of(t["after"])
                ratio = float(np.median(np.asarray(t["after"]) / np.asarray(t["before"])))
                cb, ca = float(np.median(t["before_cpu"])), float(np.median(t["after_cpu"]))
                cpu_ratio = float(np.median(np.asarray(t["after_cpu"]) / np.asarray(t["before_cpu"])))
                print(f"{f'{w}x{h}':>10}{n:>4}{'still' if still else 'animated':>10}{b.median:>9.2f}{b.pct:>7.0f}%"
                      f"{a.median:>9.2f}{a.pct:>7.0f}%{ratio:>14.2f}{cb:>12.2f}{ca:>11.2f}{cpu_ratio:>9.2f}",
                      flush=True)
    ctx.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
