"""The engine's in-memory asset model: what the glTF loader produces and everything else consumes.

Plain data only (numpy arrays, ints, strings), no GL handles. Conventions (see ARCHITECTURE.md):
metres, right-handed, +Y up; quaternions (x, y, z, w); 4x4 matrices float32, column-vector convention
(p' = M @ p), so ``matrix[:3, 3]`` is the translation. Indices into the lists below are the glTF indices
(node n of the file is ``asset.nodes[n]``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Primitive:
    """One triangle list. Non-indexed glTF primitives get ``indices = arange(count).reshape(-1, 3)``.

    positions (N,3) float32; normals (N,3) float32 or None; texcoords (N,2) float32 or None (TEXCOORD_0);
    joints (N,4n) uint16 or None (JOINTS_0..JOINTS_{n-1} side by side, 4 influence slots per set; with several
    sets each row is sorted by weight, largest first; indices into the skin's joint list, validated < count);
    weights (N,4n) float32 or None (WEIGHTS_0.. decoded from normalized ints, renormalised to sum 1);
    indices (T,3) uint32 (validated < N); material: index into Asset.materials or None.
    target_positions (M,N,3) float32 / target_normals (M,N,3) float32 or None: the M morph targets' POSITION and
    NORMAL deltas (a target without one of them holds zeros there; TANGENT deltas are not kept). The morphed
    vertex is ``positions + sum_m w_m * target_positions[m]`` (glTF 2.0, 3.7.2.2; engine.skinning.morph).
    """

    positions: np.ndarray
    indices: np.ndarray
    normals: np.ndarray | None = None
    texcoords: np.ndarray | None = None
    joints: np.ndarray | None = None
    weights: np.ndarray | None = None
    material: int | None = None
    target_positions: np.ndarray | None = None
    target_normals: np.ndarray | None = None

    @property
    def target_count(self) -> int:
        """Number of morph targets (0: none)."""
        return 0 if self.target_positions is None else int(self.target_positions.shape[0])

    @property
    def vertex_count(self) -> int:
        return int(self.positions.shape[0])

    @property
    def triangle_count(self) -> int:
        return int(self.indices.shape[0])

    @property
    def is_skinned(self) -> bool:
        return self.joints is not None and self.weights is not None


@dataclass
class Mesh:
    """``weights``: (M,) float32 default morph weights (mesh.weights, zeros when absent; M = 0 without morph
    targets); ``target_names``: mesh.extras.targetNames when the file gives M strings, else empty."""

    name: str
    primitives: list[Primitive]
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    target_names: list[str] = field(default_factory=list)

    @property
    def target_count(self) -> int:
        return int(self.weights.shape[0])


@dataclass
class Node:
    """A scene-graph node. ``matrix`` is set when the file gave a matrix (then the node is not animated
    through TRS); otherwise translation (3,), rotation (4,) xyzw unit, scale (3,) describe the rest pose."""

    name: str
    parent: int = -1
    children: list[int] = field(default_factory=list)
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3, np.float32))
    rotation: np.ndarray = field(default_factory=lambda: np.array([0, 0, 0, 1], np.float32))
    scale: np.ndarray = field(default_factory=lambda: np.ones(3, np.float32))
    matrix: np.ndarray | None = None
    mesh: int | None = None
    skin: int | None = None
    #: (M,) float32 node.weights: morph weights overriding the mesh's default ones, or None
    weights: np.ndarray | None = None


@dataclass
class Skin:
    """joints: (J,) int node indices; inverse_bind: (J,4,4) float32 (identity when absent);
    skeleton: the node the file names as skeleton root, or None."""

    name: str
    joints: np.ndarray
    inverse_bind: np.ndarray
    skeleton: int | None = None


@dataclass
class Channel:
    """One animation channel. times (K,) float32 strictly increasing, finite, >= 0.
    values: (K, C) for STEP/LINEAR; (K, 3, C) for CUBICSPLINE as (in-tangent, value, out-tangent).
    C = 3 for translation/scale, 4 for rotation (xyzw, normalised at load), M (the node's mesh's morph target
    count) for weights."""

    node: int
    path: str  # "translation" | "rotation" | "scale" | "weights"
    interpolation: str  # "STEP" | "LINEAR" | "CUBICSPLINE"
    times: np.ndarray
    values: np.ndarray


@dataclass
class Clip:
    name: str
    channels: list[Channel]

    @property
    def start(self) -> float:
        return min((float(c.times[0]) for c in self.channels), default=0.0)

    @property
    def end(self) -> float:
        return max((float(c.times[-1]) for c in self.channels), default=0.0)

    @property
    def duration(self) -> float:
        """Length of the clip in seconds, measured from t = 0 as glTF players do."""
        return self.end


@dataclass
class Image:
    """Decoded texture image, (H, W, 4) uint8 RGBA, row 0 = top of the image as stored in the file."""

    name: str
    rgba: np.ndarray


@dataclass
class Material:
    name: str
    base_color_factor: np.ndarray = field(default_factory=lambda: np.ones(4, np.float32))
    base_color_image: int | None = None  # index into Asset.images
    base_color_texcoord: int = 0
    double_sided: bool = False


@dataclass
class Scene:
    name: str
    nodes: list[int]


@dataclass
class Asset:
    path: Path | None
    meshes: list[Mesh] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    skins: list[Skin] = field(default_factory=list)
    clips: list[Clip] = field(default_factory=list)
    materials: list[Material] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    scenes: list[Scene] = field(default_factory=list)
    scene: int = 0  # default scene index (0 when the file names none)
    warnings: list[str] = field(default_factory=list)

    def scene_nodes(self, scene: int | None = None) -> list[int]:
        """Every node reachable from the roots of ``scene`` (default scene), parents before children."""
        if not self.scenes:
            roots = [i for i, n in enumerate(self.nodes) if n.parent < 0]
        else:
            roots = list(self.scenes[self.scene if scene is None else scene].nodes)
        out: list[int] = []
        stack = list(reversed(roots))
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(reversed(self.nodes[n].children))
        return out

    def morph_weights(self, node: int) -> np.ndarray:
        """The rest morph weights of ``node``'s mesh: node.weights when given, else mesh.weights (a copy)."""
        n = self.nodes[node]
        if n.mesh is None:
            return np.zeros(0, np.float32)
        w = n.weights if n.weights is not None else self.meshes[n.mesh].weights
        return np.array(w, np.float32)

    def clip_index(self, name_or_index: str | int) -> int:
        """Resolve a clip by name or index; raises ValueError listing the valid choices."""
        if isinstance(name_or_index, int) or (isinstance(name_or_index, str) and name_or_index.isdigit()):
            i = int(name_or_index)
            if 0 <= i < len(self.clips):
                return i
        else:
            for i, c in enumerate(self.clips):
                if c.name == name_or_index:
                    return i
        choices = ", ".join(f"{i}:{c.name!r}" for i, c in enumerate(self.clips)) or "none"
        raise ValueError(f"no clip {name_or_index!r}; the asset has {choices}")
