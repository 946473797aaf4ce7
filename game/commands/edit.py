"""`python main.py edit ASSET --strokes FILE.json`: surface edits from strokes drawn on the skin (issue 12, research
5.2 and 7.4), applied by the spring deformer, exported in the `export-frame` contract.

    python main.py edit ASSET --strokes FILE.json [--clip C --time T] [--deformer spring]
                   --export-frame OUT.npz [--screenshot S.png] [--save EDITS.json] [--load EDITS.json]
                   [--device gpu|cpu] [--debug-silhouette PNG]

FILE.json is the `pose` command's strokes file (engine/input/strokefile.py: version, camera) with strokes of
role "surface" or "silhouette" (below). A surface stroke's points are window pixels (row 0 at the
top) or world points (projected through the file's camera); either way they are densified to one sample per
pixel and queried through the G-buffer rendered with the file's camera at that clip time: the samples are
(mesh, triangle, barycentric) points of one skinned primitive. Its other keys:

  "rings": N                       passive set N edges around the kinematic one (default 4), or
  "radius": METRES [, "geodesic": true]   passive set within a Euclidean (or along-edge) distance
  "profile": {"type": "bulge", "height": METRES [, "ease": NAME, "ramp": false, "direction": "normal"]}
             {"type": "sine", "height": METRES [, "waves": W, "speed": WAVES_PER_S, "direction": ...]}
             {"type": "offset", "points": [[px, py], ...]}   (the offset stroke, same space as the stroke)
  "stiffness": K (default 5), "keys": [[t, w], ...] (weight over clip time), "name": "..."

A "silhouette" stroke is an accent stroke drawn near an outline of the character (research 7.3): the silhouette
chain between the outline vertices nearest its two ends is moved onto it by parameter (each vertex keeps its
depth), the region grows from the chain by "rings"/"radius" as above; optional "channel" ("normal", the default,
"depth" or "position": the G-buffer channel the Laplacian edge filter runs on), "threshold" and "smooth" (true:
the whole region gets targets, the chain's displacement spread smoothly, see :func:`silhouette_edit`: no ridge
along the outline). The filter runs
on the GPU on the gpu device (engine/render/silhouette.py, only the silhouette pixels read back), with the numpy
reference (engine.skinning.roi) on the cpu device. ``--debug-silhouette PNG`` writes the filter's output over
the unedited frame (the renderer's "silhouette" view; the first silhouette stroke's channel and threshold).

``--device cpu`` applies the edits with the numpy spring reference instead of the GPU spring stage (the same
edit forces; the vertices agree within float32 precision).

A bulge's height is along the surface normal at the stroke's middle (outward by the triangle's winding); an
offset stroke is drawn on the plane through the stroke's middle facing the camera and carries the kinematic
vertices as posing carries joints. Misses at the stroke's ends are trimmed; a stroke that hits no surface,
leaves the surface in its middle or crosses to another mesh is refused, as are an unknown profile type and a
non-finite height (exit 2, one `error:` line).

``--solver laplacian`` solves the edits once by Laplacian surface editing on the CPU (the research's baseline,
engine.skinning.laplacian) instead of the spring edit forces (``springs``, the default): the session then runs
on the cpu device and shows the solved vertices.

OUT.npz: the deformed world-space positions of every skinned primitive, float32 (N,3) under
``node{n}_mesh{m}_prim{p}`` (the `export-frame` contract), and per such key K the int32 glTF vertex indices of
the regions of interest of its edits: ``K_kinematic``, ``K_passive``, ``K_static`` (the union over its edits;
static = the vertices held, empty arrays for a primitive without edits). ``--save`` writes the edits as a
versioned JSON file (engine.skinning.edits.edits_document), which ``--load`` (here) or
``Character.load_edits`` reads back.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from engine.authoring.laplacian import laplacian_positions
from engine.authoring.silhouette import silhouette_edit
from engine.authoring.surface import stroke_samples, surface_edit
from engine.authoring.view import strokes_camera, window_points
from engine.components import PrimitiveKey
from engine.paths import check_writable
from engine.render.silhouette import SILHOUETTE_CHANNELS

__all__ = ["edit_command", "EDIT_ROLES"]

EDIT_ROLES = ("surface", "silhouette")
_STROKE_KEYS = ("rings", "radius", "geodesic", "profile", "stiffness", "keys", "name")
_SILHOUETTE_KEYS = ("rings", "radius", "geodesic", "channel", "threshold", "stiffness", "keys", "name", "smooth")


# ---- the command ---------------------------------------------------------------------------------------------
def _stroke_options(spec: Any) -> dict[str, Any]:
    """The surface stroke's own keys, validated (ValueError naming ``strokes[i].key``)."""
    from engine.skinning.edits import Profile

    where, extra = spec.where, dict(spec.extra)
    allowed = _SILHOUETTE_KEYS if spec.role == "silhouette" else _STROKE_KEYS
    unknown = sorted(set(extra) - set(allowed))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (a {spec.role} stroke takes {', '.join(allowed)})")
    opts: dict[str, Any] = {}
    if "rings" in extra:
        r = extra["rings"]
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= 1000:
            raise ValueError(f"{where}.rings: expected a whole number of edges in [0, 1000], got {r!r}")
        opts["rings"] = r
    if "radius" in extra:
        r = extra["radius"]
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not (math.isfinite(r) and r > 0):
            raise ValueError(f"{where}.radius: expected a finite number of metres > 0, got {r!r}")
        opts["radius"] = float(r)
    if "rings" in opts and "radius" in opts:
        raise ValueError(f"{where}: give rings or radius, not both")
    if "geodesic" in extra:
        if not isinstance(extra["geodesic"], bool):
            raise ValueError(f"{where}.geodesic: expected true or false, got {extra['geodesic']!r}")
        if extra["geodesic"] and "radius" not in opts:
            raise ValueError(f"{where}.geodesic: a geodesic region needs a radius")
        opts["geodesic"] = extra["geodesic"]
    if "stiffness" in extra:
        k = extra["stiffness"]
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not (math.isfinite(k) and k >= 0):
            raise ValueError(f"{where}.stiffness: expected a finite number >= 0, got {k!r}")
        opts["stiffness"] = float(k)
    if "keys" in extra:
        opts["keys"] = extra["keys"]
    if "name" in extra:
        opts["name"] = str(extra["name"])
    if spec.role == "silhouette":
        if "channel" in extra:
            if extra["channel"] not in SILHOUETTE_CHANNELS:
                raise ValueError(f"{where}.channel: unknown channel {extra['channel']!r}; valid: "
                                 f"{', '.join(SILHOUETTE_CHANNELS)}")
            opts["channel"] = extra["channel"]
        if "threshold" in extra:
            t = extra["threshold"]
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not (math.isfinite(t) and t > 0):
                raise ValueError(f"{where}.threshold: expected a finite number > 0, got {t!r}")
            opts["threshold"] = float(t)
        if "smooth" in extra:
            if not isinstance(extra["smooth"], bool):
                raise ValueError(f"{where}.smooth: expected true or false, got {extra['smooth']!r}")
            opts["smooth"] = extra["smooth"]
        return opts
    raw = extra.get("profile")
    if raw is None:
        raise ValueError(f"{where}: missing 'profile' (an object with type bulge, sine or offset)")
    if isinstance(raw, dict) and raw.get("type") == "offset":
        if set(raw) - {"type", "points"}:
            bad = sorted(set(raw) - {"type", "points"})[0]
            raise ValueError(f"{where}.profile: unknown key {bad!r} for an offset profile; valid: points, type")
        pts = raw.get("points")
        dim = 2 if spec.space == "window" else 3
        arr = np.asarray(pts, np.float64) if isinstance(pts, list) else np.zeros((0,))
        if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] != dim or not np.isfinite(arr).all():
            raise ValueError(f"{where}.profile.points: expected at least two points of {dim} finite numbers "
                             f"({spec.space} space, as the stroke), got {pts!r}")
        opts["offset_points"] = arr
        opts["profile"] = Profile("offset")
    else:
        opts["profile"] = Profile.from_dict(raw, f"{where}.profile")
    return opts


def _window(session: Any, points: np.ndarray, space: str) -> np.ndarray:
    """Stroke points as window pixels: as given, or world points projected through the session's camera."""
    if space == "window":
        return np.asarray(points, np.float64)
    r = session.renderer
    px = window_points(session.camera, r.width, r.height, points)
    if np.isnan(px).any():
        raise ValueError("a world-space stroke point is behind the camera")
    return px


def _region_indices(character: Any, stacks: dict[PrimitiveKey, Any]) -> dict[str, np.ndarray]:
    """Per skinned primitive, the export keys K_kinematic / K_passive / K_static (int32 glTF vertex indices)."""
    out: dict[str, np.ndarray] = {}
    for key in character.skinned_primitives:
        topo = character.topology(key)
        n = topo.n_control
        sets = {name: np.zeros(n, bool) for name in ("kinematic", "passive", "static")}
        stack = stacks.get(key)
        if stack is not None and len(stack):
            for e in stack:
                sets["kinematic"][e.kinematic] = True
                sets["passive"][e.passive] = True
            sets["passive"] &= ~sets["kinematic"]
            sets["static"] = stack.held(n)
        cod = np.asarray(topo.control_of_display)
        for name, mask in sets.items():
            out[f"{key.export_key}_{name}"] = np.flatnonzero(mask[cod]).astype(np.int32)
    return out


def edit_command(args: argparse.Namespace) -> int:
    from engine import Session
    from engine.input.strokefile import load_stroke_file
    from engine.scene import quiet_load, require_finite
    from engine.skinning.edits import EditStack, edits_document
    from game.commands.export_frame import check_time, deformer_config

    out = check_writable("--export-frame", args.export_frame, suffix=".npz", makes_parents=True)
    for opt, suffix in (("screenshot", ".png"), ("save", ".json"), ("debug_silhouette", ".png")):
        v = getattr(args, opt, None)
        if v is not None:
            check_writable(f"--{opt.replace('_', '-')}", v, suffix=suffix, makes_parents=True)
    if args.load is not None and Path(args.load).suffix.lower() != ".json":
        raise ValueError(f"--load must end in .json, got {Path(args.load).name!r}")
    if args.strokes is None and args.load is None:
        raise ValueError("give --strokes FILE.json (strokes to turn into edits) or --load EDITS.json")
    laplacian = args.solver == "laplacian"
    if laplacian and args.load is not None:
        raise ValueError("--load replays edits through the springs; it cannot be combined with --solver laplacian")
    check_time(args.time)
    if args.load is not None:  # read and checked now (engine.textfile), so a bad file is refused before any work
        from engine.skinning.edits import read_edits_file
        read_edits_file(args.load)
    sf = None
    if args.strokes is not None:
        sf = load_stroke_file(args.strokes, roles=EDIT_ROLES, brush_radius=False)
        if not sf.strokes:
            raise ValueError(f"{Path(args.strokes).name}: strokes: no surface or silhouette stroke")
        if sf.camera is None:
            raise ValueError(f"{Path(args.strokes).name}: surface strokes are queried through the G-buffer: "
                             "the file needs a 'camera'")
        options = [_stroke_options(spec) for spec in sf.strokes]
    loaded = quiet_load(args.asset)
    w, h = (sf.camera.width, sf.camera.height) if sf is not None and sf.camera is not None else (1280, 720)
    with Session(device="cpu" if laplacian else args.device, width=w, height=h, deformer=args.deformer,
                 config=deformer_config(args), strict=True) as s:
        ch = s.spawn(loaded, clip=args.clip, time=args.time, speed=0.0, mode="clamp")
        require_finite(ch.vertices())
        bounds, renderer = s.bounds(), s.renderer
        if bounds is None or renderer is None:
            raise ValueError("the asset's default scene has no meshes to edit")
        lo, hi = bounds
        renderer.look.ground_height = float(lo[1])
        renderer.invalidate()
        if sf is not None and sf.camera is not None:
            s.camera = strokes_camera(sf.camera, lo, hi)
        else:
            s.fit_camera()
        s.render()
        made = []
        if sf is not None:
            # every stroke sees the same unedited frame: the G-buffer queries first, then the edits
            surface = [(spec, opts) for spec, opts in zip(sf.strokes, options) if spec.role == "surface"]
            found = [stroke_samples(s, _window(s, spec.points, spec.space), spec.where) for spec, _ in surface]
            for spec, opts in zip(sf.strokes, options):
                if spec.role != "silhouette":
                    continue
                try:
                    made.append(silhouette_edit(s, ch, _window(s, spec.points, spec.space), **opts))
                except ValueError as e:
                    raise ValueError(f"{spec.where}: {e}") from None
            for (spec, opts), smp in zip(surface, found):
                if smp.entity != ch.entity:
                    raise ValueError(f"{spec.where}: the stroke is not on the character")
                offset = opts.pop("offset_points", None)
                if offset is not None:
                    offset = _window(s, offset, spec.space)
                try:
                    made.append((smp.key, surface_edit(ch, smp, offset_window=offset, session=s, **opts)))
                except ValueError as e:
                    raise ValueError(f"{spec.where}: {e}") from None
        debug_png = getattr(args, "debug_silhouette", None)
        if debug_png is not None:  # the filter of the frame the strokes were drawn on (the first silhouette's)
            sil = [o for spec, o in zip(sf.strokes, options) if spec.role == "silhouette"] if sf is not None else []
            first = sil[0] if sil else {}
            img = s.silhouette_image(first.get("channel", "normal"), first.get("threshold"))
            from PIL import Image

            Path(debug_png).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(img, "RGBA").save(debug_png)
        stacks: dict[PrimitiveKey, EditStack] = {}
        if laplacian:  # the CPU baseline: solved once, shown instead of the deformer's output
            for key, edit in made:
                stacks.setdefault(key, EditStack()).add(edit)
            ch.show_vertices(laplacian_positions(ch, stacks, float(args.time)))
        else:
            for key, edit in made:
                ch.add_edit(key, edit)
            if args.load is not None:
                ch.load_edits(args.load)
            stacks = ch.edits
        s.render()
        frames = {k: v for k, v in ch.vertices().items() if k in set(ch.skinned_primitives)}
        require_finite(frames)
        arrays: dict[str, Any] = {k.export_key: np.asarray(v, np.float32) for k, v in frames.items()}
        arrays.update(_region_indices(ch, stacks))
        out.parent.mkdir(parents=True, exist_ok=True)
        np.savez(out, **arrays)
        if args.screenshot is not None:
            s.save_png(args.screenshot)
        if args.save is not None:
            doc = edits_document({k.export_key: st for k, st in stacks.items() if len(st)}, asset=ch.name,
                                 clip=str(args.clip), time=float(args.time))
            Path(args.save).parent.mkdir(parents=True, exist_ok=True)
            Path(args.save).write_text(json.dumps(doc, indent=1) + "\n")
        n_edits = sum(len(st) for st in stacks.values())
    extra = "".join(f" and {v}" for v in (args.screenshot, args.save, getattr(args, "debug_silhouette", None))
                    if v is not None)
    print(f"wrote {out}{extra}: {n_edits} surface edit(s) on {len(frames)} skinned primitive instance(s)")
    return 0
