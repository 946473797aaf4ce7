"""The one VR device interface (research 7.5): a headset and two tracked controllers become the event model's
:class:`~engine.input.events.TrackedSample` events, and each eye's geometry is plain data.

Backends: :mod:`engine.input.openvr_device` (a real headset through the ``openvr`` package) and
:mod:`engine.input.simulated_vr` (a headset and controllers played from a RIG.toml script). Both implement
:class:`VRDevice`: ``geometry`` (the eyes), ``wait_poses()`` once per frame (one sample per tracked device, in
tracking-space metres, timestamped on the one clock), ``submit(left, right)`` of the eyes' RGBA8 textures,
``haptic(hand, seconds)`` and ``close()``.

Conventions: matrices are float64 4x4, column vectors (p' = M @ p); a device's pose matrix maps its local
frame to tracking space; a controller points along its local -Z axis; OpenVR's projection tangents come as
(left, right, top, bottom) with top the tangent of the angle DOWN (negative) and bottom the angle UP
(positive), which :func:`projection_from_raw` turns into an OpenGL projection (NDC z in [-1, 1]).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from engine.input.events import TrackedSample

__all__ = ["DEVICES", "HANDS", "IPD", "SIM_FOV_Y", "DEFAULT_EYE_SIZE", "pose_matrix", "look_rotation",
           "projection_from_raw", "symmetric_raw", "EyeGeometry", "VRFrame", "VRDevice", "VRError"]

#: the tracked devices, in sample order
DEVICES = ("head", "left", "right")
HANDS = ("left", "right")
#: the simulated headset's interpupillary distance (m) and vertical field of view (deg)
IPD = 0.064
SIM_FOV_Y = 100.0
DEFAULT_EYE_SIZE = 512


class VRError(ValueError):
    """No VR runtime, no headset, or a device that failed: one line naming what is missing."""


def pose_matrix(position: Any, orientation: Any) -> np.ndarray:
    """The 4x4 (float64) of a tracked pose: rotation by unit quaternion (x, y, z, w), then translation."""
    from engine.math.quat import to_matrix

    m = np.eye(4)
    m[:3, :3] = to_matrix(np.asarray(orientation, np.float64))
    m[:3, 3] = np.asarray(position, np.float64)
    return m


def look_rotation(direction: Any, up: Any = (0.0, 1.0, 0.0)) -> np.ndarray:
    """The unit quaternion (x, y, z, w) that turns a device's -Z axis onto ``direction`` with its +Y towards
    ``up`` (another up is picked when they are parallel). ValueError for a zero direction."""
    from engine.math.quat import canonical, from_matrix

    f = np.asarray(direction, np.float64)
    n = float(np.linalg.norm(f))
    if not (math.isfinite(n) and n > 1e-9):
        raise ValueError(f"a direction needs a length, got {np.asarray(direction).tolist()}")
    f = f / n
    u = np.asarray(up, np.float64)
    x = np.cross(u, -f)  # +X = up x +Z, where +Z = -direction
    if np.linalg.norm(x) < 1e-6:
        x = np.cross(np.array([0.0, 0.0, 1.0]) if abs(f[1]) > 0.5 else np.array([0.0, 1.0, 0.0]), -f)
    x /= np.linalg.norm(x)
    y = np.cross(-f, x)
    r = np.stack([x, y, -f], axis=1)
    return canonical(from_matrix(r)).astype(np.float64)


def projection_from_raw(left: float, right: float, top: float, bottom: float, near: float,
                        far: float) -> np.ndarray:
    """OpenGL projection (float32, NDC z in [-1, 1]) from OpenVR's ``getProjectionRaw`` tangents. OpenVR's
    ``top`` is the tangent of the angle down (y-down order) and ``bottom`` the angle up, so the frustum's upper
    edge is ``bottom`` and its lower edge ``top``."""
    if not right > left or not bottom > top:
        raise ValueError(f"projection tangents need left < right and top < bottom, got {left, right, top, bottom}")
    if not 0.0 < near < far:
        raise ValueError(f"need 0 < near < far, got near={near}, far={far}")
    up, down = bottom, top
    m = np.zeros((4, 4))
    m[0, 0] = 2.0 / (right - left)
    m[0, 2] = (right + left) / (right - left)
    m[1, 1] = 2.0 / (up - down)
    m[1, 2] = (up + down) / (up - down)
    m[2, 2] = -(far + near) / (far - near)
    m[2, 3] = -2.0 * far * near / (far - near)
    m[3, 2] = -1.0
    return m.astype(np.float32)


def symmetric_raw(fov_y_deg: float, aspect: float = 1.0) -> tuple[float, float, float, float]:
    """OpenVR-ordered raw tangents (left, right, top, bottom) of a symmetric frustum."""
    t = math.tan(math.radians(fov_y_deg) / 2.0)
    return (-t * aspect, t * aspect, -t, t)


@dataclass
class EyeGeometry:
    """Both eyes: image size in pixels, eye-to-head transforms (2,4,4) and raw projection tangents (2,4) in
    OpenVR order (left, right, top, bottom); index 0 is the left eye."""

    width: int
    height: int
    eye_to_head: np.ndarray
    raw: np.ndarray
    near: float = 0.05
    far: float = 100.0

    @classmethod
    def simulated(cls, size: int = DEFAULT_EYE_SIZE) -> EyeGeometry:
        """The simulated headset: IPD 0.064 m (eyes at -/+0.032 m along the head's x axis), symmetric 100 deg
        vertical field of view, square ``size`` images."""
        e2h = np.stack([np.eye(4), np.eye(4)])
        e2h[0, 0, 3], e2h[1, 0, 3] = -IPD / 2.0, IPD / 2.0
        raw = np.array([symmetric_raw(SIM_FOV_Y)] * 2, np.float64)
        return cls(int(size), int(size), e2h, raw)

    def projection(self, eye: int) -> np.ndarray:
        """The eye's OpenGL projection (float32)."""
        left, right, top, bottom = (float(v) for v in self.raw[eye])
        return projection_from_raw(left, right, top, bottom, self.near, self.far)

    def view(self, eye: int, head: np.ndarray, tracking_to_world: np.ndarray | None = None) -> np.ndarray:
        """The eye's view matrix (float32): world -> eye, for the head's tracking-space pose ``head`` and the
        tracking-to-world transform (None: identity)."""
        t2w = np.eye(4) if tracking_to_world is None else np.asarray(tracking_to_world, np.float64)
        return np.linalg.inv(t2w @ np.asarray(head, np.float64) @ self.eye_to_head[eye]).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        return {"width": self.width, "height": self.height, "near": self.near, "far": self.far,
                "eye_to_head": np.asarray(self.eye_to_head, np.float64).tolist(),
                "raw": np.asarray(self.raw, np.float64).tolist()}

    @classmethod
    def from_dict(cls, d: Any, where: str = "eyes") -> EyeGeometry:
        """Read :meth:`to_dict`'s form back (ValueError naming the key)."""
        if not isinstance(d, dict) or set(d) != {"width", "height", "near", "far", "eye_to_head", "raw"}:
            raise ValueError(f"{where} must hold width, height, near, far, eye_to_head, raw")
        for k in ("width", "height"):
            if isinstance(d[k], bool) or not isinstance(d[k], int) or not 1 <= d[k] <= 8192:
                raise ValueError(f"{where}.{k} must be an integer in [1, 8192], got {d[k]!r}")
        try:
            e2h = np.asarray(d["eye_to_head"], np.float64)
            raw = np.asarray(d["raw"], np.float64)
            near, far = float(d["near"]), float(d["far"])
        except (TypeError, ValueError):
            raise ValueError(f"{where}: eye_to_head (2,4,4), raw (2,4), near and far must be numbers") from None
        if e2h.shape != (2, 4, 4) or raw.shape != (2, 4) or not np.isfinite(e2h).all() or not np.isfinite(raw).all():
            raise ValueError(f"{where}: eye_to_head must be (2,4,4) and raw (2,4) finite numbers")
        geo = cls(int(d["width"]), int(d["height"]), e2h, raw, near, far)
        geo.projection(0), geo.projection(1)  # validates the tangents and clip planes
        return geo


@dataclass
class VRFrame:
    """One frame of a VR device: ``t`` (seconds on the one clock) and one sample per tracked device."""

    t: float
    samples: dict[str, TrackedSample] = field(default_factory=dict)


class VRDevice(Protocol):
    """What the VR session needs of a device (see the module docstring)."""

    name: str
    geometry: EyeGeometry
    fps: float

    def wait_poses(self) -> VRFrame | None:
        """Block until the next frame's poses (a real headset paces the loop here); None: no more frames."""
        ...

    def submit(self, left: Any, right: Any) -> None:
        """Hand the eyes' RGBA8 textures (moderngl textures) to the compositor, left then right."""
        ...

    def haptic(self, hand: str, seconds: float) -> None:
        """A short vibration of a controller."""
        ...

    def close(self) -> None:
        ...
