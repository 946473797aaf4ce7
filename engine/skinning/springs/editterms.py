"""The surface edits as the spring solver sees them: `EditTerms`, the per-frame per-vertex reduction of an edit
stack (the F_e input of one iteration, with the held static sets), and `EditSource`, what can produce them
(engine.skinning.edits.EditStack). The edits themselves (regions, targets, profiles, keys) live in
engine/skinning/edits.py, which builds on this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["EditTerms", "EditSource"]


@dataclass
class EditTerms:
    """Per-frame reduction of an edit stack: the F_e input of one spring iteration.

    stiffness (V,) K_i = sum k_e w_e; weighted_target (V,3) C_i = sum k_e w_e v'_i; q (V,) sum k_e w_e |v'_i|^2.
    F_e(i) = C_i - K_i v_i; energy = 0.5 sum_i (K_i |v_i|^2 - 2 C_i . v_i + Q_i) >= 0.
    held (V,) bool or None: vertices the solver holds in place (static in an edit, not kinematic or passive in
    any; see engine/skinning/edits.py). None holds nothing.
    """

    stiffness: np.ndarray
    weighted_target: np.ndarray
    q: np.ndarray
    held: np.ndarray | None = None

    @classmethod
    def empty(cls, n_vertices: int) -> EditTerms:
        return cls(np.zeros(n_vertices), np.zeros((n_vertices, 3)), np.zeros(n_vertices))

    @property
    def any_held(self) -> bool:
        return self.held is not None and bool(np.any(self.held))

    @property
    def active(self) -> np.ndarray:
        """(V,) bool: vertices that are kinematic in at least one edit with non-zero weight x stiffness."""
        return self.stiffness > 0.0

    def force(self, x: np.ndarray) -> np.ndarray:
        return self.weighted_target - self.stiffness[:, None] * x

    def energy(self, x: np.ndarray) -> float:
        e = self.stiffness * np.einsum("ij,ij->i", x, x) - 2.0 * np.einsum("ij,ij->i", self.weighted_target, x) + self.q
        return 0.5 * float(np.sum(np.maximum(e, 0.0)))


class EditSource(Protocol):
    """What `SpringDeformer.solve` accepts as edits besides ready `EditTerms` (engine.skinning.edits.EditStack)."""

    def terms(self, n_vertices: int, attach: np.ndarray, rot: np.ndarray, time: float = 0.0) -> EditTerms:
        """The per-vertex `EditTerms` at clip `time` for posed attachments (V,3) and bone rotations (V,3,3)."""
        ...
