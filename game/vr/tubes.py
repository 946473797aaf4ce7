"""Strokes shown as tubes in both eyes (research 7.5): each stroke is a small mesh of the scene renderer
(engine.render.shapes.tube), drawn by the same G-buffer pass as the characters, so every eye and the mirror see
it at its depth. The stroke being drawn is one mesh updated every frame; a finished stroke keeps its own. Tubes
belong to no character (entity -1): the controller camera, which draws only the tool's character, never lands
on them. Colours: the baseline green, the offset blue (game/ui/colours.py), a surface stroke orange.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.render.look import srgb_to_linear
from engine.render.shapes import tube
from game.ui.colours import BASELINE_RGB, OFFSET_RGB, SURFACE_RGB

__all__ = ["StrokeTubes", "resample", "ROLE_RGB"]

ROLE_RGB = {"baseline": BASELINE_RGB, "offset": OFFSET_RGB, "surface": SURFACE_RGB}
#: points along every tube (a fixed count: the live tube's buffers are made once)
SAMPLES = 48


def resample(points: np.ndarray, count: int = SAMPLES) -> np.ndarray | None:
    """``count`` points evenly spaced by arc length along a polyline (None: it has no length)."""
    p = np.asarray(points, np.float64)
    if len(p) < 2:
        return None
    seg = np.linalg.norm(np.diff(p, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] < 1e-6:
        return None
    u = np.linspace(0.0, s[-1], count)
    return np.stack([np.interp(u, s, p[:, k]) for k in range(3)], axis=1)


class StrokeTubes:
    """The tubes of one VR session (see the module docstring); :meth:`release` removes them."""

    def __init__(self, renderer: Any, *, radius: float = 0.005) -> None:
        self.renderer = renderer
        self.radius = float(radius)
        self.handles: list[Any] = []
        self._live: Any = None
        self._live_role = ""

    def _colour(self, role: str) -> tuple[float, float, float, float]:
        rgb = np.asarray(ROLE_RGB[role], np.float64) / 255.0
        r, g, b = (float(x) for x in srgb_to_linear(rgb))
        return (r, g, b, 1.0)

    def _mesh(self, points: np.ndarray, role: str) -> Any:
        pos, tri = tube(points, self.radius)
        return self.renderer.add_mesh(tri, len(pos), base_color=self._colour(role), positions=pos,
                                      label=f"vr stroke {role}")

    def show_live(self, points: np.ndarray, role: str) -> None:
        """Show the stroke being drawn (hidden while it has no length)."""
        pts = resample(points)
        if pts is None:
            self.hide_live()
            return
        if self._live is not None and self._live_role != role:
            self.hide_live()
        if self._live is None:
            self._live, self._live_role = self._mesh(pts, role), role
            return
        pos, _ = tube(pts, self.radius)
        self.renderer.update_vertices(self._live, pos)

    def hide_live(self) -> None:
        if self._live is not None:
            self.renderer.remove_mesh(self._live)
            self._live = None

    def add(self, points: np.ndarray, role: str) -> None:
        """Keep a finished stroke (its points, e.g. a fitted stroke sampled along its length)."""
        self.hide_live()
        pts = resample(points)
        if pts is not None:
            self.handles.append(self._mesh(pts, role))

    def release(self) -> None:
        self.hide_live()
        for h in self.handles:
            self.renderer.remove_mesh(h)
        self.handles.clear()
