"""Baking: the deformed vertices of many frames of one character, in one process.

``bake(session, character, times)`` returns ``{PrimitiveKey: (F, D, 3) float32}`` for every skinned primitive
(and every unskinned one with morph targets: morphed in numpy and placed by its node's world matrix): the
character's clip sampled at each time (one batched sampling and FK over all frames; morph weights per frame
from the clip's weights channels, a script's override winning as in the frame), then deformed

* on the gpu device, frame-independent deformers (LBS, DQS, rigid, IRS, the springs' default mode): a BLOCK of
  frames per dispatch, as instances of the mesh in a deformer graph of their own (static data shared, one pose
  per instance), read back once per block; the block is sized so that the graph's pools stay under
  ``memory_mb``: by default 256 MiB on a GPU and 16 MiB on a software rasteriser (llvmpipe), where bigger
  blocks fall out of the CPU caches and run slower (CesiumMan, 300 frames, best of 3: LBS 0.27 / 0.22 / 0.18 /
  0.17 / 0.21 ms per frame with 1 / 2 / 8 / 16 / 64 MiB blocks; springs 42 / 34 ms with 0.5 / 8 MiB);
* frame-dependent graphs (their state carries over from frame to frame): one frame per run, in time order;
* on the cpu device: the numpy reference, frame by frame.

The springs' warm start (``[spring] warm_start``) is turned off here: it would carry one frame's result (or a
block's, through the reused instances) into the next, and a baked frame must depend on its pose alone (it equals
``export-frame --time`` at that time exactly).

Placement is the character's. The times are clip times (seconds, the clip's playback mode applied as the
character's Playback does: ``clamp`` by default for baking) -- the same frames ``export-frame --time`` writes.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from engine.anim import global_matrices_batched, wrap_time
from engine.components import PrimitiveKey

if TYPE_CHECKING:
    from engine.scene import DeformSettings
    from engine.session import Character, Session

__all__ = ["bake", "parse_times", "pose_matrices", "morph_frames", "frame_independent", "MAX_FRAMES"]

#: frames one bake may produce (memory of the result: F x vertices x 12 bytes)
MAX_FRAMES = 100_000


def parse_times(text: str) -> np.ndarray:
    """``START:STOP:STEP`` (seconds; STOP included when it falls on a step) -> the times, float64."""
    parts = str(text).split(":")
    try:
        if len(parts) != 3:
            raise ValueError
        start, stop, step = (float(p) for p in parts)
    except ValueError:
        raise ValueError(f"--times must be START:STOP:STEP in seconds, e.g. 0:2:0.0333, got {text!r}") from None
    if not all(np.isfinite([start, stop, step])) or step <= 0 or stop < start:
        raise ValueError(f"--times needs finite START <= STOP and STEP > 0, got {text!r}")
    n = int(np.floor((stop - start) / step + 1e-9)) + 1
    if n > MAX_FRAMES:
        raise ValueError(f"--times gives {n} frames; at most {MAX_FRAMES}")
    return start + step * np.arange(n, dtype=np.float64)


def pose_matrices(character: Character, times: Sequence[float] | np.ndarray, *, mode: str = "clamp"
                  ) -> np.ndarray:
    """Node world matrices (F, N, 4, 4) of the character's current clip at clip ``times`` (placement included;
    the rest pose for a character without clips). One batched sampling and one batched FK for all frames."""
    from engine.anim import Playback
    from engine.components import Animator, Placement

    t = np.asarray(times, np.float64).reshape(-1)
    if t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError("times must be a non-empty list of finite seconds")
    s = character.session
    rig = character.loaded.rig
    f = t.shape[0]
    tr = np.broadcast_to(rig.translation, (f, *rig.translation.shape)).copy()
    q = np.broadcast_to(rig.rotation, (f, *rig.rotation.shape)).copy()
    sc = np.broadcast_to(rig.scale, (f, *rig.scale.shape)).copy()
    pb = s.world.get(character.entity, Animator).playback
    if isinstance(pb, Playback):
        sampler = pb.samplers[pb.clip]
        sampler.sample_batch(np.atleast_1d(wrap_time(t, sampler.duration, mode)), tr, q, sc)
    g = global_matrices_batched(rig, tr, q, sc)
    return np.matmul(s.world.get(character.entity, Placement).matrix, g).astype(np.float32)


def morph_frames(character: Character, times: np.ndarray, *, mode: str = "clamp") -> list[dict[int, np.ndarray]]:
    """Per time, the morph weights of the character's morphed mesh nodes (node -> (M,)): the override set by
    script, else the clip's weights channel at that time, else the rest weights; empty dicts without morphs."""
    from engine.anim import Playback
    from engine.components import Animator, MorphWeights

    s = character.session
    morph = s.world.try_get(character.entity, MorphWeights)
    if morph is None:
        return [{} for _ in range(len(times))]
    pb = s.world.get(character.entity, Animator).playback
    out = []
    for t in np.asarray(times, np.float64).reshape(-1):
        sampled = {}
        if isinstance(pb, Playback):
            sampler = pb.samplers[pb.clip]
            sampled = sampler.sample_weights(float(wrap_time(float(t), sampler.duration, mode)))
        frame = MorphWeights(morph.rest, morph.override)
        frame.update(sampled)
        out.append(frame.current)
    return out


def default_block_mb(session: Session) -> float:
    """The block budget for this session's device: small on a software rasteriser (CPU caches), large on a GPU."""
    if session.ctx is None:
        return 256.0
    renderer = str(session.ctx.info.get("GL_RENDERER", "")).lower()
    software = any(name in renderer for name in ("llvmpipe", "softpipe", "swiftshader", "software"))
    return 16.0 if software else 256.0


def _block_size(n_display: int, n_control: int, frames: int, memory_mb: float) -> int:
    # pools per instance, generously: display positions+normals (vec4 x2) and faces, control-point state of the
    # spring stages (several vec4 per point) and images; static data is shared
    per_instance = 64 * n_display + 256 * n_control + 4096
    return int(max(1, min(frames, 1024, (memory_mb * 2**20) // per_instance)))


def bake(session: Session, character: Character, times: Sequence[float] | np.ndarray, *,
         memory_mb: float | None = None, mode: str = "clamp",
         progress: Callable[[int, int], object] | None = None) -> dict[PrimitiveKey, np.ndarray]:
    """Deformed world-space display positions of every skinned primitive at each of ``times`` (see the
    module doc). ``progress(done, total)`` is called after each block / frame."""
    from engine.scene import add_to_graph

    if memory_mb is None:
        memory_mb = default_block_mb(session)
    if not (memory_mb > 0 and np.isfinite(memory_mb)):
        raise ValueError(f"memory_mb must be a positive number, got {memory_mb!r}")
    character.require_alive()
    t = np.asarray(times, np.float64).reshape(-1)
    g_all = pose_matrices(character, t, mode=mode)
    f = g_all.shape[0]
    settings = frame_independent(session.meshes.settings[character.entity])
    loaded = character.loaded
    out: dict[PrimitiveKey, np.ndarray] = {}
    done = 0
    total = f * len(loaded.skinned)
    weights = morph_frames(character, t, mode=mode)
    for sp in loaded.skinned:
        key = PrimitiveKey(sp.node, sp.mesh, sp.prim)
        res = np.empty((f, sp.primitive.vertex_count, 3), np.float32)
        out[key] = res
        morphed = bool(sp.primitive.target_count)
        if session.graph is None:  # numpy reference, frame by frame
            for i in range(f):
                res[i] = sp.deform(g_all[i], settings.deformer, config=settings.config,
                                   morph=weights[i].get(sp.node) if morphed else None)
                done += 1
                if progress is not None:
                    progress(done, total)
            continue
        from engine.skinning.gpu.graph import DeformerGraph

        assert session.ctx is not None and session.resources is not None  # a GPU session (graph is set)
        graph = DeformerGraph(session.ctx, session.resources, programs=session.programs)
        try:
            if settings.frame_dependent:  # state carries over: one instance, the frames in order
                blocks = [[i] for i in range(f)]
                handles = [add_to_graph(graph, sp, loaded, settings)]
            else:
                topo = sp.topology()
                b = _block_size(topo.n_display, topo.n_control, f, memory_mb)
                blocks = [list(range(i, min(i + b, f))) for i in range(0, f, b)]
                with graph.deferred_layout():  # one layout for the whole block
                    first = add_to_graph(graph, sp, loaded, settings)
                    handles = [first] + graph.add_instances(first, b - 1)
            skin_all = sp.skin_matrices(g_all)  # (F,J,4,4): every frame's skin matrices in one product
            joints_all = g_all[:, sp.skin.joints]
            for block in blocks:
                graph.set_poses(handles[:len(block)], skin_all[block], joints_all[block])
                if morphed:
                    for h, i in zip(handles, block):
                        graph.set_morph_weights(h, weights[i][sp.node])
                graph.run()
                for i, pos in zip(block, graph.download_positions(handles[:len(block)])):
                    res[i] = pos
                done += len(block)
                if progress is not None:
                    progress(done, total)
        finally:
            graph.release()
    from engine.skinning.morph import morph

    for key, prim in loaded.morphed_rigid_primitives():  # static meshes morph too (numpy, as the frame does)
        res = np.empty((f, prim.vertex_count, 3), np.float32)
        for i in range(f):
            g = g_all[i, key.node]
            res[i] = morph(prim.positions, prim.target_positions, weights[i].get(key.node)) @ g[:3, :3].T + g[:3, 3]
        out[key] = res
    return out


def frame_independent(settings: DeformSettings) -> DeformSettings:
    """The settings with the springs' warm start off (module doc): each frame from its pose alone."""
    spring = settings.config.spring
    if not spring.warm_start:
        return settings
    config = dataclasses.replace(settings.config, spring=spring.replace(warm_start=False))
    return dataclasses.replace(settings, config=config)


def describe_mode(session: Session, character: Character) -> str:
    """How a bake of this character runs, for the command's message."""
    if session.graph is None:
        return "numpy reference, frame by frame"
    if session.meshes.settings[character.entity].frame_dependent:
        return "frame-dependent graph, stepped in time order"
    return "blocks of frames per dispatch"

