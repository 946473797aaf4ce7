"""Attachment binding (research ch. 3): attach every control point to one point on one bone.

A control point v is bound to bone b = (p, c) at a = p + t (c - p), t in [0, 1], with scale vector s = v - a.
Methods:

- `bind_project` (direct binding, eq. 12): project onto every bone segment, keep the closest. Simple, but
  leaves gaps between the attachments of neighbouring points on the inner side of bends and at joints with
  several children.
- `bind_planar` (planar binding, eq. 13): divider planes at every joint partition the points between the
  bones meeting there; t = d_p / (d_p + d_c) from the distances to the bone's divider planes at its two ends,
  so t runs 0..1 across each region and neighbours on both sides of a divider attach near the joint.
  Dividers are initialised automatically as bisector planes of each pair of bones meeting at a joint
  (normal u1 - u2 for the unit directions u1, u2 from the joint along the two bones: the plane then
  contains their half-vector and their cross product, as the research describes), including between
  siblings at joints with several children (pelvis, chest). `plane_normals` overrides the divider(s)
  between a joint's incoming bone and its outgoing bones.
- `bind_from_weights`: seeded by skin weights: project onto the bones touching the joint of largest weight.
- `smooth_binding`: alternating Laplacian smoothing of the attachment points and reprojection onto the
  skeleton, a few passes (< 10), closes the remaining gaps. Smoothing works in tree coordinates of the
  skeleton (how much of each bone the path from the root covers) and reprojection walks the bone tree, so
  neighbours across a branching joint (crotch, armpits, the plus's hub) slide towards the shared joint
  instead of jumping between branches; only the neighbourhoods of gaps move. See its docstring.
- Skin weights (`bind(..., joints=, weights=)`, what the deformers use; issue 26): `weight_support` keeps,
  per point, the bones whose parent joint (the joint whose rotation carries the bone's points) holds at least
  `MIN_WEIGHT_SHARE` = 1/4 of its weight (or the largest share any joint with a bone holds); the planar and
  projection bindings choose among those only and smoothing never moves a point off them (see
  `smooth_binding`). By position alone a point weighted 100 % to a forearm but lying nearer the upper-arm
  bone would be carried by the shoulder, a joint LBS does not move it with.
- `binding_quality`: gap statistics (a gap: neighbours whose attachments lie more than 3x their edge
  length apart). Default `bind` on the generated characters (before -> after smoothing, gaps / gap_max):
  cylinder 0 / 1.0 -> 0; box 0 / 1.0 -> 0; plus 204 / 12.0 -> 0 / 2.3 (1 pass); humanoid 625 / 36.1 ->
  0 / 2.99 (3 passes; ~0.2 s). The dense humanoid (90k points) keeps a few dozen after 6 passes.

Bones (`make_bones`): one bone per parent->child joint pair (zero-length pairs are skipped), plus one tip
bone per leaf joint, pointing along the offset from the nearest ancestor at a different position (or the
joint's local +Y when there is none), as long as the mesh extends beyond the joint along that direction
(measured over the control points whose nearest joint is the leaf), else as long as that offset.

Points far from every bone are still bound, to the nearest bone. Joints at the same position (a zero-length
link) are treated as one location for the divider planes.

Modules: bones (skeleton -> bones), project (the methods), smooth (smoothing and reprojection), quality (gap
statistics), pipeline (`bind`, `per_control`).
"""
from engine.skinning.binding.bones import joint_location_groups, make_bones
from engine.skinning.binding.pipeline import bind, per_control
from engine.skinning.binding.project import (
    MIN_WEIGHT_SHARE,
    bind_from_weights,
    bind_planar,
    bind_project,
    make_binding,
    nearest_bone,
    segment_projection,
    weight_support,
)
from engine.skinning.binding.quality import DEFAULT_GAP_THRESHOLD, binding_quality
from engine.skinning.binding.smooth import MAX_SMOOTH_PASSES, smooth_binding

__all__ = [
    "make_bones",
    "nearest_bone",
    "segment_projection",
    "bind_project",
    "bind_planar",
    "bind_from_weights",
    "make_binding",
    "weight_support",
    "MIN_WEIGHT_SHARE",
    "smooth_binding",
    "binding_quality",
    "bind",
    "per_control",
    "joint_location_groups",
    "MAX_SMOOTH_PASSES",
    "DEFAULT_GAP_THRESHOLD",
]
