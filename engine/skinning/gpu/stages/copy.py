"""Copy stage (control -> display domain): each display vertex takes its control point's position (and, with
skinned normals, its bind normal under the control point's normal transform), one dispatch over the display
pool. Reference: engine.skinning.meshprep (copy_to_display).
"""
from __future__ import annotations

from dataclasses import dataclass

import moderngl

from engine.skinning.gpu.stages.base import PooledSourceContext, bind_all, set_uniform


@dataclass(frozen=True)
class SkinnedNormals:
    """The normal inputs and output of a copy that transforms bind normals."""

    normal_mats: moderngl.Buffer          # 3x3 normal transform per control point (the skin stage's)
    bind_normals: moderngl.Buffer         # bind normal per display vertex (static pool, or morphed: pooled)
    target: moderngl.Buffer               # display normals
    pooled: bool = False                  # bind_normals is indexed like the display pool (the morph stage's)


@dataclass(frozen=True)
class CopyContext(PooledSourceContext):
    """What one copy dispatch needs (over the display pool)."""

    map: moderngl.Buffer                  # display vertex -> control point (static pool)
    target: moderngl.Buffer               # display positions
    normals: SkinnedNormals | None
    n_groups: int                         # display work groups


def run(c: CopyContext) -> None:
    """One dispatch over the display pool."""
    cs = c.program("copy", {"SKINNED_NORMALS": int(c.normals is not None)})
    bind_all(((c.instances, "B_INSTANCES"), (c.groups, "B_GROUPS"), (c.source, "B_SRC"), (c.map, "B_MAP"),
              (c.target, "B_DST")))
    if c.normals is not None:
        bind_all(((c.normals.normal_mats, "B_NMAT"), (c.normals.bind_normals, "B_BIND_NORMALS"),
                  (c.normals.target, "B_DST_NORMALS")))
    set_uniform(cs, "u_source_static", int(c.source_static))
    if c.normals is not None:
        set_uniform(cs, "u_normals_pooled", int(c.normals.pooled))
    cs.run(c.n_groups)
