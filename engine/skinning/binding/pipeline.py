"""`bind`: the whole binding of a mesh (bones, a method, smoothing, quality), and `per_control`."""
from __future__ import annotations

import numpy as np

from engine.math.numerics import quiet_underflow
from engine.skinning.binding.bones import _check_skeleton, make_bones
from engine.skinning.binding.project import (
    bind_from_weights,
    bind_planar,
    bind_project,
    make_binding,
    weight_support,
)
from engine.skinning.binding.quality import DEFAULT_GAP_THRESHOLD, binding_quality
from engine.skinning.binding.smooth import smooth_binding
from engine.skinning.types import Binding, Bones, MeshTopology

__all__ = ["per_control", "bind"]


def per_control(topology: MeshTopology, values: np.ndarray) -> np.ndarray:
    """Per-control-point rows of `values`: (D,...) per display vertex -> the representative's row;
    (V,...) is returned as is (when D == V nothing was welded and both orders agree)."""
    vals = np.asarray(values)
    if vals.shape[0] == topology.n_display:
        return vals[topology.display_of_control]
    if vals.shape[0] == topology.n_control:
        return vals
    raise ValueError(
        f"expected {topology.n_display} rows (display vertices) or {topology.n_control} (control points), "
        f"got {vals.shape[0]}"
    )


@quiet_underflow
def bind(
    topology: MeshTopology,
    bind_joints: np.ndarray,
    parents: np.ndarray,
    *,
    method: str = "planar",
    joints: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    smooth_passes: int = 6,
    plane_normals: np.ndarray | dict | None = None,
    bones: Bones | None = None,
    gap_threshold: float = DEFAULT_GAP_THRESHOLD,
) -> Binding:
    """Bind the control points of `topology` to the skeleton.

    method: "planar" (joint dividers), "project" (direct projection) or "weights" (needs joints and weights,
    (D,4) per display vertex or (V,4) per control point; the representative display vertex is used).
    joints and weights, given with any method, restrict every point to the bones whose joint carries a
    meaningful share of its weight (`weight_support`), in the binding and in its smoothing.
    Then up to `smooth_passes` passes of smoothing and reprojection (`smooth_binding`; they stop once no
    gap is left). quality holds `binding_quality` of the final binding, the method, the passes asked for and
    used, and gaps / gap_max / gap_mean before smoothing.
    """
    methods = ("planar", "project", "weights")
    if method not in methods:
        raise ValueError(f"method must be one of {methods}, got {method!r}")
    bj, par = _check_skeleton(bind_joints, parents)
    pts = topology.positions
    if bones is None:
        bones = make_bones(bj, par, pts)
    if (joints is None) != (weights is None):
        raise ValueError("joints and weights go together: give both or neither")
    allowed = None
    if joints is not None and weights is not None:
        jn, w = per_control(topology, np.asarray(joints)), per_control(topology, np.asarray(weights))
        allowed = weight_support(jn, w, bones)
    if method == "planar":
        bone, t = bind_planar(pts, bones, bj, par, plane_normals=plane_normals, allowed=allowed)
    elif method == "project":
        bone, t = bind_project(pts, bones, bj, allowed=allowed)
    else:
        if joints is None or weights is None:
            raise ValueError("method='weights' needs joints and weights")
        bone, t = bind_from_weights(pts, jn, w, bones, bj)
    binding = make_binding(pts, bones, bone, t, bj)
    before = binding_quality(binding, topology, gap_threshold=gap_threshold)
    used = 0
    if smooth_passes:
        binding = smooth_binding(binding, topology, bj, passes=smooth_passes, parents=par, gap_threshold=gap_threshold,
                                 allowed=allowed)
        used = binding.quality["smooth_passes_used"]
    binding.quality = binding_quality(binding, topology, gap_threshold=gap_threshold)
    binding.quality.update(
        method=method,
        smooth_passes=int(smooth_passes),
        smooth_passes_used=int(used),
        gaps_before_smoothing=before["gaps"],
        gap_max_before_smoothing=before["gap_max"],
        gap_mean_before_smoothing=before["gap_mean"],
    )
    return binding
