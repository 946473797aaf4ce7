"""Components of the demo scene: plain data (numpy arrays and references to shared, read-only asset data).

No GPU handle lives here (STYLE.md 1): the renderer and the deformer graph keep their own per-entity state,
keyed by entity id, in world resources.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.anim import Playback, Pose, Rig
from engine.assets.model import Asset


@dataclass
class Placement:
    """Where the character stands: a world matrix applied on top of the asset's own scene graph."""

    matrix: np.ndarray = field(default_factory=lambda: np.eye(4, dtype=np.float32))


@dataclass
class Character:
    """Which asset this entity plays; ``asset`` and ``rig`` are shared by every instance of the asset."""

    name: str
    asset: Asset
    rig: Rig


@dataclass
class Animator:
    """Clip playback state; ``pose`` is the sampled local pose of the current fixed step."""

    playback: Playback
    pose: Pose


@dataclass
class SkeletonPose:
    """World matrices (N,4,4) of every node of the asset this step, placement included."""

    globals: np.ndarray


@dataclass
class DeformedMeshes:
    """Deformed world-space display positions per mesh instance (CPU path); the GPU path leaves this empty
    and keeps vertices on the GPU."""

    positions: dict[str, np.ndarray] = field(default_factory=dict)
