"""The GPU deformer graph (research ch. 6): skin -> spring -> vertex copy -> face normals -> vertex normals.

The graph is data (:mod:`engine.skinning.gpu.plan`): nodes declare the resources they read and write; order
and memory barriers follow from that. :class:`DeformerGraph` runs such graphs for every skinned mesh of a scene:

* meshes that use the same graph form a *batch*; EVERY stage of a batch runs as ONE dispatch (per iteration
  for the springs) over concatenated buffers, so the cost grows with the total vertex count, not the number of
  meshes: control-domain resources (skin, spring, resolve) live in a control pool, display- and face-domain
  resources (copy, face normals, vertex normals) in a display / face pool. Each instance's range in a pool is
  padded to whole work groups (see :mod:`engine.skinning.gpu.layouts`). Instances of one asset (same
  ``asset_key``, default: the same topology object) share the static data (bind data, weights, binding, bind
  normals as SSBOs; adjacency, rest values and triangle lists as images), and a batch creates only the static
  SSBOs its stages bind (``engine.skinning.gpu.stages.STATIC_READS``);
* the renderer pulls a mesh's vec4 positions/normals straight from its *range* of the display pool
  (:meth:`DeformerGraph.output_ranges`: buffer, byte offset, byte size; ranges start at multiples of 1024
  bytes, aligned for glBindBufferRange). Callers that pass their own ``positions_buffer`` / ``normals_buffer``
  get a GPU-side copy of their range into them at the end of ``run`` (one glCopyBufferSubData each);
* LBS/DQS graphs skin normals with the same blend (skin option ``normals="skinned"``, the default of the
  built-in ``lbs`` / ``dqs`` graphs): the skin stage writes a 3x3 normal transform per control point and the
  copy stage applies it to each display vertex's bind normal; graphs whose surface changes shape (rigid, IRS,
  springs) recompute face and vertex normals from the deformed surface;
* where the plan fuses skin + copy (plan ``fusions``: the built-in lbs / dqs graphs, the crowd case) one
  ``skin_copy`` dispatch skins the display vertices straight into the display pool: no control pass, no
  normal transforms. It reads three read-only images (why images: layouts, "fused skin_copy stage"): a
  SkinVertex per display vertex (static pool), a SkinHead per display work group and the batch's joints as
  compact records (written once per frame);
* springs run up to ``max_iterations`` dispatches per frame, one memory barrier each and nothing bound or
  uploaded between them: the dispatch index lives in a GPU buffer, and the last work group of a dispatch (an
  atomic ticket) reads the GPU-side maxima (atomicMax on float bits) / energy partials every ``check_every``
  iterations and stops converged instances, whose work groups then exit at entry; the CPU never waits;
* per frame the CPU packs the poses of all instances of a batch at once (stacked arrays, one batched call per
  quantity, only what the batch's nodes read: LBS needs only the skin matrices) and writes each pose buffer
  once; nothing is read back on the per-frame path but the springs' status (32 bytes per instance, copied on
  the GPU and read :data:`engine.skinning.gpu.status.LAG` frames later, so it never waits): a divergence is
  warned about once per mesh like the CPU solver (:mod:`engine.skinning.gpu.status`); ``download`` reads for
  export and tests. Spring parameters absurd for the mesh (``engine.skinning.springs.limits.check_spring_ranges``)
  are refused by ``add_mesh`` / ``set_spring``.

Every stage has its numpy reference (engine.skinning.meshprep / skinning / springs); tests/gl compare them.

Where things live: :class:`DeformerGraph` here is the facade (meshes in, poses in, runs, outputs out); the
pools and their layout are :mod:`engine.skinning.gpu.pools`, the set-up records
:mod:`engine.skinning.gpu.records`, the per-frame pose upload :mod:`engine.skinning.gpu.pose`, one module per
stage :mod:`engine.skinning.gpu.stages` (each taking a typed context built by
:mod:`engine.skinning.gpu.contexts`), the plan :mod:`engine.skinning.gpu.plan`.
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import time
from collections.abc import Hashable, Iterator
from typing import Any

import moderngl
import numpy as np

from engine.gpu.glfunc import gl_function
from engine.gpu.layouts import MAX_JOINTS
from engine.gpu.resources import GpuResources
from engine.gpu.shaderlib import ProgramCache
from engine.math.mesh import csr
from engine.skinning import registry
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu import records as R
from engine.skinning.gpu import spring as gpu_spring
from engine.skinning.gpu import stages as gpu_stages
from engine.skinning.gpu.contexts import stage_context
from engine.skinning.gpu.plan import SHADER_STORAGE_BARRIER_BIT, GraphConfig, default_config, plan, with_morph
from engine.skinning.gpu.pools import Batch
from engine.skinning.gpu.pose import upload_dual_quats
from engine.skinning.gpu.records import DeformHandle, Instance, influence_sets, padded_lists
from engine.skinning.gpu.status import SpringStatusReader
from engine.skinning.morph import check_weights, control_deltas, morph_binding
from engine.skinning.springs.limits import check_spring_ranges, spring_advice
from engine.skinning.springs.rest import SpringRest, build_rest
from engine.skinning.types import Binding, MeshTopology

__all__ = ["DeformerGraph", "DeformHandle", "GraphConfig", "default_config", "plan", "METHODS",
           "ssbo_offset_alignment"]

#: the methods the graph runs: every GPU row of the deformer table (engine/skinning/registry.py)
METHODS = registry.names(device="gpu", public_only=False)

# names kept importable from here (tests, older callers); they live in the modules named
_dual_quats = upload_dual_quats
_padded_lists = padded_lists

GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT = 0x90DF
_SPEC_MAX_ALIGNMENT = 256  # the largest value the GL spec allows for the SSBO offset alignment


def ssbo_offset_alignment(ctx: moderngl.Context) -> int:
    """GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT of the context in bytes (moderngl's ``ctx.info`` lacks it; read
    with glGetIntegerv through the context's own loader), or 256 (the spec's largest) where it cannot be read."""
    fn = gl_function(ctx, "glGetIntegerv", ctypes.c_uint, ctypes.POINTER(ctypes.c_int))
    if fn is None:
        return _SPEC_MAX_ALIGNMENT
    out = ctypes.c_int(0)
    fn(GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT, ctypes.byref(out))
    return int(out.value) if out.value > 0 else _SPEC_MAX_ALIGNMENT


# ----------------------------------------------------------------------------------------------------------
# CPU-side packing helpers (vectorised; set-up time or once per frame for the whole pose)
class DeformerGraph:
    """Runs deformer graphs for many skinned meshes on the GPU.

    ``DeformerGraph(ctx, resources, config=None, programs=None)``; ``config`` (a :class:`GraphConfig`, a dict
    or a path to TOML/JSON) is the graph of meshes added without their own; ``programs`` is the shared
    :class:`ProgramCache` (one is made over ``resources`` when omitted and released with the graph).

    Per frame: ``set_pose`` for each mesh, then one ``run()``; the renderer binds ``output_ranges(handle)``
    (buffer, offset, size of the mesh's positions and normals in the batch's display pool).
    ``download(handle)`` reads positions and normals back (export, tests).
    """

    def __init__(self, ctx: moderngl.Context, resources: GpuResources, config: GraphConfig | dict | str | None = None,
                 *, programs: ProgramCache | None = None) -> None:
        self.ctx = ctx
        self.resources = resources
        self._own_programs = programs is None
        self.programs = programs or ProgramCache(resources)
        self.programs.library.add_virtual(L.LAYOUT_INCLUDE, L.layouts_glsl())
        self.default = self._as_config(config) if config is not None else default_config("spring")
        self._batches: dict[str, Batch] = {}
        self._instances: dict[int, Instance] = {}
        self._batch_of: dict[int, Batch] = {}  # handle id -> the batch of its instance
        #: batches whose instances changed inside ``deferred_layout()``: laid out once, on leaving it or on
        #: first use (one re-layout for many adds or removes: a bake's block of instances, a release)
        self._stale: dict[int, Batch] = {}
        self._deferring = 0
        self._assets: dict[tuple[str, Hashable], R.Asset] = {}
        #: program(name, defines): the deform compute shaders over this graph's ProgramCache
        self._program: gpu_stages.ProgramSource = functools.partial(gpu_stages.program, self.programs)
        self._next = 1
        self.last_timings: dict[str, float] = {}
        self.timing_source = ""
        self._queries: dict[str, moderngl.Query] = {}
        #: GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT (bytes); display ranges start at multiples of it
        self.offset_alignment = ssbo_offset_alignment(ctx)
        self.range_groups = L.range_groups(self.offset_alignment)
        #: the springs' status read back a few frames late; divergence warned about once per mesh
        self.spring_reports = SpringStatusReader(ctx, resources, advice=self._spring_advice)
        self._rests: dict[tuple[str, Hashable], SpringRest] = {}  # spring rest state per asset key (checks, advice)

    # ---- configuration ------------------------------------------------------------------------------------
    @staticmethod
    def _as_config(config: GraphConfig | dict | str | Any) -> GraphConfig:
        if isinstance(config, GraphConfig):
            return config
        if isinstance(config, dict):
            return GraphConfig.from_dict(config)
        return GraphConfig.load(config)

    def _batch_for(self, config: GraphConfig, influence_sets: int = 1) -> Batch:
        key = repr(config.to_dict()) + (f" influence_sets={influence_sets}" if influence_sets > 1 else "")
        b = self._batches.get(key)
        if b is None:
            b = Batch(self.resources, config, self.range_groups, influence_sets=influence_sets)
            self._batches[key] = b
        return b

    # ---- meshes ---------------------------------------------------------------------------------------------
    def add_mesh(self, topology: MeshTopology, binding: Binding | None, joints: np.ndarray, weights: np.ndarray,
                 inverse_bind: np.ndarray, parents: np.ndarray, *, method: str | None = None,
                 config: GraphConfig | dict | str | None = None, spring: Any = None,
                 asset_key: Hashable | None = None, normals: np.ndarray | None = None,
                 positions_buffer: moderngl.Buffer | None = None,
                 normals_buffer: moderngl.Buffer | None = None,
                 morph: tuple[np.ndarray, np.ndarray | None, np.ndarray] | None = None) -> DeformHandle:
        """Add one skinned mesh instance and return its handle.

        topology: welded mesh (engine.skinning.meshprep.prepare_mesh); binding: attachment binding (needed by
        rigid, irs and spring); joints (D,K) or (V,K) int and weights (D,K)/(V,K): glTF JOINTS_n/WEIGHTS_n, K
        influence slots (4 per set; K > 4 skins in an unfused batch with INFLUENCE_SETS = ceil(K/4)) (per
        display vertex: the representative display vertex of each control point is used); inverse_bind (J,4,4);
        parents (J,) within the skin (-1 roots). method: lbs | dqs | rigid | irs | spring | spring-feedback
        picks a built-in graph (else ``config`` or the graph's default). spring: SpringParams of the springs
        reference (None: its defaults). asset_key: instances with the same key share static buffers (default:
        the topology object). normals: (D,3) bind normals (glTF NORMAL) that graphs with skinned normals
        transform (default: area-weighted normals of the bind surface); shared per asset like the rest.

        Outputs live in the batch's display pool (``output_ranges``). positions_buffer/normals_buffer: the
        caller's own vec4 display-order buffers (>= 16 * n_display bytes each); the mesh's outputs are copied
        into them at the end of every ``run`` (a GPU copy each; binding the range directly is cheaper).

        morph: the mesh's morph targets (position deltas (M,D,3) per display vertex, normal deltas (M,D,3) or None,
        default weights (M,)): the graph gets a morph node first (plan.with_morph; the mesh runs unfused in a
        batch of such meshes), the instance starts at the default weights (``set_morph_weights`` changes them)
        and the springs' rest state is built from the morphed rest at the default weights. The topology must
        have been welded with the deltas (meshprep.prepare_mesh(morph_deltas=...)).
        """
        params = gpu_spring.spring_params(spring)
        if method is not None:
            if method not in METHODS:
                raise ValueError(f"method {method!r}; valid: {METHODS}")
            if method == "spring" and params.mode == "dependent":
                method = "spring-feedback"
            skin = "rigid" if method == "spring-feedback" else params.initial_skinning
            cfg = default_config(method, skin=skin if method.startswith("spring") else None,
                                 contact=method.startswith("spring") and params.contact)
        else:
            cfg = self._as_config(config) if config is not None else self.default
        ib = np.asarray(inverse_bind, np.float64)
        if ib.ndim != 3 or ib.shape[1:] != (4, 4) or ib.shape[0] < 1:
            raise ValueError(f"inverse_bind must have shape (J,4,4) with J >= 1, got {ib.shape}")
        if ib.shape[0] > MAX_JOINTS:
            raise ValueError(f"skin has {ib.shape[0]} joints; the GPU path supports 1..{MAX_JOINTS}")
        sets = influence_sets(joints)
        if sets > 1 and cfg.fuse:
            # more than 4 influences: the fused skin_copy records hold one set; the two-dispatch path reads any
            # number (skin.comp's INFLUENCE_SETS), so such meshes go to an unfused batch of their own
            cfg = dataclasses.replace(cfg, fuse=False)
        par = np.asarray(parents).astype(np.int32).reshape(-1)
        if par.shape[0] != ib.shape[0]:
            raise ValueError(f"parents must have shape ({ib.shape[0]},), got {np.asarray(parents).shape}")
        needs_binding = any(s.node.stage == "spring" or s.node.options.get("method") in ("rigid", "irs")
                            for s in plan(cfg).steps)
        if needs_binding and binding is None:
            raise ValueError(f"graph {cfg.name!r} needs an attachment binding (rigid/irs skinning or springs)")
        nd = topology.n_display
        given: dict[str, moderngl.Buffer] = {}
        outs = cfg.outputs
        for nm, buf, res in (("positions_buffer", positions_buffer, outs.get("positions")),
                             ("normals_buffer", normals_buffer, outs.get("normals"))):
            if buf is not None:
                if buf.size < 16 * nd:
                    raise ValueError(f"{nm} holds {buf.size} bytes; a vec4 per display vertex needs {16 * nd}")
                if res is None:
                    raise ValueError(f"{nm} given but graph {cfg.name!r} has no such output")
                given[res] = buf
        morph_pos = morph_nrm = morph_w = None
        rest: tuple[MeshTopology, Binding | None] | None = None
        if morph is not None and len(morph[2]):
            morph_pos, morph_nrm, morph_w = self._check_morph(morph, topology)
            cfg = with_morph(cfg, normals=morph_nrm is not None)
            offset = np.einsum("m,mvc->vc", morph_w, morph_pos).astype(np.float32)
            rest = (dataclasses.replace(topology, positions=(topology.positions + offset).astype(np.float32)),
                    morph_binding(binding, offset) if binding is not None else None)
        key = (repr(cfg.to_dict()) + f" sets={sets}", asset_key if asset_key is not None else id(topology))
        if any(n.stage == "spring" for n in cfg.nodes) and binding is not None:
            rt, rb = rest if rest is not None else (topology, binding)
            check_spring_ranges(params, self._rest_for(key, rt, rb if rb is not None else binding, ib))
        batch = self._batch_for(cfg, sets)
        asset = self._assets.get(key)
        if asset is None:
            skin_opts = next((n.options for n in cfg.nodes if n.stage == "skin"), {})
            dtri = topology.display_triangles.astype(np.int64)
            off, cnt, idx = csr(dtri.reshape(-1), np.repeat(np.arange(dtri.shape[0]), 3), nd)
            dfaces = (np.stack([off, cnt], 1), idx)
            asset = R.make_asset(key[1], topology, binding, joints, weights, ib, par,
                                 skin_opts.get("influence", (0.5, 0.5)), dfaces,
                                 normals if batch.bind_normals else None, skinned_normals=batch.bind_normals,
                                 fused=bool(batch.fused), influence_sets=sets, rest_shape=rest)
            asset.morph_positions, asset.morph_normals, asset.rest = morph_pos, morph_nrm, rest
            self._assets[key] = asset
        elif asset.topology is not topology and (asset.topology.n_control != topology.n_control
                                                 or asset.topology.n_display != nd):
            raise ValueError(f"asset_key {asset_key!r} names an asset with {asset.topology.n_control} control "
                             f"points and {asset.topology.n_display} display vertices; this topology has "
                             f"{topology.n_control} and {nd}")
        asset.users += 1
        handle = DeformHandle(self._next)
        self._next += 1
        inst = Instance(handle, asset, params, given)
        inst.morph_weights = None if morph_w is None else morph_w.copy()
        batch.instances.append(inst)
        self._instances[handle.id] = inst
        self._batch_of[handle.id] = batch
        self._changed(batch)
        return handle

    def add_instances(self, handle: DeformHandle, count: int) -> list[DeformHandle]:
        """``count`` more instances of ``handle``'s mesh with its graph and spring parameters (no buffers of the
        caller's: outputs stay in the pool); cheap (nothing re-validated) and laid out once. For bakes and
        crowds of one character."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count must be a non-negative integer, got {count!r}")
        src, batch = self._lookup(handle)
        out = []
        for _ in range(count):
            h = DeformHandle(self._next)
            self._next += 1
            inst = Instance(h, src.asset, src.params, {})
            inst.morph_weights = None if src.morph_weights is None else src.morph_weights.copy()
            src.asset.users += 1
            batch.instances.append(inst)
            self._instances[h.id] = inst
            self._batch_of[h.id] = batch
            out.append(h)
        if count:
            self._changed(batch)
        return out

    def remove_mesh(self, handle: DeformHandle) -> None:
        """Remove a mesh (buffers it was given stay with the caller); the batch's pools are re-packed on its
        next use."""
        inst, batch = self._lookup(handle)
        batch.instances.remove(inst)
        del self._instances[handle.id]
        del self._batch_of[handle.id]
        inst.asset.users -= 1
        self.spring_reports.forget(handle.id)
        if inst.asset.users == 0:
            for k in [k for k, a in self._assets.items() if a is inst.asset]:
                self._rests.pop(k, None)
            self._assets = {k: a for k, a in self._assets.items() if a is not inst.asset}
        if batch.instances:
            self._changed(batch)
        else:
            self._stale.pop(id(batch), None)
            self.spring_reports.drop_batch(id(batch))
            batch.release()
            self._batches = {k: b for k, b in self._batches.items() if b is not batch}

    def _lookup(self, handle: DeformHandle) -> tuple[Instance, Batch]:
        """(instance, its batch) of a live handle, laid out or not; ValueError naming the handle otherwise."""
        hid: Any = getattr(handle, "id", None)  # any object may be passed: it is looked up, never trusted
        inst = self._instances.get(hid)
        if inst is None:
            raise ValueError(f"unknown deform handle {handle!r}; live handles: {sorted(self._instances)}")
        return inst, self._batch_of[inst.handle.id]

    def _where(self, handle: DeformHandle) -> tuple[Instance, Batch]:
        """(instance, its batch) of a live handle with the batch laid out; ValueError naming the handle."""
        inst, batch = self._lookup(handle)
        if id(batch) in self._stale:
            self._settle()
        return inst, batch

    @contextlib.contextmanager
    def deferred_layout(self) -> Iterator[None]:
        """Inside, adds and removes only mark their batch; it is laid out once, on leaving (or on the first
        use of a handle inside). Outside, every add or remove re-lays out its batch at once."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
            if not self._deferring:
                self._settle()

    def _changed(self, batch: Batch) -> None:
        self._stale[id(batch)] = batch
        if not self._deferring:
            self._settle()

    def _settle(self) -> None:
        """Lay out every batch whose instances changed since its last layout."""
        stale, self._stale = self._stale, {}
        for batch in stale.values():
            batch.layout()

    @property
    def plans(self) -> list[Any]:
        """The plan of every batch (one per graph configuration in use): its stages in dispatch order."""
        return [b.plan for b in self._batches.values()]

    @property
    def handles(self) -> list[DeformHandle]:
        return [i.handle for i in self._instances.values()]

    def set_spring(self, handle: DeformHandle, spring: Any) -> None:
        """Change a mesh's spring parameters at run time (a SpringParams, or None for the defaults)."""
        inst, batch = self._where(handle)
        params = gpu_spring.spring_params(spring)
        if batch.has_spring and inst.asset.binding is not None:
            check_spring_ranges(params, self._instance_rest(inst))
        if params.contact and not batch.has_contact:
            raise ValueError(f"spring.contact = true for mesh {handle.id}, whose graph has no contact node (the "
                             "built-in spring graphs get one when the mesh is added with contact on): remove the "
                             "mesh and add it again with these parameters")
        inst.params = params
        batch.write_instance_table()

    def _rest_for(self, key: tuple[str, Hashable], topology: MeshTopology, binding: Binding,
                  inverse_bind: np.ndarray) -> SpringRest:
        """The spring reference's rest state of an asset (for range checks and divergence advice), built once."""
        rest = self._rests.get(key)
        if rest is None:
            rest = build_rest(topology, binding, np.linalg.inv(np.asarray(inverse_bind, np.float64)))
            self._rests[key] = rest
        return rest

    def _instance_rest(self, inst: Instance) -> SpringRest:
        """The rest state of an instance's asset (which has a binding: spring graphs need one)."""
        key = next(k for k, a in self._assets.items() if a is inst.asset)
        binding = inst.asset.binding
        if binding is None:
            raise ValueError(f"mesh {inst.handle.id} has no attachment binding, so no spring rest state")
        topology = inst.asset.topology
        if inst.asset.rest is not None:  # a morphed mesh: the rest at its default weights
            topology, binding = inst.asset.rest[0], inst.asset.rest[1] or binding
        return self._rest_for(key, topology, binding,
                              np.linalg.inv(np.asarray(inst.asset.bind_joints, np.float64)))

    def _spring_advice(self, handle_id: int, params: Any) -> str:
        inst = self._instances.get(handle_id)
        if inst is None or inst.asset.binding is None:
            return f"lower `dt` (now {params.dt:g}) or the stiffnesses"
        return spring_advice(params, self._instance_rest(inst))

    def set_edits(self, handle: DeformHandle, terms: Any | None) -> None:
        """Surface-edit forces of a mesh (engine.skinning.edits.EditTerms for this frame; None clears them).
        Only this mesh's rows of its batch's edit buffer are uploaded (the other meshes' stay as they are)."""
        inst, batch = self._where(handle)
        if terms is None:
            inst.edit, inst.edit_q, inst.edit_held = None, None, None
        else:
            n = inst.asset.topology.n_control
            k = np.asarray(terms.stiffness, np.float64).reshape(-1)
            c = np.asarray(terms.weighted_target, np.float64).reshape(-1, 3)
            q = np.asarray(terms.q, np.float64).reshape(-1)
            if k.shape[0] != n or c.shape[0] != n or q.shape[0] != n:
                raise ValueError(f"edit terms must have {n} rows (control points), got {k.shape[0]}")
            inst.edit = np.concatenate([c, k[:, None]], 1).astype(np.float32)
            inst.edit_q = q.astype(np.float32)
            held = getattr(terms, "held", None)  # static sets held in place (engine.skinning.edits)
            inst.edit_held = None if held is None else np.asarray(held, bool).reshape(n).astype(np.float32)
        batch.write_edits(inst)

    @staticmethod
    def _check_morph(morph: tuple[np.ndarray, np.ndarray | None, np.ndarray], topology: MeshTopology
                     ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """(position deltas per control point (M,V,3), normal deltas per display vertex (M,D,3) or None,
        default weights (M,)) from ``add_mesh``'s ``morph``; ValueError naming a wrong shape or value."""
        pos, nrm, w = morph
        m = len(w)
        d = topology.n_display
        w = check_weights(w, m, "default morph weights")
        pos = np.asarray(pos, np.float32)
        if pos.shape != (m, d, 3) or not np.all(np.isfinite(pos)):
            raise ValueError(f"morph position deltas must be ({m},{d},3) finite, got {pos.shape}")
        ctrl = control_deltas(topology, pos)
        if not np.array_equal(ctrl[:, topology.control_of_display], pos):
            raise ValueError("display vertices of one control point have different morph deltas: weld the topology "
                             "with them (meshprep.prepare_mesh(morph_deltas=...))")
        if nrm is not None:
            nrm = np.asarray(nrm, np.float32)
            if nrm.shape != (m, d, 3) or not np.all(np.isfinite(nrm)):
                raise ValueError(f"morph normal deltas must be ({m},{d},3) finite, got {nrm.shape}")
        return ctrl, nrm, w

    def set_morph_weights(self, handle: DeformHandle, weights: np.ndarray) -> None:
        """The mesh's morph weights (M,) for the next ``run`` (a mesh added with ``morph``); uploaded with the
        poses."""
        inst, _batch = self._where(handle)
        m = inst.asset.n_targets
        if inst.morph_weights is None:
            raise ValueError(f"mesh {handle.id} was added without morph targets")
        inst.morph_weights = check_weights(weights, m)

    # ---- per frame ----------------------------------------------------------------------------------------
    def set_pose(self, handle: DeformHandle, skin_mats: np.ndarray, posed_joints: np.ndarray) -> None:
        """Pose of one mesh for the next ``run``: skin_mats (J,4,4) = posed_joints @ inverse_bind, posed_joints
        (J,4,4) joint world matrices (skin space). Stored into the batch's stacked pose arrays; ``run`` packs
        and uploads the poses of all meshes at once."""
        inst, batch = self._where(handle)
        j = inst.asset.n_joints
        sm = np.asarray(skin_mats)
        pj = np.asarray(posed_joints)
        if sm.shape != (j, 4, 4) or pj.shape != (j, 4, 4):
            raise ValueError(f"skin_mats and posed_joints must be ({j},4,4); got {sm.shape}, {pj.shape}")
        batch.pose.set(inst, sm, pj)

    def set_poses(self, handles: list[DeformHandle], skin_mats: np.ndarray, posed_joints: np.ndarray) -> None:
        """``set_pose`` for many meshes of one skin at once: skin_mats and posed_joints (N,J,4,4), row i for
        handles[i] (a crowd of one character: the shapes are checked once)."""
        sm = np.asarray(skin_mats)
        pj = np.asarray(posed_joints)
        if sm.shape != pj.shape or sm.ndim != 4 or sm.shape[0] != len(handles) or sm.shape[2:] != (4, 4):
            raise ValueError(f"skin_mats and posed_joints must be ({len(handles)},J,4,4); got {sm.shape}, "
                             f"{pj.shape}")
        for i, h in enumerate(handles):
            inst, batch = self._where(h)
            if inst.asset.n_joints != sm.shape[1]:
                raise ValueError(f"handle {h!r} has {inst.asset.n_joints} joints; the poses have {sm.shape[1]}")
            batch.pose.set(inst, sm[i], pj[i])

    def run(self, *, profile: bool = False) -> None:
        """One frame for every mesh: upload poses, run each batch's plan, end with the renderer's barrier.

        profile: time each node with GL timer queries into ``last_timings`` (ms per node name, summed over
        batches; falls back to glFinish + wall clock where the driver's timer reads 0, see ``timing_source``;
        this waits for the GPU, so use it in benchmarks only). ``last_timings["upload"]`` is the CPU time of
        packing and writing the poses."""
        self.last_timings = {}
        self._settle()
        self.spring_reports.poll()  # status copies old enough to read without waiting
        for batch in self._batches.values():
            if not batch.instances:
                continue
            if profile:
                t0 = time.perf_counter()
                batch.upload_pose()
                self.last_timings["upload"] = self.last_timings.get("upload", 0.0) + (time.perf_counter() - t0) * 1e3
            else:
                batch.upload_pose()
            for step in batch.plan.steps:
                if step.barrier_before:
                    self.ctx.memory_barrier(step.barrier_before)
                if profile:
                    q = self._query(step.node.name)
                    self.ctx.finish()
                    t0 = time.perf_counter()
                    with q:
                        self._run_step(batch, step.node)
                    self.ctx.finish()
                    wall = (time.perf_counter() - t0) * 1e3
                    gpu = q.elapsed * 1e-6
                    # Mesa llvmpipe's timer reports ~0 for compute work, and a 32-bit result caps at 2^32 ns
                    # (4.29 s): where the reading is outside (1 %, 100 %] of the finished wall time, use the wall
                    plausible = 0.01 * wall < gpu <= wall * 1.001 + 0.05
                    self.timing_source = "GL timer query" if plausible else "wall clock (glFinish)"
                    ms = gpu if plausible else wall
                    self.last_timings[step.node.name] = self.last_timings.get(step.node.name, 0.0) + ms
                else:
                    self._run_step(batch, step.node)
            self.ctx.memory_barrier(batch.plan.final_barrier)
            batch.end_frame()
            if batch.has_spring:
                self.spring_reports.after_frame(id(batch), batch.buffers["status"],
                                                [(i.handle.id, i.params) for i in batch.instances])
        self.spring_reports.end_frame()

    def _run_step(self, batch: Batch, node: Any) -> None:
        """One node of a batch's plan: its typed context over the batch's pools, then the stage."""
        context = stage_context(batch, node, self._program, self.ctx)
        gpu_stages.run(context)
        if isinstance(context, gpu_stages.SpringContext):
            batch.iterations_run = context.dispatches

    def _query(self, name: str) -> moderngl.Query:
        q = self._queries.get(name)
        if q is None:
            q = self.resources.query(time=True, label=f"deform timer {name}")
            self._queries[name] = q
        return q

    # ---- outputs --------------------------------------------------------------------------------------------
    def output_ranges(self, handle: DeformHandle) -> tuple[tuple[moderngl.Buffer, int, int],
                                                           tuple[moderngl.Buffer, int, int]]:
        """((buffer, offset, size) of the positions, the same of the normals) of the mesh: vec4 per display
        vertex (w = 1 / 0), offsets and sizes in bytes, offsets aligned for glBindBufferRange (bind with
        ``buffer.bind_to_storage_buffer(binding, offset=offset, size=size)``). A caller-given buffer is
        reported as (that buffer, 0, size). Valid until meshes are added to or removed from the graph (the
        pools are re-packed then: ask again)."""
        inst, batch = self._where(handle)
        outs = batch.plan.outputs
        size = 16 * inst.asset.topology.n_display
        out = []
        for key in ("positions", "normals"):
            res = outs[key]
            if res in inst.given:
                out.append((inst.given[res], 0, size))
            else:
                out.append((batch.display(res), 16 * inst.display_base, size))
        return out[0], out[1]

    def output_buffers(self, handle: DeformHandle) -> tuple[moderngl.Buffer, moderngl.Buffer]:
        """(positions, normals) buffers holding only this mesh: the ones given to ``add_mesh``. Outputs in the
        pooled display buffers raise ValueError: bind ``output_ranges(handle)`` instead."""
        (pb, po, _), (nb, no, _) = self.output_ranges(handle)
        inst, batch = self._where(handle)
        outs = batch.plan.outputs
        missing = [k for k in ("positions", "normals") if outs[k] not in inst.given]
        if missing:
            raise ValueError(f"the {' and '.join(missing)} of mesh {handle.id} live in the batch's pooled display "
                             f"buffer; use output_ranges(handle) (buffer, offset, size), or give "
                             f"positions_buffer/normals_buffer to add_mesh")
        return pb, nb

    def _read_display(self, inst: Instance, batch: Batch, resource: str) -> np.ndarray:
        dom = batch.plan.domains[resource]
        rows, base = ((inst.asset.topology.n_display, inst.display_base) if dom == "display"
                      else (inst.asset.n_tris, inst.face_base))
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        raw = batch.display(resource).read(size=16 * rows, offset=16 * base) if rows else b""
        return np.frombuffer(raw, np.float32).reshape(rows, 4).copy()

    def download(self, handle: DeformHandle) -> tuple[np.ndarray, np.ndarray]:
        """Read back (positions (D,3), normals (D,3)) float32 in display order (export and tests only). Waits
        for the GPU, so the springs' pending status is read (and a divergence reported) too."""
        inst, batch = self._where(handle)
        self.spring_reports.poll(wait=True)
        outs = batch.plan.outputs
        return (self._read_display(inst, batch, outs["positions"])[:, :3].copy(),
                self._read_display(inst, batch, outs["normals"])[:, :3].copy())

    def download_positions(self, handles: list[DeformHandle]) -> list[np.ndarray]:
        """Deformed positions (D,3) float32 of many meshes (a bake's block): one read of the display pool range
        covering the meshes of each batch, instead of a read per mesh and output. The arrays are read-only views
        into that read (the caller copies them where it keeps them: a bake writes them into its frame array)."""
        self.spring_reports.poll(wait=True)
        where = [self._where(h) for h in handles]
        out: list[np.ndarray | None] = [None] * len(handles)
        by_batch: dict[int, list[int]] = {}
        for i, (_inst, batch) in enumerate(where):
            by_batch.setdefault(id(batch), []).append(i)
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        for rows in by_batch.values():
            batch = where[rows[0]][1]
            lo = min(where[i][0].display_base for i in rows)
            hi = max(where[i][0].display_base + where[i][0].asset.topology.n_display for i in rows)
            buf = batch.display(batch.plan.outputs["positions"])
            block = np.frombuffer(buf.read(size=16 * (hi - lo), offset=16 * lo), np.float32).reshape(-1, 4)
            for i in rows:
                inst = where[i][0]
                out[i] = block[inst.display_base - lo:inst.display_base - lo + inst.asset.topology.n_display, :3]
        return [o for o in out if o is not None]

    def download_display(self, handle: DeformHandle, resource: str) -> np.ndarray:
        """Read back a display- or face-domain resource of the mesh as (rows, 4) float32 (tests, debugging)."""
        inst, batch = self._where(handle)
        valid = sorted(r for r, d in batch.plan.domains.items() if d in ("display", "face"))
        if resource not in valid:
            raise ValueError(f"no display/face resource {resource!r}; valid: {valid}")
        return self._read_display(inst, batch, resource)

    def download_control(self, handle: DeformHandle, resource: str) -> np.ndarray:
        """Read back a control-domain resource of the mesh, (V,3) (tests and debugging); reads the springs'
        pending status too (see ``download``)."""
        inst, batch = self._where(handle)
        self.spring_reports.poll(wait=True)
        if resource in batch.plan.elided:
            raise ValueError(f"control resource {resource!r} is never written: its skin node was fused with the "
                             f"copy that reads it (one skin_copy dispatch); add the mesh with a graph config "
                             f"with fuse = false to read the control points back")
        if not batch.has_control(resource):
            raise ValueError(f"no control resource {resource!r}; valid: {batch.control_resources()}")
        n = inst.asset.topology.n_control
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        raw = batch.control(resource)[0].read(size=16 * n, offset=16 * inst.dyn_base)
        return np.frombuffer(raw, np.float32).reshape(n, 4)[:, :3].copy()

    def spring_status(self, handle: DeformHandle) -> dict[str, Any]:
        """Convergence state of the mesh's last spring solve (reads back; tests and tools); ``warm``: it started
        from the last output (SpringParams.warm_start)."""
        inst, batch = self._where(handle)
        if not batch.has_spring:
            raise ValueError("this mesh's graph has no spring node")
        k = batch.instances.index(inst)
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        self.spring_reports.poll(wait=True)
        raw = batch.buffers["status"].read(size=L.DEFORM_STATUS.size, offset=k * L.DEFORM_STATUS.size)
        rec = np.frombuffer(raw, L.DEFORM_STATUS.dtype)[0]
        return {"iterations": int(rec["iterations"]), "stopped": bool(rec["converged"]),
                "reason": L.REASONS[int(rec["reason"])], "last_displacement": float(rec["last_disp"]),
                "energy": float(rec["energy"]), "dispatches": batch.iterations_run,
                "warm": bool(k < batch.pose.warm_flags.shape[0] and batch.pose.warm_flags[k])}

    def gpu_bytes(self) -> dict[str, int]:
        """Bytes of GPU memory the graph holds per buffer kind over all batches (for the benchmark)."""
        out: dict[str, int] = {}
        self._settle()
        for b in self._batches.values():
            for name, buf in b.buffers.items():
                out[name] = out.get(name, 0) + buf.size
            for name, tex in b.images.items():  # rgba 32-bit texels
                out[name] = out.get(name, 0) + tex.width * tex.height * 16
        return out

    def release(self) -> None:
        """Release every GPU object the graph owns (output buffers given by the caller are left alone)."""
        self._deferring += 1  # no re-layout between the removes
        for h in list(self._instances):
            self.remove_mesh(DeformHandle(h))
        self._deferring -= 1
        self._stale = {}
        for b in self._batches.values():
            b.release()
        self._batches = {}
        self.spring_reports.release()
        for q in self._queries.values():
            self.resources.release(q)
        self._queries = {}
        if self._own_programs:
            self.programs.release()
