"""`python main.py export-frame`: deformed world-space vertices of one frame, to .npz or .obj.

Keys are ``node{n}_mesh{m}_prim{p}`` (glTF node of the instance, mesh index, primitive index), values float32
(N,3) in glTF vertex order. ``--device cpu`` runs the numpy reference, ``--device gpu`` (default) the compute
shader deformer graph and reads the result back once for export.
"""
from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from engine.assets import load
from engine.assets.model import Asset


def pose_globals(asset: Asset, rig, clip: str | int | None, time: float) -> np.ndarray:
    """Node world matrices (N,4,4) of ``clip`` sampled at ``time`` seconds (rest pose when no clip)."""
    from engine.anim import ClipSampler, Pose, global_matrices

    if time != time or time in (float("inf"), float("-inf")):
        raise ValueError(f"--time must be a finite number of seconds, got {time}")
    pose = Pose.rest(rig)
    if clip is not None and asset.clips:
        sampler = ClipSampler(rig, asset.clips[asset.clip_index(clip)])
        sampler.sample(float(time), pose)
    elif clip is not None and str(clip) not in ("0",):
        raise ValueError(f"no clip {clip!r}; the asset has no animations")
    return global_matrices(rig, pose)


def deform_frame(asset: Asset, *, clip: str | int | None, time: float, deformer: str = "lbs",
                 device: str = "cpu", config=None) -> dict[str, np.ndarray]:
    """World-space display positions of every skinned primitive instance, keyed as export-frame writes them."""
    from engine.anim import Rig
    from engine.skinning.instances import skinned_primitives

    rig = Rig.from_asset(asset)
    globals_ = pose_globals(asset, rig, clip, time)
    prims = skinned_primitives(asset, rig)
    if device == "gpu":
        from engine.skinning.instances import deform_gpu

        return deform_gpu(prims, globals_, deformer, config=config)
    if device != "cpu":
        raise ValueError(f"--device must be gpu or cpu, got {device!r}")
    return {sp.key: sp.deform(globals_, deformer, config=config) for sp in prims}


def load_deformer_config(args: argparse.Namespace):
    """The deformer configuration from --config and the --spring-* overrides (None when all are default)."""
    overrides = {}
    if getattr(args, "spring_iterations", None) is not None:
        overrides["spring_iterations"] = args.spring_iterations
    if getattr(args, "spring_dt", None) is not None:
        overrides["spring_dt"] = args.spring_dt
    if not overrides and not getattr(args, "config", None):
        return None
    from engine.skinning.config import DeformerConfig, load_config

    cfg = load_config(args.config) if getattr(args, "config", None) else DeformerConfig()
    return cfg.with_overrides(**overrides) if overrides else cfg


def write_obj(path: Path, asset: Asset, frames: dict[str, np.ndarray]) -> None:
    """One OBJ object per primitive instance, with its triangles (1-based, per object offsets)."""
    lines = ["# export-frame: deformed world-space vertices"]
    base = 1
    for key, pos in frames.items():
        m, p = (int(s) for s in key.split("_mesh")[1].split("_prim"))
        tris = asset.meshes[m].primitives[p].indices
        lines.append(f"o {key}")
        lines.extend(f"v {x:.7g} {y:.7g} {z:.7g}" for x, y, z in pos.tolist())
        lines.extend(f"f {a + base} {b + base} {c + base}" for a, b, c in tris.tolist())
        base += pos.shape[0]
    path.write_text("\n".join(lines) + "\n")


def export_frame(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asset = load(args.asset)
    config = load_deformer_config(args)
    frames = deform_frame(asset, clip=args.clip, time=args.time, deformer=args.deformer, device=args.device,
                          config=config)
    out = Path(args.out)
    if out.suffix.lower() == ".obj":
        write_obj(out, asset, frames)
    elif out.suffix.lower() == ".npz":
        np.savez(out, **{k: np.asarray(v, np.float32) for k, v in frames.items()})
    else:
        raise ValueError(f"--out must end in .npz or .obj, got {out.name!r}")
    n = sum(v.shape[0] for v in frames.values())
    print(f"wrote {out}: {len(frames)} skinned primitive instance(s), {n} vertices "
          f"({args.deformer}, {args.device})")
    return 0
