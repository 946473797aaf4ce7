"""A generated multi-part character for issue 26, item 2: a two-bone arm whose skin blends across the elbow,
with rigid parts bound to one joint each (a thin panel and a ball joint, both straddling the elbow's divider,
where the attachment binding splits them between the two bones) and a sleeve over the skin (clothing: a shell
overlapping the skin at rest, with the skin's weights)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.assets.gen.family import tube_grid


@dataclass
class Parts:
    positions: np.ndarray  # (V,3) float32
    triangles: np.ndarray  # (T,3) int32
    piece: np.ndarray      # (V,) 0 skin, 1 panel, 2 ball, 3 sleeve
    bind_joints: np.ndarray  # (3,4,4): shoulder at 0, elbow at x = 2, wrist at x = 4
    parents: np.ndarray
    joints: np.ndarray     # (V,4) uint16
    weights: np.ndarray    # (V,4) float32
    rigid_joint: np.ndarray  # (V,) the joint a rigid part follows, -1 for skin and sleeve


def ellipsoid(centre, radii, rings: int = 10, segments: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """A closed UV ellipsoid (two poles) with outward winding."""
    th = np.linspace(0.0, np.pi, rings + 1)[1:-1]
    ph = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    t, p = np.meshgrid(th, ph, indexing="ij")
    body = np.stack([np.cos(t), np.sin(t) * np.cos(p), np.sin(t) * np.sin(p)], -1).reshape(-1, 3)
    pos = np.concatenate([[[1.0, 0, 0]], body, [[-1.0, 0, 0]]]) * radii + centre
    n_r = rings - 1
    tris = []
    for j in range(segments):
        k = (j + 1) % segments
        tris.append([0, 1 + k, 1 + j])
        last = 1 + (n_r - 1) * segments
        tris.append([len(pos) - 1, last + j, last + k])
    for i in range(n_r - 1):
        for j in range(segments):
            k = (j + 1) % segments
            a, b = 1 + i * segments + j, 1 + i * segments + k
            c, d = a + segments, b + segments
            tris += [[a, b, d], [a, d, c]]
    return pos, np.asarray(tris, np.int64)


def rigid_parts(radius: float = 0.3) -> Parts:
    skin_p, skin_t = tube_grid(radius, 4.0, 41, 16)
    sleeve_p, sleeve_t = tube_grid(1.15 * radius, 2.4, 25, 16)
    sleeve_p[:, 0] += 0.8  # over the elbow
    panel_p, panel_t = ellipsoid(np.array([1.85, 1.6 * radius, 0.0]), np.array([0.5, 0.05, 0.3]))
    ball_p, ball_t = ellipsoid(np.array([2.05, 0.0, -1.8 * radius]), np.array([0.2, 0.2, 0.2]))
    parts = [(skin_p, skin_t), (panel_p, panel_t), (ball_p, ball_t), (sleeve_p, sleeve_t)]
    pos_l, tri_l, piece_l = [], [], []
    base = 0
    for k, (p, t) in enumerate(parts):
        pos_l.append(p)
        tri_l.append(t + base)
        piece_l.append(np.full(len(p), k))
        base += len(p)
    pos = np.concatenate(pos_l)
    piece = np.concatenate(piece_l)
    x = pos[:, 0]
    ramp = np.clip((x - (2.0 - radius)) / (2 * radius), 0.0, 1.0)  # skin and sleeve blend over one diameter
    w = np.stack([1.0 - ramp, ramp, np.zeros_like(ramp)], 1)
    rigid = np.full(len(pos), -1)
    rigid[piece == 1] = 0  # the panel rides the upper arm
    rigid[piece == 2] = 1  # the ball joint rides the forearm
    w[rigid >= 0] = 0.0
    w[rigid >= 0, rigid[rigid >= 0]] = 1.0
    bind_joints = np.tile(np.eye(4), (3, 1, 1))
    bind_joints[1, 0, 3], bind_joints[2, 0, 3] = 2.0, 4.0
    joints = np.zeros((len(pos), 4), np.uint16)
    weights = np.zeros((len(pos), 4), np.float32)
    joints[:, :3] = np.arange(3)
    weights[:, :3] = w
    return Parts(pos.astype(np.float32), np.concatenate(tri_l).astype(np.int32), piece, bind_joints,
                 np.array([-1, 0, 1], np.int32), joints, weights, rigid)
