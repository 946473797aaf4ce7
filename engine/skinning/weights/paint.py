"""The classic weight tools on a dense (V, J) weight matrix, and the JSON ops list of ``weights edit``.

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
from typing import Any

import numpy as np

from engine.skinning.weights.table import normalize

__all__ = ["brush_falloff", "paint", "smooth", "mirror", "limit", "prune", "mirror_name", "edge_graph",
           "dirichlet_energy", "apply_ops", "OPS"]

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


# ---------------------------------------------------------------------------------------------------------------
# the ops list of `weights edit`

_KEYS = {
    "paint": ({"op", "joint", "value"}, {"vertices", "center", "radius", "mode", "primitive"}),
    "smooth": ({"op", "iterations"}, {"primitive"}),
    "normalize": ({"op"}, {"locked", "primitive"}),
    "mirror": ({"op", "axis", "from"}, {"primitive"}),
    "limit": ({"op", "max"}, {"primitive"}),
    "prune": ({"op", "threshold"}, {"primitive"}),
}


def _number(op: dict, key: str, where: str) -> float:
    v = op[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
        raise ValueError(f"{where}.{key}: must be a finite number, got {v!r}")
    return float(v)


def _integer(op: dict, key: str, where: str, lo: int, hi: int) -> int:
    v = op[key]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{where}.{key}: must be an integer in [{lo}, {hi}], got {v!r}")
    return int(v)


def check_ops(data: Any, name: str) -> list[dict]:
    """The ops of an OPS.json document, structurally checked (keys, types, modes); ValueError naming the op."""
    if not isinstance(data, dict):
        raise ValueError(f"{name}: must be a JSON object {{\"version\": 1, \"ops\": [...]}}")
    extra = set(data) - {"version", "ops"}
    if extra:
        raise ValueError(f"{name}: unknown key(s) {sorted(extra)}; valid: version, ops")
    if data.get("version") != 1 or isinstance(data.get("version"), bool):
        raise ValueError(f"{name}: version must be 1, got {data.get('version')!r}")
    ops = data.get("ops")
    if not isinstance(ops, list):
        raise ValueError(f"{name}: ops must be a list")
    for i, op in enumerate(ops):
        where = f"{name}: ops[{i}]"
        if not isinstance(op, dict) or op.get("op") not in _KEYS:
            got = op.get("op") if isinstance(op, dict) else op
            raise ValueError(f"{where}: op must be one of {list(OPS)}, got {got!r}")
        need, opt = _KEYS[op["op"]]
        missing, unknown = need - set(op), set(op) - need - opt
        if missing:
            raise ValueError(f"{where} ({op['op']}): missing key(s) {sorted(missing)}")
        if unknown:
            raise ValueError(f"{where} ({op['op']}): unknown key(s) {sorted(unknown)}; valid: {sorted(need | opt)}")
        if op["op"] == "paint":
            if ("vertices" in op) == ("center" in op):
                raise ValueError(f"{where} (paint): give either vertices or center (with radius)")
            if "center" in op and "radius" not in op:
                raise ValueError(f"{where} (paint): center needs radius")
            if op.get("mode", "replace") not in ("add", "subtract", "replace"):
                raise ValueError(f"{where}.mode: must be add, subtract or replace, got {op.get('mode')!r}")
            _number(op, "value", where)
            if not 0 <= op["value"] <= 1:
                raise ValueError(f"{where}.value: must be in [0, 1], got {op['value']!r}")
            if "center" in op:
                c = op["center"]
                if not (isinstance(c, list) and len(c) == 3 and all(isinstance(x, (int, float))
                                                                       and not isinstance(x, bool)
                                                                       and np.isfinite(x) for x in c)):
                    raise ValueError(f"{where}.center: must be [x, y, z] finite numbers, got {c!r}")
                if _number(op, "radius", where) <= 0:
                    raise ValueError(f"{where}.radius: must be > 0, got {op['radius']!r}")
            else:
                v = op["vertices"]
                if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
                    raise ValueError(f"{where}.vertices: must be a list of vertex indices")
            if not isinstance(op["joint"], str):
                raise ValueError(f"{where}.joint: must be a joint name (string), got {op['joint']!r}")
        elif op["op"] == "smooth":
            _integer(op, "iterations", where, 0, 10000)
        elif op["op"] == "normalize":
            lk = op.get("locked", [])
            if not isinstance(lk, list) or not all(isinstance(x, str) for x in lk):
                raise ValueError(f"{where}.locked: must be a list of joint names")
        elif op["op"] == "mirror":
            if op["axis"] not in ("x", "y", "z"):
                raise ValueError(f"{where}.axis: must be x, y or z, got {op['axis']!r}")
            if op["from"] not in ("+", "-"):
                raise ValueError(f"{where}.from: must be '+' or '-', got {op['from']!r}")
        elif op["op"] == "limit":
            _integer(op, "max", where, 1, 1 << 16)
        elif op["op"] == "prune":
            t = _number(op, "threshold", where)
            if not 0 <= t < 1:
                raise ValueError(f"{where}.threshold: must be in [0, 1), got {t!r}")
        if "primitive" in op and not isinstance(op["primitive"], str):
            raise ValueError(f"{where}.primitive: must be a primitive key string (node{{n}}_mesh{{m}}_prim{{p}})")
    return ops


def apply_ops(prims: list, ops: list[dict], name: str = "ops") -> tuple[dict[Any, np.ndarray], dict[Any, np.ndarray],
                                                                       int | None]:
    """Run checked ``ops`` over the primitives (engine.skinning.weights.io.PrimitiveWeights). Returns (dense
    weights per edited primitive key, locked mask per key, the smallest ``limit`` max or None). Joints named in
    any normalize op's ``locked`` are locked for the whole list (no op changes them); every edited row set is
    renormalised at the end and kept within the influence limit: the smallest ``limit`` op's max, else the
    primitive's slot count (4 per JOINTS/WEIGHTS set of the file)."""
    from engine.skinning.weights.io import find_primitive

    dense: dict[Any, np.ndarray] = {}
    locked: dict[Any, np.ndarray] = {}
    edges: dict[Any, np.ndarray] = {}
    cap: int | None = None

    def state(op: dict, i: int):
        try:
            p = find_primitive(prims, op.get("primitive"))
        except ValueError as e:
            raise ValueError(f"{name}: ops[{i}].primitive: {e}") from None
        if p.key not in dense:
            dense[p.key] = p.dense()
            locked[p.key] = np.zeros(p.n_joints, bool)
        return p

    def joint(p, nm: str, i: int, key: str) -> int:
        try:
            return p.joint_index(nm)
        except ValueError as e:
            raise ValueError(f"{name}: ops[{i}].{key}: {e}") from None

    # locks first: they hold for the whole list
    for i, op in enumerate(ops):
        if op["op"] == "normalize":
            p = state(op, i)
            for nm in op.get("locked", []):
                locked[p.key][joint(p, nm, i, "locked")] = True
    for i, op in enumerate(ops):
        p = state(op, i)
        k = p.key
        kind = op["op"]
        if kind in ("smooth", "paint") and k not in edges:
            edges[k] = edge_graph(p.positions, p.triangles)
        if kind == "paint":
            j = joint(p, op["joint"], i, "joint")
            if locked[k][j]:
                raise ValueError(f"{name}: ops[{i}].joint: {op['joint']!r} is locked by a normalize op")
            if "vertices" in op:
                v = np.asarray(op["vertices"], np.int64)
                n = p.positions.shape[0]
                if v.size and (v.min() < 0 or v.max() >= n):
                    bad = int(v[(v < 0) | (v >= n)][0])
                    raise ValueError(f"{name}: ops[{i}].vertices: vertex {bad} out of range [0, {n - 1}]")
                f = np.zeros(n)
                f[v] = 1.0
            else:
                f = brush_falloff(p.positions, op["center"], float(op["radius"]))
            dense[k] = paint(dense[k], j, f, float(op["value"]), op.get("mode", "replace"), locked[k],
                             edges=edges[k])
        elif kind == "smooth":
            dense[k] = smooth(dense[k], edges[k], int(op["iterations"]), locked[k])
        elif kind == "normalize":
            dense[k] = normalize(dense[k], locked[k])
        elif kind == "mirror":
            dense[k] = mirror(dense[k], p.positions, p.joint_names, op["axis"], op["from"], locked[k])
        elif kind == "limit":
            dense[k] = limit(dense[k], int(op["max"]), locked[k])
            cap = int(op["max"]) if cap is None else min(cap, int(op["max"]))
        elif kind == "prune":
            dense[k] = prune(dense[k], float(op["threshold"]), locked[k])
    by_key = {p.key: p for p in prims}
    for k in dense:
        # the influence limit: the smallest limit op's, else the primitive's own slot count (an edit never
        # widens the file's JOINTS/WEIGHTS sets unasked)
        keep = cap if cap is not None else by_key[k].slots
        dense[k] = limit(finish(dense[k], locked[k]), keep, locked[k])
    return dense, locked, cap


def finish(w: np.ndarray, locked: np.ndarray) -> np.ndarray:
    """Rows renormalised (locked kept); a row left all zero is bound to ... nothing can be guessed, so it is
    refused (ValueError naming the vertex)."""
    out = normalize(np.clip(w, 0.0, None), locked)
    s = out.sum(axis=1)
    if (s <= 0).any():
        raise ValueError(f"vertex {int(np.argmax(s <= 0))} is left with no weight (every influence removed)")
    free_rows = out[:, ~locked].sum(axis=1) > 0
    # rows whose unlocked weights are all zero cannot be filled: scale the whole row (locked kept only if 1)
    bad = (~free_rows) & (np.abs(s - 1) > 1e-12)
    if bad.any():
        out[bad] /= s[bad, None]
    return out
