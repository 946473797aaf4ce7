"""Window strokes that raise the humanoid's left arm, as pyglet events for the real editor window (the scripts
the window tests run under Xvfb import this): the baseline along shoulder -> elbow -> hand and the offset
from the shoulder up beside the head."""
from __future__ import annotations

from typing import Any

import numpy as np

SHOULDER, ELBOW, HAND, CHEST = 6, 7, 8, 2  # the humanoid's joints the strokes follow (node indices)


def window_point(camera: Any, width: int, height: int, p: np.ndarray) -> tuple[float, float]:
    """World point -> window pixel (row 0 at the top)."""
    c = camera.projection_for(width / height) @ camera.view @ np.r_[p, 1.0]
    return float((c[0] / c[3] + 1) * 0.5 * width), float((1 - c[1] / c[3]) * 0.5 * height)


def polyline(points: Any, n: int) -> list[tuple[float, float]]:
    """``n`` points evenly along the polyline through ``points`` (window pixels)."""
    pts = np.asarray(points, float)
    seg = np.r_[0, np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))]
    u = np.linspace(0, seg[-1], n)
    return list(zip(np.interp(u, seg, pts[:, 0]), np.interp(u, seg, pts[:, 1])))


def arm_pose_plan(character: Any, camera: Any, width: int, height: int, *, start: int, n: int,
                  plan: dict[int, list[tuple[Any, ...]]]) -> tuple[int, dict[str, Any]]:
    """Add to ``plan`` (frame -> pyglet events) the two strokes from frame ``start``; returns the frame after
    them and the window points used (shoulder, up, chest, ...)."""
    from pyglet.window import mouse

    g = character.joints()[:, :3, 3]
    shoulder, elbow, hand = (window_point(camera, width, height, g[j]) for j in (SHOULDER, ELBOW, HAND))
    arm = np.hypot(hand[0] - shoulder[0], hand[1] - shoulder[1])
    up = (shoulder[0] + 0.35 * arm, shoulder[1] - 0.95 * arm)  # the hand goes up, beside the head
    mid = (shoulder[0] + 0.55 * arm, shoulder[1] - 0.25 * arm)
    frame = start
    for stroke in (polyline([shoulder, elbow, hand], n), polyline([shoulder, mid, up], n)):
        x, y = stroke[0]
        plan.setdefault(frame, []).append(("on_mouse_press", x, height - y, mouse.LEFT, 0))
        for (x0, y0), (x1, y1) in zip(stroke, stroke[1:]):
            frame += 1
            plan.setdefault(frame, []).append(("on_mouse_drag", x1, height - y1, x1 - x0, y0 - y1, mouse.LEFT, 0))
        frame += 1
        plan.setdefault(frame, []).append(("on_mouse_release", x1, height - y1, mouse.LEFT, 0))
        frame += 4
    chest = window_point(camera, width, height, g[CHEST])
    return frame, {"shoulder": shoulder, "up": up, "chest": chest, "hand": hand}
