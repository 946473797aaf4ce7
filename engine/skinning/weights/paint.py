"""The classic weight tools on a dense (V, J) weight matrix (the ops list of ``weights edit`` runs them: ops.py).

Every tool takes and returns float64 (V, J) weights and a locked mask (J,) bool: locked joints' columns are
never changed (a paint of a locked joint is refused), and rows are renormalised over the unlocked joints
(:func:`engine.skinning.weights.table.normalize`).

* paint: brush factor f per vertex (1 on listed vertices; a smooth falloff (1 - (d/R)^2)^2 inside radius R of a
  centre); add w += V f, subtract w -= V f (clamped at 0), replace w = w + f (V - w), blur w = w + f (mean of the
  neighbours - w). The painted joint keeps its new value and the row's other unlocked joints fill the rest
  (Blender's auto-normalise); a row with no other unlocked weight is rescaled whole at the end;
* smooth: Jacobi averaging over the mesh edges (w <- (1 - s) w + s mean(neighbours)), s = 1/2, seam vertices
  welded by position so a seam is smoothed as one surface; this lowers the Dirichlet energy sum (w_i - w_j)^2;
* mirror: each vertex on the target side takes the weights of the vertex nearest to its reflection, joints
  renamed left <-> right (Blender's conventions: .L/.R, _L/_R, L_/R_, Left/Right, left/right, l_/r_, _l/_r);
  vertices on the plane (within 1e-5 of the diagonal) become the mean of themselves and their renamed row;
* limit: keep the N largest weights of each row (locked joints first); prune: zero weights below T.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from engine.skinning.weights.table import normalize

__all__ = ["brush_falloff", "paint", "smooth", "mirror", "limit", "prune", "mirror_name", "mirror_map", "edge_graph",
           "dirichlet_energy", "OPS"]

OPS = ("paint", "smooth", "normalize", "mirror", "limit", "prune")
MODES = ("add", "subtract", "replace", "blur")


def edge_graph(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(E,2) unique edges over display vertices, with coincident vertices (seams) linked to each other."""
    from engine.math.mesh import bbox_diagonal, weld

    t = np.asarray(triangles, np.int64)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    p = np.asarray(positions, np.float64)
    if p.shape[0]:
        ids, _ = weld(p, 1e-7 * max(bbox_diagonal(p), 1e-12))
        order = np.argsort(ids, kind="stable")
        same = ids[order][1:] == ids[order][:-1]
        e = np.concatenate([e, np.stack([order[:-1][same], order[1:][same]], 1)])
    e = np.sort(e, axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0)


def _neighbour_mean(w: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean of each vertex's neighbours' rows, has neighbours): one sparse product."""
    import scipy.sparse as sp

    n = w.shape[0]
    i = np.concatenate([edges[:, 0], edges[:, 1]])
    j = np.concatenate([edges[:, 1], edges[:, 0]])
    adj = sp.csr_matrix((np.ones(i.size), (i, j)), shape=(n, n))
    deg = np.asarray(adj.sum(axis=1)).ravel()
    has = deg > 0
    acc = adj @ w
    acc[has] /= deg[has, None]
    return acc, has


def dirichlet_energy(w: np.ndarray, edges: np.ndarray) -> float:
    """sum over edges of |w_i - w_j|^2 (all columns)."""
    d = w[edges[:, 0]] - w[edges[:, 1]]
    return float(np.einsum("ij,ij->", d, d))


def brush_falloff(positions: np.ndarray, center: Sequence[float] | np.ndarray, radius: float) -> np.ndarray:
    """(V,) brush factor: (1 - (d/R)^2)^2 inside radius R of ``center``, 0 outside."""
    if not (np.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
    c = np.asarray(center, np.float64)
    d2 = ((np.asarray(positions, np.float64) - c) ** 2).sum(axis=1) / float(radius) ** 2
    return np.where(d2 < 1, (1 - d2) ** 2, 0.0)


def paint(w: np.ndarray, joint: int, factor: np.ndarray, value: float, mode: str, locked: np.ndarray, *,
          edges: np.ndarray | None = None, inplace: bool = False) -> np.ndarray:
    """One brush application (see the module docstring); rows touched renormalised. Only the touched rows are
    computed; ``inplace`` writes them into ``w`` (the editor's stroke update) instead of a new array."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if locked[joint]:
        raise ValueError(f"joint {joint} is locked")
    out = w if inplace else np.array(w, np.float64)
    f = np.clip(np.asarray(factor, np.float64), 0.0, 1.0)
    rows = np.flatnonzero(f > 0)
    if not rows.size:
        return out
    sub = out[rows]
    col = sub[:, joint]
    fr = f[rows]
    if mode == "add":
        new = col + value * fr
    elif mode == "subtract":
        new = col - value * fr
    elif mode == "replace":
        new = col + fr * (value - col)
    else:
        if edges is None:
            raise ValueError("blur needs the mesh edges")
        mean, has = _neighbour_mean(out[:, [joint]], edges)
        new = np.where(has[rows], col + fr * (mean[rows, 0] - col), col)
    fixed = sub[:, locked].sum(axis=1)
    sub[:, joint] = np.clip(new, 0.0, np.clip(1.0 - fixed, 0.0, 1.0))
    # the painted joint is held while the other unlocked joints fill the rest of each touched row
    hold = locked.copy()
    hold[joint] = True
    fill = np.flatnonzero(sub[:, ~hold].sum(axis=1) > 0)
    sub = normalize(sub, hold, rows=fill)
    out[rows] = sub
    return out


def smooth(w: np.ndarray, edges: np.ndarray, iterations: int, locked: np.ndarray, *,
           strength: float = 0.5) -> np.ndarray:
    """``iterations`` Jacobi averaging steps of the unlocked columns, rows renormalised."""
    out = np.array(w, np.float64)
    free = np.flatnonzero(~locked)
    for _ in range(int(iterations)):
        mean, has = _neighbour_mean(out[:, free], edges)
        out[np.ix_(has, free)] = (1 - strength) * out[np.ix_(has, free)] + strength * mean[has]
    return normalize(out, locked)


_SIDES = [(r"\.L\b", ".R"), (r"\.R\b", ".L"), (r"_L\b", "_R"), (r"_R\b", "_L"), (r"\bL_", "R_"), (r"\bR_", "L_"),
          (r"Left", "Right"), (r"Right", "Left"), (r"left", "right"), (r"right", "left"), (r"LEFT", "RIGHT"),
          (r"RIGHT", "LEFT"), (r"\bl_", "r_"), (r"\br_", "l_"), (r"_l\b", "_r"), (r"_r\b", "_l"),
          (r"\.l\b", ".r"), (r"\.r\b", ".l")]


def mirror_name(name: str) -> str:
    """The name of the mirrored joint: the first left/right convention found in ``name`` swapped (itself when
    none)."""
    for pat, rep in _SIDES:
        # a boundary after L/R: the next character is not a letter (Arm.L, Arm.L.001, Arm.L3, L_arm)
        m = re.search(pat.replace(r"\b", r"(?![A-Za-z])", 1) if pat.endswith(r"\b") else pat, name)
        if m:
            return name[:m.start()] + rep + name[m.end():]
    return name


def mirror_map(names: Sequence[str]) -> np.ndarray:
    """(J,) index of each joint's mirror (itself when its mirrored name is not a joint)."""
    index = {n: i for i, n in enumerate(names)}
    return np.array([index.get(mirror_name(n), i) for i, n in enumerate(names)], np.int64)


def mirror(w: np.ndarray, positions: np.ndarray, names: Sequence[str], axis: str, from_side: str,
           locked: np.ndarray) -> np.ndarray:
    """Weights of the ``from_side`` ("+" or "-") of ``axis`` ("x", "y", "z") copied onto the other side by
    nearest reflected vertex, joints renamed left <-> right (locked columns unchanged)."""
    from scipy.spatial import cKDTree

    from engine.math.mesh import bbox_diagonal

    if axis not in ("x", "y", "z"):
        raise ValueError(f"axis must be x, y or z, got {axis!r}")
    if from_side not in ("+", "-"):
        raise ValueError(f"from must be '+' or '-', got {from_side!r}")
    a = "xyz".index(axis)
    p = np.asarray(positions, np.float64)
    tol = 1e-5 * max(bbox_diagonal(p), 1e-12)
    sign = 1.0 if from_side == "+" else -1.0
    coord = sign * p[:, a]
    src = np.flatnonzero(coord > tol)
    dst = np.flatnonzero(coord < -tol)
    mid = np.flatnonzero(np.abs(coord) <= tol)
    perm = mirror_map(names)
    out = np.array(w, np.float64)
    swapped = np.zeros_like(out)
    swapped[:, perm] = out  # column j of a row moves to its mirror joint
    free = ~locked
    if src.size and dst.size:
        refl = p[dst].copy()
        refl[:, a] *= -1
        _, nearest = cKDTree(p[src]).query(refl)
        out[np.ix_(dst, np.flatnonzero(free))] = swapped[np.ix_(src[nearest], np.flatnonzero(free))]
    if mid.size:
        both = 0.5 * (out[mid] + swapped[mid])
        out[np.ix_(mid, np.flatnonzero(free))] = both[:, free]
    # a row left without unlocked weight while its locked ones leave room keeps its own (locked never change)
    need, _ = _needs_free(np.asarray(w, np.float64), locked)
    lost = need & (out[:, free].sum(axis=1) <= 0)
    out[lost] = np.asarray(w, np.float64)[lost]
    return normalize(out, locked, rows=np.concatenate([dst, mid]))


def _needs_free(out: np.ndarray, locked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows whose locked weights leave room below 1, each row's largest unlocked joint): such a row must keep
    an unlocked weight to fill the room, or its locked weights would have to change."""
    room = out[:, locked].sum(axis=1) < 1.0 - 1e-9
    free = np.where(locked[None, :], -1.0, out)
    return room & (free.max(axis=1, initial=-1.0) > 0), np.argmax(free, axis=1)


def limit(w: np.ndarray, n: int, locked: np.ndarray) -> np.ndarray:
    """At most ``n`` non-zero weights per row: the largest kept (locked joints first, then the largest unlocked
    one where the locked weights leave room), rows renormalised."""
    if isinstance(n, bool) or int(n) < 1:
        raise ValueError(f"max must be an integer >= 1, got {n!r}")
    out = np.array(w, np.float64)
    key = np.where(locked[None, :] & (out > 0), np.inf, out)
    need, top = _needs_free(out, locked)
    key[np.flatnonzero(need), top[need]] = 1e300
    if out.shape[1] > n:
        order = np.argsort(-key, axis=1, kind="stable")
        drop = order[:, int(n):]
        rows = np.repeat(np.arange(out.shape[0]), drop.shape[1])
        keep_locked = locked[drop.reshape(-1)]
        out[rows[~keep_locked], drop.reshape(-1)[~keep_locked]] = 0
    return normalize(out, locked)


def prune(w: np.ndarray, threshold: float, locked: np.ndarray) -> np.ndarray:
    """Unlocked weights below ``threshold`` set to 0 (a row keeps its largest weight, and its largest unlocked
    one where the locked weights leave room), rows renormalised."""
    if not (np.isfinite(threshold) and 0 <= threshold < 1):
        raise ValueError(f"threshold must be a number in [0, 1), got {threshold!r}")
    out = np.array(w, np.float64)
    small = (out < threshold) & ~locked[None, :]
    top = np.argmax(out, axis=1)
    small[np.arange(out.shape[0]), top] = False
    need, free_top = _needs_free(out, locked)
    small[np.flatnonzero(need), free_top[need]] = False
    out[small] = 0
    return normalize(out, locked)
