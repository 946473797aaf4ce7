"""The renderer's look: settings (colours, ground, shadows, wireframe, tessellation), debug views, lights.

:class:`LookSettings` is plain data the passes read every frame (change a field between frames; the
backdrop pass redraws when it changes). :class:`Lights` owns the light uniform block (``layouts.LIGHT``
structs) the backdrop and compose passes bind. Colours in settings are display sRGB; the shaders shade
in linear light (:func:`linear_rgb`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.gpu.layouts import LIGHT, MAX_LIGHTS
from engine.gpu.resources import GpuResources

__all__ = ["LookSettings", "Lights", "VIEWS", "SHADOW_MODES", "default_lights", "srgb_to_linear", "linear_rgb"]

VIEWS = ("color", "albedo", "normal", "position", "depth", "triangle", "barycentric", "mesh", "silhouette")
"""What the compose pass shows: the lit frame, one G-buffer channel in false colour, or the silhouette filter's
output (engine/render/silhouette.py; its channel and threshold: ``SceneRenderer.silhouette_view``)."""
SHADOW_MODES = ("off", "blob", "map")


def srgb_to_linear(c) -> np.ndarray:
    """sRGB-encoded components (any shape) to linear light, float64."""
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_rgb(c) -> tuple[float, ...]:
    """An sRGB colour as a tuple of linear floats (what a ``vec3`` uniform takes)."""
    return tuple(float(x) for x in srgb_to_linear(c))


@dataclass
class LookSettings:
    """Colours are display sRGB (converted to linear for shading); lengths in metres.

    ``shadows``: "off", "blob" (default: soft contact shadows under each entity, nearly free) or "map"
    (key-light shadow map with ``shadow_taps`` 1, 4 or 9 hardware-filtered taps per pixel, re-rendered
    every ``shadow_interval`` frames); True means "map", False "off". ``tessellation`` turns on Phong
    tessellation (``tess_level`` in [1, 16], shape factor ``phong_alpha`` in [0, 1])."""

    background_top: tuple = (0.33, 0.40, 0.50)
    background_horizon: tuple = (0.72, 0.74, 0.76)
    background_bottom: tuple = (0.30, 0.30, 0.31)
    ground: bool = True
    ground_height: float = 0.0
    ground_color: tuple = (0.50, 0.50, 0.49)
    grid_color: tuple = (0.30, 0.31, 0.33)
    grid_spacing: tuple = (0.25, 1.0)
    fade_range: tuple | None = None  # None: from the camera distance
    sky_color: tuple = (0.62, 0.68, 0.78)
    ground_bounce: tuple = (0.36, 0.33, 0.30)
    ambient: float = 0.45
    rim_strength: float = 0.12
    exposure: float = 1.0
    shadows: str | bool = "blob"
    shadow_taps: int = 1
    shadow_interval: int = 1
    ground_shadow: float = 0.45  # darkening of the ground in full key-light shadow ("map")
    blob_strength: float = 0.5
    wireframe: bool = False
    wire_color: tuple = (0.05, 0.06, 0.08)
    tessellation: bool = False
    tess_level: float = 3.0
    phong_alpha: float = 0.75

    def shadow_mode(self) -> str:
        """The validated shadow mode ("off", "blob" or "map")."""
        s = self.shadows
        mode = ("map" if s else "off") if isinstance(s, bool) else s
        if mode not in SHADOW_MODES:
            raise ValueError(f"shadows must be one of {SHADOW_MODES} (or a bool), got {s!r}")
        if mode == "map" and self.shadow_taps not in (1, 4, 9):
            raise ValueError(f"shadow_taps must be 1, 4 or 9, got {self.shadow_taps!r}")
        if mode == "map" and not (isinstance(self.shadow_interval, int) and self.shadow_interval >= 1):
            raise ValueError(f"shadow_interval must be an int >= 1 frames, got {self.shadow_interval!r}")
        return mode

    def check(self) -> None:
        """Raise ValueError for a setting out of range."""
        self.shadow_mode()
        if not 1.0 <= float(self.tess_level) <= 16.0:
            raise ValueError(f"tess_level must be in [1, 16], got {self.tess_level!r}")
        if not 0.0 <= float(self.phong_alpha) <= 1.0:
            raise ValueError(f"phong_alpha must be in [0, 1], got {self.phong_alpha!r}")
        if not 0.0 <= float(self.blob_strength) <= 1.0:
            raise ValueError(f"blob_strength must be in [0, 1], got {self.blob_strength!r}")

    def ambient_colors(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(sky, ground bounce) hemisphere ambient in linear light, scaled by ``ambient``."""
        return (tuple(self.ambient * x for x in linear_rgb(self.sky_color)),
                tuple(self.ambient * x for x in linear_rgb(self.ground_bounce)))


def default_lights() -> np.ndarray:
    """Key (warm, upper front right), fill (cool, left) and back light as LIGHT structs."""
    lights = LIGHT.zeros(3)
    dirs = np.array([[0.75, 1.0, 0.5], [-0.8, 0.35, 0.45], [-0.2, 0.6, -1.0]])
    lights["direction"][:, :3] = dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    lights["color"] = [[1.25, 1.17, 1.05, 0.2], [0.26, 0.31, 0.42, 0.5], [0.35, 0.35, 0.4, 0.0]]
    return lights


class Lights:
    """The light uniform block (MAX_LIGHTS ``LIGHT`` structs): ``count`` lights in use, the key light's
    unit direction (the first light casts shadows) and a ``version`` that changes with every :meth:`set`
    (the backdrop pass redraws, the shadow pass re-renders)."""

    def __init__(self, resources: GpuResources) -> None:
        self.res = resources
        self.buffer = resources.buffer(LIGHT.zeros(MAX_LIGHTS), label="lights")
        self.count = 0
        self.version = 0
        self.key_direction = np.array([0.0, 1.0, 0.0])

    def set(self, lights: np.ndarray) -> None:
        """Replace the lights (an array of ``layouts.LIGHT``); directions are normalised here."""
        if lights.dtype != LIGHT.dtype or not 1 <= len(lights) <= MAX_LIGHTS:
            raise ValueError(f"lights must be 1..{MAX_LIGHTS} LIGHT structs, got {len(lights)} of {lights.dtype}")
        d = np.asarray(lights["direction"][:, :3], np.float64)
        norm = np.linalg.norm(d, axis=1)
        if not np.all(np.isfinite(norm)) or np.any(norm < 1e-9):
            raise ValueError(f"light directions must be finite non-zero vectors, got {d.tolist()}")
        lights = np.array(lights, copy=True)
        lights["direction"][:, :3] = d / norm[:, None]  # the shaders take unit directions
        self.buffer.write(np.ascontiguousarray(lights).tobytes())
        self.count = len(lights)
        self.version += 1
        self.key_direction = np.asarray(lights["direction"][0, :3], np.float64)

    def release(self) -> None:
        self.res.release(self.buffer)
