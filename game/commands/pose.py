"""`python main.py pose ASSET --strokes FILE.json [--clip C --time T] [--deformer D] [--export-frame OUT.npz]
[--out POSED.glb] [--screenshot S.png]`: line-of-action posing (research 7.2) from a strokes file, headless.

The strokes file (engine/input/strokefile.py) holds ``baseline`` and ``offset`` strokes; they are used in pairs,
in file order: each baseline is followed by its offset, and the pairs are layered one after the other. World
points are metres; window points are pixels (row 0 at the top) unprojected with the file's camera onto the
default posing plane: through the skeleton's root (the top-most skin joint), parallel to the image plane. A
pair's ``brush_radius`` is metres when its baseline is in world space, pixels when it is in window space
(converted to metres at the root's depth). After unprojection both spaces take one path (engine.authoring.posing):
the baseline selects the joint chain it follows, so the projection of a world pair lying on the posing plane
poses exactly as that pair does.

The character is spawned holding ``--clip`` at ``--time`` (default: the rest pose), posed through
:meth:`engine.session.Character.apply_line_of_action` and then:

* ``--export-frame OUT.npz``: the posed frame in the ``export-frame`` npz contract (``node{n}_mesh{m}_prim{p}``
  -> float32 (N,3) world-space vertices of every skinned primitive instance);
* ``--out POSED.glb``: the asset with the pose keyed at t = 0 into a new clip named ``pose`` (every node's
  local TRS), so that ``export-frame POSED.glb --clip pose --time 0`` gives the same vertices; the asset's
  other clips are kept (a clip already named ``pose`` is replaced);
* ``--screenshot S.png``: the posed frame rendered with the file's camera (or, without one, the ``render``
  command's default view), with the strokes drawn over it (baseline green, offset blue, selected joints
  white).

Bad files (no baseline, an offset without its baseline, an empty or one-point stroke, an unknown role or space,
window points without a camera) exit 2 with one ``error:`` line.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.authoring.posing import brush_metres, frame_reference, posing_plane, skeleton_root, unproject_stroke
from engine.authoring.view import window_points
from engine.input.strokefile import CameraSpec, StrokeFile, StrokeFileError, StrokeSpec, load_stroke_file
from engine.input.strokes import Stroke, StrokeError
from engine.paths import check_writable
from game.ui.colours import BASELINE_RGB, JOINT_RGB, OFFSET_RGB

__all__ = ["ROLES", "POSE_CLIP", "StrokePair", "pair_strokes", "lift_window_stroke", "pose_command"]

ROLES = ("baseline", "offset")
POSE_CLIP = "pose"


@dataclass(frozen=True)
class StrokePair:
    """One baseline and the offset stroke that follows it in the file."""

    baseline: StrokeSpec
    offset: StrokeSpec


def pair_strokes(sf: StrokeFile) -> list[StrokePair]:
    """The file's strokes as (baseline, offset) pairs in file order; StrokeFileError when they do not pair."""
    pairs: list[StrokePair] = []
    pending: StrokeSpec | None = None
    for s in sf.strokes:
        if s.role == "baseline":
            if pending is not None:
                raise StrokeFileError(f"{pending.where}: a baseline needs an offset stroke after it, got another "
                                      f"baseline ({s.where})")
            pending = s
        else:
            if pending is None:
                raise StrokeFileError(f"{s.where}: an offset stroke needs a baseline stroke before it")
            pairs.append(StrokePair(pending, s))
            pending = None
    if pending is not None:
        raise StrokeFileError(f"{pending.where}: a baseline needs an offset stroke after it")
    if not pairs:
        raise StrokeFileError("strokes: no 'baseline' stroke (the file needs at least one)")
    return pairs


def lift_window_stroke(spec: StrokeSpec, camera: Any, width: int, height: int, plane: np.ndarray) -> Stroke:
    """Check a window-space stroke (it must fit) and unproject its points onto ``plane`` through ``camera``
    (engine.authoring.posing): a 3D stroke in metres, reduced as world strokes are; errors name the stroke's
    place."""
    stroke = _fit(spec, window_height=height)
    try:
        return unproject_stroke(stroke, camera, width, height, plane)
    except ValueError as e:  # StrokeError is one
        raise StrokeFileError(f"{spec.where}: {e}") from None


def _fit(spec: StrokeSpec, *, window_height: int | None = None) -> Stroke:
    try:
        return Stroke.fit(spec.points, spec.times, window_height=window_height)
    except StrokeError as e:
        raise StrokeFileError(f"{spec.where}: {e}") from None


def _camera(spec: CameraSpec | None, bounds: tuple[np.ndarray, np.ndarray], width: int, height: int) -> Any:
    """The ``render`` command's camera for the file's (near/far fitted to the bounds), or its default front
    view fitting the bounds when the file has none."""
    from game.commands.render_frame import make_camera

    def vec(v: np.ndarray) -> str:
        return ",".join(repr(float(x)) for x in v)

    args = argparse.Namespace(fov=45.0, up="0,1,0", camera=None)
    if spec is not None:
        args = argparse.Namespace(fov=spec.fov, up=vec(spec.up), camera=f"{vec(spec.eye)}:{vec(spec.target)}")
    lo, hi = bounds
    return make_camera(args, lo, hi, width / height)


def _front(px: np.ndarray) -> np.ndarray:
    """The window points of those in front of the camera (the others are NaN rows)."""
    return px[~np.isnan(px).any(axis=1)]


def _draw_overlay(image: np.ndarray, strokes: list[tuple[Stroke, Stroke]], joints: np.ndarray, camera: Any) -> Any:
    from PIL import Image, ImageDraw

    h, w = image.shape[:2]
    img = Image.fromarray(image, "RGBA").convert("RGB")
    draw = ImageDraw.Draw(img)
    width = max(2, round(h / 240))
    for base, off in strokes:
        for stroke, rgb in ((base, BASELINE_RGB), (off, OFFSET_RGB)):
            px = _front(window_points(camera, w, h, stroke.point(np.linspace(0, 1, 96))))
            draw.line([tuple(p) for p in px.tolist()], fill=rgb, width=width)
            for k in _front(window_points(camera, w, h, stroke.knots)).tolist():  # the control knots
                draw.rectangle([k[0] - width, k[1] - width, k[0] + width, k[1] + width], outline=rgb)
    r = width + 1
    for x, y in _front(window_points(camera, w, h, joints)).tolist() if len(joints) else []:
        draw.ellipse([x - r, y - r, x + r, y + r], fill=JOINT_RGB, outline=(0, 0, 0))
    return img


def pose_command(args: argparse.Namespace) -> int:
    """The ``pose`` command (see the module doc)."""
    from engine import Session
    from engine.scene import quiet_load, require_finite
    from game.commands.export_frame import check_time, deformer_config

    for flag, value, suffix in (("--export-frame", args.export_frame, ".npz"), ("--out", args.out, ".glb"),
                                ("--screenshot", args.screenshot, ".png")):
        if value is not None:
            check_writable(flag, value, suffix=suffix, makes_parents=True)
    check_time(args.time)
    sf = load_stroke_file(args.strokes, roles=ROLES, required=("baseline",))
    pairs = pair_strokes(sf)
    loaded = quiet_load(args.asset)
    width, height = (sf.camera.width, sf.camera.height) if sf.camera is not None else (1280, 720)
    shot = args.screenshot is not None
    with Session(device=args.device, render=shot, width=width, height=height, deformer=args.deformer,
                 config=deformer_config(args), strict=True) as s:
        ch = s.spawn(loaded, clip=args.clip, time=args.time, speed=0.0, mode="clamp")
        # the strokes' camera: the file's, else (world strokes only) the default view of the rest of the frame
        cam = _camera(sf.camera, s.bounds() or (np.full(3, -1.0), np.ones(3)), width, height)
        drawn: list[tuple[Stroke, Stroke]] = []
        selected: list[int] = []
        for pair in pairs:
            plane = posing_plane(skeleton_root(ch), cam)
            world = [lift_window_stroke(sp, cam, width, height, plane.pyrr) if sp.space == "window" else _fit(sp)
                     for sp in (pair.baseline, pair.offset)]
            radius = float(sf.brush_radius or 0.0)
            if pair.baseline.space == "window":
                radius = brush_metres(radius, cam, height, plane)
            reference = frame_reference(world[0], world[1], plane)
            try:
                res = ch.apply_line_of_action(world[0], world[1], brush_radius=radius, reference=reference)
            except ValueError as e:
                raise StrokeFileError(f"{pair.baseline.where}: {e}") from None
            drawn.append((world[0], world[1]))
            selected.extend(int(j) for j in res.selected if int(j) not in selected)
        frames = {k: v for k, v in ch.vertices().items() if k in set(ch.skinned_primitives)}
        require_finite(frames)
        wrote = []
        if args.export_frame is not None:
            out = Path(args.export_frame)
            out.parent.mkdir(parents=True, exist_ok=True)
            arrays: dict[str, Any] = {k.export_key: np.asarray(v, np.float32) for k, v in frames.items()}
            np.savez(out, **arrays)
            wrote.append(str(out))
        if args.out is not None:
            ch.key_pose(POSE_CLIP, time=0.0)
            wrote.append(str(ch.save_glb(args.out)))
        if shot:
            lo, hi = s.bounds() or (np.full(3, -1.0), np.ones(3))
            renderer = s.renderer
            assert renderer is not None  # the session was made with render=True for the screenshot
            renderer.look.ground_height = float(lo[1])
            renderer.invalidate()
            s.camera = _camera(sf.camera, (lo, hi), width, height)
            image = s.render()
            joints = ch.joints()[selected, :3, 3].astype(np.float64)
            out = Path(args.screenshot)
            out.parent.mkdir(parents=True, exist_ok=True)
            _draw_overlay(image, drawn, joints, s.camera).save(out)
            wrote.append(str(out))
        names = ", ".join(loaded.rig.names[j] for j in selected)
    print(f"posed {loaded.name}: {len(pairs)} stroke pair(s), {len(selected)} joint(s) ({names})"
          + (f"; wrote {', '.join(wrote)}" if wrote else ""))
    return 0
