"""Weight edits of an asset, shared by the ``weights`` / ``influence`` commands, the editor's Weights tool and the
benchmarks: the posed skin matrices of a clip frame, Mohr's drag of one vertex, the trajectories the co-movement
score reads, and writing edited weights back to a .glb (every row >= 0, summing to 1, within a limit).

The numerics live in engine.skinning.weights; this module spawns the character in an engine.Session (so a drag
uses exactly the joint matrices ``export-frame`` skins with, placement and ground lift included) and packs the
results into the file.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.components import PrimitiveKey
from engine.skinning.weights.io import PrimitiveWeights, save_weights
from engine.skinning.weights.table import check_valid, to_slots

__all__ = ["posed_skin_matrices", "drag", "drag_poses", "DragEdit", "trajectories", "clip_times", "write_weights",
           "joint_worlds", "comovement_seed"]


def _session(loaded: Any, clip: Any, time: float):
    from engine import Session

    if not np.isfinite(time):
        raise ValueError(f"--time must be a finite number of seconds, got {time}")
    s = Session(device="cpu", render=False, deformer="lbs", strict=True)
    # an asset without clips holds its rest pose (whatever --clip says)
    ch = s.spawn(loaded, clip=clip if loaded.asset.clips else None, time=time, speed=0.0, mode="clamp")
    return s, ch


def posed_skin_matrices(loaded: Any, prims: Sequence[PrimitiveWeights], *, clip: Any, time: float
                        ) -> dict[PrimitiveKey, np.ndarray]:
    """Per primitive the (J,4,4) float32 skin matrices (joint world x inverse bind) of ``clip`` held at ``time``
    (clamped), as the engine deforms that frame."""
    s, ch = _session(loaded, clip, time)
    with s:
        ch.vertices()  # settle the pose
        world = ch.joints()
    return {p.key: (world[p.joint_nodes].astype(np.float64) @ p.inverse_bind.astype(np.float64)).astype(np.float32)
            for p in prims}


class DragEdit:
    """The result of :func:`drag`: the primitive's new dense weights, the rows changed and the hull."""

    def __init__(self, prim: PrimitiveWeights, dense: np.ndarray, rows: np.ndarray, result: Any) -> None:
        self.prim, self.dense, self.rows, self.result = prim, dense, rows, result


def drag(loaded: Any, prim: PrimitiveWeights, vertex: int, target: Sequence[float] | np.ndarray, *, clip: Any,
         time: float, joints: Sequence[str] | None = None, skin_mats: np.ndarray | None = None) -> DragEdit:
    """Mohr's drag of display vertex ``vertex`` to world point ``target`` at the frame: the influencing joints
    are the vertex's current non-zero ones or the named ``joints``. The vertex and the display vertices welded
    to it (a seam: one surface point, which the GPU path skins as one control point) get the new weights."""
    from engine.skinning.weights.mohr import drag_vertex

    t = np.asarray(target, np.float64).reshape(-1)
    if t.shape != (3,) or not np.isfinite(t).all():
        raise ValueError(f"--target must be three finite numbers X,Y,Z, got {list(np.asarray(target).reshape(-1))}")
    dense = prim.dense()
    idx = _drag_joints(prim, dense, vertex, joints)
    if skin_mats is None:
        skin_mats = posed_skin_matrices(loaded, [prim], clip=clip, time=time)[prim.key]
    res = drag_vertex(prim.positions[vertex], skin_mats, idx, dense[vertex, idx], t)
    rows = welded_with(prim, vertex)
    new = dense.copy()
    new[rows] = 0
    new[np.ix_(rows, idx)] = res.weights[None, :]
    return DragEdit(prim, new, rows, res)


def _drag_joints(prim: PrimitiveWeights, dense: np.ndarray, vertex: int, joints: Sequence[str] | None) -> np.ndarray:
    """The influencing joints of a drag: the named ``joints`` (distinct), else the vertex's non-zero ones."""
    if joints:
        idx = np.array([prim.joint_index(n, "--joints") for n in joints], np.int64)
        if len(set(idx.tolist())) != idx.size:
            raise ValueError(f"--joints names a joint twice: {list(joints)}")
        return idx
    return np.flatnonzero(dense[vertex] > 0)


def drag_poses(loaded: Any, prim: PrimitiveWeights, vertex: int, poses: Sequence[tuple[Any, float, Any]], *,
               joints: Sequence[str] | None = None) -> DragEdit:
    """Mohr's multi-pose drag: ``poses`` (clip, time, world target) triples constrain one vertex; its weights are
    the least-squares compromise (the stacked targets projected onto the stacked hull, engine.skinning.weights
    .mohr.drag_vertex_poses). One pose is exactly :func:`drag`. The result's ``reached`` stacks the poses."""
    from engine.skinning.weights.mohr import drag_vertex_poses

    if not poses:
        raise ValueError("poses: at least one (clip, time, target) is needed")
    if len(poses) == 1:
        clip, time, target = poses[0]
        return drag(loaded, prim, vertex, target, clip=clip, time=time, joints=joints)
    targets = []
    for _, _, target in poses:
        t = np.asarray(target, np.float64).reshape(-1)
        if t.shape != (3,) or not np.isfinite(t).all():
            raise ValueError(f"target must be three finite numbers X,Y,Z, got {list(np.asarray(target).reshape(-1))}")
        targets.append(t)
    dense = prim.dense()
    idx = _drag_joints(prim, dense, vertex, joints)
    mats = [posed_skin_matrices(loaded, [prim], clip=clip, time=float(time))[prim.key] for clip, time, _ in poses]
    res = drag_vertex_poses(prim.positions[vertex], mats, idx, dense[vertex, idx], targets)
    rows = welded_with(prim, vertex)
    new = dense.copy()
    new[rows] = 0
    new[np.ix_(rows, idx)] = res.weights[None, :]
    return DragEdit(prim, new, rows, res)


def welded_with(prim: PrimitiveWeights, vertex: int) -> np.ndarray:
    """The display vertices at the position of ``vertex`` (itself included), as the GPU path welds them."""
    if prim.skinned is not None:
        topo = prim.skinned.topology()
        c = topo.control_of_display
        return np.flatnonzero(c == c[vertex])
    return np.array([vertex])


def clip_times(asset: Any, clip: Any, frames: int) -> np.ndarray:
    """N frame times evenly spread from 0 to the clip's end (``export-frame --frames N``)."""
    from engine.bake import MAX_FRAMES

    if isinstance(frames, bool) or not 1 <= int(frames) <= MAX_FRAMES:
        raise ValueError(f"--frames must be in [1, {MAX_FRAMES}], got {frames}")
    end = float(asset.clips[asset.clip_index(clip)].duration) if asset.clips else 0.0
    return np.linspace(0.0, end, int(frames)) if frames > 1 else np.zeros(1)


def trajectories(loaded: Any, clip: Any, times: np.ndarray, *, device: str = "cpu",
                 deformer: str = "lbs") -> dict[PrimitiveKey, np.ndarray]:
    """(F, V, 3) deformed world positions per skinned primitive at ``times`` (engine.bake)."""
    from engine import Session
    from engine.bake import bake

    with Session(device=device, render=False, deformer=deformer, strict=True) as s:
        ch = s.spawn(loaded, clip=clip if loaded.asset.clips else None, speed=0.0, mode="clamp")
        return bake(s, ch, times)


def joint_worlds(loaded: Any, prim: PrimitiveWeights, clip: Any, times: np.ndarray) -> np.ndarray:
    """(F, J, 4, 4) world matrices of the primitive's skin joints at the frame ``times`` of ``clip``."""
    from engine import Session

    out = np.zeros((len(times), prim.n_joints, 4, 4))
    with Session(device="cpu", render=False, deformer="lbs", strict=True) as s:
        ch = s.spawn(loaded, clip=clip if loaded.asset.clips else None, time=float(times[0]), speed=0.0,
                     mode="clamp")
        for f, t in enumerate(times):
            if loaded.asset.clips:
                ch.play(clip, time=float(t), speed=0.0)
            ch.vertices()
            out[f] = ch.joints()[prim.joint_nodes]
    return out


def comovement_seed(loaded: Any, prim: PrimitiveWeights, clip: Any, *, frames: int = 30,
                    threshold: float = 0.75) -> np.ndarray:
    """(D, J) bool: the joints each display vertex may take in automatic weights, from co-movement regions over
    ``clip`` (Lewis and Anjyo). Joint j's reference trajectory is the middle of its bone (engine.skinning.weights
    .auto.bone_segments: a point that moves rigidly with the joint) carried by its skin matrix; its region is
    every vertex scoring >= ``threshold`` against it. A joint whose bone does not move over the clip has no
    region to tell, so it stays allowed everywhere."""
    from engine.skinning.weights.auto import bone_segments
    from engine.skinning.weights.influence import comovement

    if not (np.isfinite(threshold) and 0 <= threshold <= 1):
        raise ValueError(f"--seed-threshold must be in [0, 1], got {threshold}")
    times = clip_times(loaded.asset, clip, frames)
    traj = trajectories(loaded, clip, times)[prim.key]
    worlds = joint_worlds(loaded, prim, clip, times)
    owner, a, b = bone_segments(prim.bind_joint_positions(), prim.skinned.parents)
    first = np.unique(owner, return_index=True)[1]
    mid = np.concatenate([(a[first] + b[first]) / 2.0, np.ones((first.size, 1))], axis=1)  # (J, 4) bind points
    skin = worlds @ prim.inverse_bind.astype(np.float64)[None]
    ref = np.einsum("fjab,jb->fja", skin, mid)[..., :3]  # (F, J, 3)
    allowed = np.ones((traj.shape[1], prim.n_joints), bool)
    for j in range(prim.n_joints):
        r = ref[:, j] - ref[:, j].mean(axis=0)
        if np.sqrt((r * r).sum() / len(times)) > 1e-9 * max(_extent(traj), 1e-12):
            allowed[:, j] = comovement(ref[:, j], traj) >= threshold
    return allowed


def _extent(traj: np.ndarray) -> float:
    """The largest bounding-box diagonal of the trajectories' frames (F, V, 3)."""
    return float(np.linalg.norm(traj.max(axis=1) - traj.min(axis=1), axis=1).max())


def write_weights(source: str | Path, out: str | Path, edits: dict[PrimitiveKey, tuple[PrimitiveWeights, np.ndarray]],
                  *, locked: dict[PrimitiveKey, np.ndarray] | None = None, limit: int | None = None) -> Path:
    """Pack dense weights per primitive into slots (at least the primitive's own slot count) and write the .glb;
    every row is checked (>= 0, sums to 1, at most ``limit`` influences) before anything is written."""
    updates = {}
    for key, (prim, dense) in edits.items():
        lk = None if locked is None else locked.get(key)
        j, w = to_slots(dense, min_slots=prim.slots, locked=lk)
        check_valid(j, w, limit=limit)
        updates[(key.mesh, key.primitive)] = (j, w, prim.n_joints)
    return save_weights(source, out, updates)


def isoline_samples(loaded: Any, prim: PrimitiveWeights, strokes: Any, *, device: str = "gpu") -> list[Any]:
    """The isoline strokes of a strokes file (engine.input.strokefile.StrokeFile, role "isoline") as surface
    samples of ``prim`` (engine.skinning.weights.spline.SplineSamples over its welded control points): world
    points go to the closest point of the bind surface, window points through the G-buffer of the rest pose seen
    by the file's camera (as the ``edit`` command's surface strokes)."""
    from engine.skinning.weights.spline import SplineSamples, closest_surface_points

    topo = prim.skinned.topology()
    edges = topo.edges
    step = 0.5 * float(np.linalg.norm(topo.positions[edges[:, 0]] - topo.positions[edges[:, 1]], axis=1).mean())
    out: list[Any] = []
    window = [s for s in strokes.strokes if s.space == "window"]
    picked: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if window:
        picked = _window_samples(loaded, prim, strokes, window, device)
    for s in strokes.strokes:
        if s.space == "world":
            pts = _densify3(np.asarray(s.points, np.float64), step)
            faces, bary = closest_surface_points(topo.positions, topo.triangles, pts)
        else:
            faces, bary = picked[s.index]
        x = np.einsum("nk,nkd->nd", bary, topo.positions[topo.triangles[faces]])
        seg = np.linalg.norm(np.diff(x, axis=0), axis=1) if len(x) > 1 else np.zeros(0)
        along = np.concatenate([[0.0], np.cumsum(seg)])
        along = along / along[-1] if along[-1] > 0 else np.zeros_like(along)
        out.append(SplineSamples(faces, bary, along, np.zeros(1)))
    return out


def _densify3(p: np.ndarray, step: float) -> np.ndarray:
    out = [p[:1]]
    for a, b in zip(p[:-1], p[1:]):
        n = max(1, int(np.ceil(float(np.linalg.norm(b - a)) / max(step, 1e-12))))
        n = min(n, 4096)
        out.append(a + (b - a) * (np.arange(1, n + 1) / n)[:, None])
    return np.concatenate(out)


def _window_samples(loaded: Any, prim: PrimitiveWeights, strokes: Any, window: list[Any], device: str
                    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    from engine import Session
    from engine.authoring.surface import stroke_samples
    from engine.authoring.view import strokes_camera

    if strokes.camera is None:
        raise ValueError(f"{window[0].where}: window-space points need a 'camera' in the file")
    out = {}
    with Session(device=device, width=strokes.camera.width, height=strokes.camera.height, deformer="lbs",
                 strict=True) as s:
        ch = s.spawn(loaded, clip=None)
        ch.vertices()
        bounds = s.bounds()
        if bounds is None:
            raise ValueError("the asset's default scene has no meshes to draw isolines on")
        s.camera = strokes_camera(strokes.camera, *bounds)
        s.render()
        for spec in window:
            got = stroke_samples(s, np.asarray(spec.points, np.float64), spec.where)
            if got.key != prim.key:
                raise ValueError(f"{spec.where}: the stroke lies on {got.key.export_key}, not on "
                                 f"{prim.key.export_key} (the joint's primitive)")
            out[spec.index] = (np.asarray(got.faces, np.int64), np.asarray(got.barycentrics, np.float64))
    return out


def spline_edit(loaded: Any, prim: PrimitiveWeights, joint: int, strokes: Any, isos: Sequence[float], *,
                local: bool = False, device: str = "gpu") -> tuple[np.ndarray, Any]:
    """The primitive's dense weights with ``joint``'s field solved from the isolines (iso-values ``isos``, one
    per stroke), the other joints renormalised around it and limited to the primitive's slot count (the
    edited joint kept); and the SplineField (for its anchor basis)."""
    from engine.skinning.weights.spline import SplineField
    from engine.skinning.weights.table import set_column

    topo = prim.skinned.topology()
    samples = isoline_samples(loaded, prim, strokes, device=device)
    dense = prim.dense()
    current = dense[topo.display_of_control, joint]
    field = SplineField(topo.positions, topo.triangles, current, samples, local=local, topology=topo)
    w = field.weights(np.asarray(isos, np.float64))
    # the rest goes to the nearest other joint where a vertex had no other influence
    jp = prim.bind_joint_positions()
    d = np.linalg.norm(prim.positions[:, None, :] - jp[None], axis=2)
    d[:, joint] = np.inf
    out = set_column(dense, joint, w[topo.control_of_display], np.argmin(d, axis=1))
    # within the file's influence slots: the edited joint is kept, the smallest other weights give way
    from engine.skinning.weights.paint import limit

    frozen = np.zeros(prim.n_joints, bool)
    frozen[joint] = True
    return limit(out, prim.slots, frozen), field


def auto_weights(prim: PrimitiveWeights, method: str, max_influences: int, *, seed: np.ndarray | None = None
                 ) -> np.ndarray:
    """(D, J) automatic weights of the primitive (engine.skinning.weights.auto), valid and limited. ``seed``
    (D, J) bool (:func:`comovement_seed`): each vertex keeps only the joints it allows (a vertex allowing none of
    the joints the method gave it keeps them all)."""
    from engine.skinning.weights.auto import METHODS, bbw_weights, finish_auto, heat_weights

    if method not in METHODS:
        raise ValueError(f"--method must be one of {METHODS}, got {method!r}")
    if isinstance(max_influences, bool) or not 1 <= int(max_influences) <= 64:
        raise ValueError(f"--max-influences must be an integer in [1, 64], got {max_influences}")
    topo = prim.skinned.topology()
    jp = prim.bind_joint_positions()
    fn = heat_weights if method == "heat" else bbw_weights
    w = fn(topo.positions, topo.triangles, jp, prim.skinned.parents)
    if seed is not None:
        # a control point allows a joint when every display vertex welded to it does (they share one weight row)
        allow = np.ones(w.shape, bool)
        np.logical_and.at(allow, topo.control_of_display, np.asarray(seed, bool))
        kept = np.where(allow, np.clip(w, 0.0, None), 0.0)
        ok = kept.max(axis=1) > 1e-4  # finish_auto's prune: a row needs one weight that survives it
        w = np.where(ok[:, None], kept, w)
    return finish_auto(w, int(max_influences))[topo.control_of_display]
