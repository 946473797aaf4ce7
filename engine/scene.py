"""The scene's mesh table: the one place that puts a character's primitives into the deformer and the renderer.

Every entity spawned through :class:`engine.Session` owns a list of :class:`MeshInstance` records, one per mesh
primitive instanced in its asset's default scene:

* a skinned primitive is deformed by the GPU deformer graph (``device="gpu"``: the renderer binds the mesh's
  range of the graph's pooled output buffers, so vertices never come back to the CPU) or by the numpy
  reference (``device="cpu"``: positions uploaded each frame);
* an unskinned primitive follows its node's world matrix (uploaded each frame).

:class:`SceneMeshes` is a world resource. The frame's systems (engine/frame.py) reach it with
``world.resource(SceneMeshes)``; components hold no GPU handle. Assets are loaded once per name or path
(:func:`load_asset`) and shared by every character that plays them.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.anim import Pose, Rig, global_matrices
from engine.assets import load
from engine.assets.materials import material_kwargs
from engine.assets.model import Asset, Primitive
from engine.components import PrimitiveKey
from engine.skinning import registry
from engine.skinning.config import DeformerConfig
from engine.skinning.instances import SkinnedPrimitive, skinned_primitives
from engine.skinning.morph import morph

if TYPE_CHECKING:
    from engine.skinning.gpu.graph import DeformerGraph, DeformHandle
    from engine.skinning.gpu.plan import GraphConfig

__all__ = ["LoadedAsset", "load_asset", "DeformSettings", "MeshInstance", "SceneMeshes", "add_to_graph",
           "require_finite", "quiet_load"]


@dataclass(eq=False)
class LoadedAsset:
    """An asset loaded once and shared: its rig, its skinned primitive instances and the lift that stands its
    rest pose on y = 0 (the research pieces are centred on the origin)."""

    name: str
    asset: Asset
    rig: Rig
    skinned: list[SkinnedPrimitive]
    ground_offset: float
    _samplers: list[Any] | None = field(default=None, repr=False)

    @property
    def samplers(self) -> list[Any]:
        """One compiled ClipSampler per clip, shared by every character playing the asset (so that the
        animation system samples all players of a clip in one batch)."""
        if self._samplers is None:
            from engine.anim import ClipSampler

            self._samplers = [ClipSampler(self.rig, c) for c in self.asset.clips]
        return self._samplers

    def morph_rest(self) -> dict[int, np.ndarray]:
        """Rest morph weights (node.weights, else mesh.weights) of every mesh node of the default scene whose
        mesh has morph targets: node -> (M,) float32 (empty for an asset without morph targets)."""
        out = {}
        for n in self.asset.scene_nodes():
            node = self.asset.nodes[n]
            if node.mesh is not None and self.asset.meshes[node.mesh].target_count:
                out[n] = self.asset.morph_weights(n)
        return out

    def morphed_rigid_primitives(self) -> list[tuple[PrimitiveKey, Primitive]]:
        """The unskinned primitives that have morph targets (``export-frame`` writes them beside the skinned
        ones: their vertices change with the clip too)."""
        return [(k, p) for k, p in self.rigid_primitives() if p.target_count]

    def rigid_primitives(self) -> list[tuple[PrimitiveKey, Primitive]]:
        """Unskinned primitives of the default scene (they follow their node's world matrix)."""
        skinned_nodes = {sp.node for sp in self.skinned}
        out = []
        for n in self.asset.scene_nodes():
            node = self.asset.nodes[n]
            if node.mesh is None or n in skinned_nodes:
                continue
            for p, prim in enumerate(self.asset.meshes[node.mesh].primitives):
                out.append((PrimitiveKey(n, node.mesh, p), prim))
        return out


def _ground_offset(asset: Asset, rig: Rig) -> float:
    g = global_matrices(rig, Pose.rest(rig))
    lo = math.inf
    for n in asset.scene_nodes():
        node = asset.nodes[n]
        if node.mesh is None:
            continue
        for prim in asset.meshes[node.mesh].primitives:
            if node.skin is not None and prim.is_skinned:
                p = prim.positions  # bind space = world at bind
            else:
                p = prim.positions @ g[n, :3, :3].T + g[n, :3, 3]
            if len(p):
                lo = min(lo, float(p[:, 1].min()))
    return 0.0 if not math.isfinite(lo) else -lo


def load_asset(source: str | Path | Asset, *, name: str | None = None) -> LoadedAsset:
    """Load a glTF/GLB file, a generated character by name (``humanoid``, ``cylinder``, ...), or wrap an
    already loaded :class:`Asset`. Loader warnings (repairs) are issued as Python warnings."""
    if isinstance(source, Asset):
        asset = source
        label = name or "asset"
    else:
        from engine.assets.library import source_path

        text = str(source)
        asset = load(source_path(text))
        label = name or text
    rig = Rig.from_asset(asset)
    return LoadedAsset(label, asset, rig, skinned_primitives(asset, rig), _ground_offset(asset, rig))


@dataclass(frozen=True)
class DeformSettings:
    """How one character is deformed: a method of the deformer table with its parameters, or a deformer graph
    file (GPU only; then ``deformer`` is the graph's name)."""

    deformer: str = "lbs"
    config: DeformerConfig = field(default_factory=DeformerConfig)
    graph: GraphConfig | None = None

    @property
    def spec(self) -> registry.DeformerSpec | None:
        return None if self.graph is not None else registry.deformer(self.deformer)

    @property
    def takes_edits(self) -> bool:
        """Surface edits are spring forces: they act with the spring deformer (or a graph file, which may hold a
        spring node); on another method they are kept but do nothing."""
        return self.graph is not None or self.deformer == "spring"

    @property
    def frame_dependent(self) -> bool:
        if self.graph is not None:
            return any("@previous" in str(v) for n in self.graph.nodes for v in n.inputs.values())
        spec = registry.deformer(self.deformer)
        return spec.frame_dependent or (spec.name == "spring" and self.config.spring.mode == "dependent")


def add_to_graph(graph: DeformerGraph, sp: SkinnedPrimitive, loaded: LoadedAsset,
                 settings: DeformSettings) -> DeformHandle:
    """Add one skinned primitive to a deformer graph with a character's deform settings (instances of one asset,
    primitive and binding share their static GPU data)."""
    prim = sp.primitive
    assert prim.joints is not None and prim.weights is not None  # a skinned primitive
    cfg = settings.config
    spec = settings.spec
    needs_binding = settings.graph is not None or (spec is not None and spec.control_points)
    binding = sp.binding(method=cfg.binding.method, smooth_passes=cfg.binding.smooth_passes) \
        if needs_binding else None
    how: dict[str, Any] = dict(config=settings.graph) if settings.graph is not None \
        else dict(method=spec.gpu_preset if spec is not None else None, spring=cfg.spring)
    targets = None
    if prim.target_count:
        assert prim.target_positions is not None
        targets = (prim.target_positions, prim.target_normals if prim.normals is not None else None,
                 loaded.asset.morph_weights(sp.node))
    return graph.add_mesh(sp.topology(), binding, prim.joints, prim.weights, sp.skin.inverse_bind, sp.parents,
                          normals=prim.normals, morph=targets,
                          asset_key=(loaded.name, id(loaded.asset), sp.mesh, sp.prim, sp.skin_index, cfg.binding),
                          **how)


@dataclass(eq=False)
class MeshInstance:
    """One drawable primitive of an entity: skinned (deformed) or rigid (node transform)."""

    entity: int
    key: PrimitiveKey
    primitive: Primitive
    skinned: SkinnedPrimitive | None
    handle: Any = None  # renderer MeshHandle (owned by the renderer)
    deform: DeformHandle | None = None  # in the deformer graph (GPU device)
    radius: float = 0.0  # how far the skin reaches from its joints (shadow bounds on the GPU path)
    edit_terms: Any = None  # this frame's surface-edit forces (cpu device; the GPU keeps them in the graph)


class SceneMeshes:
    """Per-entity mesh instances over the deformer graph (or the numpy reference) and the renderer.

    ``device`` "gpu" needs ``graph``; ``renderer`` may be None (export without drawing)."""

    def __init__(self, *, device: str, graph: DeformerGraph | None, renderer: Any | None) -> None:
        if device not in ("gpu", "cpu"):
            raise ValueError(f"device must be 'gpu' or 'cpu', got {device!r}")
        if device == "gpu" and graph is None:
            raise ValueError("the gpu device needs a deformer graph")
        self.device = device
        self.graph = graph
        self.renderer = renderer
        self.instances: dict[int, list[MeshInstance]] = {}
        self.settings: dict[int, DeformSettings] = {}
        self.assets: dict[int, LoadedAsset] = {}
        #: entity -> positions drawn instead of deforming (cpu device; comparisons and tools)
        self.held: dict[int, dict[PrimitiveKey, np.ndarray]] = {}
        #: entity -> this frame's morph weights per mesh node (engine.components.MorphWeights.current; set by the
        #: frame before ``pose_many``); entities without morph targets are absent
        self.morph: dict[int, dict[int, np.ndarray]] = {}
        #: profiling hook: time every deformer stage (``DeformerGraph.run(profile=True)``, serialises the GPU);
        #: set by engine.profile.trace.Profiler
        self.profile_graph = False

    # -- set-up ------------------------------------------------------------------------------------------
    @staticmethod
    def check(settings: DeformSettings, device: str) -> None:
        """Refuse settings the device cannot run, before anything is created."""
        if settings.graph is not None:
            if device != "gpu":
                raise ValueError("a deformer graph file needs --device gpu")
            return
        registry.check(settings.deformer, device)
        settings.config.validate()

    def add(self, entity: int, loaded: LoadedAsset, settings: DeformSettings) -> list[MeshInstance]:
        self.check(settings, self.device)
        if entity in self.instances:
            raise ValueError(f"entity {entity} already has meshes")
        self.settings[entity] = settings
        self.assets[entity] = loaded
        rows: list[MeshInstance] = []
        try:
            for sp in loaded.skinned:
                inst = MeshInstance(entity, PrimitiveKey(sp.node, sp.mesh, sp.prim), sp.primitive, sp)
                rows.append(inst)
                self._attach(inst, loaded, settings)
            for key, prim in loaded.rigid_primitives():
                inst = MeshInstance(entity, key, prim, None)
                rows.append(inst)
                self._attach(inst, loaded, settings)
        except BaseException:
            self.instances[entity] = rows
            self.remove(entity)
            raise
        self.instances[entity] = rows
        return rows

    def _attach(self, inst: MeshInstance, loaded: LoadedAsset, settings: DeformSettings) -> None:
        sp, prim = inst.skinned, inst.primitive
        buffers = None
        spec = settings.spec
        if sp is not None and (spec is None or spec.control_points):
            sp.bind_joints  # noqa: B018 -- set-up check: the bind pose must be recoverable (AssetError names it)
        if sp is not None and self.graph is not None:
            inst.deform = add_to_graph(self.graph, sp, loaded, settings)
            buffers = self.graph.output_ranges(inst.deform)
            lo, hi = prim.positions.min(0), prim.positions.max(0)
            inst.radius = float(np.linalg.norm(hi - lo)) * 0.35
        if self.renderer is not None:
            k = inst.key
            inst.handle = self.renderer.add_mesh(
                prim.indices, prim.vertex_count, **material_kwargs(loaded.asset, prim), buffers=buffers,
                label=f"e{inst.entity}:{k.export_key}", entity=inst.entity, node=k.node, mesh_index=k.mesh,
                primitive=k.primitive)

    def _detach(self, inst: MeshInstance) -> None:
        if inst.handle is not None and self.renderer is not None:
            self.renderer.remove_mesh(inst.handle)
        if inst.deform is not None and self.graph is not None:
            self.graph.remove_mesh(inst.deform)
        inst.handle = inst.deform = None

    def remove(self, entity: int) -> None:
        """Return the entity's GPU memory (renderer meshes, deformer ranges)."""
        for inst in self.instances.pop(entity, []):
            self._detach(inst)
        self.settings.pop(entity, None)
        self.assets.pop(entity, None)
        self.held.pop(entity, None)
        self.morph.pop(entity, None)

    def set_settings(self, entity: int, settings: DeformSettings) -> None:
        """Switch an entity to another deformer; on failure the previous one stays."""
        self.check(settings, self.device)
        old = self.settings[entity]
        loaded = self.assets[entity]
        self.remove(entity)
        try:
            self.add(entity, loaded, settings)
        except BaseException:
            self.add(entity, loaded, old)
            raise

    @property
    def frame_dependent(self) -> bool:
        """True when a character's deformer carries state from frame to frame (GPU feedback graphs): then the
        deformer runs on the fixed step, with the pose of the step, not once per displayed frame."""
        return any(s.frame_dependent for s in self.settings.values())

    # -- per frame ---------------------------------------------------------------------------------------
    def pose(self, entity: int, globals_: np.ndarray, out: dict[PrimitiveKey, np.ndarray]) -> None:
        """Hand the entity's node world matrices (N,4,4) to its meshes: skin matrices to the deformer graph,
        or numpy deformation / node transforms into ``out`` (uploaded to the renderer when it draws)."""
        settings = self.settings[entity]
        held = self.held.get(entity, {})
        for inst in self.instances.get(entity, ()):
            if inst.key in held:
                out[inst.key] = held[inst.key]
            else:
                self._pose_one(inst, globals_, out, settings)

    def _pose_one(self, inst: MeshInstance, globals_: np.ndarray, out: dict[PrimitiveKey, np.ndarray],
                  settings: DeformSettings) -> None:
        sp = inst.skinned
        weights = self._weights(inst)
        if sp is not None and inst.deform is not None:
            joints = globals_[sp.skin.joints]
            self.graph.set_pose(inst.deform, sp.skin_matrices(globals_), joints)  # type: ignore[union-attr]
            if weights is not None:
                self.graph.set_morph_weights(inst.deform, weights)  # type: ignore[union-attr]
            if inst.handle is not None:
                jp = joints[:, :3, 3]
                inst.handle.bounds = (jp.min(0) - inst.radius, jp.max(0) + inst.radius)
        elif sp is not None:
            edits = inst.edit_terms if settings.deformer == "spring" else None  # as a GPU graph without springs
            out[inst.key] = sp.deform(globals_, settings.deformer, config=settings.config, edits=edits,
                                      morph=weights)
        else:
            g = globals_[inst.key.node]
            prim = inst.primitive
            p = morph(prim.positions, prim.target_positions, weights)  # static meshes morph too (numpy)
            out[inst.key] = (p @ g[:3, :3].T + g[:3, 3]).astype(np.float32)

    def _weights(self, inst: MeshInstance) -> np.ndarray | None:
        """This frame's morph weights of the primitive's node, or None (no morph targets)."""
        if not inst.primitive.target_count:
            return None
        return self.morph.get(inst.entity, {}).get(inst.key.node)

    def pose_many(self, poses: list[tuple[int, np.ndarray, dict[PrimitiveKey, np.ndarray]]]) -> None:
        """``pose`` for many entities: (entity, node world matrices, out) rows. GPU-deformed primitives shared
        by several characters (one loaded asset) get their skin matrices in one stacked product and one
        ``set_poses``; the rest go through ``pose`` one by one."""
        groups: dict[int, list[tuple[MeshInstance, np.ndarray]]] = {}
        rest = []
        for entity, globals_, out in poses:
            if entity in self.held or self.graph is None:
                rest.append((entity, globals_, out))
                continue
            for inst in self.instances.get(entity, ()):
                if inst.skinned is not None and inst.deform is not None:
                    groups.setdefault(id(inst.skinned), []).append((inst, globals_))
                else:  # node-transformed primitives: cheap, one by one
                    self._pose_one(inst, globals_, out, self.settings[entity])
        for rows in groups.values():
            sp = rows[0][0].skinned
            assert sp is not None and self.graph is not None
            g = np.stack([r[1] for r in rows])
            joints = g[:, sp.skin.joints]
            handles = [r[0].deform for r in rows if r[0].deform is not None]
            self.graph.set_poses(handles, sp.skin_matrices(g), joints)
            if sp.primitive.target_count:  # one shared primitive per group: no per-instance check otherwise
                for inst, _ in rows:
                    w = self._weights(inst)
                    if w is not None and inst.deform is not None:
                        self.graph.set_morph_weights(inst.deform, w)
            jp = joints[:, :, :3, 3]
            lo, hi = jp.min(1), jp.max(1)
            for (inst, _), a, b in zip(rows, lo, hi):
                if inst.handle is not None:
                    inst.handle.bounds = (a - inst.radius, b + inst.radius)
        for entity, globals_, out in rest:
            self.pose(entity, globals_, out)

    def hold(self, entity: int, positions: dict[PrimitiveKey, np.ndarray] | None) -> None:
        """Draw ``positions`` (world space, display order) for these primitives instead of deforming them,
        until called with None. The cpu device only: on the GPU the renderer draws the graph's output."""
        if positions is None:
            self.held.pop(entity, None)
            return
        if self.device != "cpu":
            raise ValueError("showing given vertices needs a session on the cpu device")
        rows = {i.key: i for i in self.instances.get(entity, ())}
        checked = {}
        for key, pos in positions.items():
            if key not in rows:
                raise ValueError(f"entity {entity} has no primitive {key}")
            p = np.asarray(pos, np.float32)
            if p.shape != (rows[key].primitive.vertex_count, 3):
                raise ValueError(f"{key.export_key}: positions must have shape "
                                 f"({rows[key].primitive.vertex_count}, 3), got {p.shape}")
            checked[key] = p
        self.held[entity] = checked

    def set_visible(self, entity: int, visible: bool, key: PrimitiveKey | None = None) -> None:
        """Show or hide the entity's primitives (one, or all)."""
        changed = False
        for inst in self.instances.get(entity, ()):
            if (key is None or inst.key == key) and inst.handle is not None:
                inst.handle.visible = bool(visible)
                changed = True
        if changed and self.renderer is not None:
            self.renderer.invalidate()

    def upload(self, entity: int, positions: dict[PrimitiveKey, np.ndarray]) -> None:
        if self.renderer is None:
            return
        for inst in self.instances.get(entity, ()):
            pos = positions.get(inst.key)
            if pos is not None and inst.handle is not None:
                self.renderer.update_vertices(inst.handle, pos)

    def set_edits(self, inst: MeshInstance, terms: Any | None) -> None:
        """A skinned primitive's surface-edit forces for the next deformation (engine.skinning.edits.EditTerms;
        None clears them): into the deformer graph on the gpu device, kept for the numpy reference on the cpu."""
        if inst.deform is not None and self.graph is not None:
            self.graph.set_edits(inst.deform, terms)
        else:
            inst.edit_terms = terms

    def run_graph(self) -> None:
        if self.graph is not None and self.instances:
            self.graph.run(profile=self.profile_graph)

    def vertices(self, entity: int, positions: dict[PrimitiveKey, np.ndarray], *, normals: bool = False
                 ) -> dict[PrimitiveKey, np.ndarray] | dict[PrimitiveKey, tuple[np.ndarray, np.ndarray]]:
        """Deformed world-space display positions (D,3) float32 per primitive, in glTF vertex order (read
        back from the GPU on the gpu device); with ``normals`` (positions, normals) pairs where the
        deformer computes normals (GPU), else normals computed from the positions."""
        from engine.skinning.meshprep import vertex_normals

        out: dict = {}
        for inst in self.instances.get(entity, ()):
            if inst.deform is not None:
                p, n = self.graph.download(inst.deform)  # type: ignore[union-attr]
                p = p.astype(np.float32)
            else:
                p = np.asarray(positions[inst.key], np.float32)
                n = None
            if normals:
                if n is None:
                    n = vertex_normals(p, inst.primitive.indices)
                out[inst.key] = (p, np.asarray(n, np.float32))
            else:
                out[inst.key] = p
        return out


def require_finite(frames: dict[PrimitiveKey, np.ndarray], what: str = "deformed vertices") -> None:
    """Refuse non-finite results (inf/NaN) naming the primitive and the first bad vertex, so that nothing
    broken is written: finite transforms whose products overflow float32 end here."""
    for key, v in frames.items():
        ok = np.isfinite(v).all(axis=-1)
        if not ok.all():
            bad = np.argwhere(~ok)[0]
            where = f"frame {int(bad[0])}, vertex {int(bad[1])}" if bad.size == 2 else f"vertex {int(bad[0])}"
            raise ValueError(f"{what} of {key.export_key} are not finite ({where}: {v[tuple(bad)].tolist()}): the "
                             f"asset's transforms (node TRS, inverse bind matrices) overflow float32")


def quiet_load(source: str | Path | Asset) -> LoadedAsset:
    """:func:`load_asset` with loader warnings silenced (the commands print their own)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_asset(source)
