"""World-space labels: text pinned to 3-D points, drawn with imgui over the frame (behind imgui's windows).

    from game.ui.labels import Label, draw_labels, project
    draw_labels(camera, width, height, [Label((0.0, 2.0, 0.0), "lbs")])   # inside an imgui frame

:func:`project` is the maths (world point -> window pixel, y down, or None behind the camera); the demo's
comparison mode names each method with it and the editor can pin names to joints the same way.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Label", "project", "draw_labels"]


@dataclass(frozen=True)
class Label:
    """``text`` centred above (or ``below``) the world point ``position``; ``colour`` is imgui's 0xAABBGGRR."""

    position: Sequence[float]
    text: str
    colour: int = 0xFFFFFFFF
    below: bool = False


def project(camera: Any, width: int, height: int, points: np.ndarray) -> np.ndarray:
    """Window pixels (N,2) of world points (N,3), x right and y down from the top-left corner; NaN rows for
    points behind the camera. ``camera``: anything with ``view_projection(aspect)`` (engine.render.camera)."""
    if width < 1 or height < 1:
        raise ValueError(f"the window must be at least 1x1 pixels, got {width}x{height}")
    p = np.asarray(points, np.float64).reshape(-1, 3)
    m = np.asarray(camera.view_projection(width / height), np.float64)
    clip = np.concatenate([p, np.ones((len(p), 1))], axis=1) @ m.T
    out = np.full((len(p), 2), np.nan)
    front = clip[:, 3] > 1e-6
    ndc = clip[front, :2] / clip[front, 3:4]
    out[front, 0] = (ndc[:, 0] + 1.0) * 0.5 * width
    out[front, 1] = (1.0 - ndc[:, 1]) * 0.5 * height
    return out


def draw_labels(camera: Any, width: int, height: int, labels: Iterable[Label]) -> int:
    """Draw ``labels`` (inside an imgui frame) on a dark backing box; returns how many were on screen."""
    from imgui_bundle import imgui

    labels = list(labels)
    if not labels:
        return 0
    xy = project(camera, width, height, np.array([lb.position for lb in labels], np.float64))
    dl = imgui.get_background_draw_list()
    shown = 0
    for lb, (x, y) in zip(labels, xy, strict=True):
        if not (np.isfinite(x) and np.isfinite(y)) or not (0 <= x < width and 0 <= y < height):
            continue
        size = imgui.calc_text_size(lb.text)
        x0, y0 = x - size.x / 2 - 4, (y + 4 if lb.below else y - size.y - 6)
        dl.add_rect_filled(imgui.ImVec2(x0, y0), imgui.ImVec2(x0 + size.x + 8, y0 + size.y + 4), 0xB0000000, 3.0)
        dl.add_text(imgui.ImVec2(x0 + 4, y0 + 2), lb.colour, lb.text)
        shown += 1
    return shown
