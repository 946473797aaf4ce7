"""Small vector helpers shared by the spring modules (package-internal): dot, norms, unit vectors, angles."""
from __future__ import annotations

import numpy as np

_SIN_EPS = 1e-9  # below this sine, the rotation direction of a torsion force is undefined: no force


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Dot product of two 1-D arrays without BLAS (BLAS threads stall on a busy machine; this is tiny work)."""
    return float(np.einsum("i,i->", a, b))


def _norm(a: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("...i,...i->...", a, a))


def _unit(a: np.ndarray, tiny: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unit vectors or 0, lengths, nonzero mask)."""
    n = _norm(a)
    nz = n > tiny
    return a * (nz / np.where(nz, n, 1.0))[..., None], n, nz


def _angle(u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Angle between unit vectors u and w, the component of w orthogonal to u, and its length (sine)."""
    cos = np.einsum("...i,...i->...", u, w)
    perp = w - cos[..., None] * u
    sin = _norm(perp)
    return np.arctan2(sin, cos), perp, sin
