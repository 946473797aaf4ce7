"""`python main.py export-frame`: deformed world-space vertices of one frame, to .npz or .obj.

Keys are ``node{n}_mesh{m}_prim{p}`` (glTF node of the instance, mesh index, primitive index), values float32
(N,3) in glTF vertex order, for every skinned primitive instanced in the default scene. The character is
spawned in a :class:`engine.Session` holding ``--clip`` at ``--time`` (clamped, as glTF players hold the first /
last key), deformed once by ``--deformer`` on ``--device`` (the compute-shader graph, read back once, or the
numpy reference) and read back.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from engine.components import PrimitiveKey

__all__ = ["export_frame", "deformer_config", "deformed_frame", "write_obj"]


def deformer_config(args: argparse.Namespace):
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


def check_time(time: float) -> float:
    if not math.isfinite(time):
        raise ValueError(f"--time must be a finite number of seconds, got {time}")
    return float(time)


def deformed_frame(asset, *, clip, time: float, deformer: str = "lbs", device: str = "cpu",
                   config=None) -> dict[PrimitiveKey, np.ndarray]:
    """Deformed world-space display positions of every skinned primitive instance of ``asset`` (a path, a
    generated character's name or a loaded Asset) holding ``clip`` at ``time`` seconds."""
    from engine import Session

    check_time(time)
    with Session(device=device, render=False, deformer=deformer, config=config, strict=True) as s:
        ch = s.spawn(s.load(asset), clip=clip, time=time, speed=0.0, mode="clamp")
        skinned = set(ch.skinned_primitives)
        return {k: v for k, v in ch.vertices().items() if k in skinned}


def write_obj(path: Path, asset, frames: dict[PrimitiveKey, np.ndarray]) -> None:
    """One OBJ object per primitive instance, with its triangles (1-based, per object offsets)."""
    lines = ["# export-frame: deformed world-space vertices"]
    base = 1
    for key, pos in frames.items():
        tris = asset.meshes[key.mesh].primitives[key.primitive].indices
        lines.append(f"o {key.export_key}")
        lines.extend(f"v {x:.7g} {y:.7g} {z:.7g}" for x, y, z in pos.tolist())
        lines.extend(f"f {a + base} {b + base} {c + base}" for a, b, c in tris.tolist())
        base += pos.shape[0]
    path.write_text("\n".join(lines) + "\n")


def export_frame(args: argparse.Namespace) -> int:
    from engine.scene import quiet_load

    out = Path(args.out)
    if out.suffix.lower() not in (".npz", ".obj"):
        raise ValueError(f"--out must end in .npz or .obj, got {out.name!r}")
    check_time(args.time)
    loaded = quiet_load(args.asset)
    frames = deformed_frame(loaded.asset, clip=args.clip, time=args.time, deformer=args.deformer,
                            device=args.device, config=deformer_config(args))
    if out.suffix.lower() == ".obj":
        write_obj(out, loaded.asset, frames)
    else:
        np.savez(out, **{k.export_key: np.asarray(v, np.float32) for k, v in frames.items()})
    n = sum(v.shape[0] for v in frames.values())
    print(f"wrote {out}: {len(frames)} skinned primitive instance(s), {n} vertices "
          f"({args.deformer}, {args.device})")
    return 0
