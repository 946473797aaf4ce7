"""Small vectorised quaternion / matrix helpers for the generators (xyzw quaternions, column vectors)."""
from __future__ import annotations

import numpy as np


def quat_axis_angle(axis: np.ndarray, angle: np.ndarray | float) -> np.ndarray:
    """Unit quaternions (..., 4) xyzw rotating by ``angle`` radians about ``axis`` (3,) or (..., 3)."""
    ax = np.asarray(axis, np.float64)
    ax = ax / np.linalg.norm(ax, axis=-1, keepdims=True)
    half = 0.5 * np.asarray(angle, np.float64)[..., None]
    return np.concatenate([ax * np.sin(half), np.cos(half)], axis=-1)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b (apply b first, then a), broadcasting over leading axes."""
    ax, ay, az, aw = np.moveaxis(np.asarray(a, np.float64), -1, 0)
    bx, by, bz, bw = np.moveaxis(np.asarray(b, np.float64), -1, 0)
    return np.stack([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz], axis=-1)


def quat_continuous(q: np.ndarray) -> np.ndarray:
    """Flip signs along axis 0 so consecutive keys lie in the same hemisphere (shortest slerp)."""
    q = np.array(q, np.float64)
    dots = np.einsum("ki,ki->k", q[1:], q[:-1])
    q[1:] *= np.cumprod(np.where(dots < 0, -1.0, 1.0))[:, None]  # sign flips accumulate along the keys
    return q


def quat_to_mat3(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4) xyzw."""
    x, y, z, w = np.moveaxis(np.asarray(q, np.float64), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def quat_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The shortest-arc unit quaternion rotating direction ``a`` (3,) onto ``b`` (3,)."""
    a = np.asarray(a, np.float64) / np.linalg.norm(a)
    b = np.asarray(b, np.float64) / np.linalg.norm(b)
    c = np.cross(a, b)
    d = float(np.dot(a, b))
    if d < -1 + 1e-9:  # opposite: any perpendicular axis
        perp = np.cross(a, [1.0, 0, 0]) if abs(a[0]) < 0.9 else np.cross(a, [0, 1.0, 0])
        return quat_axis_angle(perp, np.pi)
    q = np.array([c[0], c[1], c[2], 1.0 + d])
    return q / np.linalg.norm(q)


def trs_matrix(t: np.ndarray, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """4x4 matrices (..., 4, 4) = T @ R @ S from translations (...,3), quaternions (...,4), scales (...,3)."""
    t = np.asarray(t, np.float64)
    r = quat_to_mat3(q) * np.asarray(s, np.float64)[..., None, :]
    shape = r.shape[:-2]
    m = np.zeros(shape + (4, 4))
    m[..., :3, :3] = r
    m[..., :3, 3] = t
    m[..., 3, 3] = 1.0
    return m


def slerp_keys(times: np.ndarray, quats: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Sample LINEAR rotation keys (glTF: slerp) at times ``t`` (clamped to the key range)."""
    times = np.asarray(times, np.float64)
    t = np.clip(np.asarray(t, np.float64), times[0], times[-1])
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, max(len(times) - 2, 0))
    if len(times) == 1:
        return np.broadcast_to(quats[0], t.shape + (4,)).copy()
    u = ((t - times[i]) / (times[i + 1] - times[i]))[..., None]
    a, b = quats[i], quats[i + 1]
    d = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(d < 0, -b, b)
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    sin_t = np.sin(theta)
    small = sin_t < 1e-6
    safe = np.where(small, 1.0, sin_t)
    wa = np.where(small, 1 - u, np.sin((1 - u) * theta) / safe)
    wb = np.where(small, u, np.sin(u * theta) / safe)
    q = wa * a + wb * b
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def lerp_keys(times: np.ndarray, values: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Sample LINEAR vector keys at times ``t`` (clamped to the key range)."""
    times = np.asarray(times, np.float64)
    values = np.asarray(values, np.float64)
    return np.stack([np.interp(t, times, values[:, c]) for c in range(values.shape[1])], axis=-1)
