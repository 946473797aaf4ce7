"""Isoline splines on the skin carrying iso-values (Bang and Lee 2018, research 002): one joint's weight field.

Strokes drawn on the skin become surface samples (triangle + barycentric); each sample row of A interpolates the
weight field w at that point and s holds the stroke's iso-value. The field solves

    (alpha Q + A^T A) w = A^T s,   Q = -1/2 L + 1/2 L M^-1 L,   alpha = 0.1

with L the cotangent Laplacian (negative semidefinite, as the paper writes it: here L = -(D - W)) and M the
lumped (one third of the incident triangle areas) mass matrix. The mesh is scaled so its mean edge length is 1
before L and M are built: Q mixes a Dirichlet term (scale free) with a Laplacian-energy term (1 / length^2), and
alpha is then measured in edges, the same on a 3k and a 90k mesh. The constraints are soft; where a sample misses
its iso-value by more than ``tolerance`` (0.01 by default) the constraint rows are weighted up (x10, at most three
times), so the field meets the strokes.

Local solve (the paper's local region): only the vertices where the joint's weight is > 0.05 plus 4 rings of
neighbours are unknowns; the others keep their weights and enter as fixed values. Global: every vertex.

Anchors (the paper's K): every stroke's samples take their iso-value from the stroke's anchors, linearly along
the stroke (one anchor: constant). w is affine in the anchor values, w = c + K a, with K (V, anchors) and c solved
once from one factorisation; dragging an anchor is then a dense (V x anchors) product (tens of microseconds on a
16k mesh), which is how the editor changes an iso-value at interactive rates.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = ["SplineSamples", "SplineField", "ALPHA", "LOCAL_THRESHOLD", "LOCAL_RINGS", "mass_matrix",
           "closest_surface_points"]

ALPHA = 0.1
LOCAL_THRESHOLD = 0.05
LOCAL_RINGS = 4


@dataclass
class SplineSamples:
    """One isoline: samples on the surface (triangles over control points, barycentrics) and where each sample
    lies along the stroke (0..1, for anchors)."""

    faces: np.ndarray         # (N,) triangle indices
    barycentrics: np.ndarray  # (N,3)
    along: np.ndarray         # (N,) in [0, 1]
    anchors: np.ndarray       # (A,) positions of the stroke's anchors along it, increasing, in [0, 1]


def mass_matrix(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(V,) lumped mass: one third of the area of every incident triangle (tiny floor for isolated vertices)."""
    x = np.asarray(positions, np.float64)
    t = np.asarray(triangles, np.int64)
    area = 0.5 * np.linalg.norm(np.cross(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]]), axis=1)
    m = np.bincount(t.reshape(-1), weights=np.repeat(area / 3, 3), minlength=x.shape[0])
    floor = 1e-8 * max(float(m.max(initial=0.0)), 1e-300)
    return np.maximum(m, floor)


def closest_surface_points(positions: np.ndarray, triangles: np.ndarray, points: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """(faces (N,), barycentrics (N,3)) of the closest surface point of each world point (brute force over the
    triangles near the point's nearest vertices)."""
    from scipy.spatial import cKDTree

    x = np.asarray(positions, np.float64)
    t = np.asarray(triangles, np.int64)
    p = np.asarray(points, np.float64)
    centers = x[t].mean(axis=1)
    k = min(16, t.shape[0])
    _, cand = cKDTree(centers).query(p, k=k)
    cand = np.asarray(cand).reshape(p.shape[0], k)
    best_f = np.zeros(p.shape[0], np.int64)
    best_b = np.zeros((p.shape[0], 3))
    best_d = np.full(p.shape[0], np.inf)
    for c in range(k):
        f = cand[:, c]
        b = _closest_on_triangles(p, x[t[f, 0]], x[t[f, 1]], x[t[f, 2]])
        q = b[:, :1] * x[t[f, 0]] + b[:, 1:2] * x[t[f, 1]] + b[:, 2:] * x[t[f, 2]]
        d = np.linalg.norm(q - p, axis=1)
        better = d < best_d
        best_d[better], best_f[better], best_b[better] = d[better], f[better], b[better]
    return best_f, best_b


def _closest_on_triangles(p, a, b, c):
    """Barycentrics of the closest point of triangles (a, b, c) to points p (Ericson's region tests, batched)."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = (ab * ap).sum(1), (ac * ap).sum(1)
    bp = p - b
    d3, d4 = (ab * bp).sum(1), (ac * bp).sum(1)
    cp = p - c
    d5, d6 = (ab * cp).sum(1), (ac * cp).sum(1)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    out = np.zeros((p.shape[0], 3))
    den = va + vb + vc
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(den != 0, vb / den, 0.0)
        w = np.where(den != 0, vc / den, 0.0)
    out[:] = np.stack([1 - v - w, v, w], 1)
    # edges and vertices (checked in reverse priority so the vertex regions win)
    with np.errstate(divide="ignore", invalid="ignore"):
        e_bc = (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0)
        t_bc = np.clip((d4 - d3) / ((d4 - d3) + (d5 - d6)), 0, 1)
        e_ac = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
        t_ac = np.clip(d2 / (d2 - d6), 0, 1)
        e_ab = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
        t_ab = np.clip(d1 / (d1 - d3), 0, 1)
    out[e_bc] = np.stack([np.zeros(e_bc.sum()), 1 - t_bc[e_bc], t_bc[e_bc]], 1)
    out[e_ac] = np.stack([1 - t_ac[e_ac], np.zeros(e_ac.sum()), t_ac[e_ac]], 1)
    out[e_ab] = np.stack([1 - t_ab[e_ab], t_ab[e_ab], np.zeros(e_ab.sum())], 1)
    out[(d6 >= 0) & (d5 <= d6)] = [0, 0, 1]
    out[(d3 >= 0) & (d4 <= d3)] = [0, 1, 0]
    out[(d1 <= 0) & (d2 <= 0)] = [1, 0, 0]
    return out


class SplineField:
    """The factorised solve of one joint's weight field for a set of isolines (see the module docstring).

    ``positions`` (V,3) and ``triangles`` (T,3) over welded control points; ``current`` (V,) the joint's weights
    now; ``splines`` the isolines; ``local``: solve only near the joint; ``adjacency``: (offsets, counts, index)
    CSR one-rings for the local region (engine.skinning.types.MeshTopology), needed with ``local``."""

    def __init__(self, positions: np.ndarray, triangles: np.ndarray, current: np.ndarray,
                 splines: list[SplineSamples], *, local: bool = False, topology=None, alpha: float = ALPHA,
                 tolerance: float = 0.01) -> None:
        from engine.skinning.laplacian import edge_weights, laplacian_matrix

        x = np.asarray(positions, np.float64)
        tri = np.asarray(triangles, np.int64)
        n = x.shape[0]
        if not splines:
            raise ValueError("no isoline: the field needs at least one stroke with an iso-value")
        edges, _ = edge_weights(x, tri, "uniform")
        mean_edge = float(np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1).mean()) if edges.size else 1.0
        xs = x / max(mean_edge, 1e-300)
        e, cw = edge_weights(xs, tri, "cotangent")
        lp = laplacian_matrix(n, e, cw)          # D - W, positive semidefinite
        minv = sp.diags(1.0 / mass_matrix(xs, tri))
        q = (0.5 * lp + 0.5 * (lp @ minv @ lp)).tocsr()  # -1/2 L + 1/2 L M^-1 L with L = -(D - W)
        self.n = n
        self.current = np.asarray(current, np.float64).copy()
        # sample rows: A (S, V) and the anchor matrix H (S, anchors): s = H a
        rows, cols, vals, hrows, hcols, hvals = [], [], [], [], [], []
        s0 = 0
        a0 = 0
        for sp_ in splines:
            f = np.asarray(sp_.faces, np.int64)
            b = np.asarray(sp_.barycentrics, np.float64)
            k = f.shape[0]
            r = s0 + np.arange(k)
            rows.append(np.repeat(r, 3))
            cols.append(tri[f].reshape(-1))
            vals.append(b.reshape(-1))
            anc = np.asarray(sp_.anchors, np.float64)
            if anc.size == 1:
                hrows.append(r)
                hcols.append(np.full(k, a0))
                hvals.append(np.ones(k))
            else:
                seg = np.clip(np.searchsorted(anc, sp_.along, side="right") - 1, 0, anc.size - 2)
                u = np.clip((sp_.along - anc[seg]) / np.maximum(anc[seg + 1] - anc[seg], 1e-12), 0, 1)
                hrows += [r, r]
                hcols += [a0 + seg, a0 + seg + 1]
                hvals += [1 - u, u]
            s0 += k
            a0 += anc.size
        a = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(s0, n))
        self.h = sp.csr_matrix((np.concatenate(hvals), (np.concatenate(hrows), np.concatenate(hcols))),
                               shape=(s0, a0))
        self.a = a
        if local:
            if topology is None:
                raise ValueError("a local solve needs the mesh topology (one-rings)")
            from engine.skinning.roi import grow_rings

            seeds = np.flatnonzero(self.current > LOCAL_THRESHOLD)
            touched = np.unique(tri[np.concatenate([np.asarray(s.faces, np.int64) for s in splines])].reshape(-1))
            seeds = np.union1d(seeds, touched)
            free = np.union1d(seeds, grow_rings(topology, seeds, LOCAL_RINGS)).astype(np.int64)
        else:
            free = np.arange(n)
        fixed = np.setdiff1d(np.arange(n), free)
        self.free, self.fixed = free, fixed
        self.alpha = float(alpha)
        self.q = q
        weight = 1.0
        for _ in range(4):
            self._factor(weight)
            self.c, self.k = self._basis()
            if splines and self._worst(np.ones(a0) * 0.5) <= tolerance and self._worst(np.linspace(0, 1, a0)) \
                    <= tolerance:
                break
            weight *= 10.0
        self.constraint_weight = weight

    def _factor(self, weight: float) -> None:
        f = self.free
        sys = (self.alpha * self.q + weight * (self.a.T @ self.a)).tocsr()
        self._sys_ff = sys[f][:, f].tocsc()
        self._sys_fc = sys[f][:, self.fixed]
        self._at = (weight * self.a.T).tocsr()[f]
        self._lu = spla.splu(self._sys_ff)

    def _basis(self) -> tuple[np.ndarray, np.ndarray]:
        """(c (V,), K (V, anchors)): w = c + K a."""
        c = self.current.copy()
        rhs_c = -(self._sys_fc @ self.current[self.fixed]) if self.fixed.size else np.zeros(self.free.size)
        c[self.free] = self._lu.solve(rhs_c)
        kf = self._lu.solve(np.asarray((self._at @ self.h).todense()))
        k = np.zeros((self.n, self.h.shape[1]))
        k[self.free] = kf.reshape(self.free.size, -1)
        return c, k

    def _worst(self, anchors: np.ndarray) -> float:
        w = self.c + self.k @ anchors
        return float(np.abs(self.a @ w - self.h @ anchors).max(initial=0.0))

    def weights(self, anchors: np.ndarray) -> np.ndarray:
        """(V,) the joint's field for the anchor values (clipped to [0, 1])."""
        a = np.asarray(anchors, np.float64)
        if a.shape != (self.k.shape[1],) or not np.isfinite(a).all():
            raise ValueError(f"expected {self.k.shape[1]} finite anchor values, got {a.shape}")
        return np.clip(self.c + self.k @ a, 0.0, 1.0)

    def sample_values(self, w: np.ndarray) -> np.ndarray:
        """(S,) the field interpolated at the samples."""
        return self.a @ np.asarray(w, np.float64)
