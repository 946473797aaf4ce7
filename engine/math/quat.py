"""Vectorized quaternion helpers (x, y, z, w order, as glTF).

Every function broadcasts over leading axes: ``q`` is ``(..., 4)``, vectors ``(..., 3)``, matrices
``(..., 3, 3)`` (``from_matrix`` also accepts ``(..., 4, 4)`` and reads the upper-left block). Results keep the
floating dtype of the inputs (float32 in the per-frame paths). Rotation matrices use the column-vector convention
``v' = R @ v``, matching ``rotate(q, v)`` and ``multiply(a, b)`` meaning "apply b, then a".

This is the engine's one quaternion implementation: the hot-path primitives of sampling, blending and FK, the
DQS skinning code, the glTF loader (matrix nodes) and the character generators all use it. pyrr is fine for
one-off conveniences but far too slow per call for per-joint work.
"""
from __future__ import annotations

import numpy as np

from engine.math.numerics import quiet_underflow

__all__ = ["identity", "normalize", "multiply", "conjugate", "inverse", "to_matrix", "from_matrix",
           "from_axis_angle", "to_axis_angle", "between", "slerp", "nlerp", "rotate", "canonical", "continuous",
           "angle_between"]

# Above this |dot| the two quaternions are within ~2.6 degrees of each other (in rotation-angle terms ~5.1
# degrees) and slerp's sin(theta) denominator loses precision; normalised lerp is indistinguishable there.
NLERP_DOT = 0.9995


def _float(a: np.ndarray | float) -> np.ndarray:
    a = np.asarray(a)
    return a if a.dtype.kind == "f" else a.astype(np.float64)


def identity(shape: tuple[int, ...] = (), dtype: np.dtype | type = np.float32) -> np.ndarray:
    """Identity quaternions of the given leading shape: ``(*shape, 4)`` filled with (0, 0, 0, 1)."""
    q = np.zeros((*shape, 4), dtype)
    q[..., 3] = 1
    return q


@quiet_underflow
def normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternions; a zero quaternion becomes the identity (rather than NaN)."""
    q = _float(q)
    n = np.sqrt(np.sum(q * q, axis=-1, keepdims=True))
    zero = n <= np.finfo(q.dtype).tiny
    out = q / np.where(zero, 1, n)
    if np.any(zero):
        out = np.where(zero, identity((), q.dtype), out)
    return out


@quiet_underflow
def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` (rotation b first, then a)."""
    a, b = _float(a), _float(b)
    ax, ay, az, aw = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bx, by, bz, bw = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ], axis=-1)


def conjugate(q: np.ndarray) -> np.ndarray:
    """(-x, -y, -z, w): the inverse rotation of a unit quaternion."""
    q = _float(q)
    out = -q
    out[..., 3] = q[..., 3]
    return out


@quiet_underflow
def inverse(q: np.ndarray) -> np.ndarray:
    """Multiplicative inverse (conjugate / |q|^2); equals ``conjugate`` for unit quaternions."""
    q = _float(q)
    n2 = np.sum(q * q, axis=-1, keepdims=True)
    if np.any(n2 <= 0):
        raise ValueError("inverse of a zero quaternion (valid: |q| > 0)")
    return conjugate(q) / n2


def canonical(q: np.ndarray) -> np.ndarray:
    """The representative with w >= 0 (q and -q are the same rotation)."""
    q = _float(q)
    return np.where(q[..., 3:4] < 0, -q, q)


@quiet_underflow
def to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` of unit quaternions ``(..., 4)``."""
    q = _float(q)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    m = np.empty((*q.shape[:-1], 3, 3), q.dtype)
    m[..., 0, 0] = 1 - 2 * (yy + zz)
    m[..., 0, 1] = 2 * (xy - wz)
    m[..., 0, 2] = 2 * (xz + wy)
    m[..., 1, 0] = 2 * (xy + wz)
    m[..., 1, 1] = 1 - 2 * (xx + zz)
    m[..., 1, 2] = 2 * (yz - wx)
    m[..., 2, 0] = 2 * (xz - wy)
    m[..., 2, 1] = 2 * (yz + wx)
    m[..., 2, 2] = 1 - 2 * (xx + yy)
    return m


@quiet_underflow
def from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternions (w >= 0) of rotation matrices ``(..., 3, 3)`` or ``(..., 4, 4)``.

    Shepperd's method: of the four algebraically equivalent formulas, each element uses the one whose
    square-root argument (4w^2, 4x^2, 4y^2 or 4z^2) is largest, which keeps it exact near 180 degrees.
    The input must be a pure rotation (orthonormal, det +1); use ``engine.math.transform.decompose`` for matrices with
    scale.
    """
    m = _float(m)
    if m.shape[-2:] not in ((3, 3), (4, 4)):
        raise ValueError(f"from_matrix expects (...,3,3) or (...,4,4), got shape {m.shape}")
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    # 4w^2, 4x^2, 4y^2, 4z^2 (each = 1 + some signed sum of the diagonal)
    big = np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    pick = np.argmax(big, axis=-1)
    s = 2 * np.sqrt(np.maximum(np.take_along_axis(big, pick[..., None], -1)[..., 0], np.finfo(m.dtype).tiny))
    a, b, c = m21 - m12, m02 - m20, m10 - m01  # 4wx, 4wy, 4wz
    d, e, f = m01 + m10, m02 + m20, m12 + m21  # 4xy, 4xz, 4yz
    q4 = s / 4
    cand = np.stack([
        np.stack([a / s, b / s, c / s, q4], -1),  # w largest
        np.stack([q4, d / s, e / s, a / s], -1),  # x largest
        np.stack([d / s, q4, f / s, b / s], -1),  # y largest
        np.stack([e / s, f / s, q4, c / s], -1),  # z largest
    ], -2)
    q = np.take_along_axis(cand, pick[..., None, None], -2)[..., 0, :]
    return canonical(normalize(q))


@quiet_underflow
def from_axis_angle(axis: np.ndarray, angle: np.ndarray | float) -> np.ndarray:
    """Quaternions rotating by ``angle`` radians about ``axis`` (normalised here; (..., 3))."""
    axis = _float(axis)
    n = np.sqrt(np.sum(axis * axis, axis=-1, keepdims=True))
    if np.any(n <= 0):
        raise ValueError(f"rotation axis must be non-zero, got {axis!r}")
    half = 0.5 * np.asarray(angle, axis.dtype)[..., None]
    xyz = axis / n * np.sin(half)
    w = np.broadcast_to(np.cos(half), (*xyz.shape[:-1], 1))
    return np.concatenate([xyz, w], axis=-1)


@quiet_underflow
def to_axis_angle(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit axes ``(..., 3)`` and angles ``(...,)`` in [0, pi] of quaternions ``(..., 4)`` (normalised here).

    The representative with w >= 0 is used, so the angle never exceeds pi; a rotation by (nearly) nothing has
    no axis and gives axis (1, 0, 0) with angle 0. Inverse of :func:`from_axis_angle` up to that choice.
    """
    q = canonical(normalize(q))
    s = np.sqrt(np.sum(q[..., :3] * q[..., :3], axis=-1))
    none = s < 1e-12
    axis = np.where(none[..., None], np.array([1, 0, 0], q.dtype), q[..., :3] / np.where(none, 1, s)[..., None])
    angle = np.where(none, 0, 2 * np.arctan2(s, q[..., 3]))
    return axis, angle


@quiet_underflow
def between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The shortest-arc unit quaternion (4,) rotating direction ``a`` (3,) onto direction ``b`` (3,).

    Opposite directions have no unique shortest arc: the result then turns by pi about an axis perpendicular to
    ``a`` (a x X, or a x Y when ``a`` is near X). Float64 throughout.
    """
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != (3,) or b.shape != (3,):
        raise ValueError(f"between expects two (3,) directions, got shapes {a.shape} and {b.shape}")
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na <= 0 or nb <= 0:
        raise ValueError(f"between needs non-zero directions, got {a.tolist()} and {b.tolist()}")
    a, b = a / na, b / nb
    c = np.cross(a, b)
    d = float(np.dot(a, b))
    if d < -1 + 1e-9:  # opposite: any perpendicular axis
        perp = np.cross(a, [1.0, 0, 0]) if abs(a[0]) < 0.9 else np.cross(a, [0, 1.0, 0])
        return from_axis_angle(perp, np.pi)
    q = np.array([c[0], c[1], c[2], 1.0 + d])
    return q / np.linalg.norm(q)


def continuous(q: np.ndarray) -> np.ndarray:
    """A copy of the key sequence ``q`` (K, 4) with signs flipped along axis 0 so that consecutive keys lie in
    the same hemisphere (dot >= 0): the rotations are unchanged and interpolating between keys takes the short
    way. Flips accumulate along the keys."""
    q = np.array(q, dtype=_float(q).dtype)
    if q.ndim != 2 or q.shape[1] != 4:
        raise ValueError(f"continuous expects a (K,4) key sequence, got shape {q.shape}")
    dots = np.einsum("ki,ki->k", q[1:], q[:-1])
    q[1:] *= np.cumprod(np.where(dots < 0, -1.0, 1.0))[:, None]
    return q


@quiet_underflow
def nlerp(a: np.ndarray, b: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """Normalised lerp on the shortest arc (b is negated where dot(a, b) < 0)."""
    a, b = _float(a), _float(b)
    t = np.asarray(t, a.dtype)[..., None]
    d = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(d < 0, -b, b)
    return normalize(a + t * (b - a))


@quiet_underflow
def slerp(a: np.ndarray, b: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """Spherical linear interpolation on the shortest arc, falling back to nlerp for tiny angles.

    ``t`` broadcasts against the leading shape of ``a`` and ``b`` (a scalar or one weight per quaternion).
    t = 0 gives a, t = 1 gives b or -b (the same rotation, on a's hemisphere).
    """
    a, b = _float(a), _float(b)
    dtype = np.result_type(a, b)
    t = np.asarray(t, dtype)[..., None]
    d = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(d < 0, -b, b)
    d = np.minimum(np.abs(d), 1)
    small = d > NLERP_DOT
    theta = np.arccos(d)
    sin_theta = np.where(small, 1, np.sin(theta))
    wa = np.where(small, 1 - t, np.sin((1 - t) * theta) / sin_theta)
    wb = np.where(small, t, np.sin(t * theta) / sin_theta)
    # Renormalise: exact slerp output is unit already; the nlerp branch and float32 round-off are not.
    return normalize(wa * a + wb * b).astype(dtype, copy=False)


@quiet_underflow
def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``(..., 3)`` by unit quaternions ``(..., 4)``: v + 2w(u x v) + 2 u x (u x v)."""
    q, v = _float(q), _float(v)
    u = q[..., :3]
    t = 2 * np.cross(u, v)
    return v + q[..., 3:4] * t + np.cross(u, t)


@quiet_underflow
def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation angle (radians, in [0, pi]) taking a to b; q and -q count as the same rotation."""
    a, b = _float(a), _float(b)
    d = np.minimum(np.abs(np.sum(a * b, axis=-1)), 1)
    return 2 * np.arccos(d)
