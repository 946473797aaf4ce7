"""From a batch's pools to the typed context of one plan node (what :func:`engine.skinning.gpu.stages.run` takes).

Each builder names, for its stage, the buffers and images of the batch the node's ports and the stage's fixed
inputs resolve to (resource names of the plan, the static SSBOs of :data:`engine.skinning.gpu.stages.STATIC_READS`),
the program source and the work-group counts. Contexts are built per frame (cheap: no GL calls), so parameter
changes (spring iteration caps) and re-layouts need no invalidation.
"""
from __future__ import annotations

from collections.abc import Callable

import moderngl

from engine.gpu.layouts import LOCAL_SIZE
from engine.skinning.gpu import records as R
from engine.skinning.gpu import stages as S
from engine.skinning.gpu.plan import NodeConfig
from engine.skinning.gpu.pools import Batch
from engine.skinning.gpu.stages import contact as contact_stage
from engine.skinning.gpu.stages import spring as spring_stage
from engine.skinning.springs.rest import volume_acts


def _static(batch: Batch, pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[moderngl.Buffer, str], ...]:
    return tuple((batch.static_ssbo(name), point) for name, point in pairs)


def _skin(batch: Batch, node: NodeConfig, program: S.ProgramSource, gl: moderngl.Context) -> S.SkinContext:
    src, static = batch.control(node.inputs["source"])
    target = node.outputs["target"]
    skinned = node.options.get("normals", "surface") == "skinned"
    return S.SkinContext(
        node=node, program=program, instances=batch.buffers["instances"], groups=batch.buffers["groups"],
        source=src, source_static=static, target=batch.control(target)[0], joints=batch.buffers["joints"],
        bones=batch.buffers["bones"], static=_static(batch, S.skin_reads(node.options.get("method", "lbs"))),
        normal_mats=batch.normal_mats(target) if skinned else None, n_groups=batch.total_groups,
        influence_sets=batch.influence_sets)


def _skin_copy(batch: Batch, node: NodeConfig, program: S.ProgramSource, gl: moderngl.Context
               ) -> S.SkinCopyContext:
    method = node.options.get("method", "lbs")
    normals = node.outputs.get("normals")
    return S.SkinCopyContext(
        node=node, program=program, vertices=batch.images["dskin"], joints=batch.skin_joint_images()[method],
        heads=batch.images["dheads"], target=batch.display(node.outputs["target"]),
        normals=batch.display(normals) if normals is not None else None, n_groups=batch.total_dgroups)


def _spring(batch: Batch, node: NodeConfig, program: S.ProgramSource, gl: moderngl.Context) -> S.SpringContext:
    src, static = batch.control(node.inputs["source"])
    if static:
        raise ValueError(f"spring node {node.name!r} reads {node.inputs['source']!r}; it needs a skinned "
                         "control resource (put a skin node before it)")
    b, im = batch.buffers, batch.images
    return S.SpringContext(
        node=node, program=program, gl=gl, instances=b["instances"], groups=b["groups"], source=src,
        target=batch.control(node.outputs["target"])[0], bones=b["bones"], bones_prev=b["bones_prev"],
        warm=batch.pose.warm_prev is not None,  # some instance wants the warm start: keep this frame's bones
        static=_static(batch, spring_stage.STATIC_READS),
        buffers=S.SpringBuffers(status=b["status"], partials=b["partials"], loop=b["spring_loop"],
                                edit=b["edit"], velocities=b["spring_vel"],
                                volume=b["volume"]),
        images=S.SpringImages(heads=im["sheads"], instances=im["sinstances"], points=im["spoints"],
                              slots=im["sslots"], frame=im["spring_frame"],
                              ring=im["spring_ring"]),
        n_instances=len(batch.instances), n_groups=batch.total_groups,
        dispatches=spring_stage.dispatch_count(i.params for i in batch.instances),
        tiled_ok=not any(i.params.convergence in spring_stage.ONE_PER_DISPATCH for i in batch.instances),
        volume=R.volume_rows(batch.instances, batch.n_bones)
        if any(volume_acts(i.params) for i in batch.instances) else None)


def _copy(batch: Batch, node: NodeConfig, program: S.ProgramSource, gl: moderngl.Context) -> S.CopyContext:
    src, static = batch.control(node.inputs["source"])
    normals = node.outputs.get("normals")
    skinned = None
    if normals is not None:
        # a morphed mesh's copy transforms the morph stage's bind normals (display pool) instead of the static ones
        morphed = batch.morph_normals
        bind_normals = batch.display(morphed) if morphed else batch.static_ssbo("bind_normals")
        skinned = S.SkinnedNormals(normal_mats=batch.normal_mats(node.inputs["source"]), bind_normals=bind_normals,
                                   target=batch.display(normals), pooled=morphed is not None)
    return S.CopyContext(
        node=node, program=program, instances=batch.buffers["instances"], groups=batch.buffers["dgroups"],
        source=src, source_static=static, map=batch.static_ssbo("map"), target=batch.display(node.outputs["target"]),
        normals=skinned, n_groups=batch.total_dgroups)


def _face_normals(batch: Batch, node: NodeConfig, program: S.ProgramSource, gl: moderngl.Context
                  ) -> S.FaceNormalsContext:
    target = node.outputs["target"]
    return S.FaceNormalsContext(
        node=node, program=program, heads=batch.images["fheads"], triangles=batch.images["ntris"],
        positions=batch.display(node.inputs["positions"]), target=batch.display(target),
        target_image=batch.face_image(target), n_groups=batch.total_fgroups)


def _vertex_normals(batch: Batch, node: NodeConfig, program: S.ProgramSource, gl: moderngl.Context
                    ) -> S.VertexNormalsContext:
    return S.VertexNormalsContext(
        node=node, program=program, heads=batch.images["vheads"], vertices=batch.images["nverts"],
        faces=batch.images["nfaces"], face_image=batch.face_image(node.inputs["faces"]),
        target=batch.display(node.outputs["target"]), n_groups=batch.total_dgroups)


def _contact(batch: Batch, node: NodeConfig, program: S.ProgramSource, gl: moderngl.Context) -> S.ContactContext:
    src, static = batch.control(node.inputs["source"])
    if static:
        raise ValueError(f"contact node {node.name!r} reads {node.inputs['source']!r}; it needs the spring "
                         "stage's result (put it after a spring node)")
    b = batch.buffers
    return S.ContactContext(
        node=node, program=program, gl=gl, instances=b["instances"], groups=b["groups"], source=src,
        target=batch.control(node.outputs["target"])[0], bind=batch.static_ssbo("bind"),
        frame=batch.images["spring_frame"], points=batch.images["spoints"], slots=batch.images["sslots"],
        buffers=S.ContactBuffers(params=b["contact_params"], grid=b["contact_grid"], entries=b["contact_entries"],
                                 scratch=b["contact_tmp"], push=b["contact_push"], indirect=b["contact_indirect"]),
        table=contact_stage.table_size(batch.total_groups * LOCAL_SIZE), n_instances=len(batch.instances),
        n_groups=batch.total_groups,
        passes=contact_stage.pass_count(i.params for i in batch.instances))


def _morph(batch: Batch, node: NodeConfig, program: S.ProgramSource, gl: moderngl.Context) -> S.MorphContext:
    b = batch.buffers
    normals = node.outputs.get("normals")
    return S.MorphContext(
        node=node, program=program, instances=b["instances"], groups=b["groups"], bind=batch.static_ssbo("bind"),
        target=batch.control(node.outputs["target"])[0], deltas=b["morph_deltas"], table=b["morph_table"],
        weights=b["morph_weights"],
        normals=S.MorphNormals(bind_normals=batch.static_ssbo("bind_normals"), groups=b["dgroups"],
                               target=batch.display(normals), n_groups=batch.total_dgroups)
        if normals is not None else None,
        n_groups=batch.total_groups)


_BUILDERS: dict[str, Callable[[Batch, NodeConfig, S.ProgramSource, moderngl.Context], S.StageContext]] = {
    "skin": _skin, "skin_copy": _skin_copy, "spring": _spring, "copy": _copy, "face_normals": _face_normals,
    "vertex_normals": _vertex_normals, "contact": _contact, "morph": _morph}


def stage_context(batch: Batch, node: NodeConfig, program: S.ProgramSource, gl: moderngl.Context
                  ) -> S.StageContext:
    """The typed context of ``node`` (a step of ``batch.plan``) over the batch's current pools."""
    return _BUILDERS[node.stage](batch, node, program, gl)
