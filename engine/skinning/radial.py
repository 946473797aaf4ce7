"""Radial deformations (research 5.1, eq. 24): surface edits by changing scale-vector lengths along a bone.

Each scale vector is decomposed at bind into a length |s_i| and the rotation R(theta_i) (angle theta_i about
axis u_i) that turns the bone's bind direction X(B) onto s_i. In a pose,

    v_i = a'_i + R(B) R(theta_i) X(B) |s_i| m(t_i)                                   (eq. 24)

with R(B) the rotation of the bone's parent joint relative to bind and a'_i the posed attachment point. With
m = 1 this is attachment-rigid skinning; m(t) changes the silhouette along the bone, t in [0, 1] being the
attachment parameter. Profiles (easing functions, Figure 22) g(t):

    linear t;  cubicIn t^3;  quarticOut 1 - (1 - t)^4;  bulge -(0.5 - t)^2 + 1.25

The length multiplier is m(t) = 1 + amount * g(t) for the easings and m(t) = 1 + amount * (g(t) - 1) for the
bulge, so amount = 1 multiplies |s| by the research's parabolic bulge exactly (1 at both ends, 1.25 halfway)
and amount = 0 changes nothing. Vectorised over vertices; optionally restricted to some bones.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.skinning.types import Binding, bone_endpoints, joint_rotations

__all__ = ["PROFILES", "profile", "length_multiplier", "RadialEncoding", "encode", "radial_deform"]

PROFILES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "linear": lambda t: t,
    "cubicIn": lambda t: t * t * t,
    "quarticOut": lambda t: 1.0 - (1.0 - t) ** 4,
    "bulge": lambda t: -(0.5 - t) ** 2 + 1.25,
}


def profile(name: str, t: np.ndarray | float) -> np.ndarray:
    """Profile value g(t) for t in [0, 1] (clamped)."""
    if name not in PROFILES:
        raise ValueError(f"profile = {name!r}; valid: {', '.join(PROFILES)}")
    return PROFILES[name](np.clip(np.asarray(t, np.float64), 0.0, 1.0))


def length_multiplier(name: str, t: np.ndarray | float, amount: float = 1.0) -> np.ndarray:
    """m(t): 1 + amount g(t) for easings, 1 + amount (g(t) - 1) for the bulge."""
    if not np.isfinite(amount):
        raise ValueError(f"amount = {amount!r}; valid: a finite number")
    g = profile(name, t)
    return 1.0 + amount * (g - 1.0 if name == "bulge" else g)


def _rodrigues(axis: np.ndarray, angle: np.ndarray, v: np.ndarray) -> np.ndarray:
    c, s = np.cos(angle)[:, None], np.sin(angle)[:, None]
    return v * c + np.cross(axis, v) * s + axis * np.einsum("ij,ij->i", axis, v)[:, None] * (1.0 - c)


@dataclass
class RadialEncoding:
    """Bind decomposition of scale vectors: length (V,), angle (V,) and axis (V,3) of R(theta), bone
    direction X(B) (V,3) at bind."""

    length: np.ndarray
    angle: np.ndarray
    axis: np.ndarray
    bone_dir: np.ndarray

    def directions(self) -> np.ndarray:
        """R(theta) X(B): the unit bind scale vectors, (V,3)."""
        return _rodrigues(self.axis, self.angle, self.bone_dir)


def encode(binding: Binding, bind_joints: np.ndarray) -> RadialEncoding:
    """Length and angle (about an axis orthogonal to the bone) of every bind scale vector."""
    s = np.asarray(binding.scale, np.float64)
    p, c = bone_endpoints(binding.bones, np.asarray(bind_joints, np.float64))
    d = (c - p).astype(np.float64)
    d = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-300)
    x = d[binding.bone]
    length = np.linalg.norm(s, axis=1)
    ok = length > 0
    shat = s / np.where(ok, length, 1.0)[:, None]
    cross = np.cross(x, shat)
    sin = np.linalg.norm(cross, axis=1)
    angle = np.arctan2(sin, np.einsum("ij,ij->i", x, shat))
    # any axis orthogonal to the bone works when s is parallel to it (angle 0 or pi)
    alt = np.cross(x, np.where(np.abs(x[:, :1]) < 0.9, [[1.0, 0, 0]], [[0, 1.0, 0]]))
    axis_raw = np.where((sin > 1e-12)[:, None], cross, alt)
    axis = axis_raw / np.linalg.norm(axis_raw, axis=1, keepdims=True)
    return RadialEncoding(length=np.where(ok, length, 0.0), angle=np.where(ok, angle, 0.0), axis=axis, bone_dir=x)


def radial_deform(binding: Binding, bind_joints: np.ndarray, posed_joints: np.ndarray, *,
                  profile_name: str | None = None, amount: float = 1.0, bones: np.ndarray | None = None,
                  encoding: RadialEncoding | None = None) -> np.ndarray:
    """Eq. 24 for every vertex, (V,3) float64. profile_name None: no length change (attachment-rigid skinning);
    bones: indices of the bones the profile applies to (default all)."""
    enc = encoding if encoding is not None else encode(binding, bind_joints)
    posed = np.asarray(posed_joints, np.float64)
    p, c = bone_endpoints(binding.bones, posed)
    b = binding.bone
    t = np.asarray(binding.t, np.float64)
    attach = p[b].astype(np.float64) + t[:, None] * (c[b] - p[b]).astype(np.float64)
    rot = joint_rotations(bind_joints, posed)[binding.bones.parent_joint][b]
    length = enc.length.copy()
    if profile_name is not None:
        m = length_multiplier(profile_name, t, amount)
        if bones is not None:
            m = np.where(np.isin(b, np.asarray(bones)), m, 1.0)
        length = length * m
    return attach + np.einsum("vij,vj->vi", rot, enc.directions()) * length[:, None]
