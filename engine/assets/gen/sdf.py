"""Signed-distance primitives and their smooth union, evaluated on grids (for meshing) or point sets.

Distances are in metres, negative inside. The primitives are the usual closed forms (capsule with a
linearly varying radius, the bound-preserving ellipsoid estimate |p/r| (|p/r| - 1) / |p/r^2|); the union
is the polynomial smooth minimum smin(a, b, k) = min(a, b) - k/4 * max(k - |a - b|, 0)^2 / k^2, which
equals min(a, b) once the two distances differ by more than k. That property lets the grid evaluation
skip every grid point farther than k (plus a margin) from a primitive's bounding box exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def smin(a: np.ndarray, b: np.ndarray, k: float) -> np.ndarray:
    """Polynomial smooth minimum with blend width ``k`` metres (k = 0: plain min)."""
    if k <= 0:
        return np.minimum(a, b)
    h = np.maximum(k - np.abs(a - b), 0.0) / k
    return np.minimum(a, b) - h * h * (0.25 * k)


def smax(a: np.ndarray, b: np.ndarray, k: float) -> np.ndarray:
    """Polynomial smooth maximum (intersection)."""
    return -smin(-a, -b, k)


@dataclass
class Primitive:
    """Base: a named shape owned by skeleton joint ``joint``, blended into the union with width ``k``;
    ``floor``: when not None, the shape is cut by the half-space y >= floor (flat soles)."""

    joint: str
    k: float = 0.02
    floor: float | None = None

    def raw_distance(self, p: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def raw_bounds(self) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError

    def distance(self, p: np.ndarray) -> np.ndarray:
        d = self.raw_distance(p)
        if self.floor is not None:
            d = smax(d, self.floor - p[..., 1], 0.004)
        return d

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.raw_bounds()


@dataclass
class RoundCone(Primitive):
    """Segment a -> b swept by a sphere whose radius goes linearly from ra to rb (a tapered capsule)."""

    a: np.ndarray = field(default_factory=lambda: np.zeros(3))
    b: np.ndarray = field(default_factory=lambda: np.zeros(3))
    ra: float = 0.05
    rb: float = 0.05

    def raw_distance(self, p: np.ndarray) -> np.ndarray:
        a, b = np.asarray(self.a, np.float64), np.asarray(self.b, np.float64)
        ab = b - a
        t = np.clip(((p - a) @ ab) / float(ab @ ab), 0.0, 1.0)
        q = p - (a + t[..., None] * ab)
        return np.sqrt(np.sum(q * q, axis=-1)) - (self.ra + t * (self.rb - self.ra))

    def raw_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        r = max(self.ra, self.rb)
        a, b = np.asarray(self.a, np.float64), np.asarray(self.b, np.float64)
        return np.minimum(a, b) - r, np.maximum(a, b) + r


@dataclass
class Ellipsoid(Primitive):
    """Ellipsoid with semi-axes ``radii`` along the columns of ``axes`` (3x3 orthonormal, world)."""

    center: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radii: np.ndarray = field(default_factory=lambda: np.full(3, 0.1))
    axes: np.ndarray = field(default_factory=lambda: np.eye(3))

    def raw_distance(self, p: np.ndarray) -> np.ndarray:
        local = (p - np.asarray(self.center, np.float64)) @ np.asarray(self.axes, np.float64)
        r = np.asarray(self.radii, np.float64)
        k0 = np.sqrt(np.sum((local / r) ** 2, axis=-1))
        k1 = np.sqrt(np.sum((local / (r * r)) ** 2, axis=-1))
        return k0 * (k0 - 1.0) / np.maximum(k1, 1e-12)

    def raw_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        ext = np.abs(np.asarray(self.axes, np.float64)) @ np.asarray(self.radii, np.float64)
        c = np.asarray(self.center, np.float64)
        return c - ext, c + ext


def union_at_points(prims: list[Primitive], p: np.ndarray, *, far: float = 1.0) -> np.ndarray:
    """Smooth union of all primitives at points p (..., 3), combined in the same order and from the same
    ``far`` start value as :func:`union_on_grid`, so both agree near the surface."""
    f = np.full(p.shape[:-1], far, np.float64)
    for prim in prims:
        f = smin(f, prim.distance(p), prim.k)
    return f


def union_on_grid(prims: list[Primitive], origin: np.ndarray, h: float, shape: tuple[int, int, int],
                  *, far: float = 1.0) -> np.ndarray:
    """Smooth union sampled at origin + h * (i, j, k) over ``shape``; float32 array.

    Each primitive is evaluated only inside its bounding box grown by its blend width and two cells;
    elsewhere it is farther than k from the surface band, where smin equals the plain min exactly.
    Points far from every primitive hold ``far`` (positive: outside).
    """
    origin = np.asarray(origin, np.float64)
    f = np.full(shape, far, np.float64)
    axes = [origin[a] + h * np.arange(shape[a]) for a in range(3)]
    for prim in prims:
        lo, hi = prim.bounds()
        margin = prim.k + 2 * h
        lo_i = np.maximum(np.floor((lo - margin - origin) / h).astype(int), 0)
        hi_i = np.minimum(np.ceil((hi + margin - origin) / h).astype(int) + 1, shape)
        if np.any(hi_i <= lo_i):
            continue
        xs, ys, zs = (axes[a][lo_i[a]:hi_i[a]] for a in range(3))
        p = np.stack(np.meshgrid(xs, ys, zs, indexing="ij"), axis=-1)
        sub = (slice(lo_i[0], hi_i[0]), slice(lo_i[1], hi_i[1]), slice(lo_i[2], hi_i[2]))
        f[sub] = smin(f[sub], prim.distance(p), prim.k)
    return f.astype(np.float32)


def gradient_at_points(prims: list[Primitive], p: np.ndarray, eps: float) -> np.ndarray:
    """Central-difference gradient (..., 3) of the union."""
    g = np.empty(p.shape)
    for a in range(3):
        d = np.zeros(3)
        d[a] = eps
        g[..., a] = (union_at_points(prims, p + d) - union_at_points(prims, p - d)) / (2 * eps)
    return g
