"""As-rigid-as-possible deformation (research 2.2.3, eqs. 5-11) and ARAP on scale vectors (4.1.1, eqs. 19-20),
baselines for the spring deformer. scipy.sparse, prefactorised; the local step fits rotations by SVD,
vectorised over vertices (laplacian.fit_rotations).

`ArapSolver` is classic ARAP over positions: hard constraints (handles) plus an optional soft anchor term
anchor_weight * |x_i - y_i|^2 on every vertex. Global step (eq. 10/11 with constraints moved to the right):

    (L_FF + alpha I) x_F = b_F - L_FC x_C + alpha y_F,   b_i = sum_j w_ij/2 (R_i + R_j)(p_i - p_j)

The rotations start from the best rigid fit of the constrained vertices (or given ones), so handles that
all move by one rigid motion give exactly that motion; each further iteration is local fit + global solve.

`ScaleArap` is the research's ARAP with scale vectors: the unknowns are the posed scale vectors s'_i
(v'_i = a'_i + s'_i), the rest vectors are the bind scale vectors, and R_i starts as the rotation of the bone
each vertex is attached to (rigid skinning as the initial guess). Since L has the constant vectors in its
kernel, every vertex gets a soft anchor towards its rigidly skinned scale vector R_i s_i (anchor_weight,
relative to the mean diagonal of L): far from joints it agrees with the neighbours and nothing moves; at a
joint the Laplacian term wins and the rigid discontinuity is smoothed.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from engine.skinning.laplacian import edge_weights, fit_rotations, index_set, kabsch, laplacian_matrix
from engine.skinning.types import Binding, MeshTopology, bone_endpoints, joint_rotations

__all__ = ["ArapSolver", "ScaleArap", "arap_rhs"]


def arap_rhs(rest: np.ndarray, rot: np.ndarray, edges: np.ndarray, w: np.ndarray) -> np.ndarray:
    """b_i = sum_j w_ij / 2 (R_i + R_j)(p_i - p_j), (V,3)."""
    n = rest.shape[0]
    i = np.concatenate([edges[:, 0], edges[:, 1]])
    j = np.concatenate([edges[:, 1], edges[:, 0]])
    ww = 0.5 * np.concatenate([w, w])
    contrib = ww[:, None] * np.einsum("hab,hb->ha", rot[i] + rot[j], rest[i] - rest[j])
    return np.stack([np.bincount(i, weights=contrib[:, k], minlength=n) for k in range(3)], 1)


class ArapSolver:
    """ARAP over vertex positions with hard constraints and optional soft anchors, prefactorised.

    rest (V,3), triangles (T,3), constrained (C,) indices; weights "cotangent" | "uniform";
    anchor_weight >= 0 (relative to the mean diagonal of L); weight_positions (V,3): where the edge weights
    are measured (default rest; ScaleArap measures them on the mesh while its rest vectors are scale vectors).
    """

    def __init__(self, rest: np.ndarray, triangles: np.ndarray, *, constrained=None, weights: str = "cotangent",
                 anchor_weight: float = 0.0, weight_positions: np.ndarray | None = None) -> None:
        self.rest = np.asarray(rest, np.float64)
        n = self.rest.shape[0]
        con = index_set(constrained, n, "constrained")
        if not (np.isfinite(anchor_weight) and anchor_weight >= 0):
            raise ValueError(f"anchor_weight = {anchor_weight!r}; valid: finite and >= 0")
        if con.size == 0 and anchor_weight == 0:
            raise ValueError("ARAP needs constrained vertices or anchor_weight > 0 (L is singular otherwise)")
        self.constrained = con
        wpos = self.rest if weight_positions is None else np.asarray(weight_positions, np.float64)
        self.edges, self.w = edge_weights(wpos, triangles, weights)
        self.L = laplacian_matrix(n, self.edges, self.w)
        free = np.ones(n, bool)
        free[con] = False
        self._free = free
        diag = self.L.diagonal()
        self.alpha = float(anchor_weight) * (float(diag.mean()) if diag.size else 1.0)
        lff = self.L[free][:, free]
        if self.alpha:
            lff = lff + self.alpha * sp.identity(lff.shape[0])
        self._lfc = self.L[free][:, ~free].tocsr()
        try:
            self._solve = spla.factorized(lff.tocsc()) if free.any() else None
        except RuntimeError as exc:
            raise ValueError(f"free vertices without any constraint: add handles or anchor_weight ({exc})") from None

    def solve(self, targets: np.ndarray | None = None, *, iterations: int = 5, rotations: np.ndarray | None = None,
              anchors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Positions (V,3) and final rotations (V,3,3). targets (C,3) for the constrained vertices (in the
        order they were given); rotations
        (V,3,3) initial guess (default: rigid fit of the constraints); anchors (V,3) soft targets (default rest)."""
        n = self.rest.shape[0]
        t = np.zeros((0, 3)) if targets is None else np.asarray(targets, np.float64)
        if t.shape != (self.constrained.size, 3):
            raise ValueError(f"targets has shape {t.shape}; valid: ({self.constrained.size}, 3)")
        if int(iterations) != iterations or iterations < 0:
            raise ValueError(f"iterations = {iterations!r}; valid: an integer >= 0")
        x = self.rest.copy()
        x[self.constrained] = t
        if rotations is None:
            rot = np.broadcast_to(kabsch(self.rest[self.constrained], t), (n, 3, 3)).copy()
        else:
            rot = np.asarray(rotations, np.float64)
        y = self.rest if anchors is None else np.asarray(anchors, np.float64)
        if self._solve is None:
            return x, rot
        known = self._lfc @ x[~self._free]
        for it in range(int(iterations) + 1):
            if it:
                rot = fit_rotations(self.rest, x, self.edges, self.w)
            rhs = arap_rhs(self.rest, rot, self.edges, self.w)[self._free] - known
            if self.alpha:
                rhs = rhs + self.alpha * y[self._free]
            x[self._free] = np.stack([self._solve(rhs[:, k]) for k in range(3)], 1)
        return x, rot


class ScaleArap:
    """ARAP on scale vectors (eqs. 19-20) for one mesh: prefactorised at construction, `solve` per pose."""

    def __init__(self, topology: MeshTopology, binding: Binding, bind_joints: np.ndarray, *,
                 weights: str = "cotangent", anchor_weight: float = 1e-2) -> None:
        if not anchor_weight > 0:
            raise ValueError(f"anchor_weight = {anchor_weight!r}; valid: > 0 (fixes the free translation of S')")
        self.binding = binding
        self.bind_joints = np.asarray(bind_joints, np.float64)
        self.scale = np.asarray(binding.scale, np.float64)
        self.solver = ArapSolver(self.scale, topology.triangles, weights=weights, anchor_weight=anchor_weight,
                                 weight_positions=topology.positions)

    def solve(self, posed_joints: np.ndarray, *, iterations: int = 0) -> np.ndarray:
        """Deformed control points (V,3) float64 for joint world matrices posed_joints (J,4,4)."""
        posed = np.asarray(posed_joints, np.float64)
        p, c = bone_endpoints(self.binding.bones, posed)
        b = self.binding.bone
        attach = p[b].astype(np.float64) + np.asarray(self.binding.t, np.float64)[:, None] * (c[b] - p[b])
        rot = joint_rotations(self.bind_joints, posed)[self.binding.bones.parent_joint][b]
        rigid = np.einsum("vij,vj->vi", rot, self.scale)
        s_new, _ = self.solver.solve(None, iterations=iterations, rotations=rot, anchors=rigid)
        return attach + s_new
