"""THE frame: the phases and the engine's systems, in the order they run (tests/unit/test_frame.py asserts it).

Every way of running the engine -- the demo window, the headless loop, ``export-frame``, ``render``,
``compare``, the benchmarks, and the editor to come -- runs this frame through :class:`engine.Session`:

============  ==============  ========================================================================
phase         runs            systems
============  ==============  ========================================================================
INPUT         once per frame  ``input_begin_system``: the events devices pushed into the session's
                              EventQueue become this frame's (``EventQueue.frame``); the editor and the
                              demo's window add their systems after it (shortcuts, camera controls, strokes)
TOOLS         once per frame  (tools consume strokes: posing, surface edits, UI actions)
ANIMATION     per fixed step  ``animation_system``: advance each Animator by the fixed step, sample its
                              pose (and its morph weights: clip channels, script overrides)
SKELETON      per fixed step  ``skeleton_system``: forward kinematics batched per rig (placement
                              included); keeps the previous step's matrices for interpolation
DEFORM        per fixed step  ``surface_edit_step_system``: surface edits -> spring forces, for
                              frame-dependent deformers; ``deform_step_system``: frame-dependent
                              deformers (GPU feedback graphs) step with the pose of the step
DEFORM_FRAME  once per frame  ``surface_edit_frame_system``: surface edits -> spring forces, for the
                              others; ``deform_frame_system``: the pose to draw, interpolated between the
                              last two fixed steps by the clock's alpha, handed to the deformer (skin
                              matrices -> one dispatch per stage for all meshes; numpy on the cpu device)
                              and node transforms
RENDER        once per frame  ``render_system``: G-buffer -> compose -> present (engine/render)
UI            once per frame  (overlays: the profiler and editor panels add their systems here)
============  ==============  ========================================================================

Frame-independent deformers (LBS, DQS, rigid, IRS, the springs in their default frame-independent mode) are
functions of the pose, so deforming the interpolated pose once per displayed frame IS the interpolation, and
costs one deformation per displayed frame however many fixed steps ran. A frame-dependent graph (its state
carries over between frames) instead steps in DEFORM on the fixed step and is drawn as of the last step.

DEFORM_FRAME is a phase of its own, after the fixed steps and before RENDER, because the deformation of the
displayed frame runs once per frame but is deformation, not drawing: the timings charge it to DEFORM
(``Phase.label``; its runs have ``step`` -1), so the profiler, the overlay and ``bench scene`` count every
deformation under DEFORM and RENDER is the renderer alone.

The surface-edit systems are in the table whether or not a character has edits: without edits they are one
cached empty world query (no character holds ``SurfaceEdits``), so nothing registers systems lazily. Each runs
where the deformer runs, right before it: the step one for frame-dependent deformers, the frame one for the
others (the other one of the pair returns at once).

Systems are plain functions over world queries; they reach the GPU owners through world resources
(:class:`engine.scene.SceneMeshes`, :class:`View`), never through globals.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.anim import Playback, global_matrices_batched
from engine.anim.timeline import TimelinePlayback
from engine.components import (
    Animator,
    AssetRef,
    DeformedMeshes,
    MorphWeights,
    Placement,
    PoseLayer,
    SkeletonPose,
    playback_weights,
)
from engine.ecs import Clock, Phase, Schedule, World
from engine.gpu.timers import record_gpu_timings
from engine.input.events import input_begin_system
from engine.math.transform import compose_trs, decompose
from engine.profile.stats import cpu_scope
from engine.profile.timings import current_timings
from engine.profile.trace import GRAPH_SCOPE
from engine.scene import SceneMeshes
from engine.skinning.edits import SurfaceEdits, edit_pose

__all__ = ["View", "ENGINE_SYSTEMS", "input_begin_system", "build_schedule", "animation_system", "skeleton_system",
           "surface_edit_step_system", "deform_step_system", "surface_edit_frame_system", "deform_frame_system",
           "render_system", "interpolate_matrices"]


@dataclass
class View:
    """What RENDER draws: the renderer, the camera, the target framebuffer (None: the renderer's own frame),
    and whether to draw at all this frame (``enabled``; export keeps it off). ``after_render`` callbacks run
    right after the frame is drawn (GPU timings, screenshots)."""

    renderer: Any
    camera: Any
    target: Any = None
    enabled: bool = True
    #: draw the pose interpolated by the clock's alpha (the real-time loops); False draws the last fixed
    #: step exactly (scripted whole steps: ``Session.step``, export, the headless demo)
    interpolate: bool = True
    #: finish the GPU work around each renderer pass and record its wall time (``renderer.last_wall_ms``)
    profile: bool = False
    after_render: list[Callable[[World], None]] = field(default_factory=list)
    #: overlays drawn into the frame before it is presented (``fn(renderer)``, the renderer's ``ui=`` pass;
    #: the profiler overlay, the editor's panels); they see the timings of the last finished frame
    ui: list[Callable[[Any], None]] = field(default_factory=list)


# ---- fixed step -------------------------------------------------------------------------------------------
def animation_system(world: World) -> None:
    """Advance every Animator by the fixed step and sample its local pose: characters playing the same clip
    (no crossfade running) are sampled in one batch (one search and gather for all of them). A PoseLayer is
    then added on top of the sampled pose."""
    clock = world.resource(Clock)
    groups: dict[int, list[tuple[Animator, Playback]]] = {}
    for _e, (anim,) in world.query(Animator):
        pb = anim.playback
        pb.advance(clock.step)
        if isinstance(pb, Playback) and not pb.fading:
            groups.setdefault(id(pb.samplers[pb.clip]), []).append((anim, pb))
        else:
            pb.evaluate(anim.pose)
    for rows in groups.values():
        anim0, pb0 = rows[0]
        if len(rows) == 1:
            pb0.evaluate(anim0.pose)
            continue
        rig = pb0.rig
        n = len(rows)
        # unanimated channels keep the rest values; float32 like Pose
        t = np.broadcast_to(rig.translation, (n, *rig.translation.shape)).astype(np.float32)
        q = np.broadcast_to(rig.rotation, (n, *rig.rotation.shape)).astype(np.float32)
        sc = np.broadcast_to(rig.scale, (n, *rig.scale.shape)).astype(np.float32)
        times = np.array([pb.local_time for _, pb in rows], np.float64)
        pb0.samplers[pb0.clip].sample_batch(times, t, q, sc)
        for i, (anim, _) in enumerate(rows):  # each pose takes its rows of this step's stacked arrays
            pose = anim.pose
            pose.translation, pose.rotation, pose.scale = t[i], q[i], sc[i]
    for _e, (anim, layer) in world.query(Animator, PoseLayer):
        layer.apply(anim.pose)
    for _e, (anim, morph) in world.query(Animator, MorphWeights):  # characters with morph targets only
        morph.update(playback_weights(anim.playback))


def skeleton_system(world: World) -> None:
    """Forward kinematics batched per rig: every character sharing an asset is one stacked FK call."""
    groups: dict[int, list[tuple[Animator, Placement, SkeletonPose]]] = {}
    rigs = {}
    for _e, (ref, anim, place, skel) in world.query(AssetRef, Animator, Placement, SkeletonPose):
        groups.setdefault(id(ref.rig), []).append((anim, place, skel))
        rigs[id(ref.rig)] = ref.rig
    for key, rows in groups.items():
        rig = rigs[key]
        t = np.stack([r[0].pose.translation for r in rows])
        q = np.stack([r[0].pose.rotation for r in rows])
        sc = np.stack([r[0].pose.scale for r in rows])
        g = global_matrices_batched(rig, t, q, sc)
        g = np.matmul(np.stack([r[1].matrix for r in rows])[:, None], g).astype(np.float32, copy=False)
        for (_anim, _place, skel), gi in zip(rows, g):  # each character's rows of this step's stacked result
            skel.previous, skel.globals = skel.globals, gi


def _surface_edits(world: World, *, dependent: bool) -> None:
    """Every character's surface edits reduced to spring forces (engine.skinning.edits.EditStack.terms) for its
    current pose (the last fixed step's) and clip time (on a timeline: its live segment's), handed to the deformer
    graph (gpu device) or the numpy reference (cpu device) before it runs. Runs where the deformer runs:
    ``dependent`` True in DEFORM (frame-dependent deformers), False in DEFORM_FRAME (the others)."""
    if not world.count(SurfaceEdits, SkeletonPose, Animator):  # no edits: the systems cost one cached query
        return
    meshes = world.resource(SceneMeshes)
    if meshes.frame_dependent != dependent:
        return
    for e, (comp, skel, anim) in world.query(SurfaceEdits, SkeletonPose, Animator):
        if not meshes.settings[e].takes_edits:  # kept for a switch back to springs, no forces to compute now
            continue
        rows = {i.key: i for i in meshes.instances.get(e, ())}
        t = anim.playback.local_time if isinstance(anim.playback, (Playback, TimelinePlayback)) else 0.0
        cfg = meshes.settings[e].config
        for key in list(comp.stacks):
            stack = comp.stacks[key]
            inst = rows.get(key)
            if inst is None or inst.skinned is None:
                continue
            if not len(stack):
                meshes.set_edits(inst, None)
                del comp.stacks[key]
                continue
            sp = inst.skinned
            binding = sp.binding(method=cfg.binding.method, smooth_passes=cfg.binding.smooth_passes)
            kin = np.concatenate([e.handles for e in stack])  # decoded per frame: only the handles
            attach, rot = edit_pose(binding, sp.bind_joints, skel.globals[sp.skin.joints], index=kin)
            meshes.set_edits(inst, stack.terms(sp.topology().n_control, attach, rot, t))


def surface_edit_step_system(world: World) -> None:
    """Surface edits -> spring forces on the fixed step, before a frame-dependent deformer steps (see
    :func:`_surface_edits`; nothing to do for frame-independent deformers or without edits)."""
    _surface_edits(world, dependent=True)


def deform_step_system(world: World) -> None:
    """Frame-dependent deformers step here, on the fixed step, with the pose of the step."""
    meshes = world.resource(SceneMeshes)
    if meshes.frame_dependent:
        _deform(world, meshes, alpha=1.0)


# ---- once per displayed frame -------------------------------------------------------------------------------
def interpolate_matrices(prev: np.ndarray, curr: np.ndarray, alpha: float) -> np.ndarray:
    """World matrices (...,4,4) between two fixed steps: translation and scale lerped, rotation by normalised
    quaternion lerp along the shorter arc (steps are small). ``alpha`` 0 gives ``prev``, 1 gives ``curr``."""
    if alpha >= 1.0:
        return curr
    if alpha <= 0.0:
        return prev
    t0, q0, s0 = decompose(prev)
    t1, q1, s1 = decompose(curr)
    q1 = np.where((np.sum(q0 * q1, axis=-1) < 0)[..., None], -q1, q1)
    q = q0 + (q1 - q0) * alpha
    q /= np.maximum(np.linalg.norm(q, axis=-1, keepdims=True), 1e-12)
    return compose_trs(t0 + (t1 - t0) * alpha, q, s0 + (s1 - s0) * alpha).astype(np.float32)


def _deform(world: World, meshes: SceneMeshes, alpha: float) -> None:
    rows = []
    for e, (skel, out) in world.query(SkeletonPose, DeformedMeshes):
        if e in meshes.instances:
            g = skel.globals if alpha >= 1.0 else interpolate_matrices(skel.previous, skel.globals, alpha)
            rows.append((e, g, out.positions))
    for e, (morph,) in world.query(MorphWeights):
        meshes.morph[e] = morph.current
    meshes.pose_many(rows)  # characters sharing an asset: one stacked skin-matrix product
    for e, _g, positions in rows:
        meshes.upload(e, positions)
    with cpu_scope(GRAPH_SCOPE):  # profiling hook: the deformer stages' GPU times are placed inside it
        meshes.run_graph()


def surface_edit_frame_system(world: World) -> None:
    """Surface edits -> spring forces once per displayed frame, before a frame-independent deformer deforms the
    frame's pose (see :func:`_surface_edits`; nothing to do for frame-dependent deformers or without edits)."""
    _surface_edits(world, dependent=False)


def deform_frame_system(world: World) -> None:
    """The snapshot to draw: each character's pose interpolated by the clock's alpha, deformed (one graph run
    for every mesh) unless a frame-dependent deformer already stepped in DEFORM."""
    meshes = world.resource(SceneMeshes)
    if meshes.frame_dependent:
        return
    clock = world.try_resource(Clock)
    view = world.try_resource(View)
    interpolate = clock is not None and (view is None or view.interpolate)
    _deform(world, meshes, clock.alpha if clock is not None and interpolate else 1.0)


def _overlays(fns: list[Callable[[Any], None]]) -> Callable[[Any], None]:
    """The renderer's ``ui`` pass: every overlay of the view, in order."""
    def draw(renderer: Any) -> None:
        for fn in fns:
            fn(renderer)
    return draw


def render_system(world: World) -> None:
    """G-buffer -> compose -> present: draw the scene into the view's target (skipped when disabled)."""
    view = world.try_resource(View)
    if view is None or not view.enabled or view.renderer is None:
        return
    r = view.renderer
    view.camera.aspect = r.width / r.height
    r.render(view.camera, target=view.target, profile=view.profile, ui=_overlays(view.ui) if view.ui else None)
    timings = current_timings()
    if timings is not None:  # GPU pass times (a few frames late) go next to the systems' CPU times
        record_gpu_timings(timings, r.gpu_ms)
    for fn in view.after_render:
        fn(world)


#: The engine's systems in run order: (phase, system). The editor, profiler and VR add theirs through
#: ``Session.add_system`` with a phase (and before/after constraints); nothing else registers systems.
ENGINE_SYSTEMS: tuple[tuple[Phase, Callable[[World], None]], ...] = (
    (Phase.INPUT, input_begin_system),
    (Phase.ANIMATION, animation_system),
    (Phase.SKELETON, skeleton_system),
    (Phase.DEFORM, surface_edit_step_system),
    (Phase.DEFORM, deform_step_system),
    (Phase.DEFORM_FRAME, surface_edit_frame_system),
    (Phase.DEFORM_FRAME, deform_frame_system),
    (Phase.RENDER, render_system),
)


def build_schedule(*, strict: bool = False) -> Schedule:
    """The one schedule: the engine's systems in the order of :data:`ENGINE_SYSTEMS`."""
    schedule = Schedule(strict=strict)
    last: dict[Phase, str] = {}
    for phase, fn in ENGINE_SYSTEMS:
        # consecutive engine systems of one phase are chained explicitly: a system added later with only
        # ``before=surface_edit_frame_system`` must not let the schedule's topological order lift
        # deform_frame_system above it
        last[phase] = schedule.add_system(phase, fn, after=last.get(phase))
    return schedule
