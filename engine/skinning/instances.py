"""Skinned mesh primitives of an asset and their per-instance deformation on the CPU (numpy reference).

An asset may instance one skinned mesh from several nodes (RecursiveSkeletons: 84 nodes share one mesh), so
an instance is (node, mesh, primitive, skin). ``SkinnedPrimitive`` caches what a deformer needs once per
instance (welded topology, attachment binding, skin hierarchy) and ``deform`` evaluates one pose with any
method of the numpy reference (engine/skinning/registry.py): lbs, dqs (per display vertex, exact glTF
semantics), rigid, irs, spring, arap (on welded control points, copied back to display vertices); the spring method
takes the frame's surface-edit forces as the GPU spring stage does (the cpu device's edit path). The GPU
path is engine/skinning/gpu, reached through engine.Session; nothing here touches GL.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.assets.model import Asset, Primitive, Skin
from engine.components import PrimitiveKey
from engine.skinning import registry

__all__ = ["SkinnedPrimitive", "skinned_primitives"]


@dataclass(eq=False)
class SkinnedPrimitive:
    """One skinned primitive instanced by one node of the default scene."""

    node: int
    mesh: int
    prim: int
    skin_index: int
    primitive: Primitive
    skin: Skin
    parents: np.ndarray  # (J,) parent joint within the skin
    _cache: dict[str | tuple[object, ...], Any] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> PrimitiveKey:
        return PrimitiveKey(self.node, self.mesh, self.prim)

    @property
    def bind_joints(self) -> np.ndarray:
        if "bind_joints" not in self._cache:
            ib = np.asarray(self.skin.inverse_bind, np.float64)
            with np.errstate(all="ignore"):
                det = np.linalg.det(ib[:, :3, :3]) if len(ib) else np.ones(0)
                bad = np.flatnonzero(~np.isfinite(det) | (np.abs(det) < 1e-12))
                if bad.size == 0:
                    inv = np.linalg.inv(ib)
                    bad = np.flatnonzero(~np.isfinite(inv).all(axis=(1, 2)) | (np.abs(inv) > 3.0e38).any(axis=(1, 2)))
            if bad.size:
                from engine.assets.errors import AssetError

                raise AssetError(f"skins[{self.skin_index}].inverseBindMatrices[{int(bad[0])}]",
                                 "is singular or its inverse does not fit float32: the bind pose of that joint "
                                 "cannot be recovered")
            self._cache["bind_joints"] = inv.astype(np.float32)
        return self._cache["bind_joints"]

    def topology(self):
        """Welded control points with CSR adjacency (computed once)."""
        if "topology" not in self._cache:
            from engine.skinning.meshprep import prepare_mesh

            self._cache["topology"] = prepare_mesh(self.primitive.positions, self.primitive.indices,
                                                   morph_deltas=self.primitive.target_positions)
        return self._cache["topology"]

    def binding(self, *, method: str = "planar", smooth_passes: int = 6):
        """Attachment binding of the control points (computed once per method and smoothing)."""
        key = ("binding", method, smooth_passes)
        if key not in self._cache:
            from engine.skinning.binding.pipeline import bind

            # the skin weights always: every method then binds each point only to bones whose joint carries a
            # meaningful share of its weight (binding.weight_support), so the springs move it with LBS's joints
            kw: dict[str, Any] = dict(joints=self.primitive.joints, weights=self.primitive.weights)
            self._cache[key] = bind(self.topology(), self.bind_joints, self.parents, method=method,
                                    smooth_passes=smooth_passes, **kw)
        return self._cache[key]

    def skin_matrices(self, globals_: np.ndarray) -> np.ndarray:
        """(..., J,4,4) joint world @ inverse bind for node world matrices ``globals_`` (..., N,4,4) (one pose
        or a stack of poses)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return (globals_[..., self.skin.joints, :, :] @ self.skin.inverse_bind).astype(np.float32)

    def deform(self, globals_: np.ndarray, method: str = "lbs", *, config=None, edits: Any = None,
               morph: np.ndarray | None = None) -> np.ndarray:
        """World-space display vertex positions (D,3) float32 for the pose ``globals_``. ``edits``: this frame's
        surface-edit forces over the control points (engine.skinning.edits.EditTerms, decoded in the pose as the
        GPU path decodes them), spring deformer only; ValueError for another method. ``morph``: (M,) morph
        weights applied to the bind pose before skinning (engine.skinning.morph; None: the bind pose as it is).
        LBS/DQS/rigid/IRS follow the weights; the spring and ARAP solvers keep the rest they were built with
        (the morphed rest at the default weights)."""
        registry.check(method, "cpu")
        if edits is not None and method != "spring":
            raise ValueError(f"surface edits are spring forces: deformer {method!r} cannot take them; "
                             "use the spring deformer")
        prim = self.primitive
        if method in registry.vertex_methods():
            from engine.skinning.morph import morph as apply_morph
            from engine.skinning.skinning import dqs, lbs

            fn = lbs if method == "lbs" else dqs
            assert prim.joints is not None and prim.weights is not None  # a skinned primitive
            bind = apply_morph(prim.positions, prim.target_positions, morph)
            return fn(bind, prim.joints, prim.weights, self.skin_matrices(globals_))
        from engine.skinning.meshprep import copy_to_display

        posed = np.asarray(globals_[self.skin.joints], np.float32)
        ctrl = self._deform_control(method, posed, config, edits, morph)
        return copy_to_display(self.topology(), ctrl).astype(np.float32)

    def morph_offset(self, weights: np.ndarray | None) -> np.ndarray | None:
        """(V,3) morphed minus bind position per control point for morph ``weights`` (None without targets)."""
        prim = self.primitive
        if prim.target_positions is None or weights is None:
            return None
        from engine.skinning.morph import control_deltas

        key = ("control_deltas",)
        if key not in self._cache:
            self._cache[key] = control_deltas(self.topology(), prim.target_positions)
        return np.einsum("m,mvc->vc", np.asarray(weights, np.float32), self._cache[key]).astype(np.float32)

    def rest_weights(self) -> np.ndarray | None:
        """The default morph weights of the instancing node (None without targets): set by skinned_primitives."""
        return self._cache.get("rest_weights")

    def _deform_control(self, method: str, posed: np.ndarray, config, edits: Any = None,
                        morph: np.ndarray | None = None) -> np.ndarray:
        from engine.skinning.config import DeformerConfig
        from engine.skinning.morph import morph_binding
        from engine.skinning.skinning import irs, rigid

        cfg = config if config is not None else DeformerConfig()
        binding = self.binding(method=cfg.binding.method, smooth_passes=cfg.binding.smooth_passes)
        topology = self.topology()
        base = binding  # the solvers below are cached by it (a morphed binding is made per call)
        if method in ("spring", "arap"):
            # the solvers are built once: from the morphed rest at the default weights (as the GPU springs)
            offset = self.morph_offset(self.rest_weights())
            if offset is not None:
                import dataclasses

                binding = morph_binding(binding, offset)
                topology = dataclasses.replace(topology, positions=(topology.positions + offset).astype(np.float32))
        else:
            offset = self.morph_offset(morph)
            if offset is not None:
                binding = morph_binding(binding, offset)
        if method == "rigid":
            return rigid(binding, self.bind_joints, posed, self.parents)
        if method == "irs":
            return irs(binding, self.bind_joints, posed, self.parents,
                       influence=(cfg.irs.parent_influence, cfg.irs.child_influence),
                       length_correction=cfg.irs.length_correction, blend=cfg.irs.blend)
        if method == "spring":
            from engine.skinning.springs.solver import SpringDeformer

            key = ("spring", id(base), repr(cfg.spring))
            if key not in self._cache:
                self._cache[key] = SpringDeformer(topology, binding, self.bind_joints, self.parents,
                                                  cfg.spring, joints=self.primitive.joints,
                                                  weights=self.primitive.weights)
            positions, _stats = self._cache[key].solve(posed, edits=edits)
            return positions
        from engine.skinning.arap import ScaleArap

        key = ("arap", id(base), repr(cfg.arap))
        if key not in self._cache:
            self._cache[key] = ScaleArap(topology, binding, self.bind_joints, weights=cfg.arap.weights,
                                         anchor_weight=cfg.arap.anchor_weight)
        return self._cache[key].solve(posed, iterations=cfg.arap.iterations).astype(np.float32)


def skinned_primitives(asset: Asset, rig=None) -> list[SkinnedPrimitive]:
    """Every skinned mesh primitive instanced in the default scene, in scene order."""
    from engine.anim.rig import Rig

    rig = rig if rig is not None else Rig.from_asset(asset)
    out: list[SkinnedPrimitive] = []
    parents_cache: dict[int, np.ndarray] = {}
    for n in asset.scene_nodes():
        node = asset.nodes[n]
        if node.mesh is None or node.skin is None:
            continue
        if node.skin not in parents_cache:
            parents_cache[node.skin] = np.asarray(rig.skin_parents(node.skin), np.int32)
        for p, prim in enumerate(asset.meshes[node.mesh].primitives):
            if prim.is_skinned:
                sp = SkinnedPrimitive(n, node.mesh, p, node.skin, prim, asset.skins[node.skin],
                                      parents_cache[node.skin])
                if prim.target_count:
                    sp._cache["rest_weights"] = asset.morph_weights(n)
                out.append(sp)
    return out
