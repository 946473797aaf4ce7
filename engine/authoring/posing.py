"""Posing by line of action (research 7.2) from window strokes: the posing plane, the skeleton's root, and
window strokes lifted onto the plane. The solver itself is engine/anim/posing.py, reached through
:meth:`engine.session.Character.apply_line_of_action`.

The default posing plane passes through the skeleton's root (its top-most skin joint) and faces the camera;
the editor moves it along its normal and turns and tilts it (``offset``, ``turn``, ``tilt``). A window stroke's
kept samples (after the RDP reduction) are unprojected onto the plane and refit in metres.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.authoring.view import unproject_points
from engine.input.rays import facing_plane
from engine.input.strokes import Stroke

__all__ = ["PosingPlane", "posing_plane", "skeleton_root", "unproject_stroke"]


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
    """The posing plane: through ``root`` facing the camera, turned ``turn`` degrees about the world's up
    axis, tilted ``tilt`` degrees about the camera's horizontal axis, then moved ``offset`` metres along its
    normal."""
    root = np.asarray(root, np.float64)
    n = np.asarray(camera.eye, np.float64) - root
    length = float(np.linalg.norm(n))
    if not length > 1e-9:
        raise ValueError("the camera eye lies on the skeleton's root: no facing plane")
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
    """A window stroke's kept samples (the 2D reduction's) unprojected onto ``plane`` (a pyrr plane) through
    ``camera``: the 3D stroke, refit in metres. ValueError naming the first sample that misses the plane."""
    if stroke.dim != 2:
        raise ValueError(f"unproject_stroke takes a window (2D) stroke, got {stroke.dim}D")
    hits = np.zeros((len(stroke.samples), 3))
    kept = np.asarray(stroke.kept)
    hits[kept] = unproject_points(np.asarray(stroke.samples)[kept], camera, width, height, plane,
                                  plane_name="the posing plane")
    return stroke.lifted(hits)
