"""Contact stage (control domain): the spring deformer's optional contact term over every control point of a
batch (reference: engine.skinning.contact; switched on by ``[spring] contact = true``, which puts a contact node
after the spring node of the built-in spring graphs).

Per frame, ``passes`` Jacobi passes (the largest ``contact_passes`` of the batch's instances; an instance past
its own count copies through). Each pass, over the pooled control points:

1. **grid** (``contact_grid.comp``): clear the bucket counts, count the points per hashed cell (cell = the
   instance's search radius), one-work-group exclusive scan into bucket starts, scatter the point indices;
2. **resolve** (``contact.comp``): every point sums the pushes of the facing pairs it forms with the points of
   the 27 cells around its own and writes its new position.

Positions ping-pong between the target and a scratch buffer so that the last pass writes the target; the
first reads the source. The posed attachments come from the spring stage's frame image (this frame's), the
bind positions from the static pool. Per-instance lengths (mean bind edge length, thickness, reach, lateral
offset, exclusion) are two vec4 per instance (:func:`instance_params`), written at layout and on
``set_spring``.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import moderngl
import numpy as np

from engine.gpu.layouts import LOCAL_SIZE
from engine.skinning.contact import contact_rest
from engine.skinning.gpu.plan import SHADER_IMAGE_ACCESS_BARRIER_BIT, SHADER_STORAGE_BARRIER_BIT
from engine.skinning.gpu.stages.base import StageContext, bind_all, bind_image, bind_ssbo, set_uniform

__all__ = ["STATIC_READS", "ContactBuffers", "ContactContext", "instance_params", "table_size", "pass_count",
           "pool_buffers", "run"]

#: static-pool SSBOs the resolve pass binds, with their binding points
STATIC_READS = (("bind", "B_CONTACT_BIND"),)


def table_size(n_points: int) -> int:
    """Buckets of the hashed grid for a pool of ``n_points`` control points: the power of two >= 2 n (>= 64)."""
    return 1 << max(6, int(2 * max(int(n_points), 1) - 1).bit_length())


def pass_count(params: Iterable[Any]) -> int:
    """Contact passes per frame for instances with these SpringParams: the largest count among those with
    contact on (0: no instance has it on)."""
    return max((int(p.contact_passes) for p in params if p.contact), default=0)


def instance_params(instances: Iterable[Any]) -> np.ndarray:
    """(2 N, 4) float32: per instance (reach, thickness, lateral, exclude) and (mean edge, passes, on, 0) in
    scene units, from its SpringParams and its asset's bind mesh (engine.skinning.contact.contact_rest)."""
    rows = []
    cache: dict[tuple[int, float, int], Any] = {}
    for inst in instances:
        p = inst.params
        key = (id(inst.asset), float(p.contact_thickness), int(p.contact_passes))
        rest = cache.get(key)
        if rest is None:
            rest = contact_rest(inst.asset.topology, float(p.contact_thickness), int(p.contact_passes))
            cache[key] = rest
        rows.append([rest.reach, rest.thickness, rest.lateral, rest.exclude])
        rows.append([rest.edge, float(p.contact_passes), 1.0 if p.contact else 0.0, 0.0])
    return np.asarray(rows, np.float32).reshape(-1, 4)


def pool_buffers(instances: list[Any], n_points: int) -> dict[str, tuple[np.ndarray | None, int]]:
    """The buffers a batch with a contact node creates: name -> (initial data, or None and a byte size)."""
    table = table_size(n_points)
    return {"contact_params": (instance_params(instances) if instances else np.zeros((2, 4), np.float32), 0),
            "contact_count": (None, 4 * table), "contact_start": (None, 4 * (table + 1)),
            "contact_entries": (None, 4 * max(n_points, 1)), "contact_tmp": (None, 16 * max(n_points, 1))}


@dataclass(frozen=True)
class ContactBuffers:
    """The contact stage's own SSBOs (created with the batch's layout)."""

    params: moderngl.Buffer               # 2 vec4 per instance (instance_params)
    count: moderngl.Buffer                # points per bucket
    start: moderngl.Buffer                # bucket starts (table + 1)
    entries: moderngl.Buffer              # point indices sorted by bucket
    scratch: moderngl.Buffer              # positions between passes (vec4 per control point)


@dataclass(frozen=True)
class ContactContext(StageContext):
    """What one frame of the contact stage needs."""

    gl: moderngl.Context                  # memory barriers between the passes
    instances: moderngl.Buffer            # DeformInstance table
    groups: moderngl.Buffer               # control work group -> instance
    source: moderngl.Buffer               # the spring stage's result
    target: moderngl.Buffer
    bind: moderngl.Buffer                 # bind positions (static pool)
    frame: moderngl.Texture               # the spring stage's SpringFrame image (posed attachments)
    buffers: ContactBuffers
    table: int                            # buckets of the hashed grid (power of two)
    n_groups: int                         # control work groups
    passes: int                           # passes this frame (:func:`pass_count`)


def run(c: ContactContext) -> None:
    """One frame of the contact term for every instance of the batch."""
    grid = c.program("contact_grid", None)
    resolve = c.program("contact", None)
    b = c.buffers
    bind_all(((c.instances, "B_INSTANCES"), (c.groups, "B_GROUPS"), (b.params, "B_CONTACT_PARAMS"),
              (b.count, "B_CONTACT_COUNT"), (b.start, "B_CONTACT_START"), (b.entries, "B_CONTACT_ENTRIES"),
              (c.bind, "B_CONTACT_BIND")))
    bind_image(c.frame, "I_SPRING_FRAME")
    set_uniform(grid, "u_table", c.table)
    set_uniform(resolve, "u_table", c.table)
    table_groups = -(-c.table // LOCAL_SIZE)
    passes = max(c.passes, 1)  # with every instance off, one pass copies the source through
    src = c.source
    for n in range(passes):
        dst = c.target if (passes - 1 - n) % 2 == 0 else b.scratch
        bind_ssbo(src, "B_SRC")
        for mode, groups in ((0, table_groups), (1, c.n_groups), (2, 1), (3, c.n_groups)):
            set_uniform(grid, "u_mode", mode)
            grid.run(groups)
            c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT)
        bind_ssbo(dst, "B_DST")
        set_uniform(resolve, "u_pass", n)
        resolve.run(c.n_groups)
        c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT)
        src = dst

