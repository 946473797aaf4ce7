"""TRS transforms: compose translation / rotation / scale into 4x4 matrices and split them again.

glTF defines a node's local matrix as T @ R @ S (column vectors, p' = M @ p) with the rotation a unit quaternion
(x, y, z, w). :func:`compose_trs` is the batched forward direction used by FK every frame (float32) and by the
character generators (float64); :func:`decompose` is its inverse for matrix-defined nodes (the glTF loader and
the rig use it to give such nodes a rest TRS).
"""
from __future__ import annotations

import numpy as np

from engine.math import quat
from engine.math.numerics import quiet_underflow

__all__ = ["compose_trs", "decompose"]


@quiet_underflow
def compose_trs(translation: np.ndarray, rotation: np.ndarray, scale: np.ndarray,
                out: np.ndarray | None = None, *, dtype: np.dtype | type = np.float32) -> np.ndarray:
    """T @ R @ S as ``(..., 4, 4)`` matrices from ``(..., 3)``, ``(..., 4)`` xyzw, ``(..., 3)``.

    Rotations are used as given (assumed unit; the sampler and the blender normalise theirs). ``dtype`` is the
    precision of the computation and the result: float32 for the per-frame paths (FK), float64 where the
    generators build bind matrices; with ``out`` given, its dtype is used.
    """
    if out is not None:
        dtype = out.dtype
    if np.dtype(dtype).kind != "f":
        raise TypeError(f"compose_trs needs a floating dtype, got {dtype!r}")
    t = np.asarray(translation, dtype)
    r = np.asarray(rotation, dtype)
    s = np.asarray(scale, dtype)
    if t.shape[-1:] != (3,) or r.shape[-1:] != (4,) or s.shape[-1:] != (3,):
        raise ValueError(f"compose_trs expects (...,3), (...,4), (...,3) arrays, got {t.shape}, {r.shape}, "
                         f"{s.shape}")
    lead = np.broadcast_shapes(t.shape[:-1], r.shape[:-1], s.shape[:-1])
    if out is None:
        out = np.empty((*lead, 4, 4), dtype)
    # R @ diag(S) written entry by entry straight into `out`: the rotation-matrix formula of quat.to_matrix with
    # column j scaled by s_j. ~4x faster than building R and multiplying into the strided (..., :3, :3) view.
    x, y, z, w = r[..., 0], r[..., 1], r[..., 2], r[..., 3]
    x2, y2, z2 = x + x, y + y, z + z
    xx, yy, zz = x * x2, y * y2, z * z2
    xy, xz, yz = x * y2, x * z2, y * z2
    wx, wy, wz = w * x2, w * y2, w * z2
    sx, sy, sz = s[..., 0], s[..., 1], s[..., 2]
    np.multiply(1 - (yy + zz), sx, out=out[..., 0, 0])
    np.multiply(xy - wz, sy, out=out[..., 0, 1])
    np.multiply(xz + wy, sz, out=out[..., 0, 2])
    np.multiply(xy + wz, sx, out=out[..., 1, 0])
    np.multiply(1 - (xx + zz), sy, out=out[..., 1, 1])
    np.multiply(yz - wx, sz, out=out[..., 1, 2])
    np.multiply(xz - wy, sx, out=out[..., 2, 0])
    np.multiply(yz + wx, sy, out=out[..., 2, 1])
    np.multiply(1 - (xx + yy), sz, out=out[..., 2, 2])
    out[..., :3, 3] = t
    out[..., 3, :3] = 0
    out[..., 3, 3] = 1
    return out


@quiet_underflow
def decompose(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split affine ``(..., 4, 4)`` matrices into translation, unit rotation (xyzw) and scale.

    Exact for T @ R @ S with positive or mirrored scale (a negative determinant puts the sign on x scale).
    Shear cannot be represented and is dropped; a zero-scale axis gives the identity rotation. Used to give
    matrix-defined nodes a rest TRS for blending and tools; FK keeps using their exact matrix.
    """
    m = np.asarray(matrix, np.float64)
    if m.shape[-2:] != (4, 4):
        raise ValueError(f"decompose expects (...,4,4) matrices, got shape {m.shape}")
    t = m[..., :3, 3].copy()
    a = m[..., :3, :3]
    s = np.sqrt(np.sum(a * a, axis=-2))  # column norms, (..., 3)
    s = np.where(np.linalg.det(a)[..., None] < 0, s * np.array([-1.0, 1.0, 1.0]), s)
    degenerate = np.any(np.abs(s) <= 1e-12, axis=-1)
    rot = a / np.where(np.abs(s) <= 1e-12, 1.0, s)[..., None, :]
    r = quat.from_matrix(rot)
    r = np.where(degenerate[..., None], quat.identity((), np.float64), r)
    return t.astype(np.float32), r.astype(np.float32), s.astype(np.float32)
