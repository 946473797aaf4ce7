"""Weight edits of an asset, shared by the ``weights`` / ``influence`` commands, the editor's Weights tool and the
benchmarks: the posed skin matrices of a clip frame, Mohr's drag of one vertex, the trajectories the co-movement
score reads, and writing edited weights back to a .glb (every row >= 0, summing to 1, within a limit).

The numerics live in engine.skinning.weights; this module spawns the character in an engine.Session (so a drag
uses exactly the joint matrices ``export-frame`` skins with, placement and ground lift included) and packs the
results into the file.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.components import PrimitiveKey
from engine.skinning.weights.io import PrimitiveWeights, save_weights
from engine.skinning.weights.table import check_valid, to_slots

__all__ = ["posed_skin_matrices", "drag", "DragEdit", "trajectories", "clip_times", "write_weights"]


def _session(loaded: Any, clip: Any, time: float):
    from engine import Session

    if not np.isfinite(time):
        raise ValueError(f"--time must be a finite number of seconds, got {time}")
    s = Session(device="cpu", render=False, deformer="lbs", strict=True)
    ch = s.spawn(loaded, clip=clip, time=time, speed=0.0, mode="clamp")
    return s, ch


def posed_skin_matrices(loaded: Any, prims: Sequence[PrimitiveWeights], *, clip: Any, time: float
                        ) -> dict[PrimitiveKey, np.ndarray]:
    """Per primitive the (J,4,4) float32 skin matrices (joint world x inverse bind) of ``clip`` held at ``time``
    (clamped), as the engine deforms that frame."""
    s, ch = _session(loaded, clip, time)
    with s:
        ch.vertices()  # settle the pose
        world = ch.joints()
    return {p.key: (world[p.joint_nodes].astype(np.float64) @ p.inverse_bind.astype(np.float64)).astype(np.float32)
            for p in prims}


class DragEdit:
    """The result of :func:`drag`: the primitive's new dense weights, the rows changed and the hull."""

    def __init__(self, prim: PrimitiveWeights, dense: np.ndarray, rows: np.ndarray, result: Any) -> None:
        self.prim, self.dense, self.rows, self.result = prim, dense, rows, result


def drag(loaded: Any, prim: PrimitiveWeights, vertex: int, target: Sequence[float], *, clip: Any, time: float,
         joints: Sequence[str] | None = None, skin_mats: np.ndarray | None = None) -> DragEdit:
    """Mohr's drag of display vertex ``vertex`` to world point ``target`` at the frame: the influencing joints
    are the vertex's current non-zero ones or the named ``joints``. The vertex and the display vertices welded
    to it (a seam: one surface point, which the GPU path skins as one control point) get the new weights."""
    from engine.skinning.weights.mohr import drag_vertex

    t = np.asarray(target, np.float64).reshape(-1)
    if t.shape != (3,) or not np.isfinite(t).all():
        raise ValueError(f"--target must be three finite numbers X,Y,Z, got {list(np.asarray(target).reshape(-1))}")
    dense = prim.dense()
    if joints:
        idx = np.array([prim.joint_index(n, "--joints") for n in joints], np.int64)
        if len(set(idx.tolist())) != idx.size:
            raise ValueError(f"--joints names a joint twice: {list(joints)}")
    else:
        idx = np.flatnonzero(dense[vertex] > 0)
    if skin_mats is None:
        skin_mats = posed_skin_matrices(loaded, [prim], clip=clip, time=time)[prim.key]
    res = drag_vertex(prim.positions[vertex], skin_mats, idx, dense[vertex, idx], t)
    rows = welded_with(prim, vertex)
    new = dense.copy()
    new[rows] = 0
    new[np.ix_(rows, idx)] = res.weights[None, :]
    return DragEdit(prim, new, rows, res)


def welded_with(prim: PrimitiveWeights, vertex: int) -> np.ndarray:
    """The display vertices at the position of ``vertex`` (itself included), as the GPU path welds them."""
    if prim.skinned is not None:
        topo = prim.skinned.topology()
        c = topo.control_of_display
        return np.flatnonzero(c == c[vertex])
    return np.array([vertex])


def clip_times(asset: Any, clip: Any, frames: int) -> np.ndarray:
    """N frame times evenly spread from 0 to the clip's end (``export-frame --frames N``)."""
    from engine.bake import MAX_FRAMES

    if isinstance(frames, bool) or not 1 <= int(frames) <= MAX_FRAMES:
        raise ValueError(f"--frames must be in [1, {MAX_FRAMES}], got {frames}")
    end = float(asset.clips[asset.clip_index(clip)].duration) if asset.clips else 0.0
    return np.linspace(0.0, end, int(frames)) if frames > 1 else np.zeros(1)


def trajectories(loaded: Any, clip: Any, times: np.ndarray, *, device: str = "cpu",
                 deformer: str = "lbs") -> dict[PrimitiveKey, np.ndarray]:
    """(F, V, 3) deformed world positions per skinned primitive at ``times`` (engine.bake)."""
    from engine import Session
    from engine.bake import bake

    with Session(device=device, render=False, deformer=deformer, strict=True) as s:
        ch = s.spawn(loaded, clip=clip, speed=0.0, mode="clamp")
        return bake(s, ch, times)


def write_weights(source: str | Path, out: str | Path, edits: dict[PrimitiveKey, tuple[PrimitiveWeights, np.ndarray]],
                  *, locked: dict[PrimitiveKey, np.ndarray] | None = None, limit: int | None = None) -> Path:
    """Pack dense weights per primitive into slots (at least the primitive's own slot count) and write the .glb;
    every row is checked (>= 0, sums to 1, at most ``limit`` influences) before anything is written."""
    updates = {}
    for key, (prim, dense) in edits.items():
        lk = None if locked is None else locked.get(key)
        j, w = to_slots(dense, min_slots=prim.slots, locked=lk)
        check_valid(j, w, limit=limit)
        updates[(key.mesh, key.primitive)] = (j, w, prim.n_joints)
    return save_weights(source, out, updates)
