"""Direct manipulation of skin weights (Mohr, Tokheim, Gleicher 2003, research 000): drag a posed vertex.

Under LBS a vertex v (bind position) lands at p = sum_i w_i q_i with q_i = R_i v, R_i = joint world matrix x
inverse bind of influence i, w_i >= 0, sum w_i = 1: p can reach exactly the convex hull of the q_i. A dragged
target t is therefore first projected onto that hull (t itself when inside, else its closest point), then
weights are found that put the vertex there:

* at most 4 influences, affinely independent q_i: the paper's linear system [q_1 .. q_k; 1 .. 1] w = [t; 1],
  solved exactly (its unique solution is the barycentric coordinates of the projected point);
* more influences (or a degenerate set): the paper's linear program, minimising the change from the previous
  weights, sum |w_i - w_i^prev|, subject to sum w_i q_i = p, sum w_i = 1, w >= 0 (scipy.optimize.linprog, the
  HiGHS solver; the change split as w = w_prev + u - l, u, l >= 0).

The projection: the closest point of a convex hull of k points in R^d lies in a face spanned by at most d + 1
of them (Caratheodory), so every subset of up to d + 1 points is tried: the affine least-squares fit with its
sum-to-one constraint (KKT system), kept when its weights are >= 0; the nearest wins. With k <= 16 this is at
most a few thousand 5x5 solves, exact to rounding.

Several poses (the paper's multi-pose editing): the targets of P poses stack into one point in R^3P and the
hull of the stacked q_i; the projection is then the least-squares compromise over the poses.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

__all__ = ["hull_points", "project_to_hull", "solve_weights", "DragResult", "drag_vertex", "drag_vertex_poses"]


def hull_points(rest: np.ndarray, skin_mats: np.ndarray, joints: np.ndarray) -> np.ndarray:
    """(k, 3) float64 points q_i = R_i v of one vertex (``rest`` (3,)) for skin matrices (J,4,4) and the
    influencing joint indices (k,). The matrices are used as float32, as the skinning code uses them."""
    m = np.asarray(skin_mats, np.float32)[np.asarray(joints, np.int64)].astype(np.float64)
    v = np.append(np.asarray(rest, np.float32).astype(np.float64), 1.0)
    return (m @ v)[:, :3]


def _affine_fit(q: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """Weights (k,) minimising |q^T w - t| subject to sum w = 1 (KKT; minimum-norm when degenerate)."""
    k = q.shape[0]
    a = np.zeros((k + 1, k + 1))
    a[:k, :k] = q @ q.T
    a[:k, k] = 1
    a[k, :k] = 1
    b = np.append(q @ t, 1.0)
    sol, *_ = np.linalg.lstsq(a, b, rcond=1e-12)
    w = sol[:k]
    if not np.isfinite(w).all() or abs(w.sum() - 1) > 1e-9:
        return None
    return w


def project_to_hull(points: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(closest point of the convex hull of ``points`` (k, d) to ``target`` (d,), barycentric weights (k,) of it
    on a face of at most d + 1 points, target inside the hull (distance <= 1e-9 of the hull's size))."""
    q = np.asarray(points, np.float64)
    t = np.asarray(target, np.float64)
    k, d = q.shape
    scale = max(float(np.abs(q - q.mean(axis=0)).max(initial=0.0)), float(np.abs(t).max(initial=0.0)), 1e-12)
    best: tuple[float, np.ndarray] | None = None
    for size in range(1, min(k, d + 1) + 1):
        for sub in itertools.combinations(range(k), size):
            s = list(sub)
            w = np.ones(1) if size == 1 else _affine_fit(q[s], t)
            if w is None or w.min() < -1e-12:
                continue
            w = np.clip(w, 0, None)
            w /= w.sum()
            dist = float(np.linalg.norm(q[s].T @ w - t))
            if best is None or dist < best[0] - 1e-15 * scale:
                full = np.zeros(k)
                full[s] = w
                best = (dist, full)
        if best is not None and best[0] <= 1e-12 * scale:
            break  # inside: a smaller face cannot do better
    assert best is not None  # a single point is always a feasible face
    dist, w = best
    return q.T @ w, w, dist <= 1e-9 * scale


def solve_weights(points: np.ndarray, point: np.ndarray, previous: np.ndarray, face_weights: np.ndarray
                  ) -> np.ndarray:
    """Weights (k,) >= 0 summing to 1 with sum w_i q_i = ``point`` (a point of the hull, from project_to_hull):
    exact barycentrics for <= 4 affinely independent points (the paper's linear system), else the LP that
    changes the previous weights least (falls back to the projection's face weights if the LP fails)."""
    q = np.asarray(points, np.float64)
    k, d = q.shape
    if k <= d + 1:
        a = np.vstack([q.T, np.ones(k)])
        if np.linalg.matrix_rank(a, tol=1e-10 * max(np.abs(a).max(), 1.0)) == k:
            w, *_ = np.linalg.lstsq(a, np.append(point, 1.0), rcond=None)
            if w.min() >= -1e-9:
                w = np.clip(w, 0, None)
                return w / w.sum()
    from scipy.optimize import linprog

    prev = np.asarray(previous, np.float64)
    # variables (u, l) >= 0, w = prev + u - l: minimise sum(u + l)
    a_eq = np.vstack([np.hstack([q.T, -q.T]), np.hstack([np.ones(k), -np.ones(k)])])
    b_eq = np.append(np.asarray(point, np.float64) - q.T @ prev, 1.0 - prev.sum())
    # w >= 0: l - u <= prev
    a_ub = np.hstack([-np.eye(k), np.eye(k)])
    res = linprog(np.ones(2 * k), A_ub=a_ub, b_ub=prev, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status == 0:
        w = prev + res.x[:k] - res.x[k:]
        w = np.clip(w, 0, None)
        if w.sum() > 0 and np.linalg.norm(q.T @ (w / w.sum()) - point) <= 1e-7 * max(np.abs(q).max(), 1.0):
            return w / w.sum()
    return np.asarray(face_weights, np.float64)


@dataclass
class DragResult:
    """The outcome of one drag: weights per influencing joint, where LBS now puts the vertex, the hull."""

    joints: np.ndarray     # (k,) skin joint indices
    weights: np.ndarray    # (k,) new weights (>= 0, sum 1)
    reached: np.ndarray    # (d,) the projected target (the vertex's new posed position; stacked over poses)
    inside: bool           # the target was inside the hull (reached exactly)
    hull: np.ndarray       # (k, d) the hull's points q_i


def drag_vertex(rest: np.ndarray, skin_mats: np.ndarray, joints: np.ndarray, previous: np.ndarray,
                target: np.ndarray) -> DragResult:
    """Mohr's drag of one vertex at one pose: ``joints`` (k,) the influencing skin joints, ``previous`` (k,)
    their weights now, ``target`` (3,) world point."""
    return drag_vertex_poses(rest, [skin_mats], joints, previous, [target])


def drag_vertex_poses(rest: np.ndarray, poses: list[np.ndarray], joints: np.ndarray, previous: np.ndarray,
                      targets: list[np.ndarray]) -> DragResult:
    """Multi-pose drag: one target per pose's skin matrices; the least-squares compromise over the poses."""
    t = np.concatenate([np.asarray(x, np.float64).reshape(3) for x in targets])
    if not np.isfinite(t).all():
        raise ValueError(f"the target must be finite, got {t.tolist()}")
    if len(poses) != len(targets) or not poses:
        raise ValueError(f"one target per pose: {len(poses)} poses, {len(targets)} targets")
    j = np.asarray(joints, np.int64)
    if j.size == 0 or len(set(j.tolist())) != j.size:
        raise ValueError(f"the influencing joints must be distinct and at least one, got {j.tolist()}")
    q = np.hstack([hull_points(rest, m, j) for m in poses])
    point, face, inside = project_to_hull(q, t)
    prev = np.asarray(previous, np.float64)
    w = solve_weights(q, point, prev, face) if len(poses) == 1 else face
    return DragResult(j, w, q.T @ w, inside, q)
