"""Morph targets (glTF blend shapes): the numpy reference of the GPU morph stage, and the weld split.

glTF 2.0 (3.7.2.2): a morphed attribute is ``base + sum_m w_m * delta_m`` for the primitive's M targets, with
the weights of the node (``node.weights``), else of the mesh (``mesh.weights``), else zeros, animated by
``weights`` channels. The engine morphs POSITION and NORMAL (TANGENT deltas are dropped at load: nothing draws a
tangent space); morphed normals are renormalised (zero-length ones stay zero).

Order: morphing happens in bind space, BEFORE skinning, so a skinned character's face moves with its head.
The deformers then take the morphed bind positions where they would take the bind pose: LBS/DQS skin them;
rigid/IRS/springs attach them to the skeleton by the same binding (the bind scale vector ``s = v - a`` becomes
``v_morphed - a``: :func:`morph_binding`); skinned normals transform the morphed bind normals.

Control points are welded display vertices; display vertices at one position whose deltas differ (a lip seam
that opens) must not share a control point, so :func:`split_by_deltas` refines the weld by the deltas
(:func:`engine.skinning.meshprep.prepare_mesh` takes them).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from engine.math.mesh import relabel_by_first
from engine.skinning.types import Binding, MeshTopology

__all__ = ["morph", "morph_normals", "control_deltas", "morph_binding", "split_by_deltas", "check_weights"]


def check_weights(weights: object, count: int, what: str = "morph weights") -> np.ndarray:
    """(M,) finite float32 weights for ``count`` targets, or ValueError naming the shape/value."""
    try:
        w = np.asarray(weights, np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be {count} numbers, got {weights!r}") from None
    if w.shape != (count,):
        raise ValueError(f"{what} must be {count} numbers (one per morph target), got {w.shape[0]}")
    if not np.all(np.isfinite(w)) or np.any(np.abs(w) > 1e6):
        raise ValueError(f"{what} must be finite numbers within +-1e6, got {w.tolist()}")
    return w.astype(np.float32)


def morph(base: np.ndarray, deltas: np.ndarray | None, weights: np.ndarray | None) -> np.ndarray:
    """``base (N,3) + sum_m weights[m] * deltas[m] (M,N,3)``, float32 (the base itself when there is nothing to
    add). Accumulated target by target in float32, as the GPU stage does."""
    b = np.asarray(base, np.float32)
    if deltas is None or weights is None or len(weights) == 0:
        return b
    w = np.asarray(weights, np.float32)
    d = np.asarray(deltas, np.float32)
    if d.shape[0] != w.shape[0] or d.shape[1:] != b.shape:
        raise ValueError(f"deltas {d.shape} do not match {w.shape[0]} weights and base {b.shape}")
    out = b.copy()
    for m in np.flatnonzero(w):
        out += w[m] * d[m]
    return out


def morph_normals(base: np.ndarray, deltas: np.ndarray | None, weights: np.ndarray | None) -> np.ndarray:
    """Morphed unit normals (N,3) float32: :func:`morph` renormalised (zero-length left zero)."""
    n = morph(base, deltas, weights)
    if deltas is None or weights is None or not np.any(weights):
        return n
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return np.where(length > 0, n / np.where(length > 0, length, 1), 0).astype(np.float32)


def control_deltas(topology: MeshTopology, deltas: np.ndarray) -> np.ndarray:
    """(M,D,3) display deltas -> (M,V,3) per control point (its representative display vertex: the weld keeps
    display vertices with different deltas apart, so every display vertex of a point has the same)."""
    return np.ascontiguousarray(np.asarray(deltas, np.float32)[:, topology.display_of_control])


def morph_binding(binding: Binding, offset: np.ndarray) -> Binding:
    """The binding of the morphed rest: each control point keeps its bone and attachment, its bind scale vector
    grows by its morph ``offset`` (V,3) (morphed - bind position), as the GPU skin stage computes ``v - a``."""
    return dataclasses.replace(binding, scale=(binding.scale + np.asarray(offset, np.float32)).astype(np.float32))


def split_by_deltas(control_of_display: np.ndarray, deltas: np.ndarray, tolerance: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Refine a weld: display vertices of one control point stay together only where their (M,D,3) deltas agree
    within ``tolerance`` (absolute; 0: bit-identical, rounding on a grid of that size otherwise). Returns
    (control_of_display (D,), display_of_control (V,)) int64 numbered by first occurrence like the weld."""
    cod = np.asarray(control_of_display, np.int64)
    d = np.asarray(deltas, np.float64)
    flat = d.transpose(1, 0, 2).reshape(cod.shape[0], -1)
    key = np.round(flat / tolerance) if tolerance > 0 else flat
    rows = np.concatenate([cod[:, None].astype(np.float64), key], axis=1)
    _, labels = np.unique(rows, axis=0, return_inverse=True)
    labels = labels.reshape(-1)
    return relabel_by_first(labels)
