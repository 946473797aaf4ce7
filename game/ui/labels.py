"""World-space labels: text pinned to 3-D points, drawn with imgui over the frame (behind imgui's windows).

    from game.ui.labels import Label, draw_labels
    draw_labels(camera, width, height, [Label((0.0, 2.0, 0.0), "lbs")])   # inside an imgui frame

The maths (world point -> window pixel, y down, NaN behind the camera) is the authoring kit's
:func:`engine.authoring.view.window_points`; the demo's comparison mode names each method with it and the
editor can pin names to joints the same way.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.authoring.view import window_points

__all__ = ["Label", "draw_labels"]


@dataclass(frozen=True)
class Label:
    """``text`` centred above (or ``below``) the world point ``position``; ``colour`` is imgui's 0xAABBGGRR."""

    position: Sequence[float]
    text: str
    colour: int = 0xFFFFFFFF
    below: bool = False


def draw_labels(camera: Any, width: int, height: int, labels: Iterable[Label]) -> int:
    """Draw ``labels`` (inside an imgui frame) on a dark backing box; returns how many were on screen."""
    from imgui_bundle import imgui

    labels = list(labels)
    if not labels:
        return 0
    xy = window_points(camera, width, height, np.array([lb.position for lb in labels], np.float64))
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
