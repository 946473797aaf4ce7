"""The node hierarchy of an asset, flattened into arrays for batched forward kinematics.

A :class:`Rig` covers *all* nodes of the asset and its arrays are indexed by glTF node index (row n is
``asset.nodes[n]``), so globals from :func:`engine.anim.fk.global_matrices` can be indexed directly with
``skin.joints``. ``order`` is a topological order (parents before children) and ``levels`` groups the nodes by
depth, which is what FK iterates over. Nodes outside the chosen scene are still evaluated (a joint outside the
scene, as in the AssetGenerator's Animation_Skin_03, then simply uses its own chain); ``in_scene`` marks the
ones reachable from the scene's roots.

Built once per asset at load time; nothing here runs per frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.assets.model import Asset, Skin
from engine.math.transform import compose_trs, decompose

__all__ = ["Rig", "JUMP_LEVELS"]

#: Hierarchies deeper than this many levels compose their globals by pointer jumping (``ceil(log2(depth))``
#: batched steps over all nodes) instead of one step per level: a 300k-node chain then costs ~19 steps, not 300k.
JUMP_LEVELS = 64


@dataclass(eq=False)
class Rig:
    """Flattened hierarchy. Shapes use N = number of nodes of the asset.

    names          list of N node names
    parents        (N,) int32 parent glTF node index, -1 for roots
    translation    (N,3) float32 rest translation
    rotation       (N,4) float32 rest rotation, xyzw, unit
    scale          (N,3) float32 rest scale
    static_matrix  (N,4,4) float32 rest local matrix (the file's matrix where given, else T @ R @ S)
    has_matrix     (N,) bool, True for nodes the file gave as a matrix: FK uses static_matrix for them and
                   ignores their pose TRS (glTF forbids animating them); their rest TRS is the decomposition
    depth          (N,) int32 distance from the root of each node's tree
    order          (N,) int32 topological order (parents before children; by depth, then index)
    levels         list of (n_d,) int32 node indices per depth d
    level_parents  list of (n_d,) int32 parents of ``levels[d]`` (level 0: all -1)
    in_scene       (N,) bool, reachable from the roots of the scene the rig was built for
    skins          the asset's skins (for ``skin_parents(int)``)

    Derived (set in __post_init__, used by engine.anim.fk): ``matrix_nodes`` (indices of has_matrix nodes) and the
    ``fk_*`` index maps that let FK run in depth order: ``fk_slices[k]`` (a contiguous run of that order) becomes
    ``g[fk_parent_pos[k]] @ g[fk_slices[k]]``. Up to :data:`JUMP_LEVELS` levels a step is one level; deeper
    hierarchies use pointer jumping (step k composes every node of depth >= 2**k with its ancestor 2**k levels up),
    so FK always costs at most ``max(JUMP_LEVELS, log2(depth) + 1)`` steps.

    Set-up is linear in the node count (depths by pointer jumping, levels by one sort), so a file with a
    very deep hierarchy loads as fast as a wide one.
    """

    names: list[str]
    parents: np.ndarray
    translation: np.ndarray
    rotation: np.ndarray
    scale: np.ndarray
    static_matrix: np.ndarray
    has_matrix: np.ndarray
    depth: np.ndarray
    order: np.ndarray
    levels: list[np.ndarray]
    level_parents: list[np.ndarray]
    in_scene: np.ndarray
    skins: list[Skin] = field(default_factory=list)
    matrix_nodes: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.matrix_nodes = np.flatnonzero(self.has_matrix).astype(np.int32)
        # FK works in `order` (levels are then contiguous slices, so a level is read and written through views);
        # these are the index maps for it. fk_inverse maps back to glTF order.
        self.fk_order = self.order.astype(np.intp)
        self.fk_inverse = np.argsort(self.fk_order).astype(np.intp)
        self.fk_identity = bool(np.array_equal(self.fk_order, np.arange(self.count)))
        if len(self.levels) > JUMP_LEVELS:
            self.fk_slices, self.fk_parent_pos = _jump_plan(self.parents, self.depth, self.fk_order,
                                                            self.fk_inverse, len(self.levels[0]))
        else:
            bounds = np.cumsum([0] + [len(lv) for lv in self.levels])
            self.fk_slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
            self.fk_parent_pos = [self.fk_inverse[lp] if d else None for d, lp in enumerate(self.level_parents)]
        self.fk_matrix_pos = self.fk_inverse[self.matrix_nodes]
        self.fk_matrices = self.static_matrix[self.matrix_nodes]

    @property
    def count(self) -> int:
        """Number of nodes N."""
        return int(self.parents.shape[0])

    @classmethod
    def from_asset(cls, asset: Asset, scene: int | None = None) -> Rig:
        """Flatten every node of ``asset``; ``scene`` (default: the asset's default scene) only sets
        ``in_scene``. Raises ValueError for a bad scene index, a node with two parents, a parent index out of
        range or a cycle."""
        n = len(asset.nodes)
        if asset.scenes:
            if scene is not None and not 0 <= scene < len(asset.scenes):
                raise ValueError(f"scene {scene} out of range: the asset has scenes 0..{len(asset.scenes) - 1}")
        elif scene not in (None, 0):
            raise ValueError(f"scene {scene} out of range: the asset has no scenes (use None)")

        parents = np.full(n, -1, np.int32)
        for i, node in enumerate(asset.nodes):
            if node.parent >= 0:
                if node.parent >= n:
                    raise ValueError(f"nodes[{i}].parent = {node.parent} out of range 0..{n - 1}")
                parents[i] = node.parent
        for i, node in enumerate(asset.nodes):
            for c in node.children:
                if not 0 <= c < n:
                    raise ValueError(f"nodes[{i}].children contains {c}, out of range 0..{n - 1}")
                if c == i:
                    raise ValueError(f"nodes[{i}] lists itself as a child")
                if parents[c] == -1:
                    parents[c] = i
                elif parents[c] != i:
                    raise ValueError(f"nodes[{c}] has two parents: {int(parents[c])} and {i}")

        depth = _depths(parents)
        order = np.lexsort((np.arange(n), depth)).astype(np.int32)
        # `order` is sorted by depth, so each level is one run of it: split at the depth changes (linear).
        bounds = np.concatenate(([0], np.flatnonzero(np.diff(depth[order])) + 1, [n])).tolist() if n else [0]
        levels = [order[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        level_parents = [parents[lvl] for lvl in levels]

        t = np.zeros((n, 3), np.float32)
        r = np.zeros((n, 4), np.float32)
        s = np.ones((n, 3), np.float32)
        r[:, 3] = 1
        has_matrix = np.zeros(n, bool)
        static = np.tile(np.eye(4, dtype=np.float32), (n, 1, 1))
        for i, node in enumerate(asset.nodes):
            if node.matrix is not None:
                m = np.asarray(node.matrix, np.float32)
                if m.shape != (4, 4):
                    raise ValueError(f"nodes[{i}].matrix must be (4,4), got shape {m.shape}")
                has_matrix[i] = True
                static[i] = m
            else:
                t[i] = node.translation
                r[i] = node.rotation
                s[i] = node.scale
        if has_matrix.any():
            t[has_matrix], r[has_matrix], s[has_matrix] = decompose(static[has_matrix])
        norm = np.linalg.norm(r, axis=1, keepdims=True)
        if np.any(norm <= 0):
            bad = int(np.flatnonzero(norm[:, 0] <= 0)[0])
            raise ValueError(f"nodes[{bad}].rotation is a zero quaternion {r[bad].tolist()} (valid: unit xyzw)")
        r /= norm
        trs = ~has_matrix
        static[trs] = compose_trs(t[trs], r[trs], s[trs])

        in_scene = np.zeros(n, bool)
        if n:
            in_scene[asset.scene_nodes(scene)] = True
        return cls(names=[nd.name for nd in asset.nodes], parents=parents, translation=t, rotation=r, scale=s,
                   static_matrix=static, has_matrix=has_matrix, depth=depth, order=order, levels=levels,
                   level_parents=level_parents, in_scene=in_scene, skins=list(asset.skins))

    def node_index(self, name: str) -> int:
        """Index of the first node called ``name``; ValueError listing a few names otherwise."""
        try:
            return self.names.index(name)
        except ValueError:
            some = ", ".join(repr(x) for x in self.names[:12]) + (", ..." if self.count > 12 else "")
            raise ValueError(f"no node named {name!r}; nodes are {some}") from None

    def _skin(self, skin: Skin | int) -> Skin:
        if isinstance(skin, Skin):
            return skin
        if not 0 <= int(skin) < len(self.skins):
            raise ValueError(f"skin {skin} out of range 0..{len(self.skins) - 1}")
        return self.skins[int(skin)]

    def skin_parents(self, skin: Skin | int) -> np.ndarray:
        """(J,) int32: for each joint of ``skin``, the index (within the skin) of its nearest ancestor that is a
        joint of the same skin, or -1. Non-joint nodes between joints are skipped over."""
        joints = np.asarray(self._skin(skin).joints, np.int64)
        if joints.size and (joints.min() < 0 or joints.max() >= self.count):
            raise ValueError(f"skin joints {joints.tolist()} out of node range 0..{self.count - 1}")
        slot = np.full(self.count, -1, np.int64)
        slot[joints] = np.arange(joints.size)
        # nearest joint strictly above each node, filled parents-first in one pass (linear in the node count)
        parents, slots = self.parents.tolist(), slot.tolist()
        above = [-1] * self.count
        for node in self.order.tolist():  # set-up only
            p = parents[node]
            if p >= 0:
                above[node] = slots[p] if slots[p] >= 0 else above[p]
        out = np.asarray(above, np.int32)[joints] if joints.size else np.full(0, -1, np.int32)
        return out

    def bind_globals(self, skin: Skin | int) -> np.ndarray:
        """(J,4,4) float32 joint world matrices at bind, inv(inverse_bind)."""
        return np.linalg.inv(np.asarray(self._skin(skin).inverse_bind, np.float64)).astype(np.float32)


def _depths(parents: np.ndarray) -> np.ndarray:
    """(N,) int32 depth of every node from its ``parents``, by pointer jumping: O(N log depth), vectorised.

    Each node keeps an ancestor ``anc`` and its distance ``dist`` to it; every round replaces the ancestor by
    the ancestor's ancestor and adds the distances, so after ``log2(depth)`` rounds every chain has reached its
    root. A node whose chain never ends is on (or below) a cycle: ValueError naming the cycle.
    """
    n = parents.shape[0]
    anc = parents.astype(np.int64)
    dist = (anc >= 0).astype(np.int64)
    for _ in range(max(n, 1).bit_length() + 1):
        live = np.flatnonzero(anc >= 0)
        if not live.size:
            return dist.astype(np.int32)
        up = anc[live]
        dist[live] += dist[up]
        anc[live] = anc[up]
    seen: dict[int, int] = {}
    j = int(np.flatnonzero(anc >= 0)[0])
    while j not in seen:  # walk up from a node that never reached a root until a node repeats
        seen[j] = len(seen)
        j = int(parents[j])
    cycle = [k for k, step in seen.items() if step >= seen[j]]
    raise ValueError(f"node hierarchy has a cycle through nodes {sorted(cycle)}")


def _jump_plan(parents: np.ndarray, depth: np.ndarray, order: np.ndarray, inverse: np.ndarray,
               n_roots: int) -> tuple[list[slice], list[np.ndarray | None]]:
    """FK steps by pointer jumping, in positions of ``order`` (sorted by depth).

    Before step k every node holds the product of the ``2**k`` locals ending at it (fewer near a root); step k
    multiplies every node of depth >= 2**k (a suffix of ``order``) by the product held by its ancestor ``2**k``
    levels up, which doubles the span. The first entry (the roots, left as their locals) matches the level plan.
    """
    n = parents.shape[0]
    par = parents[order]
    up = np.where(par >= 0, inverse[np.maximum(par, 0)], -1).astype(np.intp)  # parent position, -1 at roots
    sorted_depth = depth[order]
    slices: list[slice] = [slice(0, n_roots)]
    ups: list[np.ndarray | None] = [None]
    jump = 1
    while jump <= int(sorted_depth[-1]):
        start = int(np.searchsorted(sorted_depth, jump))
        slices.append(slice(start, n))
        ups.append(up[start:].copy())
        has = up >= 0
        up = np.where(has, up[np.maximum(up, 0)], -1)
        jump *= 2
    return slices, ups
