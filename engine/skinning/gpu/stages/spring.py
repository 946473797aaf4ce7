"""Spring stage (control domain): the attachment springs of every control point of a batch (research ch. 5).

Per frame, over the whole control pool:

1. **frame** (``spring_frame.comp``, one dispatch): posed attachments and bone references per control point,
   and the initial state x_0 (skinned positions, initial velocities) into ``s0``; an instance that starts warm
   this frame (``DeformBone.p.w``, decided per instance by the pose upload: springs.warm_start_allowed) takes
   x_0 from the stage's last output (its target) carried by the motion of each point's joint-blended frame since
   the last frame (frames of the bone records of that frame: ``bones_prev``, copied from ``bones`` at the end of
   the stage);
   work group 0 of the same dispatch clears every instance's convergence state and sets the loop state
   (B_SPRING_LOOP) at the first dispatch (no reset pass of its own: nothing reads either before the barrier that
   follows the frame pass);
2. **iterations** (``spring.comp`` with ``spring_iterate.glsl``): with the volume term, first a pre-pass
   (dispatch index -1) that only sums every bone region's volume at x_0 into sum slot 0; then ``dispatches``
   dispatches, dispatch n using the sums of x_{n-1} (x_0 for n = 0), adding x_n's (n >= 1) into slot n % 3 and
   clearing slot (n + 1) % 3 for the next (reference: springs.SpringDeformer.iterate, one iteration's lag).
   Each dispatch is the same program over every control work group with nothing uploaded in between: the
   dispatch index is read on the GPU from the loop state; the last work group of a dispatch (an atomic ticket)
   runs the convergence check after every ``check_every``-th and the last dispatch (GPU-side maxima / energy
   partials) and advances the index; groups of a stopped instance exit at entry. One dispatch and one memory
   barrier per iteration, no command barrier; the CPU never waits. The volume sums go out once per work group
   and region from shared memory, or once per point (the node's ``volume_reduce``, :func:`volume_reduce`);
3. **resolve**: each instance's accepted state (by its GPU-side iteration count) into the stage's target (+
   velocities for the next frame). For the schemes whose accepted state is the last one computed (all but energy
   and force, :func:`resolve_in_loop`) the last iteration dispatch does it (spring_resolve.glsl): each lane writes
   the state it computed, a stopped instance's groups copy theirs, and where the last check accepts an older
   state (divergence, a smaller iteration cap) the group that ran it copies the instance's; otherwise
   ``resolve.comp`` runs as a pass of its own.

Every buffer and image of the three passes is bound once at the stage's start, with two GL 4.4 multi-bind calls
where the context has them (:meth:`Bound.preload`, engine.gpu.glfunc.MultiBind), else one call per binding point.

Spring state (SpringState images, layouts "spring stage images"): a ring of three images stacked in one
texture (image r from row r * height / 3: the shaders pick one by an offset, no branch) bound once per frame;
spring_frame writes x_0 into image 2; dispatch n reads x_n from image (n - 1) mod 3 and writes x_{n+1} to image
n % 3. Three images keep x_{n-1} intact while dispatch n runs, so the energy scheme can still reject the
last step. Reference: engine.skinning.springs.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import moderngl
import numpy as np

from engine.gpu.glfunc import multi_bind
from engine.skinning.gpu.plan import (
    BUFFER_UPDATE_BARRIER_BIT,
    SHADER_IMAGE_ACCESS_BARRIER_BIT,
    SHADER_STORAGE_BARRIER_BIT,
)
from engine.skinning.gpu.stages.base import Bound, StageContext, set_uniform_changed
from engine.skinning.springs.tiles import BOUNDARY_STEP

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
    ring: moderngl.Texture                # SpringState ring: three images stacked; x_0 in the third


@dataclass(frozen=True)
class SpringBuffers:
    """The spring stage's SSBOs: convergence state, loop state, edits and velocities."""

    status: moderngl.Buffer               # DeformStatus per instance
    partials: moderngl.Buffer             # energy partials per work group
    loop: moderngl.Buffer                 # int32 [dispatch index, ticket] (B_SPRING_LOOP, spring_iterate.glsl)
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
    dispatches: int                       # iterations this frame (:func:`dispatch_count`; K per dispatch)
    volume: np.ndarray | None             # B_VOLUME's rows at the frame start (records.volume_rows); None: no
                                          # instance runs the volume term
    tiled_ok: bool = True                 # every instance's scheme allows K > 1 (not "energy" / "force")


def dispatch_count(params: Iterable[Any]) -> int:
    """Spring iterations per frame for instances with these SpringParams (the dispatches with one iteration per
    dispatch): the largest iteration cap (+1 evaluation dispatch for the energy scheme)."""
    n = 0
    for p in params:
        n = max(n, int(p.max_iterations) + (1 if p.convergence == "energy" else 0))
    return n


def frame_ssbos(c: SpringContext) -> tuple[tuple[moderngl.Buffer, str], ...]:
    """The frame pass's SSBOs with their binding points."""
    return ((c.instances, "B_INSTANCES"), (c.groups, "B_GROUPS"), (c.bones, "B_BONES"),
            (c.buffers.velocities, "B_VEL"), *c.static, (c.source, "B_SKINNED"), (c.target, "B_WARM"),
            (c.bones_prev, "B_BONES_PREV"), (c.buffers.edit, "B_EDIT"),
            # the frame start of the convergence and loop state (work group 0)
            (c.buffers.status, "B_STATUS"), (c.buffers.loop, "B_SPRING_LOOP"))


def iterate_ssbos(c: SpringContext) -> tuple[tuple[moderngl.Buffer, str], ...]:
    """The iteration dispatches' SSBOs (with the output's where the last dispatch resolves)."""
    b = c.buffers
    out = ((c.instances, "B_INSTANCES"), (c.groups, "B_GROUPS"), (b.status, "B_STATUS"), (b.partials, "B_PARTIALS"),
           (b.loop, "B_SPRING_LOOP"), (b.edit, "B_EDIT"), (b.volume, "B_VOLUME"))
    return out + resolve_ssbos(c) if resolve_in_loop(c) else out


def resolve_ssbos(c: SpringContext) -> tuple[tuple[moderngl.Buffer, str], ...]:
    """The output's SSBOs (resolve.comp, or the last iteration dispatch)."""
    return ((c.buffers.status, "B_STATUS"), (c.target, "B_DST"), (c.buffers.velocities, "B_VEL"))


def stage_images(c: SpringContext) -> tuple[tuple[moderngl.Texture, str], ...]:
    """Every image of the stage with its unit (the frame and ring images are read and written)."""
    im = c.images
    return ((im.heads, "I_SPRING_HEADS"), (im.instances, "I_SPRING_INSTANCES"), (im.points, "I_SPRING_POINTS"),
            (im.slots, "I_SPRING_SLOTS"), (im.frame, "I_SPRING_FRAME"), (im.ring, "I_SPRING_RING"))


def run_frame(c: SpringContext, bound: Bound) -> None:
    """Pass 1: posed attachments, bone references and x_0 (into the ring's third image); its work group 0 also
    clears every instance's convergence state and sets the loop state at the first dispatch."""
    cs = c.program("spring_frame", None)
    bound.all(frame_ssbos(c))
    # the frame and ring images read-write in every pass (each pass declares the access it uses): bound once
    bound.image(c.images.frame, "I_SPRING_FRAME", read=True, write=True)
    bound.image(c.images.ring, "I_SPRING_RING", read=True, write=True)
    # uniforms are program state: sent when they change, not every frame
    set_uniform_changed(cs, "u_n_instances", c.n_instances)
    set_uniform_changed(cs, "u_start", -1 if pre_pass(c) else 0)
    cs.run(c.n_groups)
    c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT)


def pre_pass(c: SpringContext) -> bool:
    """Whether the iterations start with the volume pre-pass (the regions' volumes at x_0, writes no state)."""
    return c.volume is not None and c.dispatches > 0


def volume_reduce(c: SpringContext) -> bool:
    """Whether the volume sums are added per work group and region (the node's ``volume_reduce``; "auto": not on
    a software rasteriser, where the extra barriers and shared atomics cost more than the uncontended atomics)."""
    mode = c.node.options.get("volume_reduce", "auto")
    if mode == "auto":
        renderer = str(c.gl.info.get("GL_RENDERER", "")).lower()
        return not ("llvmpipe" in renderer or "softpipe" in renderer)
    return bool(mode == "group")


#: schemes that need one iteration per dispatch: the energy scheme may reject the last step (x_{n-1} must be
#: in the ring), the force scheme stops before a step (the state before the block's last step is not kept)
ONE_PER_DISPATCH = ("energy", "force")


def iterations_per_dispatch(c: SpringContext) -> int:
    """K, the iterations each dispatch runs (the node's ``iterations_per_dispatch``): 1 runs spring.comp (one
    iteration per dispatch, the untiled reference), K > 1 spring_tiled.comp (springs.tiles: tiles with a frozen
    halo); 1 whenever an instance's scheme needs it (:data:`ONE_PER_DISPATCH`)."""
    k = int(c.node.options.get("iterations_per_dispatch", 1))
    return k if c.tiled_ok else 1


def dispatches(c: SpringContext) -> int:
    """Iteration dispatches this frame (without the volume pre-pass): ceil(iterations / K)."""
    k = iterations_per_dispatch(c)
    return -(-c.dispatches // k)


def resolve_in_loop(c: SpringContext) -> bool:
    """Whether the last iteration dispatch writes the stage's output (spring_iterate.glsl RESOLVE_IN_LOOP): every
    scheme whose accepted state is, but for divergence or a smaller iteration cap, the last one computed (not
    :data:`ONE_PER_DISPATCH`'s: the energy scheme accepts one state behind, the force scheme stops before a step),
    and only when the frame iterates at all; otherwise resolve.comp runs after the iterations."""
    return c.tiled_ok and dispatches(c) > 0


def iterate(c: SpringContext, bound: Bound) -> None:
    """Pass 2: the iteration dispatches (the pre-pass first with the volume term). Everything is bound and set
    once; each dispatch reads its index from the loop state and the last work group of each checks convergence
    every ``check_every`` dispatches and after the last (spring_iterate.glsl), which also resolves
    (:func:`resolve_in_loop`)."""
    k = iterations_per_dispatch(c)
    defines: dict[str, object] = {"VOLUME_REDUCE": int(volume_reduce(c)), "RESOLVE_IN_LOOP": int(resolve_in_loop(c))}
    if k > 1:
        defines["ITERATIONS_PER_DISPATCH"] = k
        defines["BOUNDARY_STEP"] = BOUNDARY_STEP
    spring = c.program("spring_tiled" if k > 1 else "spring", defines)
    bound.all(iterate_ssbos(c))
    for tex, unit in stage_images(c)[:4]:
        bound.image(tex, unit)
    bound.image(c.images.frame, "I_SPRING_FRAME", read=True, write=True)
    bound.image(c.images.ring, "I_SPRING_RING", read=True, write=True)
    set_uniform_changed(spring, "u_n_instances", c.n_instances)
    n = dispatches(c)
    set_uniform_changed(spring, "u_dispatches", n * k)
    # checks after whole dispatches: every ceil(check_every / K)-th
    every = max(1, int(c.node.options.get("check_every", 1)))
    set_uniform_changed(spring, "u_check_every", k * -(-every // k))
    for _ in range(n + int(pre_pass(c))):
        spring.run(c.n_groups)
        c.gl.memory_barrier(SHADER_STORAGE_BARRIER_BIT | SHADER_IMAGE_ACCESS_BARRIER_BIT)


def resolve(c: SpringContext, bound: Bound) -> None:
    """Pass 3 where the iterations do not resolve (:func:`resolve_in_loop`): the accepted state of each instance
    -> target (+ velocities for the next frame)."""
    k = iterations_per_dispatch(c)
    res = c.program("resolve", {"ITERATIONS_PER_DISPATCH": k} if k > 1 else None)
    bound.image(c.images.frame, "I_SPRING_FRAME", read=True, write=True)  # attach.w: the pose unit
    bound.image(c.images.ring, "I_SPRING_RING", read=True, write=True)
    bound.all(resolve_ssbos(c))
    res.run(c.n_groups)


def run(c: SpringContext) -> None:
    """One frame of the springs for every instance of the batch."""
    if c.volume is not None:  # zeroed sums and this frame's edited-region flags (after the last frame's atomics)
        c.gl.memory_barrier(BUFFER_UPDATE_BARRIER_BIT)
        c.buffers.volume.write(c.volume.tobytes())
    bound = Bound()  # what this run has bound: each buffer / image once per binding point
    # every pass's buffers and images at once (two GL calls with GL 4.4 multi-bind; no pass binds one point twice)
    bound.preload(multi_bind(c.gl), frame_ssbos(c) + iterate_ssbos(c) + resolve_ssbos(c), stage_images(c))
    run_frame(c, bound)
    iterate(c, bound)
    if not resolve_in_loop(c):
        resolve(c, bound)
    if c.warm:  # the bone records of this frame for next frame's warm start (after spring_frame read the old)
        c.gl.copy_buffer(c.bones_prev, c.bones)
