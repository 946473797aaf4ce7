"""Baking benchmark: many frames of one clip in one process, baked (engine/bake.py) against one frame at a time.

"one at a time" is what a script or another tool's per-frame evaluation does: set the clip time, deform, read the
vertices back (``Character.play(time=t)`` + ``Character.vertices()``, the frame through the Session). "bake" is
``engine.bake.bake`` (frame-independent deformers: a block of frames per dispatch as instances of the mesh; the
frame-dependent spring loop: frames in order), set-up of the block's instances included. Each cell is the median
over ``--rounds`` rounds with the spread (min..max); ms per frame.

Blender, measured side by side: ``bench/blender_eval.py`` in a subprocess of a Python that has ``bpy`` (Blender as
a module, from PyPI; it pins numpy < 2 and CPython 3.11, so it gets its own venv: ``make blender`` makes
``.venv-blender``; or name an interpreter with ``$BLENDER_PYTHON``; the project never imports it) loads the same
asset (``bpy.ops.import_scene.gltf``) and evaluates the same number of frames spread over the clip, as a bake
script would (``frame_set`` + the evaluated depsgraph's mesh, its vertices read into numpy), ``--rounds`` rounds:
the Armature modifier alone (the row of the frame-independent deformers: ``lbs``, ``dqs``) and with a Corrective
Smooth modifier of ``--smooth`` iterations after it (default 50, the row of ``spring``: Blender's answer to the
volume loss the springs address; different algorithms, same purpose). The last columns are Blender's ms per frame
(median (min..max)) and Blender / bake (> 1: ours faster). Without ``bpy`` the column says "bpy not installed" and
the ratio uses the issue's figure for the armature (0.45 ms/frame, Blender 4 on this machine, labelled "quoted").

Run: ``python main.py bench bake [--frames 300] [--rounds 3] [--asset PATH] [--smooth 50] [--no-blender]
[--quick]``. Asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import device_line
from engine import Session
from engine.bake import bake
from engine.paths import checkout_root

BLENDER_MS_PER_FRAME = 0.45
"""Quoted (issue 15: Blender 4, CesiumMan's armature modifier, 300 frames on this machine): the fallback when
``bpy`` is not installed."""
_BLENDER_SCRIPT = Path(__file__).resolve().with_name("blender_eval.py")


def blender_python() -> str | None:
    """An interpreter that imports ``bpy``: ``$BLENDER_PYTHON``, the checkout's ``.venv-blender`` (``make
    blender``) or this one; None when none does."""
    root = checkout_root() or Path.cwd()
    candidates = [os.environ.get("BLENDER_PYTHON"), str(root / ".venv-blender" / "bin" / "python"), sys.executable]
    for python in candidates:
        if not python or not Path(python).exists():
            continue
        code = "import importlib.util, sys; sys.exit(importlib.util.find_spec('bpy') is None)"
        probe = subprocess.run([python, "-c", code], capture_output=True)
        if probe.returncode == 0:
            return python
    return None


def blender_ms_per_frame(asset: Path, frames: int, rounds: int, smooth: int) -> dict | str:
    """Blender's per-frame evaluation of ``asset`` (bench/blender_eval.py in a subprocess): a dict with
    ``armature`` and ``smooth`` (ms per frame per round), ``version`` and ``vertices``; or a reason string
    ("bpy not installed", a failure's last line)."""
    python = blender_python()
    if python is None:
        return "bpy not installed"
    cfg = {"asset": str(asset), "frames": int(frames), "rounds": int(rounds), "smooth": int(smooth)}
    try:
        out = subprocess.run([python, str(_BLENDER_SCRIPT), json.dumps(cfg)], capture_output=True,
                             text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return "bpy timed out"
    for line in out.stdout.splitlines():
        if line.startswith("BPY_RESULT"):
            return json.loads(line.split(None, 1)[1])
    return "bpy failed: " + (out.stderr.strip().splitlines() or ["?"])[-1][:100]


def _default_asset() -> Path:
    root = checkout_root() or Path.cwd()
    cesium = root.parent / "shared" / "gltf-samples" / "CesiumMan.glb"
    return cesium if cesium.is_file() else root / "assets" / "humanoid.glb"


def _spread(samples: list[float]) -> str:
    a = np.asarray(samples)
    return f"{np.median(a):8.3f} ({a.min():.3f}..{a.max():.3f})"


def _blender_cell(blender: dict | str, key: str) -> tuple[list[float], str] | None:
    """Blender's samples for a row and whether they were measured or quoted (the armature figure only)."""
    if isinstance(blender, dict) and blender.get(key):
        return list(blender[key]), "measured"
    if key == "armature":
        return [BLENDER_MS_PER_FRAME], "quoted"
    return None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--asset", type=Path, default=None, help="glTF file (default CesiumMan from ../shared, else "
                                                             "the generated humanoid)")
    ap.add_argument("--frames", type=int, default=300, help="frames baked per round (default 300)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per cell; the median is shown (default 3)")
    ap.add_argument("--deformers", default="lbs,dqs,spring", help="comma-separated (default lbs,dqs,spring)")
    ap.add_argument("--smooth", type=int, default=50, help="Blender's Corrective Smooth iterations for the "
                                                           "spring row (default 50; 0 skips it)")
    ap.add_argument("--no-blender", action="store_true", help="skip Blender (the quoted figure is used)")
    ap.add_argument("--quick", action="store_true", help="30 frames, 1 round, lbs only, no Blender (CI smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.frames, args.rounds, args.deformers, args.no_blender = 30, 1, "lbs", True
    if args.frames < 1 or args.rounds < 1:
        ap.error("--frames and --rounds must be >= 1")
    if args.smooth < 0:
        ap.error(f"--smooth must be >= 0, got {args.smooth}")
    asset = args.asset or _default_asset()
    deformers = [d for d in args.deformers.split(",") if d]
    smooth = args.smooth if "spring" in deformers else 0
    blender = ("skipped" if args.no_blender
               else blender_ms_per_frame(asset, args.frames, args.rounds, smooth))

    with Session(render=False) as s:
        print(device_line(s.ctx, f"asset {asset.name}; {args.frames} frames; {args.rounds} round(s), median "
                                 f"(min..max) ms per frame"))
        if isinstance(blender, dict):
            print(f"Blender {blender['version']} (bpy, {blender['vertices']} vertices, {blender['threads']} "
                  f"threads): Armature modifier; spring row: + Corrective Smooth x{args.smooth}")
        else:
            print(f"Blender: {blender}; its column quotes the issue's {BLENDER_MS_PER_FRAME} ms/frame (armature)")
        print(f"{'deformer':>9} {'one at a time':>24} {'bake':>24} {'speed-up':>9} {'Blender':>24} "
              f"{'Blender/bake':>13}")
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
            theirs = _blender_cell(blender, "smooth" if name.startswith("spring") else "armature")
            if theirs is None:
                cell, vs = f"{'-':>24}", f"{'-':>13}"
            else:
                cell = f"{_spread(theirs[0]) if theirs[1] == 'measured' else f'{theirs[0][0]:.3f} quoted':>24}"
                vs = f"{float(np.median(theirs[0])) / float(np.median(baked)):12.2f}x"
            print(f"{name:>9} {_spread(one):>24} {_spread(baked):>24} {ratio:8.1f}x {cell} {vs}")
            ch.remove()


if __name__ == "__main__":
    main()
