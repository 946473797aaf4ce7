"""The engine's components: plain data per entity (numpy arrays and references to shared, read-only asset data).

No GPU handle lives here (STYLE.md 1): the deformer graph and the renderer keep their per-entity state in the
scene's mesh table (engine/scene.py, a world resource), keyed by entity id.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from engine.anim import Playback, Pose, Rig
from engine.anim.posing import apply_rotation_deltas
from engine.anim.timeline import TimelinePlayback
from engine.assets.model import Asset

__all__ = ["PrimitiveKey", "Placement", "AssetRef", "Animator", "PoseLayer", "SkeletonPose", "DeformedMeshes",
           "MorphWeights", "playback_weights"]


class PrimitiveKey(NamedTuple):
    """One mesh primitive instanced in the default scene: (glTF node of the instance, mesh, primitive)."""

    node: int
    mesh: int
    primitive: int

    @property
    def export_key(self) -> str:
        """The ``export-frame`` npz key: ``node{n}_mesh{m}_prim{p}``."""
        return f"node{self.node}_mesh{self.mesh}_prim{self.primitive}"


@dataclass
class Placement:
    """Where the character stands: a world matrix applied on top of the asset's own scene graph."""

    matrix: np.ndarray = field(default_factory=lambda: np.eye(4, dtype=np.float32))


@dataclass
class AssetRef:
    """Which asset this entity plays; ``asset`` and ``rig`` are shared by every instance of the asset."""

    name: str
    asset: Asset
    rig: Rig


class StillPlayback:
    """Stands in for a Playback on assets without clips (or a held pose): the pose stays as it is."""

    def advance(self, dt: float) -> None:
        pass

    def evaluate(self, out: Pose | None = None) -> Pose | None:
        return out


@dataclass
class Animator:
    """Clip playback state; ``pose`` is the sampled local pose of the current fixed step."""

    playback: Playback | StillPlayback
    pose: Pose


@dataclass
class PoseLayer:
    """An additive pose over the playing clip (line-of-action posing): ``rotation`` (N,4) float32 local rotation
    deltas in each node's parent space, applied after sampling as ``posed = delta * sampled`` (so a walking
    character can be posed). ``hold``: the unlayered pose of a still playback (which never resamples), so the
    layer is applied to it afresh each step instead of compounding."""

    rotation: np.ndarray
    hold: Pose | None = None

    @classmethod
    def identity(cls, count: int, hold: Pose | None = None) -> PoseLayer:
        return cls(np.tile(np.array([0, 0, 0, 1], np.float32), (int(count), 1)), hold)

    def apply(self, pose: Pose) -> Pose:
        """Layer ``pose`` in place (from ``hold`` when set); returns it."""
        if self.hold is not None:
            pose.copy_from(self.hold)
        return apply_rotation_deltas(pose, self.rotation, out=pose)


@dataclass
class MorphWeights:
    """Morph-target weights of a character's morphed mesh nodes (node -> (M,) float32): ``rest`` (node.weights,
    else mesh.weights), ``override`` (set by script: ``Character.set_morph_weights``; wins over the clip) and
    ``current``, what the next deformation uses: per node the override, else the playing clip's weights channel,
    else the rest weights (refreshed by :meth:`update` on every animation step)."""

    rest: dict[int, np.ndarray]
    override: dict[int, np.ndarray] = field(default_factory=dict)
    current: dict[int, np.ndarray] = field(default_factory=dict)

    def update(self, sampled: dict[int, np.ndarray]) -> None:
        """``current`` from the clip's ``sampled`` weights (node -> (M,); other nodes ignored)."""
        cur = {}
        for node, rest in self.rest.items():
            w = self.override.get(node)
            if w is None:
                w = sampled.get(node)
                w = rest if w is None or w.shape != rest.shape else w
            cur[node] = w
        self.current = cur


def playback_weights(playback: Playback | StillPlayback | TimelinePlayback) -> dict[int, np.ndarray]:
    """The morph weights a Playback's clip or a timeline's live segment gives now (a StillPlayback gives none)."""
    return playback.morph_weights() if isinstance(playback, (Playback, TimelinePlayback)) else {}


@dataclass
class SkeletonPose:
    """World matrices (N,4,4) of every node of the asset, placement included: ``globals`` of the last fixed
    step and ``previous`` of the one before (rendering interpolates between them by the clock's alpha)."""

    globals: np.ndarray
    previous: np.ndarray

    @classmethod
    def of(cls, globals_: np.ndarray) -> SkeletonPose:
        g = np.asarray(globals_, np.float32)
        return cls(g.copy(), g.copy())


@dataclass
class DeformedMeshes:
    """Deformed world-space display positions per primitive (CPU device and rigid node meshes); the GPU path
    keeps skinned vertices on the GPU and leaves them out."""

    positions: dict[PrimitiveKey, np.ndarray] = field(default_factory=dict)
