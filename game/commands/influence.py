"""`python main.py influence ASSET --clip C --vertex KEY:I [--frames N] [--threshold T] --out R.npz`.

Lewis and Anjyo's co-movement region of one vertex (engine.skinning.weights.influence): the vertex's trajectory
over N frames evenly spread over the clip (as ``export-frame --frames N``) is scored against every vertex of its
primitive. ``R.npz``: ``K_score`` float32 (V,) and ``K_region`` int32 (the vertex indices with score >= T), K the
primitive key (nothing else). The skin joints whose trajectories co-move most with the region (the joints that
should influence it) are printed.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["influence_command"]


def influence_command(args: argparse.Namespace) -> int:
    from engine.authoring.weights import clip_times, joint_worlds, trajectories
    from engine.scene import quiet_load
    from engine.skinning.weights.influence import comovement, region, suggest_joints
    from engine.skinning.weights.io import parse_vertex, primitive_weights

    out = Path(args.out)
    if out.suffix.lower() != ".npz":
        raise ValueError(f"--out must end in .npz, got {out.name!r}")
    if not (np.isfinite(args.threshold) and 0 <= args.threshold <= 1):
        raise ValueError(f"--threshold must be in [0, 1], got {args.threshold}")
    loaded = quiet_load(args.asset)
    prims = primitive_weights(loaded)
    prim, vertex = parse_vertex(args.vertex, prims)
    if loaded.asset.clips:
        loaded.asset.clip_index(args.clip)
    times = clip_times(loaded.asset, args.clip, args.frames)
    traj = trajectories(loaded, args.clip, times)[prim.key]
    score = comovement(traj[:, vertex], traj).astype(np.float32)
    members = region(score, args.threshold)
    joint_paths = joint_worlds(loaded, prim, args.clip, times)[:, :, :3, 3]
    best, _ = suggest_joints(traj, members if members.size else np.array([vertex]), joint_paths)
    k = prim.key.export_key
    arrays: dict[str, Any] = {f"{k}_score": score, f"{k}_region": members.astype(np.int32)}
    np.savez(out, **arrays)
    print(f"wrote {out}: {members.size} of {score.size} vertices co-move with vertex {vertex} of {k} "
          f"(threshold {args.threshold}, {len(times)} frames); joints: {', '.join(prim.joint_names[i] for i in best)}")
    return 0

