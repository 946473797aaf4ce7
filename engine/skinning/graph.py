"""The GPU deformer graph (research ch. 6): skin -> spring -> vertex copy -> face normals -> vertex normals.

The graph is data (:mod:`engine.skinning.gpu_plan`): nodes declare the resources they read and write; order
and memory barriers follow from that. :class:`DeformerGraph` runs such graphs for every skinned mesh of a scene:

* meshes that use the same graph form a *batch*; the control-point stages (skin, spring, resolve) of a batch run
  as ONE dispatch per stage (per iteration for the springs) over concatenated buffers, so the cost grows with
  the total vertex count, not the number of meshes. Each instance's range is padded to whole work groups (see
  :mod:`engine.skinning.gpu_layouts`). Instances of one asset (same ``asset_key``, default: the same topology
  object) share the static buffers (bind data, weights, binding, adjacency, rest lengths and angles);
* display-domain stages (copy, face normals, vertex normals) run per mesh and write that mesh's own vec4
  position/normal buffers, which the renderer pulls without a CPU round trip (``output_buffers``); buffers can
  also be given to ``add_mesh``;
* springs run up to ``max_iterations`` indirect dispatches per frame; a tiny convergence pass (one work group)
  reads the GPU-side maxima (atomicMax on float bits) / energy partials every ``check_every`` iterations and
  rebuilds the list of active work groups, so a converged mesh costs zero work; the CPU never waits;
* nothing is read back on the per-frame path; ``download`` reads for export and tests.

Every stage has its numpy reference (engine.skinning.meshprep / skinning / springs); tests/gl compare them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Hashable

import moderngl
import numpy as np

from engine.render.layouts import LOCAL_SIZE, MAX_JOINTS, pack_mat4
from engine.render.resources import GpuResources
from engine.render.shaderlib import ProgramCache
from engine.skinning import gpu_layouts as L
from engine.skinning import gpu_spring
from engine.skinning.skinning import joint_rotations
from engine.skinning.gpu_plan import (
    BIND,
    SHADER_STORAGE_BARRIER_BIT,
    GraphConfig,
    Plan,
    default_config,
    plan,
)
from engine.skinning.types import Binding, MeshTopology, bone_endpoints

__all__ = ["DeformerGraph", "DeformHandle", "GraphConfig", "default_config", "plan", "METHODS"]

METHODS = ("lbs", "dqs", "rigid", "irs", "spring", "spring-feedback")


@dataclass(frozen=True)
class DeformHandle:
    """Opaque handle of one mesh instance in a :class:`DeformerGraph`."""

    id: int


# ----------------------------------------------------------------------------------------------------------
# CPU-side packing helpers (vectorised; set-up time or once per frame for the whole pose)
def _csr_from_pairs(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """((n,2) offset/count, flat cols sorted by row) for the given (row, col) pairs."""
    order = np.argsort(rows, kind="stable")
    count = np.bincount(rows, minlength=n).astype(np.int32)
    offset = np.zeros(n, np.int32)
    if n:
        offset[1:] = np.cumsum(count)[:-1]
    return np.stack([offset, count], 1).astype(np.int32), cols[order].astype(np.int32)


# ----------------------------------------------------------------------------------------------------------
@dataclass
class _Asset:
    """Static data of one asset (shared by its instances inside a batch); CPU copies, packed per batch."""

    key: Hashable
    topology: MeshTopology
    n_joints: int
    n_bones: int
    bind_joints: np.ndarray       # (J,4,4) float64
    parents: np.ndarray
    binding: Binding | None
    arrays: dict[str, np.ndarray]  # per static buffer name -> rows (control, display, CSR, ...)
    users: int = 0


@dataclass
class _Instance:
    handle: DeformHandle
    asset: _Asset
    batch: "_Batch"
    params: Any
    display: dict[str, moderngl.Buffer]   # display/face-domain resources of this mesh
    owned: set[str]                       # which of them this graph made (and releases)
    # filled by _Batch.layout()
    group_base: int = 0
    n_groups: int = 0
    joint_base: int = 0
    bone_base: int = 0
    laid_out: bool = False
    # pose (CPU, latest set_pose)
    skin: np.ndarray | None = None
    posed: np.ndarray | None = None
    prev_skin: np.ndarray | None = None
    prev_posed: np.ndarray | None = None
    edit: np.ndarray | None = None     # (V,4) (C.xyz, K) or None
    edit_q: np.ndarray | None = None   # (V,) Q

    @property
    def dyn_base(self) -> int:
        return self.group_base * LOCAL_SIZE


# static buffers per batch: name -> (domain of rows, numpy dtype of one row, width)
_STATIC = {
    "bind": ("control", np.float32, 4),
    "joint_ids": ("control", np.int32, 4),
    "weights": ("control", np.float32, 4),
    "attach": ("control", np.float32, 4),
    "scale": ("control", np.float32, 4),
    "bone_of": ("control", np.int32, 1),
    "adj": ("control", np.int32, 2),
    "adj_index": ("adj", np.int32, 1),
    "rest": ("adj", np.float32, 4),
    "cface": ("control", np.int32, 2),
    "cface_index": ("cface", np.int32, 1),
    "irs": ("control", np.float32, 4),
    "vstatic": ("control", np.float32, L.SPRING_VERTEX.size // 4),  # SpringVertex records as float rows
    "map": ("display", np.int32, 1),
    "dface": ("display", np.int32, 2),
    "dface_index": ("dface", np.int32, 1),
    "tris": ("tri", np.int32, 4),
}


class _Batch:
    """Meshes that share one graph config: pooled buffers and one dispatch per control stage."""

    def __init__(self, owner: "DeformerGraph", config: GraphConfig) -> None:
        self.owner = owner
        self.config = config
        self.plan: Plan = plan(config)
        self.instances: list[_Instance] = []
        self.assets: list[_Asset] = []
        self.buffers: dict[str, moderngl.Buffer] = {}
        self.static_bases: dict[int, dict[str, int]] = {}  # id(asset) -> base per segment kind
        self.total_groups = 0
        self.frame = 0
        self.iterations_run = 0
        spring = [s.node for s in self.plan.steps if s.node.stage == "spring"]
        self.has_spring = bool(spring)

    # ---- layout -----------------------------------------------------------------------------------------
    def layout(self) -> None:
        """(Re)pack static and dynamic pools after instances were added or removed (set-up time).

        Feedback resources (read at @previous) keep their contents for the instances that stay."""
        res = self.owner.resources
        old = self.buffers
        old_bases = {id(i): i.dyn_base for i in self.instances if i.laid_out}
        # static pools: one segment per asset
        self.assets = []
        for inst in self.instances:
            if all(a is not inst.asset for a in self.assets):
                self.assets.append(inst.asset)
        seg = {"control": 0, "adj": 0, "cface": 0, "display": 0, "dface": 0, "tri": 0}
        packed: dict[str, list[np.ndarray]] = {k: [] for k in _STATIC}
        self.static_bases = {}
        for a in self.assets:
            self.static_bases[id(a)] = dict(seg)
            for name, (kind, _, _) in _STATIC.items():
                packed[name].append(a.arrays[name])
            seg["control"] += a.topology.n_control
            seg["adj"] += a.arrays["adj_index"].shape[0]
            seg["cface"] += a.arrays["cface_index"].shape[0]
            seg["display"] += a.topology.n_display
            seg["dface"] += a.arrays["dface_index"].shape[0]
            seg["tri"] += a.arrays["tris"].shape[0]
        # dynamic pool: instances padded to whole groups
        g = 0
        j = 0
        b = 0
        for inst in self.instances:
            inst.group_base = g
            inst.n_groups = L.pad_groups(inst.asset.topology.n_control)
            inst.joint_base = j
            inst.bone_base = b
            g += inst.n_groups
            j += inst.asset.n_joints
            b += max(inst.asset.n_bones, 1)
        self.total_groups = g
        self.n_joints = j
        self.n_bones = b
        n_dyn = g * LOCAL_SIZE

        new: dict[str, moderngl.Buffer] = {}

        def mk(name: str, data: np.ndarray | None = None, nbytes: int = 0) -> None:
            if data is not None and data.nbytes == 0:
                data, nbytes = None, 16
            new[name] = res.buffer(data, reserve=max(nbytes, 16) if data is None else 0,
                                   label=f"deform {self.config.name} {name}")

        for name, (kind, dt, width) in _STATIC.items():
            rows = [np.asarray(x, dt).reshape(-1, width) for x in packed[name]]
            arr = np.concatenate(rows) if rows else np.zeros((0, width), dt)
            mk("s_" + name, np.ascontiguousarray(arr))
        group_instance = np.repeat(np.arange(len(self.instances), dtype=np.int32),
                                   [i.n_groups for i in self.instances]) if self.instances else np.zeros(0, np.int32)
        mk("groups", group_instance)
        mk("instances", self.instance_table())
        for r, dom in self.plan.domains.items():
            if dom == "control" and r != BIND:
                mk("d_" + r, nbytes=n_dyn * 16)
        if self.has_spring:
            # spring state (x, v) per control point: S0 (initial) and a ring of three (see gpu_stages)
            for name in ("spring_s0", "spring_r0", "spring_r1", "spring_r2"):
                mk(name, nbytes=n_dyn * 32)
            mk("spring_frame", nbytes=n_dyn * 32)
            mk("status", nbytes=max(1, len(self.instances)) * L.DEFORM_STATUS.size)
            mk("active", nbytes=max(1, g) * 4)
            mk("indirect", np.array([0, 1, 1, 0], np.uint32))
            mk("partials", nbytes=max(1, g) * 4)
            mk("edit", nbytes=n_dyn * 32)
            mk("spring_vel", np.zeros((n_dyn, 4), np.float32))  # last frame's velocities (dependent mode)
        mk("joints", nbytes=max(1, j) * L.DEFORM_JOINT.size)
        mk("bones", nbytes=max(1, b) * L.DEFORM_BONE.size)
        # feedback resources: keep old contents of surviving instances, bind positions for new ones
        keep = ["d_" + r for r in self.plan.feedback] + (["spring_vel"] if self.has_spring else [])
        for name in keep:
            buf = new[name]
            for inst in self.instances:
                n = inst.asset.topology.n_control
                ob = old_bases.get(id(inst))
                if ob is not None and name in old:
                    self.owner.ctx.copy_buffer(buf, old[name], size=n * 16, read_offset=ob * 16,
                                               write_offset=inst.dyn_base * 16)
                elif name != "spring_vel":
                    buf.write(np.ascontiguousarray(inst.asset.arrays["bind"], np.float32).tobytes(),
                              offset=inst.dyn_base * 16)
        for inst in self.instances:
            inst.laid_out = True
        for buf in old.values():
            res.release(buf)
        self.buffers = new
        if self.has_spring:
            self.write_edits()

    def instance_table(self) -> np.ndarray:
        t = L.DEFORM_INSTANCE.zeros(len(self.instances))
        for k, inst in enumerate(self.instances):
            sb = self.static_bases[id(inst.asset)]
            p = inst.params
            t[k]["dyn_base"] = inst.dyn_base
            t[k]["static_base"] = sb["control"]
            t[k]["n_control"] = inst.asset.topology.n_control
            t[k]["adj_base"] = sb["adj"]
            t[k]["joint_base"] = inst.joint_base
            t[k]["bone_base"] = inst.bone_base
            t[k]["group_base"] = inst.group_base
            t[k]["n_groups"] = inst.n_groups
            t[k]["n_bones"] = inst.asset.n_bones
            self.owner._fill_spring_record(t[k], p, inst)
        return t

    def write_instance_table(self) -> None:
        self.buffers["instances"].write(self.instance_table().tobytes())

    def write_edits(self) -> None:
        if not self.has_spring:
            return
        n_dyn = self.total_groups * LOCAL_SIZE
        e = np.zeros((n_dyn, 2, 4), np.float32)
        for inst in self.instances:
            if inst.edit is not None:
                n = inst.asset.topology.n_control
                e[inst.dyn_base:inst.dyn_base + n, 0] = inst.edit
                e[inst.dyn_base:inst.dyn_base + n, 1, 0] = inst.edit_q
        self.buffers["edit"].write(e.tobytes())
        self.write_instance_table()

    def release(self) -> None:
        for buf in self.buffers.values():
            self.owner.resources.release(buf)
        self.buffers = {}


class DeformerGraph:
    """Runs deformer graphs for many skinned meshes on the GPU.

    ``DeformerGraph(ctx, resources, config=None, programs=None)``; ``config`` (a :class:`GraphConfig`, a dict
    or a path to TOML/JSON) is the graph of meshes added without their own; ``programs`` is the shared
    :class:`ProgramCache` (one is made over ``resources`` when omitted and released with the graph).

    Per frame: ``set_pose`` for each mesh, then one ``run()``; read ``output_buffers(handle)`` in the
    renderer. ``download(handle)`` reads positions and normals back (export, tests).
    """

    def __init__(self, ctx: moderngl.Context, resources: GpuResources, config: GraphConfig | dict | str | None = None,
                 *, programs: ProgramCache | None = None) -> None:
        self.ctx = ctx
        self.resources = resources
        self._own_programs = programs is None
        self.programs = programs or ProgramCache(resources)
        self.programs.library.add_virtual(L.LAYOUT_INCLUDE, L.layouts_glsl())
        self.default = self._as_config(config) if config is not None else default_config("spring")
        self._batches: dict[str, _Batch] = {}
        self._instances: dict[int, _Instance] = {}
        self._assets: dict[tuple[str, Hashable], _Asset] = {}
        self._next = 1
        self.last_timings: dict[str, float] = {}
        self.timing_source = ""
        self._queries: dict[str, moderngl.Query] = {}

    # ---- configuration ------------------------------------------------------------------------------------
    @staticmethod
    def _as_config(config: GraphConfig | dict | str | Any) -> GraphConfig:
        if isinstance(config, GraphConfig):
            return config
        if isinstance(config, dict):
            return GraphConfig.from_dict(config)
        return GraphConfig.load(config)

    def _batch_for(self, config: GraphConfig) -> _Batch:
        key = repr(config.to_dict())
        b = self._batches.get(key)
        if b is None:
            b = _Batch(self, config)
            self._batches[key] = b
        return b

    # ---- meshes ---------------------------------------------------------------------------------------------
    def add_mesh(self, topology: MeshTopology, binding: Binding | None, joints: np.ndarray, weights: np.ndarray,
                 inverse_bind: np.ndarray, parents: np.ndarray, *, method: str | None = None,
                 config: GraphConfig | dict | str | None = None, spring: Any = None,
                 asset_key: Hashable | None = None, positions_buffer: moderngl.Buffer | None = None,
                 normals_buffer: moderngl.Buffer | None = None) -> DeformHandle:
        """Add one skinned mesh instance and return its handle.

        topology: welded mesh (engine.skinning.meshprep.prepare_mesh); binding: attachment binding (needed by
        rigid, irs and spring); joints (D,4) or (V,4) int and weights (D,4)/(V,4): glTF JOINTS_0/WEIGHTS_0 (per
        display vertex: the representative display vertex of each control point is used); inverse_bind (J,4,4);
        parents (J,) within the skin (-1 roots). method: lbs | dqs | rigid | irs | spring | spring-feedback
        picks a built-in graph (else ``config`` or the graph's default). spring: SpringParams of the springs
        reference (None: its defaults). asset_key: instances with the same key share static buffers (default:
        the topology object). positions_buffer/normals_buffer: vec4 display-order buffers to write into
        (>= 16 * n_display bytes each), e.g. the renderer's; made here when omitted.
        """
        params = self._spring_params(spring)
        if method is not None:
            if method not in METHODS:
                raise ValueError(f"method {method!r}; valid: {METHODS}")
            if method == "spring" and params.mode == "dependent":
                method = "spring-feedback"
            skin = "rigid" if method == "spring-feedback" else params.initial_skinning
            cfg = default_config(method, skin=skin if method.startswith("spring") else None)
        else:
            cfg = self._as_config(config) if config is not None else self.default
        ib = np.asarray(inverse_bind, np.float64)
        if ib.ndim != 3 or ib.shape[1:] != (4, 4) or ib.shape[0] < 1:
            raise ValueError(f"inverse_bind must have shape (J,4,4) with J >= 1, got {ib.shape}")
        if ib.shape[0] > MAX_JOINTS:
            raise ValueError(f"skin has {ib.shape[0]} joints; the GPU path supports 1..{MAX_JOINTS}")
        par = np.asarray(parents).astype(np.int32).reshape(-1)
        if par.shape[0] != ib.shape[0]:
            raise ValueError(f"parents must have shape ({ib.shape[0]},), got {np.asarray(parents).shape}")
        needs_binding = any(s.node.stage == "spring" or s.node.options.get("method") in ("rigid", "irs")
                            for s in plan(cfg).steps)
        if needs_binding and binding is None:
            raise ValueError(f"graph {cfg.name!r} needs an attachment binding (rigid/irs skinning or springs)")
        batch = self._batch_for(cfg)
        key = (repr(cfg.to_dict()), asset_key if asset_key is not None else id(topology))
        asset = self._assets.get(key)
        if asset is None:
            skin_opts = next((n.options for n in cfg.nodes if n.stage == "skin"), {})
            asset = self._make_asset(key[1], topology, binding, joints, weights, ib, par,
                                     skin_opts.get("influence", (0.5, 0.5)))
            self._assets[key] = asset
        elif asset.topology is not topology and asset.topology.n_control != topology.n_control:
            raise ValueError(f"asset_key {asset_key!r} names an asset with {asset.topology.n_control} control "
                             f"points; this topology has {topology.n_control}")
        asset.users += 1
        nd = topology.n_display
        nt = int(topology.display_triangles.shape[0])
        given = {}
        outs = cfg.outputs
        for nm, buf, res in (("positions_buffer", positions_buffer, outs.get("positions")),
                             ("normals_buffer", normals_buffer, outs.get("normals"))):
            if buf is not None:
                if buf.size < 16 * nd:
                    raise ValueError(f"{nm} holds {buf.size} bytes; a vec4 per display vertex needs {16 * nd}")
                if res is None:
                    raise ValueError(f"{nm} given but graph {cfg.name!r} has no such output")
                given[res] = buf
        display: dict[str, moderngl.Buffer] = {}
        owned: set[str] = set()
        for res, dom in batch.plan.domains.items():
            if dom not in ("display", "face"):
                continue
            if res in given:
                display[res] = given[res]
                continue
            rows = nd if dom == "display" else nt
            display[res] = self.resources.buffer(reserve=16 * max(rows, 1), label=f"deform {res}")
            owned.add(res)
        handle = DeformHandle(self._next)
        self._next += 1
        inst = _Instance(handle, asset, batch, params, display, owned)
        eye = np.broadcast_to(np.eye(4), (asset.n_joints, 4, 4)).copy()
        inst.skin = eye.copy()
        inst.posed = asset.bind_joints.copy()
        inst.prev_skin = eye.copy()
        inst.prev_posed = asset.bind_joints.copy()
        batch.instances.append(inst)
        self._instances[handle.id] = inst
        batch.layout()
        return handle

    def remove_mesh(self, handle: DeformHandle) -> None:
        """Remove a mesh and release what it owned (its output buffers unless they were given)."""
        inst = self._inst(handle)
        batch = inst.batch
        batch.instances.remove(inst)
        del self._instances[handle.id]
        for res in inst.owned:
            self.resources.release(inst.display[res])
        inst.asset.users -= 1
        if inst.asset.users == 0:
            self._assets = {k: a for k, a in self._assets.items() if a is not inst.asset}
        if batch.instances:
            batch.layout()
        else:
            batch.release()
            self._batches = {k: b for k, b in self._batches.items() if b is not batch}

    def _inst(self, handle: DeformHandle) -> _Instance:
        inst = self._instances.get(getattr(handle, "id", None))
        if inst is None:
            raise ValueError(f"unknown deform handle {handle!r}; live handles: {sorted(self._instances)}")
        return inst

    @property
    def handles(self) -> list[DeformHandle]:
        return [i.handle for i in self._instances.values()]

    def _make_asset(self, key: Hashable, topo: MeshTopology, binding: Binding | None, joints: np.ndarray,
                    weights: np.ndarray, ib: np.ndarray, par: np.ndarray, irs_influence: Any) -> _Asset:
        v, d = topo.n_control, topo.n_display
        jn = np.asarray(joints)
        w = np.asarray(weights, np.float32)
        if jn.shape[0] == d and d != v:
            jn, w = jn[topo.display_of_control], w[topo.display_of_control]
        if jn.shape != (v, 4) or w.shape != (v, 4):
            raise ValueError(f"joints/weights must be (D,4)=({d},4) or (V,4)=({v},4); got {jn.shape}, {w.shape}")
        if jn.size and (jn.min() < 0 or jn.max() >= ib.shape[0]):
            raise ValueError(f"joint indices must lie in [0, {ib.shape[0] - 1}], got [{jn.min()}, {jn.max()}]")
        bind_joints = np.linalg.inv(ib)
        arrays: dict[str, np.ndarray] = {
            "bind": L.vec4(topo.positions, 1.0),
            "joint_ids": jn.astype(np.int32),
            "weights": w,
        }
        if binding is not None:
            arrays["attach"] = np.concatenate([binding.attach, binding.t[:, None]], 1).astype(np.float32)
            arrays["scale"] = L.vec4(binding.scale)
            arrays["bone_of"] = binding.bone.astype(np.int32)
            n_bones = binding.bones.count
        else:
            arrays["attach"] = np.zeros((v, 4), np.float32)
            arrays["scale"] = np.zeros((v, 4), np.float32)
            arrays["bone_of"] = np.zeros(v, np.int32)
            n_bones = 0
        arrays["adj"] = np.stack([topo.adj_offset, topo.adj_count], 1).astype(np.int32)
        arrays["adj_index"] = topo.adj_index.astype(np.int32)
        arrays["rest"], arrays["vstatic"] = gpu_spring.rest_arrays(topo, binding, bind_joints)
        arrays["irs"], d0 = gpu_spring.irs_arrays(topo, binding, bind_joints, irs_influence)
        arrays["scale"][:, 3] = d0
        arrays["cface"] = np.stack([topo.face_offset, topo.face_count], 1).astype(np.int32)
        arrays["cface_index"] = topo.face_index.astype(np.int32)
        arrays["map"] = topo.control_of_display.astype(np.int32)
        dtri = topo.display_triangles.astype(np.int64)
        t = dtri.shape[0]
        dface, dface_index = _csr_from_pairs(dtri.reshape(-1), np.repeat(np.arange(t), 3), d)
        arrays["dface"] = dface
        arrays["dface_index"] = dface_index
        tris = np.zeros((t, 4), np.int32)
        tris[:, :3] = dtri
        arrays["tris"] = tris
        asset = _Asset(key, topo, int(ib.shape[0]), n_bones, bind_joints, par, binding, arrays)
        if binding is not None:
            asset.bend_refs = gpu_spring.bend_refs(binding, bind_joints, par)  # type: ignore[attr-defined]
        return asset

    def _spring_params(self, spring: Any) -> Any:
        return gpu_spring.spring_params(spring)

    def _fill_spring_record(self, rec: np.ndarray, params: Any, inst: _Instance) -> None:
        gpu_spring.fill_record(rec, params, inst.asset.topology)

    def set_spring(self, handle: DeformHandle, spring: Any) -> None:
        """Change a mesh's spring parameters at run time (a SpringParams, or None for the defaults)."""
        inst = self._inst(handle)
        inst.params = self._spring_params(spring)
        inst.batch.write_instance_table()

    def set_edits(self, handle: DeformHandle, terms: Any | None) -> None:
        """Surface-edit forces of a mesh (engine.skinning.edits.EditTerms for this frame; None clears them)."""
        inst = self._inst(handle)
        if terms is None:
            inst.edit, inst.edit_q = None, None
        else:
            n = inst.asset.topology.n_control
            k = np.asarray(terms.stiffness, np.float64).reshape(-1)
            c = np.asarray(terms.weighted_target, np.float64).reshape(-1, 3)
            q = np.asarray(terms.q, np.float64).reshape(-1)
            if k.shape[0] != n or c.shape[0] != n or q.shape[0] != n:
                raise ValueError(f"edit terms must have {n} rows (control points), got {k.shape[0]}")
            inst.edit = np.concatenate([c, k[:, None]], 1).astype(np.float32)
            inst.edit_q = q.astype(np.float32)
        inst.batch.write_edits()

    # ---- per frame ----------------------------------------------------------------------------------------
    def set_pose(self, handle: DeformHandle, skin_mats: np.ndarray, posed_joints: np.ndarray) -> None:
        """Pose of one mesh for the next ``run``: skin_mats (J,4,4) = posed_joints @ inverse_bind, posed_joints
        (J,4,4) joint world matrices (skin space). Kept on the CPU; ``run`` uploads all poses at once."""
        inst = self._inst(handle)
        j = inst.asset.n_joints
        sm = np.asarray(skin_mats, np.float64)
        pj = np.asarray(posed_joints, np.float64)
        if sm.shape != (j, 4, 4) or pj.shape != (j, 4, 4):
            raise ValueError(f"skin_mats and posed_joints must be ({j},4,4); got {sm.shape}, {pj.shape}")
        inst.skin, inst.posed = sm, pj

    def _upload_pose(self, batch: _Batch) -> None:
        """Pack every instance's joint and bone data of this frame and upload them (two buffer writes)."""
        joints = L.DEFORM_JOINT.zeros(max(batch.n_joints, 1))
        bones = L.DEFORM_BONE.zeros(max(batch.n_bones, 1))
        skin_node = next((s.node for s in batch.plan.steps if s.node.stage == "skin"), None)
        differential = skin_node is not None and skin_node.options.get("mode", "bind") == "differential"
        for inst in batch.instances:
            a = inst.asset
            if differential:
                mats = inst.skin @ np.linalg.inv(inst.prev_skin)
                src_joints = inst.prev_posed
            else:
                mats = inst.skin
                src_joints = a.bind_joints
            sl = slice(inst.joint_base, inst.joint_base + a.n_joints)
            joints["skin"][sl] = pack_mat4(mats)
            qr, qd, stretch = gpu_spring.dual_quats(mats)
            joints["qr"][sl] = qr
            joints["qd"][sl] = qd
            joints["stretch"][sl] = pack_mat4(stretch)
            if a.binding is not None and a.n_bones:
                bb = a.binding.bones
                # endpoints in float32 as the references compute them
                p, c = bone_endpoints(bb, inst.posed.astype(np.float32))
                ps, cs = bone_endpoints(bb, src_joints.astype(np.float32))
                r_now_j = joint_rotations(a.bind_joints, inst.posed)
                r_src_j = joint_rotations(a.bind_joints, src_joints)
                r_now = r_now_j[bb.parent_joint]
                rot = np.zeros((a.n_bones, 4, 4))
                rot[:, :3, :3] = r_now @ np.swapaxes(r_src_j[bb.parent_joint], 1, 2)
                rot[:, 3, 3] = 1.0
                rn = np.zeros((a.n_bones, 4, 4))
                rn[:, :3, :3] = r_now
                rn[:, 3, 3] = 1.0
                q_start, q_end = gpu_spring.irs_bend_quats(r_now_j, a.binding, *a.bend_refs)  # type: ignore[attr-defined]
                bs = slice(inst.bone_base, inst.bone_base + a.n_bones)
                bones["p"][bs, :3] = p
                bones["c"][bs, :3] = c
                bones["p_src"][bs, :3] = ps
                bones["c_src"][bs, :3] = cs
                bones["q_start"][bs] = q_start
                bones["q_end"][bs] = q_end
                bones["rot"][bs] = pack_mat4(rot)
                bones["rot_now"][bs] = pack_mat4(rn)
        batch.buffers["joints"].write(joints.tobytes())
        batch.buffers["bones"].write(bones.tobytes())

    def run(self, *, profile: bool = False) -> None:
        """One frame for every mesh: upload poses, run each batch's plan, end with the renderer's barrier.

        profile: time each node with GL timer queries into ``last_timings`` (ms per node name, summed over
        batches; falls back to glFinish + wall clock where the driver's timer reads 0, see ``timing_source``;
        this waits for the GPU, so use it in benchmarks only)."""
        from engine.skinning import gpu_stages

        self.last_timings = {}
        for batch in self._batches.values():
            if not batch.instances:
                continue
            self._upload_pose(batch)
            for step in batch.plan.steps:
                if step.barrier_before:
                    self.ctx.memory_barrier(step.barrier_before)
                if profile:
                    q = self._query(step.node.name)
                    self.ctx.finish()
                    t0 = time.perf_counter()
                    with q:
                        gpu_stages.run_node(self, batch, step.node)
                    self.ctx.finish()
                    wall = (time.perf_counter() - t0) * 1e3
                    gpu = q.elapsed * 1e-6
                    # Mesa llvmpipe's timer reports ~0 for compute work: then fall back to the wall clock
                    plausible = gpu > 0.01 * wall
                    self.timing_source = "GL timer query" if plausible else "wall clock (glFinish)"
                    ms = gpu if plausible else wall
                    self.last_timings[step.node.name] = self.last_timings.get(step.node.name, 0.0) + ms
                else:
                    gpu_stages.run_node(self, batch, step.node)
            self.ctx.memory_barrier(batch.plan.final_barrier)
            for inst in batch.instances:
                inst.prev_skin, inst.prev_posed = inst.skin, inst.posed
            batch.frame += 1

    def _query(self, name: str) -> moderngl.Query:
        q = self._queries.get(name)
        if q is None:
            q = self.resources.query(time=True, label=f"deform timer {name}")
            self._queries[name] = q
        return q

    # ---- outputs --------------------------------------------------------------------------------------------
    def output_buffers(self, handle: DeformHandle) -> tuple[moderngl.Buffer, moderngl.Buffer]:
        """(positions, normals) vec4 buffers of the mesh in display-vertex order (w = 1 / 0)."""
        inst = self._inst(handle)
        outs = inst.batch.plan.outputs
        return inst.display[outs["positions"]], inst.display[outs["normals"]]

    def download(self, handle: DeformHandle) -> tuple[np.ndarray, np.ndarray]:
        """Read back (positions (D,3), normals (D,3)) float32 in display order (export and tests only)."""
        pos_buf, nrm_buf = self.output_buffers(handle)
        nd = self._inst(handle).asset.topology.n_display
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        p = np.frombuffer(pos_buf.read(size=16 * nd), np.float32).reshape(nd, 4)[:, :3].copy()
        n = np.frombuffer(nrm_buf.read(size=16 * nd), np.float32).reshape(nd, 4)[:, :3].copy()
        return p, n

    def download_display(self, handle: DeformHandle, resource: str) -> np.ndarray:
        """Read back a display- or face-domain resource of the mesh as (rows, 4) float32 (tests, debugging)."""
        inst = self._inst(handle)
        if resource not in inst.display:
            raise ValueError(f"no display/face resource {resource!r}; valid: {sorted(inst.display)}")
        dom = inst.batch.plan.domains[resource]
        rows = inst.asset.topology.n_display if dom == "display" else int(inst.asset.topology.display_triangles.shape[0])
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        return np.frombuffer(inst.display[resource].read(size=16 * rows), np.float32).reshape(rows, 4).copy()

    def download_control(self, handle: DeformHandle, resource: str) -> np.ndarray:
        """Read back a control-domain resource of the mesh, (V,3) (tests and debugging)."""
        inst = self._inst(handle)
        name = "d_" + resource
        if name not in inst.batch.buffers:
            valid = [k[2:] for k in inst.batch.buffers if k.startswith("d_")]
            raise ValueError(f"no control resource {resource!r}; valid: {valid}")
        n = inst.asset.topology.n_control
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        raw = inst.batch.buffers[name].read(size=16 * n, offset=16 * inst.dyn_base)
        return np.frombuffer(raw, np.float32).reshape(n, 4)[:, :3].copy()

    def spring_status(self, handle: DeformHandle) -> dict[str, Any]:
        """Convergence state of the mesh's last spring solve (reads back; tests and tools)."""
        inst = self._inst(handle)
        if "status" not in inst.batch.buffers:
            raise ValueError("this mesh's graph has no spring node")
        k = inst.batch.instances.index(inst)
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        raw = inst.batch.buffers["status"].read(size=L.DEFORM_STATUS.size, offset=k * L.DEFORM_STATUS.size)
        rec = np.frombuffer(raw, L.DEFORM_STATUS.dtype)[0]
        return {"iterations": int(rec["iterations"]), "stopped": bool(rec["converged"]),
                "reason": L.REASONS[int(rec["reason"])], "last_displacement": float(rec["last_disp"]),
                "energy": float(rec["energy"]), "dispatches": inst.batch.iterations_run}

    def gpu_bytes(self) -> dict[str, int]:
        """Bytes of GPU memory held per buffer kind over all batches and meshes (for the benchmark)."""
        out: dict[str, int] = {}
        for b in self._batches.values():
            for name, buf in b.buffers.items():
                out[name] = out.get(name, 0) + buf.size
        for inst in self._instances.values():
            for name, buf in inst.display.items():
                out[name] = out.get(name, 0) + buf.size
        return out

    def release(self) -> None:
        """Release every GPU object the graph owns (output buffers given by the caller are left alone)."""
        for h in list(self._instances):
            self.remove_mesh(DeformHandle(h))
        for b in self._batches.values():
            b.release()
        self._batches = {}
        for q in self._queries.values():
            self.resources.release(q)
        self._queries = {}
        if self._own_programs:
            self.programs.release()
