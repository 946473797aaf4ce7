"""Bones from a skeleton (`make_bones`): one per parent->child joint pair, plus a tip bone per leaf joint; the
skeleton checks and joint location groups (joints at one position count as one) the binding methods share."""
from __future__ import annotations

import numpy as np

from engine.math.mesh import bbox_diagonal
from engine.math.numerics import quiet_underflow
from engine.skinning.types import Bones

__all__ = ["make_bones", "joint_location_groups"]

_CHUNK_ELEMENTS = 1 << 21
"""Rows x bones (or planes) processed per chunk, to bound temporary memory."""


def _check_skeleton(bind_joints: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bj = np.asarray(bind_joints, np.float64)
    par = np.asarray(parents).astype(np.int64).reshape(-1)
    if bj.ndim != 3 or bj.shape[1:] != (4, 4):
        raise ValueError(f"bind_joints must have shape (J,4,4), got {bj.shape}")
    if par.shape[0] != bj.shape[0]:
        raise ValueError(f"parents must have shape ({bj.shape[0]},), got {np.asarray(parents).shape}")
    j = par.shape[0]
    bad = (par < -1) | (par >= j) | (par == np.arange(j))
    if np.any(bad):
        k = int(np.nonzero(bad)[0][0])
        raise ValueError(f"parents[{k}] = {par[k]} is invalid: must be -1 or in [0, {j - 1}] and not itself")
    anc = par.copy()
    for _ in range(j):  # every chain of parents must reach a root within J steps (vectorised over joints)
        live = anc >= 0
        if not live.any():
            break
        anc[live] = par[anc[live]]
    if np.any(anc >= 0):
        k = int(np.nonzero(anc >= 0)[0][0])
        raise ValueError(f"parents contain a cycle (joint {k} never reaches a root)")
    return bj, par


def joint_location_groups(bind_joints: np.ndarray, parents: np.ndarray, eps: float) -> np.ndarray:
    """(J,) for every joint the topmost ancestor reached through links shorter than eps (itself if none)."""
    bj, par = _check_skeleton(bind_joints, parents)
    pos = bj[:, :3, 3]
    j = par.shape[0]
    link = np.zeros(j, bool)
    has_p = par >= 0
    link[has_p] = np.linalg.norm(pos[has_p] - pos[par[has_p]], axis=1) <= eps
    top = np.arange(j)
    for _ in range(j):  # bounded by the depth of coincident chains (vectorised over joints)
        m = link[top]
        if not m.any():
            break
        top = np.where(m, par[top], top)
    return top


def _scale_of(bj: np.ndarray, positions: np.ndarray) -> float:
    pts = np.concatenate([bj[:, :3, 3], np.asarray(positions, np.float64).reshape(-1, 3)])
    return max(bbox_diagonal(pts), 1e-9)


@quiet_underflow
def make_bones(
    bind_joints: np.ndarray, parents: np.ndarray, positions: np.ndarray, *, min_length: float | None = None
) -> Bones:
    """Bones for the skeleton (J,4,4 bind joint world matrices, parents (J,)) and mesh points (V,3).

    min_length: bones shorter than this are skipped (default 1e-6 of the skeleton+mesh bbox diagonal).
    """
    bj, par = _check_skeleton(bind_joints, parents)
    pts = np.asarray(positions, np.float64).reshape(-1, 3)
    scale = _scale_of(bj, pts)
    eps = 1e-6 * scale if min_length is None else float(min_length)
    if not eps >= 0.0:
        raise ValueError(f"min_length must be >= 0, got {min_length!r}")
    pos = bj[:, :3, 3]
    j = par.shape[0]
    has_p = np.nonzero(par >= 0)[0]
    length = np.linalg.norm(pos[has_p] - pos[par[has_p]], axis=1)
    inner = has_p[length > eps]
    parent_joint = [par[inner]]
    child_joint = [inner]

    is_leaf = np.ones(j, bool)
    is_leaf[par[has_p]] = False
    leaves = np.nonzero(is_leaf)[0]
    # nearest joint location of every mesh point, to measure how far the mesh extends beyond each leaf
    # (coincident joints count as one location)
    top = joint_location_groups(bj, par, eps)
    nearest = np.full(pts.shape[0], -1, np.int64)
    if pts.shape[0] and leaves.size:
        step = max(1, _CHUNK_ELEMENTS // max(j, 1))
        for s in range(0, pts.shape[0], step):
            d2 = ((pts[s : s + step, None, :] - pos[None, :, :]) ** 2).sum(-1)
            nearest[s : s + step] = top[np.argmin(d2, axis=1)]
    tip_p, tip_local = [], []
    for leaf in leaves:  # set-up time only, once per skeleton
        a = par[leaf]
        offset = None
        while a >= 0:
            off = pos[leaf] - pos[a]
            if np.linalg.norm(off) > eps:
                offset = off
                break
            a = par[a]
        if offset is not None:
            d = offset / np.linalg.norm(offset)
            fallback = float(np.linalg.norm(offset))
        else:
            y = bj[leaf, :3, 1]
            d = y / np.linalg.norm(y) if np.linalg.norm(y) > 0 else np.array([0.0, 1.0, 0.0])
            fallback = 0.25 * scale
        mine = pts[nearest == top[leaf]]
        ext = float(((mine - pos[leaf]) @ d).max()) if mine.shape[0] else 0.0
        length_tip = ext if ext > max(eps, 1e-3 * fallback) else fallback
        if length_tip <= eps:
            continue
        tip_world = d * length_tip
        m = bj[leaf, :3, :3]
        try:
            local = np.linalg.solve(m, tip_world)
        except np.linalg.LinAlgError:
            raise ValueError(f"bind matrix of joint {leaf} is singular; cannot place its tip bone") from None
        tip_p.append(leaf)
        tip_local.append(local)
    parent_joint.append(np.asarray(tip_p, np.int64))
    child_joint.append(np.full(len(tip_p), -1, np.int64))
    tl = np.zeros((inner.shape[0] + len(tip_p), 3), np.float32)
    if tip_p:
        tl[inner.shape[0] :] = np.asarray(tip_local, np.float32)
    bones = Bones(
        parent_joint=np.concatenate(parent_joint).astype(np.int32),
        child_joint=np.concatenate(child_joint).astype(np.int32),
        tip_local=tl,
    )
    if bones.count == 0:
        raise ValueError("the skeleton yields no bone (all joints coincide and the mesh is empty)")
    return bones
