"""Contact stage (control domain): the spring deformer's optional contact term over every control point of a
batch (reference: engine.skinning.contact; switched on by ``[spring] contact = true``, which puts a contact node
after the spring node of the built-in spring graphs).

Per frame, 2 P Jacobi passes (P: the largest ``contact_passes`` of the batch's instances; an instance takes part
in its own first ``contact_passes`` of each half): P smoothed passes, then P plain ones (the reference's two
phases), and the volume restore as pass 2 P (below). Each pass, over the pooled control points:

1. **grid** (``contact_grid.comp``): count the points per hashed cell (cell = the instance's search radius),
   one-work-group exclusive scan into bucket starts, scatter the point indices (counting back down to zero, so
   only the frame's first pass clears the counts);
2. **resolve** (``contact.comp``): every point sums the pushes of the facing pairs it forms with the points of
   the 27 cells around its own; a plain pass writes its new position, a smoothed pass its push;
3. **smooth** (``contact_smooth.comp``, smoothed passes only, CONTACT_SMOOTH dispatches): each point takes the
   mean push of its mesh neighbours (the spring stage's adjacency images); the last one applies it.

An instance whose pass moved no point skips the later passes (flags per instance and pass, reset by the first
pass's grid clear, set by the resolve): as the reference, which stops there. Then one more pass, the **volume
restore** (reference ``restore_volume``), for the instances whose first pass moved points: the grid of the
positions reached, a resolve that writes each point's total displacement (from the spring stage's result, the
source) and its facing share, and (2 + CONTACT_ROUNDS) x CONTACT_SPREAD smoothing steps that hand the volume the
dents took to the points that face nothing; the last step writes the positions. A one-group gate at the start of
every pass writes the indirect dispatch arguments of its grid and smoothing dispatches (zero groups when no
instance takes part), so a frame where nothing meets costs one pass of work plus one copy dispatch per later pass.

Positions ping-pong between the target and a scratch buffer so that the last pass writes the target; the
first reads the source. The posed attachments come from the spring stage's frame image (this frame's), the
bind positions from the static pool. Per-instance lengths (mean bind edge length, thickness, reach, lateral
offset, exclusion) are two vec4 per instance (:func:`instance_params`), written at layout and on
``set_spring``. They are measured on the bind mesh, so the stage runs in bind units, as the reference's
``SpringDeformer.solve`` does: the shaders divide the positions they read by the pose unit u (the frame image's
attach.w, where spring_frame.comp keeps it; 1 unless the mesh is given in other units than its joints are posed
in), use the frame's bind-unit attachments, and add their pushes times u to the scene-unit positions.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import moderngl
import numpy as np

from engine.gpu.layouts import LOCAL_SIZE
from engine.skinning.contact import (
    CONTACT_MAX_PASSES,
    CONTACT_ROUNDS,
    CONTACT_SMOOTH,
    CONTACT_SPREAD,
    RESTORE_FADE,
    contact_rest,
)
from engine.skinning.gpu.plan import (
    COMMAND_BARRIER_BIT,
    SHADER_IMAGE_ACCESS_BARRIER_BIT,
    SHADER_STORAGE_BARRIER_BIT,
)
from engine.skinning.gpu.stages.base import StageContext, bind_all, bind_image, bind_ssbo, set_uniform

__all__ = ["STATIC_READS", "ContactBuffers", "ContactContext", "instance_params", "table_size", "pass_count",
           "pool_buffers", "run"]

#: the most passes a frame runs (SpringParams.contact_passes' upper bound): the per-pass flags are sized for it
MAX_PASSES = CONTACT_MAX_PASSES
#: byte offsets of the two indirect dispatch arguments the gate writes: the pool's groups, one group
_POOL, _ONE = 0, 12
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
    bind units, from its SpringParams and its asset's bind mesh (engine.skinning.contact.contact_rest)."""
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
            "contact_grid": (None, 4 * (2 * table + 1 + max(len(instances), 1) * (2 * MAX_PASSES + 1))),
            "contact_entries": (None, 4 * max(n_points, 1)), "contact_tmp": (None, 16 * max(n_points, 1)),
            "contact_push": (None, 3 * 16 * max(n_points, 1)),
            "contact_indirect": (np.zeros(6, np.uint32), 0)}


@dataclass(frozen=True)
class ContactBuffers:
    """The contact stage's own SSBOs (created with the batch's layout)."""

    params: moderngl.Buffer               # 2 vec4 per instance (instance_params)
    grid: moderngl.Buffer                 # uint: counts per bucket (T), bucket starts (T + 1), pass flags
    entries: moderngl.Buffer              # point indices sorted by bucket
    scratch: moderngl.Buffer              # positions between passes (vec4 per control point)
    push: moderngl.Buffer                 # pushes of a smoothed pass, two halves of a vec4 per control point, and
                                          # a third part for the volume restore's per-point (q, c, z, A)
    indirect: moderngl.Buffer             # the gate's indirect dispatch arguments: (groups, 1, 1), (1, 1, 1)


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
    points: moderngl.Texture              # the spring stage's SpringPoint image (CSR adjacency)
    slots: moderngl.Texture               # the spring stage's SpringSlot image (neighbours)
    buffers: ContactBuffers
    table: int                            # buckets of the hashed grid (power of two)
    n_instances: int
    n_groups: int                         # control work groups
    passes: int                           # passes this frame (:func:`pass_count`)


def run(c: ContactContext) -> None:
    """One frame of the contact term for every instance of the batch."""
    grid = c.program("contact_grid", None)
    resolve = c.program("contact", None)
    smooth = c.program("contact_smooth", None)
    b = c.buffers
    bind_all(((c.instances, "B_INSTANCES"), (c.groups, "B_GROUPS"), (b.params, "B_CONTACT_PARAMS"),
              (b.grid, "B_CONTACT_GRID"), (b.entries, "B_CONTACT_ENTRIES"), (c.bind, "B_CONTACT_BIND"),
              (b.push, "B_CONTACT_PUSH")))
    for tex, unit in ((c.frame, "I_SPRING_FRAME"), (c.points, "I_SPRING_POINTS"), (c.slots, "I_SPRING_SLOTS")):
        bind_image(tex, unit)
    passes = max(c.passes, 1)  # with every instance off, the passes copy the source through
    for cs in (grid, resolve, smooth):
        set_uniform(cs, "u_table", c.table)
        set_uniform(cs, "u_passes", passes)
    set_uniform(grid, "u_instances", c.n_instances)
    table_groups = -(-max(c.table, c.n_instances * (2 * passes + 1)) // LOCAL_SIZE)
    half = c.n_groups * LOCAL_SIZE  # records per half of the push buffer
    for name, value in (("u_spread", CONTACT_SPREAD), ("u_smooth", CONTACT_SMOOTH), ("u_stat", 2 * half),
                        ("u_rounds", CONTACT_ROUNDS), ("u_fade", RESTORE_FADE), ("u_restore", 0)):
        set_uniform(smooth, name, value)
    total = 2 * passes + 1  # the last one: the volume restore
    src = c.source
    set_uniform(grid, "u_groups", c.n_groups)
    bind_ssbo(b.indirect, "B_INDIRECT")
    bind_ssbo(c.source, "B_CONTACT_ORIGIN")
    for n in range(total):
        dst = c.target if (total - 1 - n) % 2 == 0 else b.scratch
        bind_ssbo(src, "B_SRC")
        set_uniform(grid, "u_pass", n)
        # 0 clear (the frame's first pass only: the scatter counts every bucket back to 0), 4 gate, then the
        # grid's count, scan and scatter as indirect dispatches (zero groups when nobody takes part: the CPU
        # never waits to learn that a pass found nothing)
        for mode in ((0, 4, 1, 2, 3) if n == 0 else (4, 1, 2, 3)):
            set_uniform(grid, "u_mode", mode)
            if mode == 0:
                grid.run(table_groups)
            elif mode == 4:
                grid.run(1)
            else:
                grid.run_indirect(b.indirect, _ONE if mode == 2 else _POOL)
            c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT | (COMMAND_BARRIER_BIT if mode == 4 else 0))
        bind_ssbo(dst, "B_DST")
        set_uniform(resolve, "u_pass", n)
        resolve.run(c.n_groups)  # always: an instance that takes no part copies through
        restore = n == total - 1
        steps = (2 + CONTACT_ROUNDS) * CONTACT_SPREAD if restore else CONTACT_SMOOTH if n < passes else 0
        if restore:
            set_uniform(smooth, "u_restore", 1)
        for s in range(steps):  # a smoothed pass's smoothing (its last applies it) or the restore's steps
            c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT)
            set_uniform(smooth, "u_read", half * (s % 2))
            set_uniform(smooth, "u_write", half * ((s + 1) % 2))
            set_uniform(smooth, "u_last", int(s == steps - 1))
            set_uniform(smooth, "u_step", s)
            smooth.run_indirect(b.indirect, _POOL)
        if restore:
            set_uniform(smooth, "u_restore", 0)
        c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT)
        src = dst
