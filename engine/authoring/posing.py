"""Posing by line of action (research 7.2) from window strokes: the posing plane, the skeleton's root, and
window strokes lifted onto the plane. The solver itself is engine/anim/posing.py, reached through
:meth:`engine.session.Character.apply_line_of_action`.

The default posing plane passes through the skeleton's root (its top-most skin joint) parallel to the image
plane: its normal is the camera's viewing direction (turned back towards the camera), not the direction from
the root to the eye, so a point drawn anywhere on screen lands at the root's depth. The editor moves it along
its normal and turns and tilts it (``offset``, ``turn``, ``tilt``).

Window and world strokes take one path after unprojection, so that identical geometry poses identically: every
sample of a window stroke is unprojected onto the plane and the 3D points are reduced and fitted as a world
stroke is (RDP at 0.01 m, :meth:`engine.input.strokes.Stroke.fit`); the brush radius in pixels becomes metres at
the plane's depth; and both get the frames' reference normal from :func:`frame_reference`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.authoring.view import pixels_to_metres, unproject_points
from engine.input.rays import facing_plane
from engine.input.strokes import Stroke

__all__ = ["PosingPlane", "posing_plane", "skeleton_root", "unproject_stroke", "brush_metres", "frame_reference"]


@dataclass(frozen=True)
class PosingPlane:
    """The plane window strokes are unprojected onto: ``point`` (its centre), unit ``normal`` (towards the
    camera), in-plane unit axes ``right`` and ``up`` (for drawing it), and the pyrr plane."""

    point: np.ndarray
    normal: np.ndarray
    right: np.ndarray
    up: np.ndarray

    @property
    def pyrr(self) -> np.ndarray:
        return facing_plane(self.point, self.point + self.normal)

    def corners(self, half: float) -> np.ndarray:
        """The square of side 2 * ``half`` metres around the centre (4, 3), for drawing."""
        r, u = self.right * half, self.up * half
        return np.stack([self.point - r - u, self.point + r - u, self.point + r + u, self.point - r + u])


def _rotate(v: np.ndarray, axis: np.ndarray, degrees: float) -> np.ndarray:
    a = np.radians(degrees)
    axis = axis / np.linalg.norm(axis)
    return v * np.cos(a) + np.cross(axis, v) * np.sin(a) + axis * (axis @ v) * (1.0 - np.cos(a))


def posing_plane(root: np.ndarray, camera: Any, *, offset: float = 0.0, turn: float = 0.0,
                 tilt: float = 0.0) -> PosingPlane:
    """The posing plane: through ``root`` parallel to the image plane (normal: the camera's viewing direction
    ``target - eye``, pointing back towards the camera), turned ``turn`` degrees about the world's up axis,
    tilted ``tilt`` degrees about the camera's horizontal axis, then moved ``offset`` metres along its
    normal."""
    root = np.asarray(root, np.float64)
    n = np.asarray(camera.eye, np.float64) - np.asarray(camera.target, np.float64)
    length = float(np.linalg.norm(n))
    if not length > 1e-9:
        raise ValueError("the camera's eye and target coincide: no viewing direction for the posing plane")
    n /= length
    world_up = np.array([0.0, 1.0, 0.0])
    right = np.cross(world_up, n)
    if np.linalg.norm(right) < 1e-6:  # looking straight down or up: any horizontal axis
        right = np.array([1.0, 0.0, 0.0])
    right /= np.linalg.norm(right)
    n, right = _rotate(n, world_up, turn), _rotate(right, world_up, turn)
    n = _rotate(n, right, tilt)
    up = np.cross(n, right)
    return PosingPlane(root + n * offset, n, right, up / np.linalg.norm(up))


def skeleton_root(character: Any) -> np.ndarray:
    """World position of the skeleton's root: the top-most skin joint (by depth, then node index)."""
    from engine.anim.posing import skin_joints

    rig = character.loaded.rig
    joints = skin_joints(rig)
    if joints.size == 0:
        raise ValueError(f"{character.name!r} has no skin joints to pose")
    root = joints[np.lexsort((joints, rig.depth[joints]))[0]]
    return character.joints()[root, :3, 3].astype(np.float64)


def unproject_stroke(stroke: Stroke, camera: Any, width: int, height: int, plane: np.ndarray) -> Stroke:
    """A window stroke's samples unprojected onto ``plane`` (a pyrr plane) through ``camera`` and fitted as a
    world stroke is (reduced at the 3D default, 0.01 m), so that the projection of a world stroke lying on the
    plane gives that world stroke back. A stroke fitted without reduction (epsilon 0: the editor's stroke with
    a dragged knot, whose samples are its knots) keeps every point. ValueError naming the first sample that
    misses the plane."""
    if stroke.dim != 2:
        raise ValueError(f"unproject_stroke takes a window (2D) stroke, got {stroke.dim}D")
    hits = unproject_points(np.asarray(stroke.samples), camera, width, height, plane, plane_name="the posing plane")
    return Stroke.fit(hits, stroke.times, epsilon=0.0 if stroke.epsilon == 0 else None)


def brush_metres(pixels: float, camera: Any, height: int, plane: PosingPlane) -> float:
    """A brush radius of ``pixels`` window pixels in metres on the posing plane (at its centre's depth), for
    window strokes unprojected onto it."""
    return pixels_to_metres(pixels, camera, height, plane.point)


def frame_reference(baseline: Stroke, offset: Stroke, plane: PosingPlane) -> np.ndarray:
    """The reference normal of a pair's rotation-minimising frames: the normal of the plane the two (3D)
    strokes span, else (all on one line) the posing plane's normal. Strokes on the posing plane get its normal
    either way (the frames' rotations do not depend on the normal's sign), whether they were drawn in the
    window or given in the world."""
    from engine.anim.posing import common_normal

    n = common_normal(baseline, offset)
    return plane.normal.copy() if n is None else n
