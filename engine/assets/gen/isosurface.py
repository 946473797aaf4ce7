"""Naive surface nets: a closed quad mesh of the zero level set of a sampled scalar field (negative inside).

Method (Gibson 1998, "Constrained elastic surface nets"): one vertex per grid cell whose eight corners
straddle zero, placed at the mean of the zero crossings on the cell's edges; one quad per grid edge with
a sign change, joining the four cells around that edge, wound so its normal points from inside to
outside. Everything is vectorised over the active cells and crossing edges.

The quad mesh is closed whenever the field is positive on the grid boundary. It is edge-manifold unless
some grid face is ambiguous (corners alternate in sign), and vertex-manifold unless some cell holds two
separate surface sheets (its inside or its outside corners are not connected along cell edges).
:func:`make_manifold` removes both by flipping the sign of a few samples next to the surface, chosen by
the field value at the face or cell centre (the same question the asymptotic decider of marching cubes
asks), so thin diagonal features stay connected when the true surface connects them.
"""
from __future__ import annotations

import numpy as np

# Corner c of a cell sits at offset (c & 1, (c >> 1) & 1, (c >> 2) & 1).
_CORNERS = np.array([[c & 1, (c >> 1) & 1, (c >> 2) & 1] for c in range(8)], np.int64)
# The 12 cell edges as corner pairs differing in exactly one axis.
_EDGES = np.array([(a, b) for a in range(8) for b in range(8)
                   if a < b and np.sum(_CORNERS[a] != _CORNERS[b]) == 1], np.int64)


def _connected(mask: int, members: list[int]) -> bool:
    """Are the corners in ``members`` connected along cube edges (within the set)?"""
    if not members:
        return True
    seen, stack = {members[0]}, [members[0]]
    while stack:
        c = stack.pop()
        for a, b in _EDGES:
            for x, y in ((a, b), (b, a)):
                if x == c and y not in seen and (mask >> y) & 1 == (mask >> c) & 1:
                    seen.add(y)
                    stack.append(y)
    return len(seen) == len(members)


def _good_configs() -> np.ndarray:
    good = np.zeros(256, bool)
    for m in range(256):
        ins = [c for c in range(8) if (m >> c) & 1]
        outs = [c for c in range(8) if not (m >> c) & 1]
        good[m] = _connected(m, ins) and _connected(m, outs)
    return good


_GOOD = _good_configs()


def _cell_configs(inside: np.ndarray) -> np.ndarray:
    nx, ny, nz = inside.shape
    cfg = np.zeros((nx - 1, ny - 1, nz - 1), np.uint8)
    for c, (dx, dy, dz) in enumerate(_CORNERS):
        cfg |= inside[dx:nx - 1 + dx, dy:ny - 1 + dy, dz:nz - 1 + dz].astype(np.uint8) << c
    return cfg


def _ambiguous_faces(inside: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(axis, (F,3) lower-corner grid indices) of faces whose corners alternate in sign."""
    out = []
    for axis in range(3):
        u, v = [a for a in range(3) if a != axis]

        def corner(du: int, dv: int, u: int = u, v: int = v) -> np.ndarray:
            c = [slice(None)] * 3
            c[u] = slice(du, inside.shape[u] - 1 + du)
            c[v] = slice(dv, inside.shape[v] - 1 + dv)
            return inside[tuple(c)]

        c00, c10, c11, c01 = corner(0, 0), corner(1, 0), corner(1, 1), corner(0, 1)
        out.append((axis, np.argwhere((c00 == c11) & (c10 == c01) & (c00 != c10))))
    return out


def make_manifold(field: np.ndarray, origin: np.ndarray, h: float, *, value_at=None,
                  max_rounds: int = 32) -> tuple[np.ndarray, int]:
    """Copy of ``field`` with no ambiguous face and no two-sheet cell; returns (field, samples flipped).

    For each offending face or cell the field is asked at its centre (``value_at(points (n,3)) -> (n,)``;
    default: the mean of the corner samples). Then the corner of the opposite sign that lies closest to
    zero is flipped toward the centre's sign (set to +-1e-3 h). The decider flips a sample at most once;
    when it has no corner left, an outside corner is made inside instead. Each sample thus changes at
    most twice and the repair ends; RuntimeError if offending configurations remain after ``max_rounds``.
    """
    f = np.array(field, np.float32)
    origin = np.asarray(origin, np.float64)
    flipped = np.zeros(f.shape, bool)
    eps = np.float32(1e-3 * h)
    total = 0
    for _ in range(max_rounds):
        inside = f < 0
        cand_idx: list[np.ndarray] = []  # (n, k, 3) corner grid indices per offender
        centers: list[np.ndarray] = []
        for axis, faces in _ambiguous_faces(inside):
            if len(faces) == 0:
                continue
            u, v = [a for a in range(3) if a != axis]
            corners = np.repeat(faces[:, None, :], 4, axis=1)
            for k, (du, dv) in enumerate(((0, 0), (1, 0), (1, 1), (0, 1))):
                corners[:, k, u] += du
                corners[:, k, v] += dv
            cen = faces.astype(np.float64)
            cen[:, u] += 0.5
            cen[:, v] += 0.5
            cand_idx.append(corners)
            centers.append(cen)
        bad_cells = np.argwhere(~_GOOD[_cell_configs(inside)])
        if len(bad_cells):
            cand_idx.append(bad_cells[:, None, :] + _CORNERS[None])
            centers.append(bad_cells + 0.5)
        if not cand_idx:
            return f, total
        groups = []
        for corners, cen in zip(cand_idx, centers):
            vals = f[corners[..., 0], corners[..., 1], corners[..., 2]].astype(np.float64)
            if value_at is None:
                cv = vals.mean(axis=1)
            else:
                cv = np.asarray(value_at(origin + h * cen), np.float64)
            want_inside = cv < 0
            # Candidates: corners whose sign differs from the centre's and that were never flipped.
            wrong = (vals < 0) != want_inside[:, None]
            ok = wrong & ~flipped[corners[..., 0], corners[..., 1], corners[..., 2]]
            score = np.where(ok, np.abs(vals), np.inf)
            pick = np.argmin(score, axis=1)
            has = np.isfinite(score[np.arange(len(pick)), pick])
            # Fallback where the decider has no unflipped corner left: grow the inside (an outside
            # corner becomes inside). Inside only grows this way, so the repair always ends.
            grow = np.where(vals >= 0, np.abs(vals), np.inf)
            pick = np.where(has, pick, np.argmin(grow, axis=1))
            to_in = np.where(has, want_inside, True)
            groups.append((corners[np.arange(len(pick)), pick], to_in))
        chosen = np.concatenate([g[0] for g in groups])
        to_in = np.concatenate([g[1] for g in groups])
        if len(chosen) == 0:
            break
        for want in (False, True):  # a sample asked both ways in one round ends inside
            ci, cj, ck = chosen[to_in == want].T
            f[ci, cj, ck] = -eps if want else eps
            flipped[ci, cj, ck] = True
        ci, cj, ck = chosen.T
        total += len(np.unique(np.ravel_multi_index((ci, cj, ck), f.shape)))
    raise RuntimeError(f"make_manifold: offending faces or cells remain after {max_rounds} rounds "
                       f"({total} samples flipped)")


def surface_nets(field: np.ndarray, origin: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V,3) float64 and quads (Q,4) int64 (counter-clockwise seen from outside).

    field: (nx, ny, nz) samples at origin + h * (i, j, k); must be >= 0 on the whole grid boundary.
    """
    f = np.asarray(field)
    if f.ndim != 3 or min(f.shape) < 3:
        raise ValueError(f"field must be a 3-D grid at least 3 samples wide, got shape {f.shape}")
    inside = f < 0
    if inside[[0, -1]].any() or inside[:, [0, -1]].any() or inside[:, :, [0, -1]].any():
        raise ValueError("the field is negative on the grid boundary: grow the grid so the surface is closed")
    nx, ny, nz = f.shape
    cell_shape = (nx - 1, ny - 1, nz - 1)

    any_in = np.zeros(cell_shape, bool)
    all_in = np.ones(cell_shape, bool)
    for dx, dy, dz in _CORNERS:
        c = inside[dx:nx - 1 + dx, dy:ny - 1 + dy, dz:nz - 1 + dz]
        any_in |= c
        all_in &= c
    active = np.flatnonzero(any_in & ~all_in)
    ci = np.stack(np.unravel_index(active, cell_shape), axis=-1)  # (M,3)

    # Corner values of the active cells (M,8) and the zero crossings on their 12 edges.
    idx = ci[:, None, :] + _CORNERS[None, :, :]
    vals = f[idx[..., 0], idx[..., 1], idx[..., 2]].astype(np.float64)
    va, vb = vals[:, _EDGES[:, 0]], vals[:, _EDGES[:, 1]]
    crossing = (va < 0) != (vb < 0)
    # Keep crossings off the corners: a corner where the field is exactly zero would otherwise give
    # several cells the same vertex (the mean is then strictly inside each cell, so vertices differ).
    t = np.clip(np.where(crossing, va / np.where(crossing, va - vb, 1.0), 0.0), 0.01, 0.99)
    ca, cb = _CORNERS[_EDGES[:, 0]], _CORNERS[_EDGES[:, 1]]
    pts = ca[None] + t[..., None] * (cb - ca)[None]  # (M,12,3) offsets inside the cell
    count = crossing.sum(axis=1)
    offset = (pts * crossing[..., None]).sum(axis=1) / count[:, None]
    verts = np.asarray(origin, np.float64) + h * (ci + offset)

    quads = []
    for axis in range(3):
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[axis] = slice(0, -1)
        hi[axis] = slice(1, None)
        change = inside[tuple(lo)] != inside[tuple(hi)]
        e = np.stack(np.nonzero(change), axis=-1)  # grid edge start points
        out_pos = inside[tuple(lo)][change]  # inside at the lower end: outward normal along +axis
        u, v = (axis + 1) % 3, (axis + 2) % 3  # (u, v, axis) is right-handed
        cells = np.repeat(e[:, None, :], 4, axis=1)
        for corner, (du, dv) in enumerate(((-1, -1), (0, -1), (0, 0), (-1, 0))):  # CCW in (u, v)
            cells[:, corner, u] += du
            cells[:, corner, v] += dv
        flat = np.ravel_multi_index((cells[..., 0], cells[..., 1], cells[..., 2]), cell_shape)
        q = np.searchsorted(active, flat)
        q = np.where(out_pos[:, None], q, q[:, ::-1])
        quads.append(q)
    return verts, np.concatenate(quads).astype(np.int64)


def ambiguity_counts(field: np.ndarray) -> dict:
    """Grid faces whose four corners alternate in sign (each makes a non-manifold mesh edge) and cells
    holding two surface sheets (a non-manifold vertex)."""
    inside = np.asarray(field) < 0
    return {"ambiguous_faces": int(sum(len(f) for _, f in _ambiguous_faces(inside))),
            "two_sheet_cells": int(np.sum(~_GOOD[_cell_configs(inside)]))}


def triangulate_quads(verts: np.ndarray, quads: np.ndarray) -> np.ndarray:
    """Split each quad along its shorter diagonal; (2Q, 3) triangles with the quads' winding."""
    a, b, c, d = (quads[:, i] for i in range(4))
    ac = np.sum((verts[a] - verts[c]) ** 2, axis=1)
    bd = np.sum((verts[b] - verts[d]) ** 2, axis=1)
    use_ac = (ac <= bd)[:, None]
    t1 = np.where(use_ac, np.stack([a, b, c], 1), np.stack([a, b, d], 1))
    t2 = np.where(use_ac, np.stack([a, c, d], 1), np.stack([b, c, d], 1))
    return np.concatenate([t1, t2])
