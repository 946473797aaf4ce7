"""Cameras: a look-at perspective camera and an orbit camera driven by mouse drag, wheel and pan.

Matrices are float32 4x4 in the column-vector convention (p_clip = projection @ view @ p_world), the
OpenGL clip-space conventions (right-handed view space looking down -Z, NDC z in [-1, 1]). Upload
them to GLSL ``mat4`` uniforms transposed (``m.T.tobytes()``), since GLSL reads column-major.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from engine.input.strokefile import CameraSpec

_EPS = 1e-9


def _vec3(v, what: str) -> np.ndarray:
    a = np.asarray(v, np.float64).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{what} must be 3 finite numbers, got {v!r}")
    return a


def look_at(eye, target, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    """View matrix mapping world to a right-handed view space whose -Z looks from ``eye`` at ``target``."""
    eye, target, up = _vec3(eye, "eye"), _vec3(target, "target"), _vec3(up, "up")
    f = target - eye
    n = np.linalg.norm(f)
    if n < _EPS:
        raise ValueError(f"eye and target coincide ({eye.tolist()}); a camera needs a view direction")
    f /= n
    s = np.cross(f, up)
    if np.linalg.norm(s) < 1e-6:  # looking straight along up: pick another up
        s = np.cross(f, np.array([0.0, 0.0, -1.0]) if abs(f[1]) > 0.5 else np.array([0.0, 1.0, 0.0]))
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m.astype(np.float32)


def perspective(fov_y_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    """OpenGL perspective projection (vertical field of view in degrees, NDC z in [-1, 1])."""
    if not 0.0 < fov_y_deg < 180.0:
        raise ValueError(f"fov_y must be in (0, 180) degrees, got {fov_y_deg}")
    if not aspect > 0.0:
        raise ValueError(f"aspect must be > 0, got {aspect}")
    if not 0.0 < near < far:
        raise ValueError(f"need 0 < near < far, got near={near}, far={far}")
    t = 1.0 / math.tan(math.radians(fov_y_deg) / 2.0)
    m = np.zeros((4, 4))
    m[0, 0] = t / aspect
    m[1, 1] = t
    m[2, 2] = (far + near) / (near - far)
    m[2, 3] = 2.0 * far * near / (near - far)
    m[3, 2] = -1.0
    return m.astype(np.float32)


def check_view_rect(rect: Sequence[float] | None) -> tuple[float, float, float, float] | None:
    """A view rectangle ``(x, y, w, h)`` as fractions of the frame (x from the left, y from the top; w, h > 0,
    inside [0, 1]); None stays None. ValueError naming the value otherwise."""
    if rect is None:
        return None
    try:
        x, y, w, h = (float(v) for v in rect)
    except (TypeError, ValueError):
        raise ValueError(f"view_rect must be (x, y, w, h) fractions of the frame, got {rect!r}") from None
    eps = 1e-6
    if not (all(math.isfinite(v) for v in (x, y, w, h)) and w > 0 and h > 0 and x >= -eps and y >= -eps
            and x + w <= 1 + eps and y + h <= 1 + eps):
        raise ValueError(f"view_rect must be (x, y, w, h) with w, h > 0 inside [0, 1], got {rect!r}")
    return (x, y, w, h)


def view_rect_matrix(rect: Sequence[float]) -> np.ndarray:
    """The clip-space map that puts a whole image (NDC [-1, 1]^2) into the rectangle ``(x, y, w, h)`` of the
    frame (fractions, y from the top): an editor's panels dock around that rectangle, and the scene's camera
    image fills it exactly while the frame keeps the window's size (so window pixels stay the one
    coordinate system of events, picking and strokes)."""
    x, y, w, h = (float(v) for v in rect)
    m = np.eye(4)
    m[0, 0], m[0, 3] = w, 2.0 * x + w - 1.0
    m[1, 1], m[1, 3] = h, 1.0 - (2.0 * y + h)
    return m


class _Perspective:
    """Projection shared by the cameras: needs ``fov_y``, ``aspect``, ``near``, ``far`` and a ``view``."""

    fov_y: float
    aspect: float
    near: float
    far: float
    view_rect: tuple[float, float, float, float] | None

    @property
    def view(self) -> np.ndarray:
        raise NotImplementedError("a camera defines its view matrix")

    @property
    def projection(self) -> np.ndarray:
        return perspective(self.fov_y, self.aspect, self.near, self.far)

    def projection_for(self, aspect: float) -> np.ndarray:
        """The projection for another image aspect (the renderer uses its own width / height). With a
        ``view_rect`` the camera's image fills only that rectangle of the frame (see :func:`view_rect_matrix`)."""
        rect = getattr(self, "view_rect", None)
        if rect is None:
            return perspective(self.fov_y, aspect, self.near, self.far)
        _x, _y, w, h = rect
        return (view_rect_matrix(rect) @ perspective(self.fov_y, aspect * w / h, self.near, self.far)).astype(
            np.float32)

    def view_projection(self, aspect: float | None = None) -> np.ndarray:
        p = self.projection if aspect is None else self.projection_for(aspect)
        return (p @ self.view).astype(np.float32)


@dataclass
class Camera(_Perspective):
    """A perspective look-at camera. ``aspect`` is width / height of the image it renders."""

    eye: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.5, 4.0]))
    target: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 0.0]))
    up: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 0.0]))
    fov_y: float = 45.0
    near: float = 0.05
    far: float = 200.0
    aspect: float = 16.0 / 9.0
    #: the rectangle of the frame the image fills (fractions, y from the top; None: the whole frame)
    view_rect: tuple[float, float, float, float] | None = None

    def __post_init__(self) -> None:
        self.view_rect = check_view_rect(self.view_rect)
        self.eye = _vec3(self.eye, "eye")
        self.target = _vec3(self.target, "target")
        self.up = _vec3(self.up, "up")
        perspective(self.fov_y, self.aspect, self.near, self.far)  # validates

    @property
    def view(self) -> np.ndarray:
        return look_at(self.eye, self.target, self.up)

    @property
    def eye_position(self) -> np.ndarray:
        return np.asarray(self.eye, np.float32)

    @classmethod
    def from_string(cls, text: str, **kwargs) -> Camera:
        """Parse ``"EX,EY,EZ:TX,TY,TZ"`` (eye : target, metres) as the CLI gives it."""
        parts = text.split(":")
        try:
            if len(parts) != 2:
                raise ValueError
            eye = [float(x) for x in parts[0].split(",")]
            target = [float(x) for x in parts[1].split(",")]
            if len(eye) != 3 or len(target) != 3:
                raise ValueError
        except ValueError:
            raise ValueError(f"camera must look like 'EX,EY,EZ:TX,TY,TZ' (eye:target), got {text!r}") from None
        return cls(eye=np.array(eye), target=np.array(target), **kwargs)

    @classmethod
    def from_spec(cls, spec: CameraSpec, *, near: float = 0.05, far: float = 200.0) -> Camera:
        """The camera of a strokes file's :class:`~engine.input.strokefile.CameraSpec` (near/far are the
        caller's: fit them to the scene for depth precision)."""
        return cls(eye=spec.eye.copy(), target=spec.target.copy(), up=spec.up.copy(), fov_y=spec.fov,
                   near=near, far=far, aspect=spec.aspect)

    def fit_depth(self, bounds_min, bounds_max) -> Camera:
        """Fit near/far to a box (eye and aim kept) for depth precision: near halfway from the eye to the box's
        bounding sphere when the eye is well outside it (else 1% of its radius), far three times past it. The
        ``render --camera`` and cutscene cameras (one rule, so their frames match)."""
        lo, hi = _vec3(bounds_min, "bounds_min"), _vec3(bounds_max, "bounds_max")
        centre = (lo + hi) / 2
        radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
        dist = float(np.linalg.norm(self.eye - centre))
        self.near = max(1e-3, 0.5 * (dist - radius)) if dist > 2 * radius else max(1e-3, 0.01 * radius)
        self.far = max(self.near * 10, 3.0 * (dist + radius))
        return self

    def fit(self, bounds_min, bounds_max, *, margin: float = 1.1) -> Camera:
        """Aim at the centre of a box and move the eye back along the current view direction until the
        box's bounding sphere fits the narrower field of view (times ``margin``)."""
        centre, dist = _fit_distance(bounds_min, bounds_max, self.fov_y, self.aspect, margin)
        d = self.eye - self.target
        n = np.linalg.norm(d)
        d = d / n if n > _EPS else np.array([0.0, 0.3, 1.0]) / np.linalg.norm([0.0, 0.3, 1.0])
        self.target = centre
        self.eye = centre + d * dist
        self.near = max(1e-3, dist * 0.01)
        self.far = max(self.far, dist * 20.0)
        return self


def _fit_distance(bounds_min, bounds_max, fov_y: float, aspect: float, margin: float) -> tuple[np.ndarray, float]:
    lo, hi = _vec3(bounds_min, "bounds_min"), _vec3(bounds_max, "bounds_max")
    if np.any(hi < lo):
        raise ValueError(f"bounds_max {hi.tolist()} is below bounds_min {lo.tolist()}")
    centre = (lo + hi) / 2.0
    radius = max(float(np.linalg.norm(hi - lo)) / 2.0, 1e-3)
    half_v = math.radians(fov_y) / 2.0
    half_h = math.atan(math.tan(half_v) * aspect)
    return centre, radius * margin / math.sin(min(half_v, half_h))


@dataclass
class OrbitCamera(_Perspective):
    """Orbit around ``target``: yaw (degrees about +Y, 0 = eye on +Z), pitch (degrees above the
    horizon, clamped to +-89), distance (metres). Mouse drag orbits, the wheel zooms, pan moves the
    target in the view plane. Exposes the same ``view`` / ``projection`` as :class:`Camera`."""

    target: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 0.0]))
    yaw: float = 0.0
    pitch: float = 15.0
    distance: float = 4.0
    fov_y: float = 45.0
    near: float = 0.05
    far: float = 200.0
    aspect: float = 16.0 / 9.0
    orbit_speed: float = 0.3  # degrees per pixel
    zoom_factor: float = 0.9  # distance multiplier per wheel notch
    min_distance: float = 0.05
    max_distance: float = 500.0
    #: the rectangle of the frame the image fills (fractions, y from the top; None: the whole frame)
    view_rect: tuple[float, float, float, float] | None = None

    def __post_init__(self) -> None:
        self.view_rect = check_view_rect(self.view_rect)
        self.target = _vec3(self.target, "target")
        if not self.distance > 0:
            raise ValueError(f"distance must be > 0, got {self.distance}")
        self.pitch = float(np.clip(self.pitch, -89.0, 89.0))
        perspective(self.fov_y, self.aspect, self.near, self.far)

    @property
    def eye(self) -> np.ndarray:
        y, p = math.radians(self.yaw), math.radians(self.pitch)
        offset = np.array([math.cos(p) * math.sin(y), math.sin(p), math.cos(p) * math.cos(y)])
        return self.target + self.distance * offset

    @property
    def eye_position(self) -> np.ndarray:
        return self.eye.astype(np.float32)

    @property
    def view(self) -> np.ndarray:
        return look_at(self.eye, self.target)

    def drag(self, dx_pixels: float, dy_pixels: float) -> None:
        """Orbit: dragging right turns the camera to the right around the target (yaw decreases),
        dragging up (dy > 0 in a y-up window) raises the eye."""
        self.yaw = (self.yaw - dx_pixels * self.orbit_speed) % 360.0
        self.pitch = float(np.clip(self.pitch + dy_pixels * self.orbit_speed, -89.0, 89.0))

    def zoom(self, wheel_notches: float) -> None:
        """Positive notches (wheel up) move closer."""
        self.distance = float(np.clip(self.distance * self.zoom_factor ** wheel_notches,
                                      self.min_distance, self.max_distance))

    def pan(self, dx_pixels: float, dy_pixels: float, viewport_height: int) -> None:
        """Move the target in the view plane so the point under the cursor follows it."""
        if viewport_height <= 0:
            raise ValueError(f"viewport_height must be > 0, got {viewport_height}")
        rows = viewport_height * (self.view_rect[3] if self.view_rect is not None else 1.0)  # the image's rows
        m_per_px = 2.0 * self.distance * math.tan(math.radians(self.fov_y) / 2.0) / rows
        v = self.view
        right, up = v[0, :3].astype(np.float64), v[1, :3].astype(np.float64)
        self.target = self.target - right * dx_pixels * m_per_px - up * dy_pixels * m_per_px

    def fit(self, bounds_min, bounds_max, *, margin: float = 1.1) -> OrbitCamera:
        """Centre on a box and set the distance so its bounding sphere fits the view."""
        centre, dist = _fit_distance(bounds_min, bounds_max, self.fov_y, self.aspect, margin)
        self.target = centre
        self.distance = float(np.clip(dist, self.min_distance, self.max_distance))
        self.near = max(1e-3, dist * 0.01)
        self.far = max(self.far, dist * 20.0)
        return self

    def to_camera(self) -> Camera:
        return Camera(eye=self.eye, target=self.target.copy(), fov_y=self.fov_y, near=self.near, far=self.far,
                      aspect=self.aspect, view_rect=self.view_rect)
