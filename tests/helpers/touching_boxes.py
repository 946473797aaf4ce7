"""A generated rig whose boxes touch at bind (issue 26: RiggedFigure's shoulders): a torso box and an arm box whose
end face lies on the torso's side face, GAP (a small share of an edge) off its plane, the torso's points near the
shoulder weighted partly to the shoulder joint and the arm's blended across it, so neither box is one rigid shell."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GAP = 0.001
"""The arm's end face off the torso's side face at bind (its edges are 0.1-0.25: about 1 % of an edge)."""


@dataclass
class Boxes:
    positions: np.ndarray  # (V,3) float32
    triangles: np.ndarray  # (T,3) int32
    arm_end: np.ndarray    # (V,) bool: the arm's end face (lying on the torso's side face at bind)
    bind_joints: np.ndarray  # (4,4,4): hip, chest, shoulder, hand
    parents: np.ndarray
    joints: np.ndarray     # (V,4) uint16
    weights: np.ndarray    # (V,4) float32

    def posed(self, down: float) -> np.ndarray:
        """Joint world matrices with the arm turned `down` degrees about the shoulder (towards the torso's side)."""
        a = np.radians(down)
        r = np.array([[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0], [-np.sin(a), 0.0, np.cos(a)]])
        out = np.array(self.bind_joints, np.float64)
        pivot = out[2, :3, 3].copy()
        for j in (2, 3):
            out[j, :3, :3] = r @ out[j, :3, :3]
            out[j, :3, 3] = pivot + r @ (out[j, :3, 3] - pivot)
        return out


def box(lo, hi, n) -> tuple[np.ndarray, np.ndarray]:
    """A closed box [lo, hi] with n = (nx, ny, nz) quads per side along each axis, welded, outward winding."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    axes = [np.linspace(lo[k], hi[k], n[k] + 1) for k in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1)
    index = -np.ones([m + 1 for m in n], np.int64)
    shell = np.zeros(index.shape, bool)
    for k in range(3):  # the faces of the grid: index 0 or the last along some axis
        shell |= np.indices(index.shape)[k] % n[k] == 0
    index[shell] = np.arange(int(shell.sum()))
    pos = grid[shell]
    tris = []
    for k in range(3):
        u, v = [a for a in range(3) if a != k]
        for side, flip in ((0, True), (n[k], False)):
            for i in range(n[u]):
                for j in range(n[v]):
                    c = [[0, 0, 0] for _ in range(4)]
                    for q, (du, dv) in enumerate(((0, 0), (1, 0), (1, 1), (0, 1))):
                        c[q][k], c[q][u], c[q][v] = side, i + du, j + dv
                    a, b, cc, d = (index[tuple(p)] for p in c)
                    # (u, v, k) right-handed: u x v = +k when (u, v) = (k+1, k+2)
                    out = ((v - u) % 3 == 1) != flip
                    tris += [[a, b, cc], [a, cc, d]] if out else [[a, cc, b], [a, d, cc]]
    return pos, np.asarray(tris, np.int64)


def touching_boxes(open_end: bool = False) -> Boxes:
    """The torso [-0.5, 0.5] x [-0.5, 0.5] x [0, 2], the arm [0.5 + GAP, 2.5] x [-0.175, 0.225] x [1.5, 1.9] (none
    of its end points over a torso point); joints: hip (0, 0, 0), chest (0, 0, 1.7), shoulder (0.5, 0, 1.5) at the
    arm's lower edge, hand (2.5, 0, 1.5)."""
    t_p, t_t = box([-0.5, -0.5, 0.0], [0.5, 0.5, 2.0], (4, 4, 8))
    a_p, a_t = box([0.5 + GAP, -0.175, 1.5], [2.5, 0.225, 1.9], (10, 2, 2))
    if open_end:  # no end face: the arm's rim rests on the torso's side face
        end = np.abs(a_p[:, 0] - (0.5 + GAP)) < 1e-9
        a_t = a_t[~np.all(end[a_t], axis=1)]
        used = np.unique(a_t)
        a_p, a_t = a_p[used], np.searchsorted(used, a_t)
    pos = np.concatenate([t_p, a_p])
    tri = np.concatenate([t_t, a_t + len(t_p)])
    arm = np.arange(len(pos)) >= len(t_p)
    x, z = pos[:, 0], pos[:, 2]
    w = np.zeros((len(pos), 4))
    # torso: hip to chest up the body, a share of the shoulder near it; arm: chest to shoulder over its first
    # quarter, then the shoulder
    up = np.clip(z / 1.7, 0.0, 1.0)
    near = np.clip((z - 1.2) / 0.5, 0.0, 1.0) * np.clip((x - 0.0) / 0.5, 0.0, 1.0) * 0.4
    w[~arm, 0] = (1.0 - up[~arm]) * (1.0 - near[~arm])
    w[~arm, 1] = up[~arm] * (1.0 - near[~arm])
    w[~arm, 2] = near[~arm]
    ramp = np.clip((x - 0.5) / 0.5, 0.0, 1.0)
    w[arm, 1] = 0.5 * (1.0 - ramp[arm])
    w[arm, 2] = 1.0 - w[arm, 1]
    bind = np.tile(np.eye(4), (4, 1, 1))
    bind[1, :3, 3] = [0.0, 0.0, 1.7]
    bind[2, :3, 3] = [0.5, 0.0, 1.5]
    bind[3, :3, 3] = [2.5, 0.0, 1.5]
    joints = np.tile(np.arange(4, dtype=np.uint16), (len(pos), 1))
    return Boxes(pos.astype(np.float32), tri.astype(np.int32), arm & (np.abs(x - 0.5 - GAP) < 1e-9), bind,
                 np.array([-1, 0, 1, 2], np.int32), joints, (w / w.sum(1, keepdims=True)).astype(np.float32))
