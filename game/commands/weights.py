"""`python main.py weights auto|export|edit|drag|spline`: the skin-weight tools on an asset's JOINTS_n/WEIGHTS_n.

* ``weights export ASSET --out W.npz``: per skinned primitive key K (``node{n}_mesh{m}_prim{p}``) ``K_joints``
  uint16 (V, M) and ``K_weights`` float32 (V, M), M = the asset's influence slots (4 per set), rows sorted by
  weight (largest first), unused slots joint 0 weight 0;
* ``weights edit ASSET --ops OPS.json --out OUT.glb``: the ops list (engine.skinning.weights.paint);
* ``weights drag ASSET --clip C --time T --vertex KEY:I --target X,Y,Z [--joints NAMES] --out OUT.glb``:
  Mohr's direct manipulation (engine.skinning.weights.mohr); ``--poses P.json`` instead of --clip/--time/--target:
  several (clip, time, target) poses constrain the vertex, the least-squares compromise (:func:`load_poses`);
* ``weights spline ASSET --joint NAME --splines S.json [--local] --out OUT.glb``: Bang-Lee isoline splines;
* ``weights auto ASSET --method heat|bbw --out OUT.glb [--max-influences N] [--seed-clip C [--seed-frames N]
  [--seed-threshold T]]``: automatic weights, seeded (with ``--seed-clip``) by the joints' co-movement regions
  over a clip (engine.authoring.weights.comovement_seed).

Every written asset: weights >= 0, rows summing to 1 within 1e-6, at most the limit non-zero; bad input exits 2
with one ``error:`` line (game/cli.py).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["weights_command", "parse_target", "load_poses"]

OPS_MAX_BYTES = 16 << 20


def parse_target(text: str) -> np.ndarray:
    """``X,Y,Z`` -> (3,) float64, finite."""
    parts = str(text).split(",")
    try:
        t = np.array([float(x) for x in parts], np.float64)
    except ValueError:
        raise ValueError(f"--target must be X,Y,Z numbers, got {text!r}") from None
    if t.shape != (3,) or not np.isfinite(t).all():
        raise ValueError(f"--target must be three finite numbers X,Y,Z, got {text!r}")
    return t


def _load(asset: str) -> tuple[Any, list]:
    from engine.scene import quiet_load
    from engine.skinning.weights.io import primitive_weights

    loaded = quiet_load(asset)
    return loaded, primitive_weights(loaded)


def _source(loaded: Any) -> Path:
    if loaded.asset.path is None:
        raise ValueError(f"{loaded.name}: not loaded from a file: nothing to write the weights into")
    return Path(loaded.asset.path)


def export_weights(args: argparse.Namespace) -> int:
    from engine.skinning.weights.table import normalize, to_slots

    out = Path(args.out)
    if out.suffix.lower() != ".npz":
        raise ValueError(f"--out must end in .npz, got {out.name!r}")
    _, prims = _load(args.asset)
    m = max(p.slots for p in prims)
    arrays: dict[str, Any] = {}
    for p in prims:
        j, w = to_slots(normalize(p.dense()), min_slots=m)
        arrays[f"{p.key.export_key}_joints"] = j.astype(np.uint16)
        arrays[f"{p.key.export_key}_weights"] = w.astype(np.float32)
    np.savez(out, **arrays)
    print(f"wrote {out}: {len(prims)} skinned primitive(s), {m} influence slots")
    return 0


def edit_weights(args: argparse.Namespace) -> int:
    from engine.authoring.weights import write_weights
    from engine.skinning.weights.ops import apply_ops, check_ops
    from engine.textfile import load_json

    data = load_json(args.ops, "ops file", max_bytes=OPS_MAX_BYTES)
    ops = check_ops(data, str(args.ops))
    loaded, prims = _load(args.asset)
    dense, locked, cap = apply_ops(prims, ops, str(args.ops))
    by_key = {p.key: p for p in prims}
    path = write_weights(_source(loaded), args.out, {k: (by_key[k], d) for k, d in dense.items()},
                         locked=locked, limit=cap)
    print(f"wrote {path}: {len(ops)} op(s) on {len(dense)} primitive(s)")
    return 0


def drag_weights(args: argparse.Namespace) -> int:
    from engine.authoring.weights import drag_poses, write_weights
    from engine.skinning.weights.io import parse_vertex

    if getattr(args, "poses", None) is not None:
        if args.target is not None:
            raise ValueError("--target and --poses: give one (--poses names a target per pose)")
        if args.clip != "0" or args.time != 0.0:
            raise ValueError("--clip/--time with --poses: each pose of the file names its clip and time")
        poses = load_poses(args.poses)
    else:
        if args.target is None:
            raise ValueError("--target X,Y,Z (or --poses FILE) is required")
        target = parse_target(args.target)
        if not np.isfinite(args.time):
            raise ValueError(f"--time must be a finite number of seconds, got {args.time}")
        poses = [(args.clip, float(args.time), target)]
    loaded, prims = _load(args.asset)
    prim, vertex = parse_vertex(args.vertex, prims)
    names = [n.strip() for n in args.joints.split(",") if n.strip()] if args.joints else None
    if args.joints is not None and not names:
        raise ValueError("--joints must name at least one joint (comma separated)")
    if loaded.asset.clips:
        for i, (clip, _, _) in enumerate(poses):
            try:
                loaded.asset.clip_index(clip)
            except ValueError as exc:
                raise ValueError(exc if len(poses) == 1 and args.poses is None
                                 else f"{Path(args.poses).name}: poses[{i}].clip: {exc}") from None
    edit = drag_poses(loaded, prim, vertex, poses, joints=names)
    path = write_weights(_source(loaded), args.out, {prim.key: (prim, edit.dense)})
    r = edit.result
    t = np.concatenate([np.asarray(p[2], np.float64) for p in poses])
    where = "inside the hull: reached exactly" if r.inside else \
        f"outside the hull: moved to its closest point, {np.linalg.norm(r.reached - t):.6g} m away"
    over = "" if len(poses) == 1 else f" over {len(poses)} poses (least-squares compromise)"
    print(f"wrote {path}: vertex {vertex} of {prim.key.export_key} with {len(r.joints)} influence(s), target"
          f"{'s' if len(poses) > 1 else ''}{over} {where}")
    return 0


POSES_MAX = 64


def load_poses(path: str) -> list[tuple[Any, float, np.ndarray]]:
    """The ``--poses`` file: ``{"version": 1, "poses": [{"clip": NAME_OR_INDEX, "time": T, "target": [x, y, z]},
    ...]}`` (1 to 64 poses) -> (clip, time, target) triples; a malformed file raises ValueError naming the key."""
    from engine.textfile import load_json

    name = Path(path).name
    data = load_json(path, "poses file", max_bytes=1 << 20)
    if not isinstance(data, dict) or set(data) != {"version", "poses"}:
        raise ValueError(f"{name}: must be an object with exactly the keys version and poses")
    if data["version"] != 1 or isinstance(data["version"], bool):
        raise ValueError(f"{name}: version: must be 1, got {data['version']!r}")
    items = data["poses"]
    if not isinstance(items, list) or not 1 <= len(items) <= POSES_MAX:
        raise ValueError(f"{name}: poses: must be a list of 1 to {POSES_MAX} poses")
    out = []
    for i, p in enumerate(items):
        where = f"{name}: poses[{i}]"
        if not isinstance(p, dict) or set(p) != {"clip", "time", "target"}:
            raise ValueError(f"{where}: must be an object with exactly the keys clip, time and target")
        clip, time, target = p["clip"], p["time"], p["target"]
        if isinstance(clip, bool) or not isinstance(clip, (str, int)):
            raise ValueError(f"{where}.clip: must be a clip name or index, got {clip!r}")
        if isinstance(time, bool) or not isinstance(time, (int, float)) or not np.isfinite(time):
            raise ValueError(f"{where}.time: must be a finite number of seconds, got {time!r}")
        if not isinstance(target, list) or len(target) != 3 or any(
                isinstance(x, bool) or not isinstance(x, (int, float)) or not np.isfinite(x) for x in target):
            raise ValueError(f"{where}.target: must be three finite numbers [x, y, z], got {target!r}")
        out.append((str(clip) if isinstance(clip, int) else clip, float(time), np.array(target, np.float64)))
    return out


def weights_command(args: argparse.Namespace) -> int:
    run = {"export": export_weights, "edit": edit_weights, "drag": drag_weights}
    extra = _extra_commands()
    run.update(extra)
    return run[args.weights_command](args)


def spline_weights(args: argparse.Namespace) -> int:
    from engine.authoring.weights import spline_edit, write_weights
    from engine.input.strokefile import load_stroke_file

    sf = load_stroke_file(args.splines, roles=("isoline",), brush_radius=False)
    if not sf.strokes:
        raise ValueError(f"{Path(args.splines).name}: strokes: no isoline stroke")
    isos = []
    for s in sf.strokes:
        extra = set(s.extra) - {"iso"}
        if extra:
            raise ValueError(f"{Path(args.splines).name}: {s.where}: unknown key(s) {sorted(extra)}; an isoline "
                             "has role, space, points, times and iso")
        v = s.extra.get("iso")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ValueError(f"{Path(args.splines).name}: {s.where}.iso: must be a number in [0, 1], got {v!r}")
        isos.append(float(v))
    loaded, prims = _load(args.asset)
    prim = next((p for p in prims if args.joint in p.joint_names), None)
    if prim is None:
        prims[0].joint_index(args.joint, "--joint")
    assert prim is not None
    dense, field = spline_edit(loaded, prim, prim.joint_index(args.joint, "--joint"), sf, isos, local=args.local)
    path = write_weights(_source(loaded), args.out, {prim.key: (prim, dense)})
    print(f"wrote {path}: {args.joint} on {prim.key.export_key} from {len(isos)} isoline(s), "
          f"{'local' if args.local else 'global'} solve over {field.free.size} of {field.n} vertices")
    return 0


def auto_command(args: argparse.Namespace) -> int:
    from engine.authoring.weights import auto_weights, clip_times, comovement_seed, write_weights

    if isinstance(args.max_influences, bool) or not 1 <= args.max_influences <= 64:
        raise ValueError(f"--max-influences must be an integer in [1, 64], got {args.max_influences}")
    seed_clip = getattr(args, "seed_clip", None)
    frames, threshold = getattr(args, "seed_frames", 30), getattr(args, "seed_threshold", 0.75)
    if seed_clip is None and (frames != 30 or threshold != 0.75):
        raise ValueError("--seed-frames and --seed-threshold need --seed-clip")
    if not (np.isfinite(threshold) and 0 <= threshold <= 1):
        raise ValueError(f"--seed-threshold must be in [0, 1], got {threshold}")
    loaded, prims = _load(args.asset)
    if seed_clip is not None:
        if not loaded.asset.clips:
            raise ValueError(f"--seed-clip {seed_clip}: {Path(args.asset).name} has no animation clips")
        loaded.asset.clip_index(seed_clip)
        try:  # --seed-frames checked before any work
            clip_times(loaded.asset, seed_clip, frames)
        except ValueError as exc:
            raise ValueError(str(exc).replace("--frames", "--seed-frames")) from None
    edits = {}
    for p in prims:
        seed = None if seed_clip is None else comovement_seed(loaded, p, seed_clip, frames=frames,
                                                              threshold=threshold)
        edits[p.key] = (p, auto_weights(p, args.method, args.max_influences, seed=seed))
    path = write_weights(_source(loaded), args.out, edits, limit=args.max_influences)
    seeded = "" if seed_clip is None else \
        f", seeded by co-movement over clip {seed_clip} ({frames} frames, threshold {threshold})"
    print(f"wrote {path}: {args.method} weights for {len(edits)} primitive(s), at most {args.max_influences} "
          f"influences per vertex{seeded}")
    return 0


def _extra_commands() -> dict[str, Any]:
    return {"spline": spline_weights, "auto": auto_command}
