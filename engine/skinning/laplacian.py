"""Laplacian surface editing (LSE, research 2.2.2; Sorkine et al.), a baseline the spring deformer is compared
with, plus the sparse pieces ARAP shares: edge weights, the Laplacian matrix, per-vertex rotation fits.

Region of interest: kinematic vertices (handles moved to targets), passive vertices (free: solved for) and
static vertices (the boundary, held where they are). Vertices outside the ROI keep their base positions;
a passive vertex next to one of them treats it as fixed.

The solve keeps the differential coordinates delta_i = sum_j w_ij (x_i - x_j) of the rest shape:
L_PP x_P = R delta_P - L_PC x_C over the passive rows P, with the known positions x_C on the right. L_PP is
factorised once at construction (sparse LU of scipy), so each edit is two triangular solves per coordinate.

Plain LSE is not rotation invariant (the research notes its artifacts under large rotations). The delta are
therefore rotated: first by the best rigid fit (Kabsch) of all constrained ROI vertices, rest -> target, then
`rotation_iterations` times by per-vertex rotations fitted to the solved one-rings (the local step of ARAP,
vectorised SVD over vertices), each followed by a re-solve. When every handle moves by one rigid motion, the
first solve reproduces that motion exactly.

Weights: "uniform" (w_ij = 1: L = D - A; the research's I - D^-1 A gives the same solution, rows scaled)
or "cotangent" (w_ij = (cot a + cot b) / 2, negative values clamped to 0 so L stays positive semidefinite).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = ["WEIGHTS", "index_set", "edge_weights", "laplacian_matrix", "fit_rotations", "kabsch", "LaplacianEditor"]

WEIGHTS = ("cotangent", "uniform")


def _check_weights(weights: str) -> None:
    if weights not in WEIGHTS:
        raise ValueError(f"weights = {weights!r}; valid: {', '.join(WEIGHTS)}")


def edge_weights(positions: np.ndarray, triangles: np.ndarray, weights: str = "cotangent"
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Unique edges (E,2), i < j, of the triangles and their weights (E,)."""
    _check_weights(weights)
    x = np.asarray(positions, np.float64)
    tri = np.asarray(triangles, np.int64).reshape(-1, 3)
    tri = tri[(tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 2] != tri[:, 0])]
    pairs, cots = [], []
    for a, b, c in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):  # edge (a, b), opposite corner c
        ea, eb = x[tri[:, a]] - x[tri[:, c]], x[tri[:, b]] - x[tri[:, c]]
        cross = np.linalg.norm(np.cross(ea, eb), axis=1)
        ok = cross > 1e-12 * np.maximum(np.einsum("ij,ij->i", ea, ea) + np.einsum("ij,ij->i", eb, eb), 1e-300)
        cots.append(np.where(ok, np.einsum("ij,ij->i", ea, eb) / np.where(ok, cross, 1.0), 0.0))
        pairs.append(np.sort(tri[:, [a, b]], axis=1))
    pairs_all = np.concatenate(pairs)
    n = int(x.shape[0])
    keys = pairs_all[:, 0] * n + pairs_all[:, 1]
    ukeys, inv = np.unique(keys, return_inverse=True)
    edges = np.stack([ukeys // n, ukeys % n], 1)
    if weights == "uniform":
        return edges, np.ones(edges.shape[0])
    w = np.bincount(inv, weights=0.5 * np.concatenate(cots), minlength=ukeys.shape[0])
    return edges, np.maximum(w, 0.0)


def laplacian_matrix(n: int, edges: np.ndarray, w: np.ndarray) -> sp.csr_matrix:
    """Symmetric Laplacian L = D - W (V,V) from edges (E,2) with weights (E,)."""
    i, j = edges[:, 0], edges[:, 1]
    wmat = sp.coo_matrix((np.concatenate([w, w]), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n, n))
    deg = np.asarray(wmat.sum(axis=1)).ravel()
    return (sp.diags(deg) - wmat).tocsr()


def fit_rotations(rest: np.ndarray, current: np.ndarray, edges: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per-vertex rotations (V,3,3) best mapping the rest one-ring edges to the current ones (ARAP local step):
    S_i = sum_j w_ij (p_i - p_j)(p'_i - p'_j)^T = U S V^T, R_i = V U^T with the sign fixed to det = +1."""
    n = rest.shape[0]
    i = np.concatenate([edges[:, 0], edges[:, 1]])
    j = np.concatenate([edges[:, 1], edges[:, 0]])
    ww = np.concatenate([w, w])
    e0 = rest[i] - rest[j]
    e1 = current[i] - current[j]
    outer = (ww[:, None, None] * e0[:, :, None] * e1[:, None, :]).reshape(-1, 9)
    cov = np.stack([np.bincount(i, weights=outer[:, k], minlength=n) for k in range(9)], 1).reshape(n, 3, 3)
    u, _, vt = np.linalg.svd(cov)
    r = np.einsum("vji,vkj->vik", vt, u)  # V U^T
    flip = np.linalg.det(r) < 0
    if np.any(flip):
        u[flip, :, 2] *= -1.0
        r[flip] = np.einsum("vji,vkj->vik", vt[flip], u[flip])
    return r


def kabsch(rest: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Best rotation (3,3) taking centred rest points (N,3) to centred current points; identity for N < 2."""
    rest = np.asarray(rest, np.float64)
    current = np.asarray(current, np.float64)
    if rest.shape[0] < 2:
        return np.eye(3)
    h = (rest - rest.mean(0)).T @ (current - current.mean(0))
    u, _, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(vt.T @ u.T)) or 1.0
    return vt.T @ np.diag([1.0, 1.0, d]) @ u.T


def index_set(value, n: int, what: str) -> np.ndarray:
    """Vertex indices in the caller's order (targets follow it); ValueError for repeats or out of range."""
    arr = np.asarray(value if value is not None else [], np.int64).reshape(-1)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{what} index out of range: [{int(arr.min())}, {int(arr.max())}]; valid: 0..{n - 1}")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{what} repeats vertex indices")
    return arr


class LaplacianEditor:
    """LSE over a fixed ROI, prefactorised.

    rest (V,3) positions the edit is defined on, triangles (T,3); kinematic / passive / static index sets;
    weights "cotangent" | "uniform"; rotation_iterations >= 0 re-solves with per-vertex rotated deltas.
    """

    def __init__(self, rest: np.ndarray, triangles: np.ndarray, *, kinematic, passive, static=None,
                 weights: str = "cotangent", rotation_iterations: int = 2) -> None:
        _check_weights(weights)
        if int(rotation_iterations) != rotation_iterations or rotation_iterations < 0:
            raise ValueError(f"rotation_iterations = {rotation_iterations!r}; valid: an integer >= 0")
        self.rest = np.asarray(rest, np.float64)
        n = self.rest.shape[0]
        self.kinematic = index_set(kinematic, n, "kinematic")
        self.passive = index_set(passive, n, "passive")
        self.static = index_set(static, n, "static")
        if np.intersect1d(self.passive, np.union1d(self.kinematic, self.static)).size or \
                np.intersect1d(self.kinematic, self.static).size:
            raise ValueError("kinematic, passive and static sets must be disjoint")
        self.rotation_iterations = int(rotation_iterations)
        self.edges, self.w = edge_weights(self.rest, triangles, weights)
        self.L = laplacian_matrix(n, self.edges, self.w)
        self.delta = self.L @ self.rest  # (V,3) differential coordinates at rest
        free = np.zeros(n, bool)
        free[self.passive] = True
        self._free = free
        self._lpp = self.L[self.passive][:, self.passive].tocsc()
        self._lpc = self.L[self.passive][:, ~free].tocsr()
        try:
            self._solve = spla.factorized(self._lpp) if self.passive.size else None
        except RuntimeError as exc:  # exactly singular: a passive island without constraints
            raise ValueError(f"the passive set has vertices connected to no kinematic or static vertex "
                             f"({exc})") from None
        roi_fixed = np.concatenate([self.kinematic, self.static])
        self._fit_idx = roi_fixed

    def solve(self, targets: np.ndarray, *, base: np.ndarray | None = None) -> np.ndarray:
        """Positions (V,3): kinematic vertices at `targets` (K,3, in the order `kinematic` was given), static and
        outside-ROI vertices at `base` (default: rest), passive vertices from the Laplacian system."""
        targets = np.asarray(targets, np.float64)
        if targets.shape != (self.kinematic.size, 3):
            raise ValueError(f"targets has shape {targets.shape}; valid: ({self.kinematic.size}, 3)")
        x = np.array(self.rest if base is None else base, np.float64)
        if x.shape != self.rest.shape:
            raise ValueError(f"base has shape {x.shape}; valid: {self.rest.shape}")
        x[self.kinematic] = targets
        if self._solve is None:
            return x
        fixed = x[~self._free]
        rhs_known = self._lpc @ fixed
        r_glob = kabsch(self.rest[self._fit_idx], x[self._fit_idx])
        rot = np.broadcast_to(r_glob, (x.shape[0], 3, 3))
        for it in range(self.rotation_iterations + 1):
            if it:
                rot = fit_rotations(self.rest, x, self.edges, self.w)
            d = np.einsum("vij,vj->vi", rot[self.passive], self.delta[self.passive])
            rhs = d - rhs_known
            x[self.passive] = np.stack([self._solve(rhs[:, k]) for k in range(3)], 1)
        return x
