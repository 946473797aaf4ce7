"""The deformer graph's stages: one module per stage, each a typed context and a ``run`` over it.

* :mod:`.morph` (morph targets before skinning, only in the graphs of meshes that have them),
  :mod:`.skin` (control domain: LBS / DQS / rigid / IRS), :mod:`.skin_copy` (the fused skin + copy over the
  display pool), :mod:`.spring` (frame / reset / iterations / resolve), :mod:`.contact` (the springs'
  optional contact term: hashed grid + Jacobi passes), :mod:`.copy` (control -> display),
  :mod:`.face_normals` (face domain), :mod:`.vertex_normals` (display domain);
* each runs once per batch over pooled buffers (one dispatch per stage; per spring iteration one dispatch
  whose last work group checks convergence); each instance's range is padded to whole work groups
  and group -> instance tables name the instance of every work group;
* a stage receives a context dataclass of its module naming the buffers, images, program source and counts it
  needs (built from a batch's pools by :mod:`engine.skinning.gpu.contexts`); no stage knows the pools.

This module also holds what the pools must know about the stages without running them: which static-pool
SSBOs each stage binds (:data:`STATIC_READS`, :func:`static_reads`), and :func:`program`, the compute shaders
with the defines their source mentions.
"""
from __future__ import annotations

import moderngl

from engine.gpu.shaderlib import ProgramCache
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu.plan import BIND, PREVIOUS, NodeConfig
from engine.skinning.gpu.stages import contact, copy, face_normals, morph, skin, skin_copy, spring, vertex_normals
from engine.skinning.gpu.stages.base import ProgramSource, StageContext
from engine.skinning.gpu.stages.contact import ContactBuffers, ContactContext
from engine.skinning.gpu.stages.copy import CopyContext, SkinnedNormals
from engine.skinning.gpu.stages.face_normals import FaceNormalsContext
from engine.skinning.gpu.stages.morph import MorphContext, MorphNormals
from engine.skinning.gpu.stages.skin import SkinContext
from engine.skinning.gpu.stages.skin_copy import SkinCopyContext
from engine.skinning.gpu.stages.spring import SpringBuffers, SpringContext, SpringImages
from engine.skinning.gpu.stages.vertex_normals import VertexNormalsContext

__all__ = ["program", "run", "static_reads", "skin_reads", "STATIC_READS", "SKIN_METHOD_READS", "StageContext",
           "ProgramSource", "SkinContext", "SkinCopyContext", "SpringContext", "SpringBuffers", "SpringImages",
           "CopyContext", "SkinnedNormals", "FaceNormalsContext", "VertexNormalsContext", "ContactContext",
           "ContactBuffers", "MorphContext", "MorphNormals"]

_DEFINES_CACHE: dict[tuple, dict[str, object]] = {}


def program(programs: ProgramCache, name: str, extra: dict[str, object] | None = None) -> moderngl.ComputeShader:
    """Compute shader ``shaders/deform/<name>.comp`` with the bindings/constants it mentions plus ``extra``."""
    path = f"deform/{name}.comp"
    key = (id(programs), path, tuple(sorted((extra or {}).items())))
    defines = _DEFINES_CACHE.get(key)
    if defines is None:
        text = programs.library.load(path, dict(extra or {}), strict=False).text
        defines = L.defines_for(text, extra)
        _DEFINES_CACHE[key] = defines
    return programs.get_compute(path, defines)


#: static-pool SSBOs (one segment per asset) each stage's dispatch binds, with their binding points: a batch
#: creates only those its stages read (the spring iteration, skin_copy and the normal stages read their static
#: inputs from images, see layouts). The skin binds those of its method (SKIN_METHOD_READS; the shader declares
#: no other), the copy ``bind_normals`` only when it has a normals output, and a skin or copy whose source is
#: the bind pose also reads ``bind`` (:func:`static_reads`).
STATIC_READS: dict[str, tuple[tuple[str, str], ...]] = {
    "skin": (("joint_ids", "B_JOINT_IDS"), ("weights", "B_WEIGHTS"), ("attach", "B_ATTACH"),
             ("scale", "B_SCALE"), ("bone_of", "B_BONE_OF"), ("irs", "B_IRS")),
    "spring": spring.STATIC_READS,
    "copy": (("map", "B_MAP"), ("bind_normals", "B_BIND_NORMALS")),
    "contact": contact.STATIC_READS,
    "morph": (("bind", "B_SRC"),),
}
SKIN_METHOD_READS: dict[str, frozenset[str]] = {
    "lbs": frozenset({"joint_ids", "weights"}),
    "dqs": frozenset({"joint_ids", "weights"}),
    "rigid": frozenset({"attach", "scale", "bone_of"}),
    "irs": frozenset({"attach", "scale", "bone_of", "irs"}),
}


def skin_reads(method: str) -> tuple[tuple[str, str], ...]:
    """(static SSBO name, binding point) pairs a skin node of ``method`` binds."""
    return tuple((name, point) for name, point in STATIC_READS["skin"] if name in SKIN_METHOD_READS[method])


def static_reads(node: NodeConfig) -> set[str]:
    """Names of the static-pool SSBOs the node's dispatch binds (what a batch of such nodes must create)."""
    if node.stage == "skin":
        out = {name for name, _ in skin_reads(node.options.get("method", "lbs"))}
    else:
        out = {name for name, _ in STATIC_READS.get(node.stage, ())}
    if node.stage in ("skin", "copy") and node.inputs["source"].removesuffix(PREVIOUS) == BIND:
        out.add("bind")  # the bind pose is read from the static pool
    return out


_RUN = {SkinContext: skin.run, SkinCopyContext: skin_copy.run, SpringContext: spring.run, CopyContext: copy.run,
        FaceNormalsContext: face_normals.run, VertexNormalsContext: vertex_normals.run, ContactContext: contact.run,
        MorphContext: morph.run}


def run(context: StageContext) -> None:
    """Run the stage the context is for."""
    _RUN[type(context)](context)  # type: ignore[operator]
