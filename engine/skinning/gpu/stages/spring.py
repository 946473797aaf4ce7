"""Spring stage (control domain): the attachment springs of every control point of a batch (research ch. 5).

Per frame, over the whole control pool:

1. **frame** (``spring_frame.comp``, one dispatch): posed attachments and bone references per control point,
   and the initial state x_0 (skinned positions, initial velocities) into ``s0``; an instance that starts warm
   this frame (``DeformBone.p.w``, decided per instance by the pose upload: springs.warm_start_allowed) takes
   x_0 from the stage's last output (its target) carried by the motion of each point's joint-blended frame since
   the last frame (frames of the bone records of that frame: ``bones_prev``, copied from ``bones`` at the end of
   the stage);
2. **converge reset** (``converge.comp``, one work group): convergence state cleared, every work group active;
3. **iterations** (``spring.comp``): with the volume term, first a pre-pass (``u_iteration`` = -1) that only
   sums every bone region's volume at x_0 into sum slot 0; then up to ``dispatches`` indirect dispatches, dispatch
   n using the sums of x_{n-1} (x_0 for n = 0), adding x_n's (n >= 1) into slot n % 3 and clearing slot
   (n + 1) % 3 for the next (reference: springs.SpringDeformer.iterate, one iteration's lag); every ``check_every``
   iterations the converge pass reads the GPU-side maxima / energy partials and rebuilds the list of active
   work groups, so a converged mesh costs zero work; the CPU never waits;
4. **resolve** (``resolve.comp``, one dispatch): each instance's accepted state (by its GPU-side iteration
   count) into the stage's target (+ velocities for the next frame).

Spring state (SpringState images, layouts "spring stage images"): ``s0`` holds x_0; dispatch n reads x_n (s0
for n = 0, else ring[(n - 1) % 3]) and writes x_{n+1} to ring[n % 3]. Three ring images keep x_{n-1} intact
while dispatch n runs, so the energy scheme can still reject the last step. Reference: engine.skinning.springs.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import moderngl
import numpy as np

from engine.skinning.gpu.plan import (
    BUFFER_UPDATE_BARRIER_BIT,
    COMMAND_BARRIER_BIT,
    SHADER_IMAGE_ACCESS_BARRIER_BIT,
    SHADER_STORAGE_BARRIER_BIT,
)
from engine.skinning.gpu.stages.base import StageContext, bind_all, bind_image, bind_ssbo, set_uniform

#: static-pool SSBOs the frame pass binds, with their binding points
STATIC_READS = (("attach", "B_ATTACH"), ("bone_of", "B_BONE_OF"), ("vstatic", "B_VSTATIC"))


@dataclass(frozen=True)
class SpringImages:
    """The spring stage's images: static records, per-layout heads / instances, and the GPU-only state."""

    heads: moderngl.Texture               # SpringHead per control work group
    instances: moderngl.Texture           # SpringInstance per instance
    points: moderngl.Texture              # SpringPoint per control point (static pool)
    slots: moderngl.Texture               # SpringSlot per CSR slot (static pool)
    frame: moderngl.Texture               # SpringFrame per control point (this frame's attachments)
    s0: moderngl.Texture                  # SpringState x_0
    ring: tuple[moderngl.Texture, moderngl.Texture, moderngl.Texture]


@dataclass(frozen=True)
class SpringBuffers:
    """The spring stage's SSBOs: convergence state, indirect dispatch, edits and velocities."""

    status: moderngl.Buffer               # DeformStatus per instance
    partials: moderngl.Buffer             # energy partials per work group
    active: moderngl.Buffer               # active work group list
    indirect: moderngl.Buffer             # indirect dispatch arguments
    edit: moderngl.Buffer                 # surface-edit rows per control point
    velocities: moderngl.Buffer           # last frame's velocities (dependent mode)
    volume: moderngl.Buffer               # volume term: per bone of the batch three int sums and a flag (B_VOLUME)


@dataclass(frozen=True)
class SpringContext(StageContext):
    """What one frame of the spring stage needs."""

    gl: moderngl.Context                  # memory barriers between the passes
    instances: moderngl.Buffer            # DeformInstance table
    groups: moderngl.Buffer               # control work group -> instance
    source: moderngl.Buffer               # skinned control positions
    target: moderngl.Buffer
    bones: moderngl.Buffer                # DeformBone records
    bones_prev: moderngl.Buffer           # last frame's DeformBone records (warm start)
    warm: bool                            # some instance wants the warm start: keep this frame's bone records
    static: tuple[tuple[moderngl.Buffer, str], ...]  # STATIC_READS with their buffers
    buffers: SpringBuffers
    images: SpringImages
    n_instances: int
    n_groups: int                         # control work groups
    dispatches: int                       # iteration dispatches this frame (:func:`dispatch_count`)
    volume: np.ndarray | None             # B_VOLUME's rows at the frame start (records.volume_rows); None: no
                                          # instance runs the volume term


def dispatch_count(params: Iterable[Any]) -> int:
    """Spring dispatches per frame for instances with these SpringParams: the largest iteration cap (+1
    evaluation dispatch for the energy scheme)."""
    n = 0
    for p in params:
        n = max(n, int(p.max_iterations) + (1 if p.convergence == "energy" else 0))
    return n


def run_frame(c: SpringContext) -> None:
    """Pass 1: posed attachments, bone references and x_0."""
    cs = c.program("spring_frame", None)
    bind_all(((c.instances, "B_INSTANCES"), (c.groups, "B_GROUPS"), (c.bones, "B_BONES"),
              (c.buffers.velocities, "B_VEL")) + c.static)
    bind_image(c.images.frame, "I_SPRING_FRAME", read=False, write=True)
    bind_image(c.images.s0, "I_SPRING_DST", read=False, write=True)
    bind_ssbo(c.source, "B_SKINNED")
    bind_all(((c.target, "B_WARM"), (c.bones_prev, "B_BONES_PREV"), (c.buffers.edit, "B_EDIT")))
    cs.run(c.n_groups)


def converge_program(c: SpringContext) -> moderngl.ComputeShader:
    """Pass 2: the converge program bound to the convergence state and reset (every work group active); the
    iterations use it afterwards to check (:func:`check`)."""
    conv = c.program("converge", None)
    b = c.buffers
    bind_all(((b.status, "B_STATUS"), (b.partials, "B_PARTIALS"), (b.active, "B_ACTIVE"),
              (b.indirect, "B_INDIRECT")))
    set_uniform(conv, "u_n_instances", c.n_instances)
    set_uniform(conv, "u_n_groups", c.n_groups)
    set_uniform(conv, "u_mode", 0)
    set_uniform(conv, "u_done", 0)
    conv.run(1)
    c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT | COMMAND_BARRIER_BIT)
    set_uniform(conv, "u_mode", 1)
    return conv


def check(c: SpringContext, conv: moderngl.ComputeShader, done: int) -> None:
    """Convergence check after ``done`` iterations: rebuilds the active work groups and the indirect dispatch."""
    c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT)
    set_uniform(conv, "u_done", done)
    conv.run(1)
    c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT | COMMAND_BARRIER_BIT)


def iterate(c: SpringContext, conv: moderngl.ComputeShader) -> None:
    """Pass 3: the iteration dispatches (indirect: zero groups once every instance stopped), checks every
    ``check_every`` iterations and after the last."""
    spring = c.program("spring", None)
    im = c.images
    bind_ssbo(c.buffers.edit, "B_EDIT")
    bind_ssbo(c.buffers.volume, "B_VOLUME")
    for tex, unit in ((im.heads, "I_SPRING_HEADS"), (im.instances, "I_SPRING_INSTANCES"),
                      (im.points, "I_SPRING_POINTS"), (im.slots, "I_SPRING_SLOTS"), (im.frame, "I_SPRING_FRAME")):
        bind_image(tex, unit)
    if c.volume is not None and c.dispatches:  # the pre-pass: the regions' volumes at x_0 (writes no state)
        bind_image(im.s0, "I_SPRING_SRC")
        bind_image(im.ring[0], "I_SPRING_DST", read=False, write=True)
        set_uniform(spring, "u_iteration", -1)
        set_uniform(spring, "u_record", 0)
        spring.run_indirect(c.buffers.indirect)
        c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT)
    check_every = int(c.node.options.get("check_every", 1))
    for n in range(c.dispatches):
        bind_image(im.s0 if n == 0 else im.ring[(n - 1) % 3], "I_SPRING_SRC")
        bind_image(im.ring[n % 3], "I_SPRING_DST", read=False, write=True)
        last = n == c.dispatches - 1
        checked = (n + 1) % check_every == 0 or last
        set_uniform(spring, "u_iteration", n)
        set_uniform(spring, "u_record", int(checked))
        spring.run_indirect(c.buffers.indirect)
        if checked:
            check(c, conv, n + 1)
        else:
            c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT)


def resolve(c: SpringContext) -> None:
    """Pass 4: the accepted state of each instance -> target (+ velocities for the next frame)."""
    res = c.program("resolve", None)
    bind_image(c.images.frame, "I_SPRING_FRAME")  # attach.w: the pose unit (the state is in bind units)
    bind_image(c.images.s0, "I_SPRING_SRC")
    for tex, unit in zip(c.images.ring, ("I_SPRING_RING0", "I_SPRING_RING1", "I_SPRING_RING2")):
        bind_image(tex, unit)
    bind_ssbo(c.target, "B_DST")
    bind_ssbo(c.buffers.velocities, "B_VEL")
    res.run(c.n_groups)


def run(c: SpringContext) -> None:
    """One frame of the springs for every instance of the batch."""
    if c.volume is not None:  # zeroed sums and this frame's edited-region flags (after the last frame's atomics)
        c.gl.memory_barrier(BUFFER_UPDATE_BARRIER_BIT)
        c.buffers.volume.write(c.volume.tobytes())
    run_frame(c)
    conv = converge_program(c)
    iterate(c, conv)
    resolve(c)
    if c.warm:  # the bone records of this frame for next frame's warm start (after spring_frame read the old)
        c.gl.copy_buffer(c.bones_prev, c.bones)
