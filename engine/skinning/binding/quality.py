"""Binding quality: gap statistics between the attachments of neighbouring control points (`binding_quality`)."""
from __future__ import annotations

import numpy as np

from engine.math.numerics import quiet_underflow
from engine.skinning.types import Binding, MeshTopology

__all__ = ["DEFAULT_GAP_THRESHOLD", "binding_quality"]

DEFAULT_GAP_THRESHOLD = 3.0
"""A gap: |a_i - a_j| larger than this many times the edge length |v_i - v_j|."""


def _edge_lengths(positions: np.ndarray, edges: np.ndarray) -> np.ndarray:
    e = edges.astype(np.int64)
    pos = positions.astype(np.float64)
    return np.linalg.norm(pos[e[:, 0]] - pos[e[:, 1]], axis=1)


def _edge_ratio(attach: np.ndarray, edges: np.ndarray, le: np.ndarray) -> np.ndarray:
    """|a_i - a_j| / |v_i - v_j| per edge (E,), 0 on edges of zero length."""
    e = edges.astype(np.int64)
    a = attach.astype(np.float64)
    ratio = np.zeros_like(le)
    np.divide(np.linalg.norm(a[e[:, 0]] - a[e[:, 1]], axis=1), le, out=ratio, where=le > 0)
    return ratio


@quiet_underflow
def binding_quality(
    binding: Binding, topology: MeshTopology, *, gap_threshold: float = DEFAULT_GAP_THRESHOLD
) -> dict:
    """Gap statistics between attachments of adjacent control points, relative to their edge length.

    The research calls a gap two neighbouring vertices whose attachment points lie far apart on the
    skeleton (it shows them as discontinuities once joints rotate) without giving a number; here an edge
    (v_i, v_j) is a gap when |a_i - a_j| > gap_threshold * |v_i - v_j| (3D distance of the attachments,
    default 3 x the edge length). After the default smoothing the generated cylinder, box, plus and humanoid
    have none (tests/unit/test_skinning_binding_characters.py).

    gap_mean / gap_max: mean / max of |a_i - a_j| / |v_i - v_j| over edges of non-zero length;
    gaps: edges whose ratio exceeds gap_threshold; gap_vertices: control points on such an edge; plus
    scale-vector length stats, t clamping counts and bones no point attaches to.
    """
    if not gap_threshold > 0:
        raise ValueError(f"gap_threshold must be > 0, got {gap_threshold!r}")
    e = topology.edges.astype(np.int64)
    le = _edge_lengths(topology.positions, e)
    ok = le > 0
    full = _edge_ratio(binding.attach, e, le)
    ratio = full[ok]
    on_gap = np.zeros(topology.n_control, bool)
    on_gap[e[full > gap_threshold].ravel()] = True
    slen = np.linalg.norm(binding.scale.astype(np.float64), axis=1)
    per_bone = np.bincount(binding.bone, minlength=binding.bones.count)
    return {
        "gap_mean": float(ratio.mean()) if ratio.size else 0.0,
        "gap_max": float(ratio.max()) if ratio.size else 0.0,
        "gaps": int((ratio > gap_threshold).sum()),
        "gap_threshold": float(gap_threshold),
        "gap_vertices": int(on_gap.sum()),
        "scale_mean": float(slen.mean()) if slen.size else 0.0,
        "scale_max": float(slen.max()) if slen.size else 0.0,
        "t_at_0": int((binding.t <= 0).sum()),
        "t_at_1": int((binding.t >= 1).sum()),
        "unused_bones": int((per_bone == 0).sum()),
    }
