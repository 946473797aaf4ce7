"""Line-of-action posing (research 7.2, Fig. 29-31): a baseline stroke selects joints, an offset stroke says
where they go; the result is a local rotation delta per joint (bone lengths kept).

* Selection (:func:`select_chain`): a joint chain, the joints along the one path of the skeleton that the
  baseline ``b`` follows. Among the skin joints within ``brush_radius`` of ``b`` (the brush only decides which
  chain), the joint nearest ``b``'s start point and the joint nearest its end point are the chain's ends; the
  chain is the tree path between them (through their lowest common ancestor when they lie on two branches),
  ordered root-outwards. Each selected joint ``j`` gets ``t_j`` (the arc parameter of its closest stroke point)
  and ``d_j = j - b(t_j)``.
* Targets: ``R_j = F(o, t_j) F(b, t_j)^-1`` from the strokes' rotation-minimising frames
  (:meth:`engine.input.strokes.Stroke.frames`) and ``target_j = o(t_j) + R_j d_j``; both strokes are read at the
  same arc-length fraction. So that the two frames are comparable, both start from one reference normal: the
  caller's (the posing plane's normal for window strokes), else the normal of the plane the strokes span; the
  offset's start normal is the baseline's carried over by the shortest arc between their start tangents.
* Solve, root-outwards (parents before children, research: "starting with the joint closest to the skeleton
  root"): each selected joint is turned so that its selected descendants (those whose nearest selected ancestor
  it is) point at their targets: the shortest arc for one, the least-squares rotation (Kabsch) for several. A
  selected joint with no selected descendant is turned by ``R_j`` itself (it takes the offset's orientation).
  Nothing translates: a selected root stays where it is, and unselected joints follow their parents.
* Output: per-node local rotation deltas ``D`` in the parent's space, ``posed = D * local`` (quaternions xyzw),
  which is what a :class:`engine.components.PoseLayer` adds on top of the playing clip.

All numpy, float64 inside; nothing here touches the GPU or the world.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.anim.fk import global_matrices
from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.input.strokes import Stroke
from engine.math import quat

__all__ = ["LineOfAction", "skin_joints", "select_joints", "tree_path", "select_chain", "common_normal",
           "stroke_rotations", "solve_line_of_action", "apply_rotation_deltas", "world_rotations"]


@dataclass
class LineOfAction:
    """The result of one baseline/offset pair.

    ``selected`` (S,) node indices in hierarchy order; ``t`` (S,) their baseline parameters; ``d`` (S,3) their
    offsets from the baseline; ``rotations`` (S,3,3) ``R_j``; ``targets`` (S,3) world targets; ``deltas`` (N,4)
    float32 local rotation deltas (identity for untouched nodes); ``pose`` the posed local pose."""

    selected: np.ndarray
    t: np.ndarray
    d: np.ndarray
    rotations: np.ndarray
    targets: np.ndarray
    deltas: np.ndarray
    pose: Pose


def skin_joints(rig: Rig) -> np.ndarray:
    """The nodes a line of action may select: every skin's joints, except nodes given as matrices (glTF does
    not animate those), ascending."""
    if not rig.skins:
        return np.zeros(0, np.intp)
    joints = np.unique(np.concatenate([np.asarray(s.joints, np.intp) for s in rig.skins]))
    return joints[~rig.has_matrix[joints]]


def world_rotations(matrices: np.ndarray) -> np.ndarray:
    """The rotation (...,3,3) float64 of affine matrices (...,4,4): the nearest rotation to the upper-left block
    (polar decomposition, so scale is dropped)."""
    a = np.asarray(matrices, np.float64)[..., :3, :3]
    u, _s, vt = np.linalg.svd(a)
    flip = np.linalg.det(u @ vt) < 0
    u[flip, :, 2] *= -1  # a mirrored matrix: the proper rotation closest to it
    return u @ vt


def select_joints(positions: np.ndarray, candidates: np.ndarray, baseline: Stroke,
                  brush_radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidates within ``brush_radius`` of ``baseline``: (indices, t, distance), in candidate order."""
    if not (np.isfinite(brush_radius) and brush_radius > 0):
        raise ValueError(f"brush_radius must be a finite number > 0, got {brush_radius!r}")
    hits = [(int(j), *baseline.closest(np.asarray(positions[j], np.float64))) for j in candidates]
    keep = [h for h in hits if h[2] <= brush_radius]
    if not keep:
        return np.zeros(0, np.intp), np.zeros(0), np.zeros(0)
    idx, t, dist = zip(*keep)
    return np.asarray(idx, np.intp), np.asarray(t, np.float64), np.asarray(dist, np.float64)


def tree_path(parents: np.ndarray, a: int, b: int) -> np.ndarray:
    """The nodes on the path between nodes ``a`` and ``b`` of the tree ``parents`` (-1 for roots): ``a`` up to
    their lowest common ancestor, then down to ``b``, both ends included. ValueError when they lie in two
    trees (no common ancestor)."""
    up_a = [int(a)]
    while parents[up_a[-1]] >= 0:
        up_a.append(int(parents[up_a[-1]]))
    rank = {n: k for k, n in enumerate(up_a)}
    up_b = [int(b)]
    while up_b[-1] not in rank:
        p = int(parents[up_b[-1]])
        if p < 0:
            raise ValueError(f"nodes {a} and {b} lie in two separate trees: no path joins them")
        up_b.append(p)
    return np.asarray(up_a[:rank[up_b[-1]] + 1] + up_b[-2::-1], np.intp)


def select_chain(rig: Rig, positions: np.ndarray, candidates: np.ndarray, baseline: Stroke,
                 brush_radius: float) -> tuple[np.ndarray, np.ndarray]:
    """The joint chain the baseline follows: (node indices root-outwards (by depth, then index), their ``t``).

    Among the ``candidates`` within ``brush_radius`` of ``baseline``, the one nearest the baseline's start point
    and the one nearest its end point (ties: the shallower, then the lower index) are the chain's ends; every
    candidate on the tree path between them is selected (a non-candidate on the path, e.g. a node given as a
    matrix, is skipped: its joints' rotations carry past it). One joint when both ends are the same joint.
    Empty when no candidate lies within the brush."""
    near, _t, _dist = select_joints(positions, candidates, baseline, brush_radius)
    if near.size == 0:
        return near, np.zeros(0)
    pos = np.asarray(positions, np.float64)[near]

    def nearest(point: np.ndarray) -> int:
        gap = np.linalg.norm(pos - point, axis=1)
        return int(near[np.lexsort((near, rig.depth[near], gap))[0]])

    first, last = nearest(baseline.point(0.0)), nearest(baseline.point(1.0))
    path = tree_path(rig.parents, first, last)
    sel = path[np.isin(path, candidates)]
    sel = sel[np.lexsort((sel, rig.depth[sel]))]
    t = np.asarray([baseline.closest(np.asarray(positions[j], np.float64))[0] for j in sel], np.float64)
    return sel, t


def common_normal(*strokes: Stroke) -> np.ndarray | None:
    """The normal of the plane that best fits the strokes (least-variance direction of their points), or None
    when they all lie on one line (no plane)."""
    pts = np.vstack([s.point(np.linspace(0.0, 1.0, 33)) for s in strokes])
    centred = pts - pts.mean(axis=0)
    _u, sv, vt = np.linalg.svd(centred, full_matrices=False)
    if len(sv) < 3 or not sv[1] > 1e-9 * max(sv[0], 1e-300):
        return None
    return vt[2] / np.linalg.norm(vt[2])


def stroke_rotations(baseline: Stroke, offset: Stroke, t: np.ndarray,
                     reference: np.ndarray | None = None) -> np.ndarray:
    """``R_j = F(o, t_j) F(b, t_j)^-1`` (M,3,3) for parameters ``t`` (M,), from comparable frames: the baseline's
    from ``reference`` (default :func:`common_normal`), the offset's from the baseline's start normal carried
    onto the offset's start tangent by the shortest arc."""
    if baseline.dim != 3 or offset.dim != 3:
        raise ValueError("line-of-action strokes must be 3D (unproject window strokes first)")
    tt = np.atleast_1d(np.asarray(t, np.float64))
    ref = common_normal(baseline, offset) if reference is None else np.asarray(reference, np.float64)
    fb = np.atleast_3d(baseline.frames(tt, ref)).reshape(-1, 3, 3)
    n0 = baseline.frames(0.0, ref)[:, 1]
    carry = quat.between(baseline.tangent(0.0), offset.tangent(0.0))
    fo = np.atleast_3d(offset.frames(tt, quat.rotate(carry, n0))).reshape(-1, 3, 3)
    return fo @ np.swapaxes(fb, 1, 2)


def _fit_rotation(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The rotation (3,3) turning directions ``u`` (K,3) onto ``v`` (K,3): the shortest arc for one pair (or
    pairs all along one line), else the least-squares fit (Kabsch)."""
    if len(u) > 1:
        h = u.T @ v
        uu, sv, vt = np.linalg.svd(h)
        su = np.linalg.svd(u, compute_uv=False)
        if su[1] > 1e-6 * su[0]:
            dfix = np.diag([1.0, 1.0, float(np.sign(np.linalg.det(vt.T @ uu.T)) or 1.0)])
            return vt.T @ dfix @ uu.T
        u, v = u.sum(axis=0, keepdims=True), v.sum(axis=0, keepdims=True)
    if not (np.linalg.norm(u[0]) > 1e-12 and np.linalg.norm(v[0]) > 1e-12):
        return np.eye(3)
    return quat.to_matrix(quat.between(u[0], v[0]))


def apply_rotation_deltas(pose: Pose, deltas: np.ndarray, out: Pose | None = None) -> Pose:
    """``out.rotation = deltas * pose.rotation`` per node (parent-space deltas, xyzw); translation and scale are
    copied. ``out`` may be ``pose`` (in place); a new pose is returned when it is None."""
    d = np.asarray(deltas)
    if d.shape != (pose.count, 4):
        raise ValueError(f"rotation deltas must be ({pose.count}, 4), got {d.shape}")
    res = out if out is not None else pose.copy()
    if res is not pose:
        res.copy_from(pose)
    res.rotation[...] = quat.normalize(quat.multiply(d.astype(np.float32), pose.rotation))
    return res


def _placement(placement: np.ndarray | None) -> np.ndarray:
    m = np.eye(4) if placement is None else np.asarray(placement, np.float64)
    if m.shape != (4, 4) or not np.isfinite(m).all():
        raise ValueError(f"placement must be a finite 4x4 matrix, got shape {m.shape}")
    return m


def _globals(rig: Rig, pose: Pose, placement: np.ndarray) -> np.ndarray:
    return placement @ global_matrices(rig, pose).astype(np.float64)


def solve_line_of_action(rig: Rig, pose: Pose, baseline: Stroke, offset: Stroke, brush_radius: float, *,
                         placement: np.ndarray | None = None, joints: Sequence[int] | np.ndarray | None = None,
                         reference: np.ndarray | None = None) -> LineOfAction:
    """Pose ``rig`` (currently at local ``pose``, placed by the 4x4 ``placement``) by a baseline and an offset
    stroke, both 3D in world metres. ``joints``: the nodes that may be selected (default :func:`skin_joints`);
    ``reference``: the frames' reference normal (e.g. the posing plane's normal). The selection is the joint
    chain the baseline follows (:func:`select_chain`). Raises ValueError when the baseline selects nothing."""
    if not isinstance(baseline, Stroke) or not isinstance(offset, Stroke):
        raise TypeError(f"baseline and offset must be Strokes, got {type(baseline).__name__} and "
                        f"{type(offset).__name__}")
    if pose.count != rig.count:
        raise ValueError(f"the pose has {pose.count} nodes, the rig {rig.count}")
    place = _placement(placement)
    candidates = skin_joints(rig) if joints is None else np.asarray(joints, np.intp).reshape(-1)
    if candidates.size and (candidates.min() < 0 or candidates.max() >= rig.count):
        raise ValueError(f"joints must be node indices in [0, {rig.count}), got {candidates.tolist()}")
    if candidates.size == 0:
        raise ValueError("the asset has no skin joints to pose")
    g0 = _globals(rig, pose, place)
    pos0 = g0[:, :3, 3]
    sel, t = select_chain(rig, pos0, candidates, baseline, brush_radius)
    if sel.size == 0:
        gaps = [(baseline.closest(pos0[j])[1], int(j)) for j in candidates]
        gap, near = min(gaps)
        raise ValueError(f"the baseline selects no joint: none lies within brush_radius {brush_radius:g} m of it "
                         f"(closest: {rig.names[near]!r} at {gap:.3g} m)")
    d = pos0[sel] - baseline.point(t).reshape(-1, 3)
    rot = stroke_rotations(baseline, offset, t, reference)
    targets = offset.point(t).reshape(-1, 3) + np.einsum("kij,kj->ki", rot, d)

    row = {int(j): k for k, j in enumerate(sel)}
    anchor: dict[int, list[int]] = {int(j): [] for j in sel}  # selected node -> selected nearest descendants
    for j in sel:
        p = int(rig.parents[j])
        while p >= 0 and p not in row:
            p = int(rig.parents[p])
        if p >= 0:
            anchor[p].append(int(j))
    w0 = world_rotations(g0)
    posed = pose.copy()
    deltas = np.tile(np.array([0, 0, 0, 1], np.float32), (rig.count, 1))
    for j in sel:
        j = int(j)
        g = _globals(rig, posed, place)
        kids = anchor[j]
        if kids:
            u = g[kids, :3, 3] - g[j, :3, 3]
            v = targets[[row[k] for k in kids]] - g[j, :3, 3]
            ok = (np.linalg.norm(u, axis=1) > 1e-9) & (np.linalg.norm(v, axis=1) > 1e-9)
            q_world = _fit_rotation(u[ok], v[ok]) if ok.any() else np.eye(3)
        else:  # an end of the selection takes the strokes' change of orientation
            wj = world_rotations(g[j])
            q_world = rot[row[j]] @ w0[j] @ wj.T
        parent = int(rig.parents[j])
        wp = world_rotations(g[parent] if parent >= 0 else place)
        local = quat.from_matrix(wp.T @ q_world @ wp)
        deltas[j] = quat.normalize(quat.multiply(local, deltas[j].astype(np.float64))).astype(np.float32)
        posed.rotation[j] = quat.normalize(quat.multiply(local, posed.rotation[j].astype(np.float64)))
    return LineOfAction(sel, t, d, rot, targets, deltas, posed)
