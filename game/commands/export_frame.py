"""`python main.py export-frame`: deformed world-space vertices of one frame, to .npz or .obj.

Keys are ``node{n}_mesh{m}_prim{p}`` (glTF node of the instance, mesh index, primitive index), values float32
(N,3) in glTF vertex order, for every skinned primitive instanced in the default scene (an asset with none is
refused: one ``error:`` line, exit 2, nothing written). The character is
spawned in a :class:`engine.Session` holding ``--clip`` at ``--time`` (clamped, as glTF players hold the first /
last key), deformed once by ``--deformer`` on ``--device`` (the compute-shader graph, read back once, or the
numpy reference) and read back.

Baking (``--times START:STOP:STEP`` or ``--frames N``, N frames from 0 to the clip's end): every frame in one
process (engine/bake.py: frame-independent deformers evaluate a block of frames per dispatch). ``--out F.npz``
then holds, per key, float32 (F, N, 3) (a leading frame axis) and ``times`` float64 (F,) clip seconds;
``--out DIR/`` writes ``DIR/frame_0000.obj`` ... (one OBJ per frame, as the single-frame OBJ).
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from engine.components import PrimitiveKey
from engine.log import progress

__all__ = ["export_frame", "deformer_config", "deformed_frame", "write_obj"]


def deformer_config(args: argparse.Namespace):
    """The deformer configuration from --config and the --spring-* overrides (None when all are default)."""
    overrides = {}
    if getattr(args, "spring_iterations", None) is not None:
        overrides["spring_iterations"] = args.spring_iterations
    if getattr(args, "spring_dt", None) is not None:
        overrides["spring_dt"] = args.spring_dt
    if not overrides and not getattr(args, "config", None):
        return None
    from engine.skinning.config import DeformerConfig, load_config

    cfg = load_config(args.config) if getattr(args, "config", None) else DeformerConfig()
    return cfg.with_overrides(**overrides) if overrides else cfg


def check_time(time: float) -> float:
    if not math.isfinite(time):
        raise ValueError(f"--time must be a finite number of seconds, got {time}")
    return float(time)


def deformed_frame(asset, *, clip, time: float, deformer: str = "lbs", device: str = "cpu",
                   config=None) -> dict[PrimitiveKey, np.ndarray]:
    """Deformed world-space display positions of every skinned (or morphed) primitive instance of ``asset`` (a path, a
    generated character's name or a loaded Asset) holding ``clip`` at ``time`` seconds."""
    from engine import Session

    check_time(time)
    with Session(device=device, render=False, deformer=deformer, config=config, strict=True) as s:
        ch = s.spawn(s.load(asset), clip=clip, time=time, speed=0.0, mode="clamp")
        keys = set(ch.skinned_primitives) | {k for k, _ in ch.loaded.morphed_rigid_primitives()}
        return {k: v for k, v in ch.vertices().items() if k in keys}


def write_obj(path: Path, asset, frames: dict[PrimitiveKey, np.ndarray]) -> None:
    """One OBJ object per primitive instance, with its triangles (1-based, per object offsets)."""
    lines = ["# export-frame: deformed world-space vertices"]
    base = 1
    for key, pos in frames.items():
        tris = asset.meshes[key.mesh].primitives[key.primitive].indices
        lines.append(f"o {key.export_key}")
        lines.extend(f"v {x:.7g} {y:.7g} {z:.7g}" for x, y, z in pos.tolist())
        lines.extend(f"f {a + base} {b + base} {c + base}" for a, b, c in tris.tolist())
        base += pos.shape[0]
    path.write_text("\n".join(lines) + "\n")


def frame_times(args: argparse.Namespace, asset) -> np.ndarray | None:
    """The baked frames' clip times from ``--times START:STOP:STEP`` or ``--frames N`` (None: one frame)."""
    from engine.bake import MAX_FRAMES, parse_times

    times, count = getattr(args, "times", None), getattr(args, "frames", None)
    if times is not None and count is not None:
        raise ValueError("give --times or --frames, not both")
    if times is not None:
        parsed = parse_times(times)
        _check_bake_memory(len(parsed), asset)
        return parsed
    if count is None:
        return None
    if isinstance(count, bool) or not 1 <= int(count) <= MAX_FRAMES:
        raise ValueError(f"--frames must be in [1, {MAX_FRAMES}], got {count}")
    _check_bake_memory(int(count), asset)
    end = 0.0
    if asset.clips:
        end = float(asset.clips[asset.clip_index(args.clip)].duration)
    return np.linspace(0.0, end, int(count)) if count > 1 else np.zeros(1)


#: bytes per vertex per baked frame: float32 x, y, z, held twice (the baked array and the copy being written)
BAKE_BYTES_PER_VERTEX = 12 * 2


def _check_bake_memory(frames: int, asset) -> None:
    """Refuse ``--frames`` whose baked vertices (frames x vertices x 12 bytes, twice) do not fit in the memory
    this process may still allocate, before anything is allocated: one line with the estimate and the limit."""
    from engine.render.targets import available_memory

    vertices = sum(len(p.positions) for m in asset.meshes for p in m.primitives)
    need = frames * vertices * BAKE_BYTES_PER_VERTEX
    limit = available_memory()
    if limit is not None and need > limit[0]:
        fits = max(1, limit[0] // max(1, vertices * BAKE_BYTES_PER_VERTEX))
        raise ValueError(f"--frames {frames}: baking {vertices} vertices needs about {need / 2**30:.1f} GiB "
                         f"({frames} x {vertices} x {BAKE_BYTES_PER_VERTEX} bytes), over the "
                         f"{limit[0] / 2**30:.1f} GiB of {limit[1]}; at most --frames {fits} fits")


def export_frames(args: argparse.Namespace, loaded, times: np.ndarray) -> int:
    """Many frames in one process (engine/bake.py): one .npz with a leading frame axis per key and the clip
    times under ``times``, or one OBJ per frame into a folder (``--out DIR/``)."""
    from engine import Session
    from engine.bake import bake, describe_mode
    from engine.scene import require_finite

    out = Path(args.out)
    to_dir = str(args.out).endswith(("/", "\\")) or out.is_dir()
    if not to_dir and out.suffix.lower() != ".npz":
        raise ValueError(f"with --times/--frames, --out must end in .npz or name a folder (DIR/), got {out.name!r}")
    with Session(device=args.device, render=False, deformer=args.deformer, config=deformer_config(args),
                 strict=True) as s:
        ch = s.spawn(loaded, clip=args.clip, speed=0.0, mode="clamp")
        with progress(total=len(times) * max(1, len(ch.skinned_primitives)), desc="baking", unit="frame") as bar:
            frames = bake(s, ch, times, progress=lambda done, total: bar.update(done - bar.n))
        how = describe_mode(s, ch)
    require_finite(frames)
    if to_dir:
        out.mkdir(parents=True, exist_ok=True)
        width = max(4, len(str(len(times) - 1)))
        for i in range(len(times)):
            write_obj(out / f"frame_{i:0{width}d}.obj", loaded.asset, {k: v[i] for k, v in frames.items()})
        where = f"{out}/frame_{'0' * width}.obj .. frame_{len(times) - 1:0{width}d}.obj"
    else:
        arrays: dict[str, Any] = {"times": times.astype(np.float64)}  # Any: np.savez's keywords are arrays
        arrays.update((k.export_key, v) for k, v in frames.items())
        np.savez(out, **arrays)
        where = str(out)
    n = sum(v.shape[1] for v in frames.values())
    print(f"wrote {where}: {len(times)} frames x {len(frames)} skinned primitive instance(s), {n} vertices "
          f"({args.deformer}, {args.device}: {how})")
    return 0


def export_frame(args: argparse.Namespace) -> int:
    from engine.scene import quiet_load, require_finite

    loaded = quiet_load(args.asset)
    # the contract is skinned (and morphed) primitives: an empty .npz would look like success
    if not loaded.skinned and not loaded.morphed_rigid_primitives():
        raise ValueError(f"{args.asset}: nothing to export: the asset has no skinned mesh primitive in its default "
                         "scene (export-frame writes deformed skinned vertices; `render` draws static meshes)")
    times = frame_times(args, loaded.asset)
    if times is not None:
        return export_frames(args, loaded, times)
    out = Path(args.out)
    if out.suffix.lower() not in (".npz", ".obj"):
        raise ValueError(f"--out must end in .npz or .obj, got {out.name!r}")
    check_time(args.time)
    frames = deformed_frame(loaded.asset, clip=args.clip, time=args.time, deformer=args.deformer,
                            device=args.device, config=deformer_config(args))
    require_finite(frames)
    if out.suffix.lower() == ".obj":
        write_obj(out, loaded.asset, frames)
    else:
        single: dict[str, Any] = {k.export_key: np.asarray(v, np.float32) for k, v in frames.items()}
        np.savez(out, **single)
    n = sum(v.shape[0] for v in frames.values())
    print(f"wrote {out}: {len(frames)} skinned primitive instance(s), {n} vertices "
          f"({args.deformer}, {args.device})")
    return 0
