"""Local poses of a rig: one TRS per node, as float32 arrays indexed by glTF node index.

A pose is plain data (it can live in an ECS component). Samplers write into an existing pose, so a per-clip pose
buffer is allocated once and reused every frame; channels a clip does not animate keep whatever the buffer held
(start from :meth:`Pose.rest`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.anim.rig import Rig

__all__ = ["Pose"]


@dataclass(eq=False)
class Pose:
    """translation (N,3), rotation (N,4) xyzw unit, scale (N,3); all float32."""

    translation: np.ndarray
    rotation: np.ndarray
    scale: np.ndarray

    def __post_init__(self) -> None:
        self.translation = np.ascontiguousarray(self.translation, np.float32)
        self.rotation = np.ascontiguousarray(self.rotation, np.float32)
        self.scale = np.ascontiguousarray(self.scale, np.float32)
        n = self.translation.shape[0] if self.translation.ndim == 2 else -1
        if (self.translation.shape != (n, 3) or self.rotation.shape != (n, 4) or self.scale.shape != (n, 3)):
            raise ValueError(f"pose arrays must be (N,3), (N,4), (N,3); got {self.translation.shape}, "
                             f"{self.rotation.shape}, {self.scale.shape}")

    @property
    def count(self) -> int:
        return int(self.translation.shape[0])

    @classmethod
    def rest(cls, rig: Rig) -> Pose:
        """A fresh copy of the rig's rest pose."""
        return cls(rig.translation.copy(), rig.rotation.copy(), rig.scale.copy())

    def copy(self) -> Pose:
        return Pose(self.translation.copy(), self.rotation.copy(), self.scale.copy())

    def copy_from(self, other: Pose) -> Pose:
        """Overwrite this pose with ``other`` in place (no allocation); returns self."""
        np.copyto(self.translation, other.translation)
        np.copyto(self.rotation, other.rotation)
        np.copyto(self.scale, other.scale)
        return self
