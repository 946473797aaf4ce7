"""The ops list of ``weights edit``: ``{"version": 1, "ops": [...]}`` checked (keys, types, ranges, modes) and run
over the primitives with the tools of :mod:`engine.skinning.weights.paint`.

Joints named in any normalize op's ``locked`` are locked for the whole list (no op changes them, a paint of one
is refused); at the end every edited row set is renormalised and kept within the influence limit: the smallest
``limit`` op's max, else the primitive's slot count (4 per JOINTS/WEIGHTS set of the file).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.skinning.weights.paint import OPS, brush_falloff, edge_graph, limit, mirror, paint, prune, smooth
from engine.skinning.weights.table import normalize

__all__ = ["check_ops", "apply_ops", "finish", "OPS"]


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
