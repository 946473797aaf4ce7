"""Strokes (research 7.1): timestamped samples -> Ramer-Douglas-Peucker reduction -> a composite cubic Bezier
through the kept points -> position, time and frame at any arc-length parameter t in [0, 1].

* Reduction: RDP with epsilon in the samples' units: 8 px at 1080 window rows (scaled with the window height,
  :func:`window_epsilon`) for 2D strokes, 0.01 m for 3D strokes; configurable.
* Curve: the kept points are interpolated by a C2 cubic spline over chord length (natural ends: "curvature at
  the end of one segment coincides with the next"), written as one cubic Bezier segment per pair of kept points
  (:attr:`Stroke.control_points`, (S, 4, D)), so the knots can be shown and dragged.
* Parameter: ``t`` is the fraction of arc length (a dense table inverted by interpolation).
* Frames: tangent T, normal N, binormal B = T x N by parallel transport (rotation-minimising) from a reference
  normal at t = 0 (by default the axis least aligned with the start tangent, or a vector the caller gives, e.g.
  the posing plane's normal, so that two strokes get comparable frames). A straight stroke therefore has a
  well-defined frame; a cusp keeps the last frame. Never NaN.

Strokes are plain data (numpy arrays); empty, one-point and zero-length strokes are refused with a
:class:`StrokeError` (a ValueError) that says what is wrong.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["StrokeError", "rdp", "window_epsilon", "Stroke", "DEFAULT_EPSILON_PX", "DEFAULT_EPSILON_M"]

DEFAULT_EPSILON_PX = 8.0  # at 1080 window rows
DEFAULT_EPSILON_M = 0.01
_TABLE_PER_SEGMENT = 48  # arc-length table samples per Bezier segment


class StrokeError(ValueError):
    """A stroke that cannot be used: the message says what is wrong (and where, when the caller adds it)."""


def window_epsilon(height: int, epsilon_px: float = DEFAULT_EPSILON_PX) -> float:
    """The RDP epsilon in pixels for a window ``height`` rows tall (8 px at 1080 rows, scaled)."""
    if not height > 0:
        raise ValueError(f"window height must be > 0, got {height!r}")
    return float(epsilon_px) * float(height) / 1080.0


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = b - a
    denom = float(ab @ ab)
    if denom <= 0.0:
        return np.linalg.norm(p - a, axis=1)
    t = np.clip((p - a) @ ab / denom, 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=1)


def rdp(points: np.ndarray, epsilon: float) -> np.ndarray:
    """Indices of the points Ramer-Douglas-Peucker keeps (first and last always), ascending."""
    p = np.asarray(points, np.float64)
    if p.ndim != 2 or len(p) == 0:
        raise StrokeError(f"points must be (N, D) with N >= 1, got shape {p.shape}")
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    n = len(p)
    keep = np.zeros(n, bool)
    keep[0] = keep[-1] = True
    stack = [(0, n - 1)]
    while stack:  # iterative: long strokes never hit the recursion limit
        i, j = stack.pop()
        if j <= i + 1:
            continue
        d = _segment_distance(p[i + 1:j], p[i], p[j])
        k = int(np.argmax(d))
        if d[k] > epsilon:
            m = i + 1 + k
            keep[m] = True
            stack.extend(((i, m), (m, j)))
    return np.flatnonzero(keep)


def _spline_controls(pts: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Bezier control points (S, 4, D) of the natural C2 cubic spline through ``pts`` at parameters ``u``."""
    n, dim = pts.shape
    if n == 2:
        a, b = pts
        return np.stack([a, a + (b - a) / 3, a + 2 * (b - a) / 3, b])[None]
    h = np.diff(u)
    # second derivatives M at the knots (natural: M_0 = M_{n-1} = 0): tridiagonal system
    m = np.zeros((n, dim))
    sub, diag, sup = h[:-1], 2 * (h[:-1] + h[1:]), h[1:]
    rhs = 6 * (np.diff(pts[1:], axis=0) / h[1:, None] - np.diff(pts[:-1], axis=0) / h[:-1, None])
    # Thomas algorithm
    k = n - 2
    c = np.zeros(k)
    d = np.zeros((k, dim))
    for i in range(k):
        den = diag[i] - (sub[i] * c[i - 1] if i else 0.0)
        c[i] = sup[i] / den if i < k - 1 else 0.0
        d[i] = (rhs[i] - (sub[i] * d[i - 1] if i else 0.0)) / den
    for i in range(k - 1, -1, -1):
        m[i + 1] = d[i] - (c[i] * m[i + 2] if i < k - 1 else 0.0)
    # first derivatives at both ends of each segment
    dp = np.diff(pts, axis=0) / h[:, None]
    d0 = dp - h[:, None] * (2 * m[:-1] + m[1:]) / 6
    d1 = dp + h[:, None] * (m[:-1] + 2 * m[1:]) / 6
    p0, p3 = pts[:-1], pts[1:]
    return np.stack([p0, p0 + d0 * h[:, None] / 3, p3 - d1 * h[:, None] / 3, p3], axis=1)


def _bezier(ctrl: np.ndarray, s: np.ndarray, derivative: int = 0) -> np.ndarray:
    """Points (or derivatives w.r.t. the local parameter s in [0,1]) of Bezier segments ctrl (K,4,D) at s (K,)."""
    s = s[:, None]
    p0, p1, p2, p3 = ctrl[:, 0], ctrl[:, 1], ctrl[:, 2], ctrl[:, 3]
    r = 1.0 - s
    if derivative == 0:
        return r ** 3 * p0 + 3 * r * r * s * p1 + 3 * r * s * s * p2 + s ** 3 * p3
    if derivative == 1:
        return 3 * (r * r * (p1 - p0) + 2 * r * s * (p2 - p1) + s * s * (p3 - p2))
    return 6 * (r * (p2 - 2 * p1 + p0) + s * (p3 - 2 * p2 + p1))


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 1e-300)


def _transport(tan: np.ndarray, n0: np.ndarray) -> np.ndarray:
    """Parallel-transport the unit normal ``n0`` along the unit tangents ``tan`` (M, 3): at each step rotate it
    by the tangent's turn (about T_k-1 x T_k), re-orthogonalise it to T_k, and keep the last normal where a cusp
    turned the tangent onto it. The turns are computed for all steps at once; the sequential part is plain
    float arithmetic (a few microseconds a step, so frames are linear and fast in the table size)."""
    a, b = tan[:-1], tan[1:]
    axis = np.cross(a, b)
    sin = np.linalg.norm(axis, axis=1)
    cos = np.clip(np.einsum("ij,ij->i", a, b), -1.0, 1.0)
    turn = sin > 1e-12
    axis[turn] /= sin[turn, None]
    out = np.empty_like(tan)
    out[0] = n0
    nx, ny, nz = (float(x) for x in n0)
    rows = zip(axis.tolist(), sin.tolist(), cos.tolist(), turn.tolist(), b.tolist())
    normals = [(nx, ny, nz)]
    for (ax, ay, az), s, c, turned, (bx, by, bz) in rows:
        px, py, pz = nx, ny, nz
        if turned:
            d = (ax * nx + ay * ny + az * nz) * (1.0 - c)
            nx, ny, nz = (nx * c + (ay * nz - az * ny) * s + ax * d, ny * c + (az * nx - ax * nz) * s + ay * d,
                          nz * c + (ax * ny - ay * nx) * s + az * d)
        d = nx * bx + ny * by + nz * bz
        nx, ny, nz = nx - d * bx, ny - d * by, nz - d * bz
        length = math.sqrt(nx * nx + ny * ny + nz * nz)
        if length > 1e-300:
            nx, ny, nz = nx / length, ny / length, nz / length
        else:
            nx = ny = nz = 0.0
        if not length > 1e-300 or not math.sqrt(nx * nx + ny * ny + nz * nz) > 0.5:  # a cusp: keep the last one
            nx, ny, nz = px, py, pz
        normals.append((nx, ny, nz))
    out[:] = normals
    return out


@dataclass
class Stroke:
    """A fitted stroke: raw samples, the kept (reduced) points, the composite Bezier, arc-length tables.

    Build with :meth:`fit`. ``dim`` is 2 (window pixels) or 3 (world metres). ``times`` are the samples'
    timestamps (seconds, one monotonic clock); ``time(t)`` interpolates them along the stroke.
    """

    samples: np.ndarray                      # (N, D) raw positions
    times: np.ndarray                        # (N,) timestamps
    kept: np.ndarray                         # (K,) indices of the samples RDP kept
    control_points: np.ndarray               # (K-1, 4, D) Bezier segments
    epsilon: float
    _u: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))      # knot parameters (K,)
    _table_t: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))  # arc fraction of table rows
    _table_seg: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, int))
    _table_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    length: float = 0.0

    @property
    def dim(self) -> int:
        return int(self.samples.shape[1])

    @property
    def knots(self) -> np.ndarray:
        """The kept points (K, D): the Bezier's interpolated knots."""
        return np.vstack([self.control_points[:, 0], self.control_points[-1:, 3]])

    @classmethod
    def fit(cls, points: Sequence[Sequence[float]] | np.ndarray, times: Sequence[float] | np.ndarray | None = None,
            *, epsilon: float | None = None, window_height: int | None = None) -> Stroke:
        """Reduce and fit ``points`` (N, 2) window pixels or (N, 3) metres. ``epsilon``: RDP tolerance in the
        points' units (default 0.01 m in 3D; in 2D 8 px scaled to ``window_height``, 1080 rows if not given)."""
        try:
            p = np.asarray(points, np.float64)
        except (TypeError, ValueError):
            raise StrokeError("stroke points must be numbers: [[x, y], ...] or [[x, y, z], ...]") from None
        if p.ndim != 2 or p.shape[0] == 0:
            raise StrokeError(f"a stroke needs points of shape (N, 2) or (N, 3); got shape {p.shape}")
        if p.shape[1] not in (2, 3):
            raise StrokeError(f"stroke points must have 2 (window) or 3 (world) coordinates, got {p.shape[1]}")
        if not np.isfinite(p).all():
            bad = int(np.argwhere(~np.isfinite(p))[0, 0])
            raise StrokeError(f"stroke point {bad} is not finite: {p[bad].tolist()}")
        if p.shape[0] < 2:
            raise StrokeError("a stroke needs at least two points; got one")
        t = np.arange(len(p), dtype=np.float64) if times is None else np.asarray(times, np.float64).reshape(-1)
        if t.shape[0] != p.shape[0] or not np.isfinite(t).all():
            raise StrokeError(f"stroke times must be {p.shape[0]} finite numbers, one per point; got {t.shape[0]}")
        if np.any(np.diff(t) < 0):
            raise StrokeError("stroke times must not decrease")
        # drop consecutive duplicates (a mouse at rest repeats its position)
        step = np.linalg.norm(np.diff(p, axis=0), axis=1)
        keep_dup = np.r_[True, step > 0]
        p, t = p[keep_dup], t[keep_dup]
        if p.shape[0] < 2:
            raise StrokeError("the stroke has zero length: all its points coincide")
        if epsilon is None:
            epsilon = DEFAULT_EPSILON_M if p.shape[1] == 3 else window_epsilon(window_height or 1080)
        kept = rdp(p, float(epsilon))
        kp = p[kept]
        u = np.r_[0.0, np.cumsum(np.linalg.norm(np.diff(kp, axis=0), axis=1))]
        ctrl = _spline_controls(kp, u)
        stroke = cls(p, t, kept, ctrl, float(epsilon), _u=u)
        stroke._build_table()
        if not stroke.length > 0:
            raise StrokeError("the stroke has zero length")
        return stroke

    def _build_table(self) -> None:
        s_count = len(self.control_points)
        s = np.linspace(0.0, 1.0, _TABLE_PER_SEGMENT + 1)
        seg = np.repeat(np.arange(s_count), len(s))
        ss = np.tile(s, s_count)
        pts = _bezier(self.control_points[seg], ss)
        d = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        d[np.diff(seg) != 0] = 0.0  # the joint between segments adds no length
        cum = np.r_[0.0, np.cumsum(d)]
        self.length = float(cum[-1])
        self._table_t = cum / self.length if self.length > 0 else cum
        self._table_seg, self._table_s = seg, ss

    def _locate(self, t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        tt = np.clip(np.atleast_1d(np.asarray(t, np.float64)), 0.0, 1.0)
        if not np.isfinite(tt).all():
            raise ValueError(f"t must be finite numbers in [0, 1], got {t!r}")
        i = np.clip(np.searchsorted(self._table_t, tt, side="right") - 1, 0, len(self._table_t) - 2)
        t0, t1 = self._table_t[i], self._table_t[i + 1]
        w = np.divide(tt - t0, t1 - t0, out=np.zeros_like(tt), where=t1 > t0)
        seg0, seg1 = self._table_seg[i], self._table_seg[i + 1]
        s0, s1 = self._table_s[i], self._table_s[i + 1]
        same = seg0 == seg1
        seg = np.where(same | (w < 0.5), seg0, seg1)
        s = np.where(same, s0 + (s1 - s0) * w, np.where(w < 0.5, s0, s1))
        return seg, s

    def point(self, t: np.ndarray | float) -> np.ndarray:
        """Position(s) at arc-length fraction t: (D,) for a scalar, (M, D) for an array."""
        seg, s = self._locate(t)
        out = _bezier(self.control_points[seg], s)
        return out[0] if np.ndim(t) == 0 else out

    def tangent(self, t: np.ndarray | float) -> np.ndarray:
        """Unit tangent(s) at t (the direction of drawing)."""
        seg, s = self._locate(t)
        d = _bezier(self.control_points[seg], s, 1)
        out = _unit(d)
        bad = ~np.isfinite(out).all(axis=1) | (np.linalg.norm(out, axis=1) < 0.5)
        if bad.any():  # a cusp: the chord direction nearby
            eps = 1e-4
            tt = np.atleast_1d(np.asarray(t, np.float64))[bad]
            chord = self.point(np.clip(tt + eps, 0, 1)) - self.point(np.clip(tt - eps, 0, 1))
            out[bad] = _unit(np.atleast_2d(chord))
        return out[0] if np.ndim(t) == 0 else out

    def time(self, t: np.ndarray | float) -> np.ndarray | float:
        """The timestamp at t, interpolated between the kept samples by arc length."""
        tk = self._u / self._u[-1]
        out = np.interp(np.clip(np.asarray(t, np.float64), 0, 1), tk, self.times[self.kept])
        return float(out) if np.ndim(t) == 0 else out

    def closest(self, point: np.ndarray) -> tuple[float, float]:
        """(t, distance) of the stroke point closest to ``point`` (dense table, then refined)."""
        q = np.asarray(point, np.float64)
        if q.shape != (self.dim,):
            raise ValueError(f"point must have {self.dim} coordinates, got shape {q.shape}")
        ts = self._table_t
        pts = self.point(ts)
        d = np.linalg.norm(pts - q, axis=1)
        i = int(np.argmin(d))
        lo, hi = ts[max(i - 1, 0)], ts[min(i + 1, len(ts) - 1)]
        fine = np.linspace(lo, hi, 33)
        fd = np.linalg.norm(self.point(fine) - q, axis=1)
        j = int(np.argmin(fd))
        return float(fine[j]), float(fd[j])

    def frames(self, t: np.ndarray | float, reference: np.ndarray | None = None) -> np.ndarray:
        """Rotation-minimising frames (3D strokes): (3, 3) matrices with columns T, N, B at t (scalar), or
        (M, 3, 3). Parallel transport from t = 0, starting from ``reference`` made orthogonal to the start
        tangent (default: the world axis least aligned with it)."""
        if self.dim != 3:
            raise ValueError("frames need a 3D stroke (unproject window strokes first)")
        tt = np.atleast_1d(np.asarray(t, np.float64))
        grid = np.union1d(self._table_t, np.clip(tt, 0, 1))
        tan = np.atleast_2d(self.tangent(grid))
        t0 = tan[0]
        ref = None if reference is None else np.asarray(reference, np.float64)
        if ref is None or np.linalg.norm(np.cross(ref, t0)) < 1e-6 * max(float(np.linalg.norm(ref)), 1e-300):
            ref = np.eye(3)[int(np.argmin(np.abs(t0)))]
        n = _unit(ref - (ref @ t0) * t0)
        normals = _transport(tan, n)
        idx = np.searchsorted(grid, np.clip(tt, 0, 1))
        tv, nv = tan[idx], normals[idx]
        bv = np.cross(tv, nv)
        out = np.stack([tv, nv, bv], axis=-1)
        return out[0] if np.ndim(t) == 0 else out

    def lifted(self, points3d: np.ndarray) -> Stroke:
        """The same stroke with its samples replaced by 3D points (unprojected window samples), refit without
        further reduction (the 2D reduction already chose the kept points)."""
        p = np.asarray(points3d, np.float64)
        if p.shape != (len(self.samples), 3):
            raise StrokeError(f"lifted points must be ({len(self.samples)}, 3), got {p.shape}")
        return Stroke.fit(p[self.kept], self.times[self.kept], epsilon=0.0)
