"""The demo scene: generated characters playing their clips on a ground plane, through :class:`engine.Session`.

``python main.py`` opens a window when a display exists (engine/runloop.py lists the controls) and otherwise
runs headless. ``python main.py --headless --frames N --screenshot out.png`` renders N frames offscreen, writes
the PNG and prints the frame-time summary.

The demo only decides the cast and where it stands; the frame (engine/frame.py), the deformation and the drawing
are the Session's.
"""
from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path
from typing import Any

from engine.profile.stats import FrameStats

__all__ = ["DEFAULT_CAST", "spawn_cast", "demo_deformer", "run_demo"]

# The default cast: (character, clip, speed). Humanoids first; the research's test pieces beside them.
DEFAULT_CAST = (
    ("humanoid", "walk", 1.0),
    ("humanoid", "wave", 1.0),
    ("humanoid", "idle", 1.0),
    ("humanoid", "stretch", 1.0),
    ("cylinder", "twist", 1.0),
    ("plus", 0, 1.0),
    ("box", 0, 1.0),
    ("humanoid", "walk", 0.8),
)

SPACING = 1.6  # metres between neighbouring characters


def demo_deformer(deformer: str, renderer_name: str) -> str:
    """``auto``: the spring deformer on a GPU, LBS on a software rasteriser (springs cost ~0.6 s per frame
    there for the default cast)."""
    if deformer != "auto":
        return deformer
    return "lbs" if "llvmpipe" in renderer_name else "spring"


def spawn_cast(session: Any, count: int, *, cast=DEFAULT_CAST, asset: str | None = None) -> list[Any]:
    """``count`` characters on a grid facing the camera (cast entries in turn, or ``asset`` ``count`` times),
    each standing on the ground, clips desynchronised."""
    if not 1 <= count <= 256:
        raise ValueError(f"--characters must be in [1, 256], got {count}")
    entries = [(asset, 0, 1.0)] * count if asset else [cast[i % len(cast)] for i in range(count)]
    cols = max(1, math.ceil(math.sqrt(count)))
    rows = math.ceil(count / cols)
    out = []
    for i, (name, clip, speed) in enumerate(entries):
        loaded = session.load(name)
        row, col = divmod(i, cols)
        x = (col - (cols - 1) / 2) * SPACING
        z = -(row - (rows - 1) / 2) * SPACING
        clip_ok = clip if loaded.asset.clips and _has_clip(loaded.asset, clip) else (0 if loaded.asset.clips else None)
        ch = session.spawn(loaded, clip=clip_ok, speed=speed, time=0.37 * i * speed, position=(x, 0.0, z),
                           yaw=15.0 * ((i % 3) - 1), on_ground=True)
        out.append(ch)
    return out


def _has_clip(asset, clip) -> bool:
    try:
        asset.clip_index(clip)
    except ValueError:
        return False
    return True


def frame_camera(session: Any) -> None:
    """An orbit camera over the cast: bounds of the first frame, the ground included."""
    import numpy as np

    from engine.render.camera import OrbitCamera

    r = session.renderer
    cam = OrbitCamera(target=(0.0, 0.9, 0.0), distance=7.0, yaw=20.0, pitch=16.0, aspect=r.width / r.height)
    session.camera = cam
    session.step()
    b = r.scene_bounds()
    if b is not None:
        lo, hi = b
        cam.fit(np.minimum(lo, 0.0 * lo), hi, margin=1.05)


def run_demo(args: argparse.Namespace) -> int:
    from engine import Session
    from engine.gpu.context import display_present
    from engine.runloop import run_headless, run_window

    headless = bool(args.headless) or not display_present()
    frames = args.frames
    if frames is not None and frames < 1:
        raise ValueError(f"--frames must be >= 1, got {frames}")
    if args.width < 16 or args.height < 16 or args.width > 8192 or args.height > 8192:
        raise ValueError(f"--width/--height must be in [16, 8192], got {args.width}x{args.height}")
    if not 1 <= args.characters <= 256:
        raise ValueError(f"--characters must be in [1, 256], got {args.characters}")
    screenshot = args.screenshot or ("out/demo.png" if headless else None)
    if screenshot is not None and Path(screenshot).suffix.lower() != ".png":
        raise ValueError(f"--screenshot must end in .png, got {Path(screenshot).name!r}")
    if screenshot is not None:  # refuse an unwritable path now, not after every frame has rendered
        shot = Path(screenshot)
        try:
            shot.parent.mkdir(parents=True, exist_ok=True)
            with open(shot, "ab"):
                pass
        except OSError as exc:
            raise ValueError(f"--screenshot {screenshot!r} cannot be written: {exc.strerror or exc}") from None
    if headless and frames is None:
        frames = 120
        print("no display (or --headless): rendering 120 frames offscreen; pass --frames N to change",
              file=sys.stderr)
    device = args.device
    graph = getattr(args, "graph", None)
    if graph is not None and device != "gpu":
        raise ValueError("--graph needs --device gpu")
    with Session(device=device, width=args.width, height=args.height, window=not headless,
                 headless=headless, title="skinengine demo", graph=graph) as session:
        gl_renderer = session.ctx.info.get("GL_RENDERER", "")
        deformer = session.default.deformer if graph is not None else demo_deformer(args.deformer, gl_renderer)
        if graph is None:
            from engine.scene import DeformSettings

            session.default = DeformSettings(deformer, session.default.config)
            session.meshes.check(session.default, device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spawn_cast(session, args.characters, asset=args.asset)
        print(f"demo: {args.characters} characters, deformer "
              f"{f'graph {deformer!r}' if graph is not None else deformer} on {device} ({gl_renderer})")
        frame_camera(session)
        session.schedule.history.clear()
        frame_ms = run_headless(session, frames) if headless else run_window(session, frames)
        if screenshot:
            session.save_png(screenshot)
            print(f"wrote {screenshot}")
        print(FrameStats.of(frame_ms).summary())
        _print_system_table(session)
    return 0


def _print_system_table(session: Any) -> None:
    from engine.profile.stats import system_table

    rows = system_table(session.schedule.history)
    parts = [f"{name} {stats.mean:.2f}" for name, _phase, stats in rows]
    gpu = session.renderer.gpu_ms
    gpu_txt = ", ".join(f"{k} {v:.2f}" for k, v in gpu.items() if v is not None)
    print("cpu ms per frame (mean): " + ", ".join(parts) + (f" | gpu ms: {gpu_txt}" if gpu_txt else ""))
