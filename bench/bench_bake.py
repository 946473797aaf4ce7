"""Baking benchmark: many frames of one clip in one process, baked (engine/bake.py) against one frame at a time.

"one at a time" is what a script or another tool's per-frame evaluation does: set the clip time, deform, read the
vertices back (``Character.play(time=t)`` + ``Character.vertices()``, the frame through the Session). "bake" is
``engine.bake.bake`` (frame-independent deformers: a block of frames per dispatch as instances of the mesh; the
frame-dependent spring loop: frames in order), set-up of the block's instances included. Each cell is the median
over ``--rounds`` rounds with the spread (min..max); ms per frame.

Reference: Blender 4's per-frame evaluation of CesiumMan's armature modifier on this machine (the issue's
measurement, 300 frames): 0.45 ms/frame. ``bpy`` is not installed here; the figure is quoted, not re-measured.

Run: ``python main.py bench bake [--frames 300] [--rounds 3] [--asset PATH] [--quick]``. Asserts nothing.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from engine import Session
from engine.bake import bake
from engine.paths import checkout_root

BLENDER_MS_PER_FRAME = 0.45


def _default_asset() -> Path:
    root = checkout_root() or Path.cwd()
    cesium = root.parent / "shared" / "gltf-samples" / "CesiumMan.glb"
    return cesium if cesium.is_file() else root / "assets" / "humanoid.glb"


def _spread(samples: list[float]) -> str:
    a = np.asarray(samples)
    return f"{np.median(a):8.3f} ({a.min():.3f}..{a.max():.3f})"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--asset", type=Path, default=None, help="glTF file (default CesiumMan from ../shared, else "
                                                             "the generated humanoid)")
    ap.add_argument("--frames", type=int, default=300, help="frames baked per round (default 300)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per cell; the median is shown (default 3)")
    ap.add_argument("--deformers", default="lbs,dqs,spring", help="comma-separated (default lbs,dqs,spring)")
    ap.add_argument("--quick", action="store_true", help="30 frames, 1 round, lbs only (CI smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.frames, args.rounds, args.deformers = 30, 1, "lbs"
    if args.frames < 1 or args.rounds < 1:
        ap.error("--frames and --rounds must be >= 1")
    asset = args.asset or _default_asset()
    deformers = [d for d in args.deformers.split(",") if d]

    with Session(render=False) as s:
        print(f"device: {s.ctx.info['GL_RENDERER']}; asset {asset.name}; {args.frames} frames; "
              f"{args.rounds} round(s), median (min..max) ms per frame")
        print(f"{'deformer':>9} {'one at a time':>24} {'bake':>24} {'speed-up':>9} {'vs Blender 0.45':>16}")
        for name in deformers:
            ch = s.spawn(asset, deformer=name, speed=0.0, mode="clamp")
            clip = ch.clips[0] if ch.clips else None
            duration = float(ch.asset.clips[0].duration) if ch.asset.clips else 0.0
            times = np.linspace(0.0, duration, args.frames)
            one, baked = [], []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                for t in times:
                    if clip is not None:
                        ch.play(clip, time=float(t), speed=0.0)
                    ch.vertices()
                one.append((time.perf_counter() - t0) * 1e3 / args.frames)
                t0 = time.perf_counter()
                bake(s, ch, times)
                baked.append((time.perf_counter() - t0) * 1e3 / args.frames)
            ratio = float(np.median(one) / np.median(baked))
            vs = BLENDER_MS_PER_FRAME / float(np.median(baked))
            print(f"{name:>9} {_spread(one):>24} {_spread(baked):>24} {ratio:8.1f}x {vs:15.2f}x")
            ch.remove()


if __name__ == "__main__":
    main()
