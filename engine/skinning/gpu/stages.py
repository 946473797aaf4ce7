"""Dispatch code of each deformer-graph stage (what one node of a plan does on the GPU).

Control-domain stages (skin, spring) run once per batch over the pooled buffers: one dispatch per stage, and
per spring iteration one indirect dispatch plus the one-work-group convergence check. Display- and face-domain
stages (copy, face normals, vertex normals) also run once per batch, over the display / face pools (each
instance's range padded to whole work groups; their own group -> instance tables bound at B_GROUPS). Binding
points come from :data:`engine.skinning.gpu.layouts.BINDINGS` (one table shared with the shaders through defines).

Spring state (SpringState images, gpu_layouts "spring stage images"): ``spring_s0`` holds the initial state
x_0 (skinned positions, initial velocities); dispatch n reads x_n (S0 for n = 0, else ring[(n - 1) % 3]) and
writes x_{n+1} to ring[n % 3]. Three ring images keep x_{n-1} intact while dispatch n runs, so the energy scheme
can still reject the last step. ``resolve`` copies
each instance's accepted state (by its GPU-side iteration count) into the stage's target.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import moderngl

from engine.skinning.gpu import layouts as L
from engine.skinning.gpu.plan import (
    BIND,
    COMMAND_BARRIER_BIT,
    PREVIOUS,
    SHADER_IMAGE_ACCESS_BARRIER_BIT,
    SHADER_STORAGE_BARRIER_BIT,
    NodeConfig,
)

if TYPE_CHECKING:
    from engine.skinning.gpu.graph import DeformerGraph, _Batch

_DEFINES_CACHE: dict[tuple, dict[str, object]] = {}


def program(graph: "DeformerGraph", name: str, extra: dict[str, object] | None = None) -> moderngl.ComputeShader:
    """Compute shader ``shaders/deform/<name>.comp`` with the bindings/constants it mentions plus ``extra``."""
    path = f"deform/{name}.comp"
    key = (id(graph.programs), path, tuple(sorted((extra or {}).items())))
    defines = _DEFINES_CACHE.get(key)
    if defines is None:
        text = graph.programs.library.load(path, dict(extra or {}), strict=False).text
        defines = L.defines_for(text, extra)
        _DEFINES_CACHE[key] = defines
    return graph.programs.get_compute(path, defines)


def _set(cs: moderngl.ComputeShader, name: str, value: Any) -> None:
    u = cs.get(name, None)
    if u is not None:  # a uniform the compiler optimised away needs no value
        u.value = value


def _bind(buf: moderngl.Buffer, point: str) -> None:
    buf.bind_to_storage_buffer(L.BINDINGS[point])


def _control(batch: "_Batch", resource: str) -> tuple[moderngl.Buffer, bool]:
    """(buffer, indexed like the static pool) of a control-domain resource read."""
    base = resource.removesuffix(PREVIOUS)
    if base == BIND:
        return batch.buffers["s_bind"], True
    return batch.buffers["d_" + base], False


def _bind_image(batch: "_Batch", name: str, unit: str, *, read: bool = True, write: bool = False) -> None:
    batch.images[name].bind_to_image(L.IMAGE_BINDINGS[unit], read=read, write=write)


#: static-pool SSBOs (graph.py ``s_<name>``, one segment per asset) each stage's dispatch binds, with their binding
#: points: the batch creates only those its stages read (the spring iteration, skin_copy and the normal stages read
#: their static inputs from images, see gpu_layouts). The skin binds those of its method (SKIN_METHOD_READS; the
#: shader declares no other), the copy ``bind_normals`` only when it has a normals output, and a skin or copy whose
#: source is the bind pose also reads ``bind`` (:func:`static_reads`).
STATIC_READS: dict[str, tuple[tuple[str, str], ...]] = {
    "skin": (("joint_ids", "B_JOINT_IDS"), ("weights", "B_WEIGHTS"), ("attach", "B_ATTACH"),
             ("scale", "B_SCALE"), ("bone_of", "B_BONE_OF"), ("irs", "B_IRS")),
    "spring": (("attach", "B_ATTACH"), ("bone_of", "B_BONE_OF"), ("vstatic", "B_VSTATIC")),
    "copy": (("map", "B_MAP"), ("bind_normals", "B_BIND_NORMALS")),
}
SKIN_METHOD_READS: dict[str, frozenset[str]] = {
    "lbs": frozenset({"joint_ids", "weights"}),
    "dqs": frozenset({"joint_ids", "weights"}),
    "rigid": frozenset({"attach", "scale", "bone_of"}),
    "irs": frozenset({"attach", "scale", "bone_of", "irs"}),
}


def _skin_reads(method: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, point) for name, point in STATIC_READS["skin"] if name in SKIN_METHOD_READS[method])


def static_reads(node: NodeConfig) -> set[str]:
    """Names of the static-pool SSBOs the node's dispatch binds (what a batch of such nodes must create)."""
    if node.stage == "skin":
        out = {name for name, _ in _skin_reads(node.options.get("method", "lbs"))}
    else:
        out = {name for name, _ in STATIC_READS.get(node.stage, ())}
    if node.stage in ("skin", "copy") and node.inputs["source"].removesuffix(PREVIOUS) == BIND:
        out.add("bind")  # _control: the bind pose is read from the static pool
    return out


def _bind_common(batch: "_Batch") -> None:
    _bind(batch.buffers["instances"], "B_INSTANCES")
    _bind(batch.buffers["groups"], "B_GROUPS")


def run_node(graph: "DeformerGraph", batch: "_Batch", node: NodeConfig) -> None:
    {"skin": run_skin, "spring": run_spring, "copy": run_copy, "face_normals": run_face_normals,
     "vertex_normals": run_vertex_normals, "skin_copy": run_skin_copy}[node.stage](graph, batch, node)


# ---- control-domain stages (batched) ---------------------------------------------------------------------
def run_skin(graph: "DeformerGraph", batch: "_Batch", node: NodeConfig) -> None:
    o = node.options
    method = o.get("method", "lbs")
    cs = program(graph, "skin", {
        "METHOD": L.METHOD_IDS[method],
        "SKIN_DIFFERENTIAL": int(o.get("mode", "bind") == "differential"),
        "IRS_BLEND_MATRIX": int(o.get("blend", "nlerp") == "matrix"),
        "IRS_LENGTH_CORRECTION": int(bool(o.get("length_correction", False))),
        "SKIN_NORMALS": int(o.get("normals", "surface") == "skinned"),
    })
    b = batch.buffers
    src, static = _control(batch, node.inputs["source"])
    _bind_common(batch)
    _bind(src, "B_SRC")
    _bind(b["d_" + node.outputs["target"]], "B_DST")
    _bind(b["joints"], "B_JOINTS")
    _bind(b["bones"], "B_BONES")
    for name, point in _skin_reads(method):
        _bind(b["s_" + name], point)
    if o.get("normals", "surface") == "skinned":
        _bind(b["n_" + node.outputs["target"]], "B_NMAT")
    _set(cs, "u_source_static", int(static))
    cs.run(batch.total_groups)


def spring_dispatches(batch: "_Batch") -> int:
    """Spring dispatches per frame: the largest iteration cap (+1 evaluation dispatch for the energy scheme)."""
    n = 0
    for inst in batch.instances:
        p = inst.params
        n = max(n, int(p.max_iterations) + (1 if p.convergence == "energy" else 0))
    return n


def run_spring(graph: "DeformerGraph", batch: "_Batch", node: NodeConfig) -> None:
    b = batch.buffers
    ctx = graph.ctx
    src, static = _control(batch, node.inputs["source"])
    if static:
        raise ValueError(f"spring node {node.name!r} reads {node.inputs['source']!r}; it needs a skinned "
                         "control resource (put a skin node before it)")
    target = b["d_" + node.outputs["target"]]
    check_every = int(node.options.get("check_every", 1))
    n_inst = len(batch.instances)
    _bind_common(batch)
    # 1. per-frame set-up: posed attachments, bone references, x_0
    frame_cs = program(graph, "spring_frame")
    _bind(b["bones"], "B_BONES")
    _bind(b["spring_vel"], "B_VEL")
    for name, point in STATIC_READS["spring"]:
        _bind(b["s_" + name], point)
    _bind_image(batch, "spring_frame", "I_SPRING_FRAME", read=False, write=True)
    _bind_image(batch, "spring_s0", "I_SPRING_DST", read=False, write=True)
    _bind(src, "B_SKINNED")
    frame_cs.run(batch.total_groups)
    # 2. reset the convergence state; every work group active
    conv = program(graph, "converge")
    for name, point in (("status", "B_STATUS"), ("partials", "B_PARTIALS"), ("active", "B_ACTIVE"),
                        ("indirect", "B_INDIRECT")):
        _bind(b[name], point)
    _set(conv, "u_n_instances", n_inst)
    _set(conv, "u_n_groups", batch.total_groups)
    _set(conv, "u_mode", 0)
    _set(conv, "u_done", 0)
    conv.run(1)
    ctx.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT | COMMAND_BARRIER_BIT)
    # 3. iterations: indirect dispatches (zero groups once every instance stopped), checks every k
    spring = program(graph, "spring")
    _bind(b["edit"], "B_EDIT")
    for name, unit in (("sheads", "I_SPRING_HEADS"), ("sinstances", "I_SPRING_INSTANCES"),
                       ("spoints", "I_SPRING_POINTS"), ("sslots", "I_SPRING_SLOTS"),
                       ("spring_frame", "I_SPRING_FRAME")):
        _bind_image(batch, name, unit)
    ring = ("spring_r0", "spring_r1", "spring_r2")
    n_total = spring_dispatches(batch)
    _set(conv, "u_mode", 1)
    for n in range(n_total):
        _bind_image(batch, "spring_s0" if n == 0 else ring[(n - 1) % 3], "I_SPRING_SRC")
        _bind_image(batch, ring[n % 3], "I_SPRING_DST", read=False, write=True)
        last = n == n_total - 1
        check = (n + 1) % check_every == 0 or last
        _set(spring, "u_iteration", n)
        _set(spring, "u_record", int(check))
        spring.run_indirect(b["indirect"])
        if check:
            ctx.memory_barrier(SHADER_STORAGE_BARRIER_BIT)
            _set(conv, "u_done", n + 1)
            conv.run(1)
            ctx.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT | COMMAND_BARRIER_BIT)
        else:
            ctx.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT)
    batch.iterations_run = n_total
    # 4. resolve: the accepted state of each instance -> target (+ velocities for the next frame)
    res = program(graph, "resolve")
    _bind_image(batch, "spring_s0", "I_SPRING_SRC")
    for name, unit in zip(ring, ("I_SPRING_RING0", "I_SPRING_RING1", "I_SPRING_RING2")):
        _bind_image(batch, name, unit)
    _bind(target, "B_DST")
    _bind(b["spring_vel"], "B_VEL")
    res.run(batch.total_groups)


# ---- display-domain stages (batched over the display / face pools) -----------------------------------------
def _display(batch: "_Batch", resource: str) -> moderngl.Buffer:
    return batch.buffers["p_" + resource.removesuffix(PREVIOUS)]


def run_copy(graph: "DeformerGraph", batch: "_Batch", node: NodeConfig) -> None:
    normals = node.outputs.get("normals")
    cs = program(graph, "copy", {"SKINNED_NORMALS": int(normals is not None)})
    b = batch.buffers
    src, static = _control(batch, node.inputs["source"])
    _bind(b["instances"], "B_INSTANCES")
    _bind(b["dgroups"], "B_GROUPS")
    _bind(src, "B_SRC")
    (map_name, map_point), (bn_name, bn_point) = STATIC_READS["copy"]
    _bind(b["s_" + map_name], map_point)
    _bind(_display(batch, node.outputs["target"]), "B_DST")
    if normals is not None:
        _bind(b["n_" + node.inputs["source"]], "B_NMAT")
        _bind(b["s_" + bn_name], bn_point)
        _bind(_display(batch, normals), "B_DST_NORMALS")
    _set(cs, "u_source_static", int(static))
    cs.run(batch.total_dgroups)


def run_skin_copy(graph: "DeformerGraph", batch: "_Batch", node: NodeConfig) -> None:
    """The fused skin + copy (gpu_plan fusion): one dispatch over the display pool, reading the batch's
    skin_copy images (SkinVertex, SkinHead, joint records of the node's method)."""
    method = node.options.get("method", "lbs")
    normals = node.outputs.get("normals")
    cs = program(graph, "skin_copy", {"METHOD": L.METHOD_IDS[method], "SKINNED_NORMALS": int(normals is not None)})
    img = batch.images
    for name, unit in (("dskin", "I_SKIN_VERTS"), ("skin_joints_" + method, "I_SKIN_JOINTS"),
                       ("dheads", "I_SKIN_HEADS")):
        img[name].bind_to_image(L.IMAGE_BINDINGS[unit], read=True, write=False)
    _bind(_display(batch, node.outputs["target"]), "B_DST")
    if normals is not None:
        _bind(_display(batch, normals), "B_DST_NORMALS")
    cs.run(batch.total_dgroups)


def run_face_normals(graph: "DeformerGraph", batch: "_Batch", node: NodeConfig) -> None:
    cs = program(graph, "face_normals")
    _bind_image(batch, "fheads", "I_NORMALS_HEADS")
    _bind_image(batch, "ntris", "I_NORMAL_TRIS")
    _bind_image(batch, "i_" + node.outputs["target"].removesuffix(PREVIOUS), "I_FACE_IMAGE", read=False, write=True)
    _bind(_display(batch, node.inputs["positions"]), "B_SRC")
    _bind(_display(batch, node.outputs["target"]), "B_FACES")
    cs.run(batch.total_fgroups)


def run_vertex_normals(graph: "DeformerGraph", batch: "_Batch", node: NodeConfig) -> None:
    cs = program(graph, "vertex_normals")
    for name, unit in (("vheads", "I_NORMALS_HEADS"), ("nverts", "I_NORMAL_VERTS"), ("nfaces", "I_NORMAL_FACES")):
        _bind_image(batch, name, unit)
    _bind_image(batch, "i_" + node.inputs["faces"].removesuffix(PREVIOUS), "I_FACE_IMAGE")
    _bind(_display(batch, node.outputs["target"]), "B_DST")
    crease = node.options.get("crease_angle")
    cos_crease = -4.0 if crease is None else math.cos(float(crease)) - 1e-9
    _set(cs, "u_cos_crease", cos_crease)
    cs.run(batch.total_dgroups)
