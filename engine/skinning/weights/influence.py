"""Co-movement influence regions (Lewis and Anjyo, research 001): which vertices move together with one.

For a reference trajectory p_f and another q_f over N frames, both mean-subtracted, S = (1/N) sum_f p_f q_f^T =
U D V^T; the score is trace(D) / (rms|p| rms|q|), in [0, 1]: 1 when q is p under any rotation (or reflection:
the plus sign; the paper's printed minus maps q onto -p), 0 for motions with no linear relation (a quadrature
pair, independent noise as N grows). The region of a vertex is every vertex with score >= threshold (0.75 by
default). A joint's region uses the joint's world position as the reference trajectory. The joints suggested for
a region are the skin joints whose own trajectories score highest against the region's mean trajectory.
"""
from __future__ import annotations

import numpy as np

__all__ = ["comovement", "region", "suggest_joints", "DEFAULT_THRESHOLD"]

DEFAULT_THRESHOLD = 0.75


def comovement(reference: np.ndarray, trajectories: np.ndarray) -> np.ndarray:
    """(V,) scores of trajectories (F, V, 3) against ``reference`` (F, 3); 0 where either does not move."""
    p = np.asarray(reference, np.float64)
    q = np.asarray(trajectories, np.float64)
    if p.ndim != 2 or q.ndim != 3 or q.shape[0] != p.shape[0] or p.shape[1] != q.shape[2]:
        raise ValueError(f"reference (F, 3) and trajectories (F, V, 3) must share F, got {p.shape} and {q.shape}")
    p = p - p.mean(axis=0)
    q = q - q.mean(axis=0)
    n = p.shape[0]
    s = np.einsum("fi,fvj->vij", p, q) / n
    d = np.linalg.svd(s, compute_uv=False).sum(axis=1)
    rp = np.sqrt((p * p).sum() / n)
    rq = np.sqrt(np.einsum("fvi,fvi->v", q, q) / n)
    den = rp * rq
    scale = max(rp, float(rq.max(initial=0.0)), 1e-300)
    ok = den > (1e-12 * scale) ** 2
    out = np.zeros(q.shape[1])
    out[ok] = d[ok] / den[ok]
    return np.clip(out, 0.0, 1.0)


def region(scores: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """int32 indices of the vertices with score >= threshold."""
    if not (np.isfinite(threshold) and 0 <= threshold <= 1):
        raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
    return np.flatnonzero(np.asarray(scores) >= threshold).astype(np.int32)


def suggest_joints(trajectories: np.ndarray, members: np.ndarray, joint_paths: np.ndarray, *, count: int = 4
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(joint indices, scores) of the ``count`` joints whose world trajectories (F, J, 3) co-move most with the
    mean trajectory of the region ``members``: the joints that should influence it."""
    mean = np.asarray(trajectories, np.float64)[:, np.asarray(members, np.int64)].mean(axis=1)
    sc = comovement(mean, joint_paths)
    order = np.argsort(-sc, kind="stable")[:count]
    return order, sc[order]
