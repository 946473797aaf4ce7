"""Weight tables: dense (V, J) matrices for the tools, glTF influence slots (V, M) for files and skinning.

A primitive's influences are stored as glTF sets of 4 slots (JOINTS_n / WEIGHTS_n). The tools work on the dense
matrix W (V, J) float64 (J = the skin's joints), where painting one joint or smoothing is a column operation;
:func:`to_slots` packs W back into slots: per row the non-zero weights sorted largest first, M = 4 x the sets
needed (at least ``min_slots``), unused slots joint 0 weight 0, float32 values whose float32 sum is 1.
"""
from __future__ import annotations

import numpy as np

__all__ = ["to_dense", "to_slots", "normalize", "check_valid", "SUM_TOL"]

SUM_TOL = 1e-6
"""Every written row sums to 1 within this (float64 sum of the float32 values)."""


def to_dense(joints: np.ndarray, weights: np.ndarray, n_joints: int) -> np.ndarray:
    """(V, J) float64 weights from slots (V, M) joints/weights (a joint listed twice adds up)."""
    j = np.asarray(joints).astype(np.int64)
    w = np.asarray(weights, np.float64)
    if j.shape != w.shape or j.ndim != 2:
        raise ValueError(f"joints and weights must be one (V, M) shape, got {j.shape} and {w.shape}")
    if j.size and (j.min() < 0 or j.max() >= n_joints):
        raise ValueError(f"joint indices must lie in [0, {n_joints - 1}], got [{j.min()}, {j.max()}]")
    out = np.zeros((j.shape[0], n_joints))
    rows = np.repeat(np.arange(j.shape[0]), j.shape[1])
    np.add.at(out, (rows, j.reshape(-1)), w.reshape(-1))
    return out


def normalize(dense: np.ndarray, locked: np.ndarray | None = None, *, rows: np.ndarray | None = None) -> np.ndarray:
    """Rows scaled to sum 1 (a new array), locked joints (J,) bool kept as they are: the unlocked weights of a
    row are scaled to fill 1 - (its locked sum). A row with no unlocked weight left gets the remainder spread
    over nothing (it keeps its values); a row with all weights zero stays zero (the caller decides).
    ``rows``: only these rows (the others are copied unchanged)."""
    w = np.array(dense, np.float64)
    lock = np.zeros(w.shape[1], bool) if locked is None else np.asarray(locked, bool)
    sel = np.arange(w.shape[0]) if rows is None else np.asarray(rows, np.int64)
    sub = w[sel]
    free = sub[:, ~lock].sum(axis=1)
    fixed = sub[:, lock].sum(axis=1)
    room = np.clip(1.0 - fixed, 0.0, None)
    scale = np.divide(room, free, out=np.ones_like(free), where=free > 0)
    sub[:, ~lock] *= scale[:, None]
    w[sel] = sub
    return w


def to_slots(dense: np.ndarray, *, min_slots: int = 4, locked: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Pack (V, J) weights into (V, M) uint16 joints and float32 weights, rows sorted by weight (largest first,
    ties by joint index), M = max(min_slots, 4 * ceil(max non-zeros / 4)). The float32 rounding residue of each
    row whose float32 values are not within 1e-7 of summing to 1 goes onto its largest unlocked weight, so
    that the float32 values sum to 1 and locked joints keep their exact float32 value (a row of locked joints
    only keeps its values)."""
    w = np.asarray(dense, np.float64)
    if w.ndim != 2:
        raise ValueError(f"dense weights must be (V, J), got {w.shape}")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("weights must be finite and >= 0")
    nnz = int((w > 0).sum(axis=1).max(initial=0))
    m = max(int(min_slots), 4 * -(-max(nnz, 1) // 4))
    order = np.lexsort((np.broadcast_to(np.arange(w.shape[1]), w.shape), -w), axis=1)[:, :m]
    if order.shape[1] < m:  # fewer joints than slots
        order = np.concatenate([order, np.zeros((w.shape[0], m - order.shape[1]), order.dtype)], 1)
        vals = np.take_along_axis(w, order, axis=1)
        vals[:, w.shape[1]:] = 0
    else:
        vals = np.take_along_axis(w, order, axis=1)
    w32 = vals.astype(np.float32)
    lock = np.zeros(w.shape[1], bool) if locked is None else np.asarray(locked, bool)
    # rows already within 1e-7 of 1 are left as they are (an untouched row keeps its stored values)
    off = np.abs(w32.astype(np.float64).sum(axis=1) - 1.0) > 1e-7
    free = (~lock[order]) & (w32 > 0) & off[:, None]
    if free.any():
        cand = np.where(free, w32, -1.0)
        big = np.argmax(cand, axis=1)
        ok = cand[np.arange(w.shape[0]), big] > 0
        r = np.flatnonzero(ok)
        others = w32[r].sum(axis=1, dtype=np.float32) - w32[r, big[r]]
        w32[r, big[r]] = np.maximum(np.float32(1.0) - others, np.float32(0.0))
    joints = np.where(w32 > 0, order, 0).astype(np.uint16)
    return joints, w32


def check_valid(joints: np.ndarray, weights: np.ndarray, *, limit: int | None = None) -> None:
    """ValueError unless every weight is finite and >= 0, every row sums to 1 within SUM_TOL and has at most
    ``limit`` non-zero weights."""
    w = np.asarray(weights, np.float64)
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite and >= 0")
    s = w.sum(axis=1)
    bad = np.abs(s - 1) > SUM_TOL
    if bad.any():
        v = int(np.argmax(bad))
        raise ValueError(f"vertex {v}: weights sum to {s[v]!r}, not 1")
    if limit is not None:
        n = (w > 0).sum(axis=1)
        if (n > limit).any():
            v = int(np.argmax(n > limit))
            raise ValueError(f"vertex {v} has {int(n[v])} influences, over the limit {limit}")


def set_column(dense: np.ndarray, joint: int, values: np.ndarray, fallback: np.ndarray,
               locked: np.ndarray | None = None) -> np.ndarray:
    """Give ``joint`` the weights ``values`` (V,) (clipped to [0, 1 - locked sum]) and rescale each row's other
    unlocked joints to fill the rest (the edited joint is frozen: left out of the normalisation). A row whose
    other unlocked weights are all zero gives the rest to its ``fallback`` (V,) joint (e.g. the nearest other)."""
    w = np.array(dense, np.float64)
    lock = np.zeros(w.shape[1], bool) if locked is None else np.asarray(locked, bool).copy()
    fixed = w[:, lock].sum(axis=1)
    w[:, joint] = np.clip(np.asarray(values, np.float64), 0.0, np.clip(1.0 - fixed, 0.0, 1.0))
    lock[joint] = True
    others = w[:, ~lock].sum(axis=1)
    empty = np.flatnonzero(others <= 0)
    fb = np.asarray(fallback, np.int64)[empty]
    w[empty, fb] = np.where(lock[fb], w[empty, fb], 1.0)
    return normalize(w, lock)
