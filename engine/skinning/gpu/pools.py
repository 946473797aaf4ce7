"""Pooled GPU buffers of the deformer graph: one :class:`Batch` per graph config, its layout and its storage.

Meshes that use the same graph form a batch; every stage of a batch runs as ONE dispatch over concatenated
buffers, so the cost grows with the total vertex count, not the number of meshes:

* **static pool**: one segment per asset (bind data, weights, binding, bind normals as SSBOs; adjacency, rest
  values, triangle lists and the fused stage's SkinVertex records as images); a batch creates only the static
  SSBOs its stages bind (:func:`engine.skinning.gpu.stages.static_reads`);
* **control pool**: control-domain resources (skin, spring, resolve), each instance's range padded to whole
  work groups and packed densely; re-packed when instances are added or removed (feedback resources read at
  @previous keep their contents for the instances that stay);
* **display / face pools**: what copy, face and vertex normals write and the renderer binds ranges of. Their
  buffer objects live as long as the batch (grown in place, contents kept) and an instance keeps its range for
  its whole life; a new instance takes the first hole that fits (left by a removed one) or goes to the end.
  Display ranges start at multiples of the SSBO offset alignment (layouts.range_groups).

Storage is named (``buffers`` / ``images``: the GPU-memory report and the debug labels use the names); the
accessors below (:meth:`Batch.control`, :meth:`Batch.display`, ...) are the one place that knows the naming,
and stages never see it: they get typed contexts (:mod:`engine.skinning.gpu.contexts`).
"""
from __future__ import annotations

import moderngl
import numpy as np

from engine.gpu.layouts import LOCAL_SIZE, Std430Struct
from engine.gpu.resources import GpuResources
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu import records as R
from engine.skinning.gpu import stages as gpu_stages
from engine.skinning.gpu.plan import BIND, PREVIOUS, GraphConfig, Plan, plan
from engine.skinning.gpu.pose import PoseNeeds, PoseStack
from engine.skinning.gpu.records import Asset, Instance


class RangeAllocator:
    """Places ranges of groups in a pool around the ranges already used: first fit into a hole (a multiple of
    ``step``), else past the end. Cost per placement: the number of holes (removed instances), not of ranges."""

    def __init__(self, used: list[tuple[int, int]], step: int) -> None:
        self.step = step
        self.holes: list[tuple[int, int]] = []  # free [start, end) between used ranges, in order
        pos = 0
        for b, size in sorted(used):
            if b > pos:
                self.holes.append((pos, b))
            pos = max(pos, b + size)
        self.end = pos

    def _align(self, x: int) -> int:
        return -(-x // self.step) * self.step

    def take(self, n: int) -> int:
        """The base of ``n`` groups, now used."""
        for k, (s, e) in enumerate(self.holes):
            a = self._align(s)
            if e - a >= n:
                self.holes[k:k + 1] = [h for h in ((s, a), (a + n, e)) if h[1] > h[0]]
                return a
        a = self._align(self.end)
        if a > self.end:
            self.holes.append((self.end, a))
        self.end = a + n
        return a


def make_image(res: GpuResources, records: np.ndarray, label: str, copies: int = 1) -> moderngl.Texture:
    """A read-only image of vec4 records for the skin_copy, spring and normal stages (layout:
    layouts.image_rows); ``copies`` > 1 stacks that many images of the records one above the other (the spring
    state ring: copy r at row r * height / copies)."""
    texels = L.image_rows(records)
    if copies > 1:
        texels = np.concatenate([texels] * copies, axis=0)
    if texels.shape[0] > res.ctx.info.get("GL_MAX_TEXTURE_SIZE", 16384):
        raise ValueError(f"{label}: {records.shape[0]} records need an image of {texels.shape[0]} rows, more "
                         f"than the driver's GL_MAX_TEXTURE_SIZE; use fewer meshes per graph or fuse = false")
    dtype = {np.dtype(np.uint32): "u4", np.dtype(np.int32): "i4", np.dtype(np.float32): "f4"}[texels.dtype]
    return res.texture((texels.shape[1], texels.shape[0]), 4, texels, dtype=dtype,
                       filter=(moderngl.NEAREST, moderngl.NEAREST), repeat=False, label=label)


class Batch:
    """Meshes that share one graph config: pooled buffers and images, one dispatch per stage.

    ``Batch(resources, config, range_groups, influence_sets=1)``; ``range_groups``: display ranges start at
    multiples of this many work groups (the SSBO offset alignment); ``influence_sets``: the joint_ids / weights
    SSBOs hold that many vec4 rows per control point (assets with more than 4 influences)."""

    def __init__(self, resources: GpuResources, config: GraphConfig, range_groups: int, *,
                 influence_sets: int = 1) -> None:
        self.resources = resources
        #: vec4 sets of joint ids / weights per control point of every asset (4 slots each; > 1 only unfused)
        self.influence_sets = influence_sets
        self.config = config
        self.range_groups = range_groups
        self.plan: Plan = plan(config)
        self.instances: list[Instance] = []
        self.assets: list[Asset] = []
        self.buffers: dict[str, moderngl.Buffer] = {}
        self.images: dict[str, moderngl.Texture] = {}
        self.static_bases: R.StaticBases = {}
        self.total_groups = 0
        self.total_dgroups = 0
        self.total_fgroups = 0
        self.n_joints = 0
        self.n_bones = 0
        self.frame = 0
        self.iterations_run = 0
        nodes = [s.node for s in self.plan.steps]
        skins = [n for n in nodes if n.stage in ("skin", "skin_copy")]
        methods = {n.options.get("method", "lbs") for n in skins}
        #: fused skin_copy steps, and the methods whose compact joint records they read
        self.fused = [n for n in nodes if n.stage == "skin_copy"]
        self.fused_methods = sorted({n.options.get("method", "lbs") for n in self.fused})
        self.has_spring = any(n.stage == "spring" for n in nodes)
        self.has_contact = any(n.stage == "contact" for n in nodes)  # the springs' contact term
        #: the morph node (graphs of meshes with morph targets, plan.with_morph) and its normals output
        self.morph = next((n for n in nodes if n.stage == "morph"), None)
        self.morph_normals: str | None = self.morph.outputs.get("normals") if self.morph is not None else None
        #: face / vertex normal stages read the NormalsHead / topology images
        self.normal_stages = any(n.stage in ("face_normals", "vertex_normals") for n in nodes)
        #: the static SSBOs some stage of the batch binds (the others are not created)
        self.static_names = [name for name in R.STATIC if any(name in gpu_stages.static_reads(n) for n in nodes)]
        self.skinned_targets = tuple(n.outputs["target"] for n in skins
                                     if n.stage == "skin" and n.options.get("normals") == "skinned")
        #: the assets need bind normals per display vertex (skinned normals, fused or not)
        self.bind_normals = bool(self.skinned_targets) or any("normals" in n.outputs for n in self.fused)
        self.any_given = False
        #: the per-frame pose of every instance and what the upload computes (only what some node reads)
        self.pose = PoseStack(PoseNeeds(
            differential=any(n.options.get("mode", "bind") == "differential" for n in skins),
            dual_quats="dqs" in methods,
            bones=bool(methods & {"rigid", "irs"}) or self.has_spring,
            irs="irs" in methods,
            joint_ssbo=any(n.stage == "skin" for n in nodes),  # the DeformJoint SSBO: unfused skin nodes
            fused_methods=tuple(self.fused_methods),
            warm=self.has_spring))

    # ---- named storage (the only place that knows the names) ------------------------------------------------
    def static_ssbo(self, name: str) -> moderngl.Buffer:
        """Static-pool SSBO ``name`` (records.STATIC)."""
        return self.buffers["s_" + name]

    def control(self, resource: str) -> tuple[moderngl.Buffer, bool]:
        """(buffer, indexed like the static pool) of a control-domain resource read (``@previous`` allowed)."""
        base = resource.removesuffix(PREVIOUS)
        if base == BIND:
            return self.static_ssbo("bind"), True
        return self.buffers["d_" + base], False

    def has_control(self, resource: str) -> bool:
        return "d_" + resource in self.buffers

    def control_resources(self) -> list[str]:
        return [k[2:] for k in self.buffers if k.startswith("d_")]

    def normal_mats(self, resource: str) -> moderngl.Buffer:
        """Normal transforms (3 vec4 columns per control point) the skin writes with ``resource``."""
        return self.buffers["n_" + resource]

    def display(self, resource: str) -> moderngl.Buffer:
        """Display- or face-pool buffer of a resource (``@previous`` allowed: the pools keep last values)."""
        return self.buffers["p_" + resource.removesuffix(PREVIOUS)]

    def face_image(self, resource: str) -> moderngl.Texture:
        """Image copy of a face-domain resource (what the vertex normal stage gathers from)."""
        return self.images["i_" + resource.removesuffix(PREVIOUS)]

    def skin_joint_images(self) -> dict[str, moderngl.Texture]:
        """Per fused method, the image of the batch's compact joint records (written per frame)."""
        return {m: self.images["skin_joints_" + m] for m in self.fused_methods}

    # ---- layout -----------------------------------------------------------------------------------------
    def _pack_static(self) -> dict[str, list[np.ndarray]]:
        """Assets in first-use order, their segment bases, and the rows of each static SSBO to concatenate."""
        self.assets = []
        for inst in self.instances:
            if all(a is not inst.asset for a in self.assets):
                self.assets.append(inst.asset)
        seg = {"control": 0, "adj": 0, "display": 0, "tri": 0, "nface": 0}
        packed: dict[str, list[np.ndarray]] = {k: [] for k in self.static_names}
        self.static_bases = {}
        for a in self.assets:
            self.static_bases[id(a)] = dict(seg)
            for name in self.static_names:
                packed[name].append(a.arrays[name])
            seg["control"] += a.topology.n_control
            seg["adj"] += a.arrays["sslots"].shape[0]  # CSR slots
            seg["display"] += a.topology.n_display
            seg["tri"] += a.n_tris
            seg["nface"] += a.arrays["nfaces"].shape[0]
        return packed

    def _place_instances(self) -> None:
        """Control pool: dense, re-packed; display / face pools: stable ranges, holes re-used."""
        g = j = b = 0
        for inst in self.instances:
            inst.group_base = g
            inst.n_groups = L.pad_groups(inst.asset.topology.n_control)
            inst.joint_base = j
            inst.bone_base = b
            g += inst.n_groups
            j += inst.asset.n_joints
            b += max(inst.asset.n_bones, 1)
        step = self.range_groups
        placed = [i for i in self.instances if i.laid_out]
        # first fit into holes left by removed instances, else past the last range
        free_d = RangeAllocator([(i.dgroup_base, i.n_dgroups) for i in placed], step)
        free_f = RangeAllocator([(i.fgroup_base, i.n_fgroups) for i in placed], 1)
        for inst in self.instances:
            if not inst.laid_out:
                inst.dgroup_base = free_d.take(inst.n_dgroups)
                inst.fgroup_base = free_f.take(inst.n_fgroups)
        dg = max((i.dgroup_base + i.n_dgroups for i in self.instances), default=0)
        fg = max((i.fgroup_base + i.n_fgroups for i in self.instances), default=0)
        self.total_groups, self.total_dgroups, self.total_fgroups = g, dg, fg
        self.n_joints, self.n_bones = j, b

    def layout(self) -> None:
        """Lay out the pools after instances were added or removed (set-up time); see the module doc."""
        res = self.resources
        old = self.buffers
        old_dyn = {id(i): i.dyn_base for i in self.instances if i.laid_out}
        old_joints = {id(i): i.joints for i in self.instances if i.laid_out}
        packed = self._pack_static()
        self._place_instances()
        g, dg, fg = self.total_groups, self.total_dgroups, self.total_fgroups
        n_dyn = g * LOCAL_SIZE
        new: dict[str, moderngl.Buffer] = {}

        def mk(name: str, data: np.ndarray | None = None, nbytes: int = 0) -> None:
            if data is not None and data.nbytes == 0:
                data, nbytes = None, 16
            new[name] = res.buffer(data, reserve=max(nbytes, 16) if data is None else 0,
                                   label=f"deform {self.config.name} {name}")

        for name in self.static_names:
            _, dt, width = R.STATIC[name]
            rows = [np.asarray(x, dt).reshape(-1, width) for x in packed[name]]
            arr = np.concatenate(rows) if rows else np.zeros((0, width), dt)
            mk("s_" + name, np.ascontiguousarray(arr))
        insts = self.instances
        mk("groups", R.group_table([i.group_base for i in insts], [i.n_groups for i in insts], g))
        mk("dgroups", R.group_table([i.dgroup_base for i in insts], [i.n_dgroups for i in insts], dg))
        mk("fgroups", R.group_table([i.fgroup_base for i in insts], [i.n_fgroups for i in insts], fg))
        mk("instances", R.instance_table(insts, self.static_bases))
        for r, dom in self.plan.domains.items():
            if dom == "control" and r != BIND and r not in self.plan.elided:
                mk("d_" + r, nbytes=n_dyn * 16)
            elif dom in ("display", "face"):
                need = (dg if dom == "display" else fg) * LOCAL_SIZE * 16
                buf = old.pop("p_" + r, None)  # kept: the renderer holds ranges of it
                if buf is None:
                    buf = res.buffer(reserve=max(need, 16), label=f"deform {self.config.name} p_{r}")
                elif buf.size < need:
                    self._grow(buf, max(need, 2 * buf.size))
                new["p_" + r] = buf
        for r in self.skinned_targets:
            mk("n_" + r, nbytes=n_dyn * 48)  # normal transform: 3 vec4 columns per control point
        if self.has_spring:
            mk("status", nbytes=max(1, len(self.instances)) * L.DEFORM_STATUS.size)
            # the dispatch index, its ticket, and one ticket per instance (spring_iterate.glsl)
            mk("spring_loop", np.zeros(2 + max(1, len(self.instances)), np.int32))
            mk("partials", nbytes=max(1, g) * 4)
            mk("edit", nbytes=n_dyn * R.EDIT_ROW_BYTES)
            mk("spring_vel", np.zeros((n_dyn, 4), np.float32))  # last frame's velocities (dependent mode)
            mk("volume", np.zeros((max(1, self.n_bones), 4), np.int32))  # volume sums per bone (spring.comp)
        if self.has_contact:
            for name, (data, nbytes) in gpu_stages.contact.pool_buffers(self.instances, n_dyn).items():
                mk(name, data, nbytes)
        if self.morph is not None:
            deltas, table = self._morph_tables()
            mk("morph_deltas", deltas)
            mk("morph_table", table)
            mk("morph_weights", self._morph_weights())
        mk("joints", nbytes=max(1, self.n_joints) * L.DEFORM_JOINT.size if self.pose.needs.joint_ssbo else 16)
        images = self._make_images(new, n_dyn)
        mk("bones", nbytes=max(1, self.n_bones) * L.DEFORM_BONE.size)
        if self.has_spring:  # last frame's bone records (the springs' warm start carries their motion)
            mk("bones_prev", nbytes=max(1, self.n_bones) * L.DEFORM_BONE.size)
        self._keep_feedback(new, old, old_dyn)
        self.pose.layout(self.instances, old_joints, self.n_joints, self.n_bones)
        for inst in self.instances:
            inst.laid_out = True
        for buf in old.values():
            res.release(buf)
        for tex in self.images.values():
            res.release(tex)
        self.buffers = new
        self.images = images
        self.any_given = any(inst.given for inst in self.instances)
        if self.has_spring:
            self.write_instance_table()  # fills the spring stage's instance image
            self.write_edits()

    def _static_image(self, images: dict[str, moderngl.Texture], name: str, rec: Std430Struct) -> None:
        rows = [a.arrays[name] for a in self.assets]
        images[name] = make_image(self.resources, np.concatenate(rows) if rows else rec.zeros(0),
                                  f"deform {self.config.name} {name}")

    def _make_images(self, new: dict[str, moderngl.Buffer], n_dyn: int) -> dict[str, moderngl.Texture]:
        """The batch's images for the new layout: static records, heads, per-frame and GPU-only state."""
        res = self.resources
        label = f"deform {self.config.name}"
        dg, fg, g = self.total_dgroups, self.total_fgroups, self.total_groups
        images: dict[str, moderngl.Texture] = {}
        if self.fused:
            for name, rec in R.STATIC_IMAGES.items():
                self._static_image(images, name, rec)
            images["dheads"] = make_image(res, R.display_heads(self.instances, self.static_bases, dg),
                                          f"{label} dheads")
            for m in self.fused_methods:  # contents written by the pose upload
                images["skin_joints_" + m] = make_image(res, L.SKIN_JOINTS[m].zeros(self.n_joints),
                                                        f"{label} skin_joints_{m}")
        if self.has_spring:
            for name, (rec, _) in R.SPRING_IMAGES.items():
                self._static_image(images, name, rec)
            images["sheads"] = make_image(res, R.spring_heads(self.instances, self.static_bases, g),
                                          f"{label} sheads")
            images["sinstances"] = make_image(res, L.SPRING_INSTANCE.zeros(max(1, len(self.instances))),
                                              f"{label} sinstances")  # contents: write_instance_table
            # spring state (x, v) per control point: a ring of three images stacked in one (x_0 in the third,
            # see stages.spring), and the frame's attachments; written by the GPU only
            images["spring_ring"] = make_image(res, L.SPRING_STATE.zeros(n_dyn), f"{label} spring_ring", copies=3)
            images["spring_frame"] = make_image(res, L.SPRING_FRAME.zeros(n_dyn), f"{label} spring_frame")
        if self.normal_stages:
            for name, rec in R.NORMAL_IMAGES.items():
                self._static_image(images, name, rec)
            images["fheads"] = make_image(res, R.normals_heads(self.instances, self.static_bases, fg, faces=True),
                                          f"{label} fheads")
            images["vheads"] = make_image(res, R.normals_heads(self.instances, self.static_bases, dg, faces=False),
                                          f"{label} vheads")
            # face-domain resources also as images (face normals write both; vertex normals gather from the
            # image, the SSBO stays the resource's value for read-back)
            for r, dom in self.plan.domains.items():
                if dom == "face":
                    images["i_" + r] = make_image(res, L.NORMAL_FACE.zeros(fg * LOCAL_SIZE), f"{label} i_{r}")
                    if r in self.plan.feedback:  # read at @previous: the new image starts as the kept SSBO
                        self._fill_image(images["i_" + r], new["p_" + r])
        return images

    def _keep_feedback(self, new: dict[str, moderngl.Buffer], old: dict[str, moderngl.Buffer],
                       old_dyn: dict[int, int]) -> None:
        """Control feedback resources: old contents of surviving instances, bind positions for new ones (the
        display / face pools keep their contents in place)."""
        keep = ["d_" + r for r in self.plan.feedback if self.plan.domains[r] == "control"]
        keep += ["spring_vel"] if self.has_spring else []
        for name in keep:
            buf = new[name]
            for inst in self.instances:
                n = inst.asset.topology.n_control
                ob = old_dyn.get(id(inst))
                if ob is not None and name in old:
                    if n:
                        self.resources.ctx.copy_buffer(buf, old[name], size=n * 16, read_offset=ob * 16,
                                                       write_offset=inst.dyn_base * 16)
                elif name != "spring_vel":
                    buf.write(np.ascontiguousarray(inst.asset.arrays["bind"], np.float32).tobytes(),
                              offset=inst.dyn_base * 16)

    def _fill_image(self, tex: moderngl.Texture, buf: moderngl.Buffer) -> None:
        """Copy a pooled face SSBO into its rebuilt image copy (GPU side, through a pixel-unpack buffer): record i
        of the SSBO is texel i of the image in row order (layouts.image_rows), so whole bytes carry over;
        texels past the end of the SSBO stay zero."""
        res, ctx = self.resources, self.resources.ctx
        nbytes = tex.width * tex.height * 16
        tmp = res.buffer(reserve=nbytes, label="deform face image fill")
        tmp.clear()
        # the SSBO was last written by a shader (face normals): make those writes visible to the copies
        ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | moderngl.PIXEL_BUFFER_BARRIER_BIT)
        ctx.copy_buffer(tmp, buf, size=min(buf.size, nbytes))
        tex.write(tmp)
        res.release(tmp)

    def _grow(self, buf: moderngl.Buffer, nbytes: int) -> None:
        """Resize ``buf`` in place (same GL object: ranges the renderer holds stay valid), keeping its bytes."""
        res, ctx = self.resources, self.resources.ctx
        n_old = buf.size
        tmp = res.buffer(reserve=n_old, label="deform pool resize")
        ctx.copy_buffer(tmp, buf, size=n_old)
        buf.orphan(int(nbytes))
        ctx.copy_buffer(buf, tmp, size=n_old)
        res.release(tmp)

    def _morph_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """The morph stage's static rows (per asset: position deltas per control point, then normal deltas per
        display vertex, target-major, vec4) and its table (ivec4 per instance: first position row, target
        count, first weight, first normal row or -1); see shaders/deform/morph.comp."""
        rows: list[np.ndarray] = []
        base: dict[int, tuple[int, int]] = {}
        n = 0
        for a in self.assets:
            pos_base = nrm_base = -1
            if a.morph_positions is not None and a.n_targets:
                pos_base = n
                rows.append(L.vec4(a.morph_positions.reshape(-1, 3), 0.0))
                n += rows[-1].shape[0]
                if a.morph_normals is not None and self.morph_normals is not None:
                    nrm_base = n
                    rows.append(L.vec4(a.morph_normals.reshape(-1, 3), 0.0))
                    n += rows[-1].shape[0]
            base[id(a)] = (max(pos_base, 0), nrm_base)
        table = np.zeros((max(1, len(self.instances)), 4), np.int32)
        w = 0
        for k, inst in enumerate(self.instances):
            pb, nb = base[id(inst.asset)]
            table[k] = (pb, inst.asset.n_targets, w, nb)
            w += inst.asset.n_targets
        deltas = np.concatenate(rows) if rows else np.zeros((1, 4), np.float32)
        return np.ascontiguousarray(deltas, np.float32), table

    def _morph_weights(self) -> np.ndarray:
        """Every instance's morph weights, concatenated in instance order (the table's weight rows)."""
        parts = [inst.morph_weights if inst.morph_weights is not None else np.zeros(inst.asset.n_targets, np.float32)
                 for inst in self.instances]
        flat = np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)
        return flat if flat.size else np.zeros(1, np.float32)

    # ---- per-instance tables --------------------------------------------------------------------------------
    def write_instance_table(self) -> None:
        """Rewrite the DeformInstance table (and the spring stage's instance image) after a parameter change."""
        table = R.instance_table(self.instances, self.static_bases)
        self.buffers["instances"].write(table.tobytes())
        if "sinstances" in self.images:
            self.images["sinstances"].write(L.image_rows(R.spring_instances(table)).tobytes())
        if self.has_contact and self.instances:
            self.buffers["contact_params"].write(gpu_stages.contact.instance_params(self.instances).tobytes())

    def write_edits(self, inst: Instance | None = None) -> None:
        """Write the surface-edit rows of the control pool (springs only): every instance's (set-up: after a
        layout), or only ``inst``'s range (a character's edits changed, the layout did not: a crowd's other
        rows are not rewritten). The rows are read by the spring stage only; the instance table does not
        depend on them."""
        if not self.has_spring:
            return
        buf = self.buffers["edit"]
        if inst is None:
            buf.write(R.edit_rows(self.instances, self.total_groups * LOCAL_SIZE).tobytes())
        elif inst.laid_out and inst.asset.topology.n_control:
            buf.write(R.instance_edit_rows(inst).tobytes(), offset=inst.dyn_base * R.EDIT_ROW_BYTES)

    # ---- per frame --------------------------------------------------------------------------------------
    def upload_pose(self) -> None:
        """Pack and write this frame's joint / bone records of every instance (see engine.skinning.gpu.pose), and
        their morph weights (batches with a morph node: a few floats per instance)."""
        self.pose.upload(self.buffers["joints"], self.buffers["bones"], self.skin_joint_images())
        if self.morph is not None:
            self.buffers["morph_weights"].write(self._morph_weights().tobytes())

    def end_frame(self) -> None:
        """Copy the outputs into caller-given buffers; remember this frame's pose (differential mode)."""
        if self.any_given:
            ctx = self.resources.ctx
            ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT)
            for inst in self.instances:
                nd = inst.asset.topology.n_display
                for r, buf in inst.given.items():
                    ctx.copy_buffer(buf, self.display(r), size=16 * nd, read_offset=16 * inst.display_base)
        self.pose.end_frame()
        self.frame += 1

    def release(self) -> None:
        """Release every buffer and image of the batch."""
        for obj in list(self.buffers.values()) + list(self.images.values()):
            self.resources.release(obj)
        self.buffers = {}
        self.images = {}
