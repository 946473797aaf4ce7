"""`python main.py render ASSET`: one frame rendered headless to PNG, optionally with its G-buffer as .npz.

The asset is spawned in an :class:`engine.Session` holding ``--clip`` at ``--time`` (rest pose without a clip),
deformed with ``--deformer`` on ``--device``; unskinned mesh nodes follow their node world matrix. Every
primitive instance is one renderer mesh tagged (entity, glTF node, mesh, primitive).
Without ``--camera`` the camera looks from the front, slightly above, and fits the deformed bounds.

``--gbuffer F.npz`` holds (row 0 = top of the image; background: -1 ids, 0 floats, depth 1):

* ``position`` (H,W,3) float32 world space, ``normal`` (H,W,3) float32 unit world normal facing the camera,
* ``depth`` (H,W) float32 window depth in [0, 1], ``barycentric`` (H,W,3) float32,
* ``triangle`` (H,W) int32 triangle index within its glTF primitive,
* ``node``, ``mesh``, ``primitive`` (H,W) int32: the glTF node of the instance, its mesh and primitive index,
* ``view``, ``projection`` (4,4) float32, column-vector convention (clip = projection @ view @ world).

``--view CHANNEL`` writes a debug view of the G-buffer to the PNG instead of the lit frame.

Sizes up to 8192 per side are accepted where the device and the memory left can serve them: the memory a
frame needs (and its G-buffer read-back, ~280 bytes per pixel in all) is estimated before anything is loaded
(``engine.render.targets.check_render_memory``); a size that does not fit is one ``error:`` line naming the
size, the limit and the largest size that fits.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from engine.paths import check_writable


def _vec3_arg(text: str, what: str) -> np.ndarray:
    try:
        v = np.array([float(x) for x in str(text).split(",")], np.float64)
    except ValueError:
        v = np.zeros(0)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{what} must be three numbers X,Y,Z, got {text!r}")
    return v


def make_camera(args: argparse.Namespace, lo: np.ndarray, hi: np.ndarray, aspect: float):
    """The CLI camera: ``--camera`` eye:target (near/far fitted to the bounds for depth precision), or a
    front view fitting the bounds."""
    from engine.render.camera import Camera

    fov = float(args.fov)
    if not 1.0 <= fov <= 170.0:
        raise ValueError(f"--fov must be in [1, 170] degrees, got {fov}")
    up = _vec3_arg(args.up, "--up")
    if np.linalg.norm(up) < 1e-9:
        raise ValueError(f"--up must not be the zero vector, got {args.up!r}")
    if args.camera:
        return Camera.from_string(args.camera, up=up, fov_y=fov, aspect=aspect).fit_depth(lo, hi)
    cam = Camera(eye=np.array([0.0, 0.35, 1.0]), target=np.zeros(3), up=up, fov_y=fov, aspect=aspect)
    return cam.fit(lo, hi, margin=1.1)


def render_frame(args: argparse.Namespace) -> int:
    from engine import Session
    from engine.authoring.stage import ground_at_bounds
    from engine.render.renderer import VIEWS
    from engine.render.targets import check_render_memory
    from engine.scene import quiet_load, require_finite
    from game.commands.export_frame import check_time, deformer_config

    if args.view not in VIEWS:
        raise ValueError(f"--view must be one of {', '.join(VIEWS)}, got {args.view!r}")
    w, h = int(args.width), int(args.height)
    if not (1 <= w <= 8192 and 1 <= h <= 8192):
        raise ValueError(f"--width/--height must be in [1, 8192], got {w}x{h}")
    out = check_writable("--out", args.out, suffix=".png", makes_parents=True)
    if args.gbuffer is not None:
        check_writable("--gbuffer", args.gbuffer, suffix=".npz", makes_parents=True)
    check_time(args.time)
    # refuse a size the memory cannot serve now, before loading or allocating anything (the device's own
    # limits are checked when the targets are sized, before they are allocated)
    check_render_memory(w, h, gbuffer_readback=args.gbuffer is not None)
    loaded = quiet_load(args.asset)
    if not any(loaded.asset.nodes[n].mesh is not None for n in loaded.asset.scene_nodes()):
        raise ValueError("the asset's default scene has no meshes to render")
    with Session(device=args.device, width=w, height=h, deformer=args.deformer, config=deformer_config(args),
                 strict=True) as s:
        ch = s.spawn(loaded, clip=args.clip, time=args.time, speed=0.0, mode="clamp")
        require_finite(ch.vertices())
        box = ground_at_bounds(s)
        assert box is not None and s.renderer is not None  # the scene has meshes (checked above); render=True
        lo, hi = box
        s.renderer.view = args.view
        s.camera = make_camera(args, lo, hi, w / h)
        s.render()
        out.parent.mkdir(parents=True, exist_ok=True)
        s.save_png(out)
        msg = f"wrote {out} ({w}x{h}, view {args.view})"
        if args.gbuffer is not None:
            write_gbuffer(Path(args.gbuffer), s.gbuffer())
            msg += f" and {args.gbuffer}"
        del ch
    print(msg)
    return 0


def write_gbuffer(path: Path, channels: dict[str, np.ndarray]) -> None:
    """The documented npz channels (see the module doc and :meth:`engine.Session.gbuffer`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = dict(channels)  # Any: np.savez's keywords are arrays (numpy >= 2.1 types them)
    np.savez(path, **arrays)
