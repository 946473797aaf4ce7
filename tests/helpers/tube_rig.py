"""Small generated rigs for the deform tests and benchmark: a tube with a UV seam and a joint chain along it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.skinning.binding import bind
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.types import Binding, MeshTopology


@dataclass
class Rig:
    topology: MeshTopology
    binding: Binding
    display_positions: np.ndarray
    joints: np.ndarray       # (D,4)
    weights: np.ndarray      # (D,4)
    inverse_bind: np.ndarray  # (J,4,4)
    bind_joints: np.ndarray
    parents: np.ndarray


def _rot(axis: np.ndarray, angle: float) -> np.ndarray:
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    x, y, z = axis
    c, s = np.cos(angle), np.sin(angle)
    C = 1 - c
    return np.array([[c + x * x * C, x * y * C - z * s, x * z * C + y * s],
                     [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
                     [z * x * C - y * s, z * y * C + x * s, c + z * z * C]])


def tube(rings: int = 9, segments: int = 8, length: float = 1.0, radius: float = 0.12,
         n_joints: int = 3, seam: bool = True) -> Rig:
    """A capped-free tube along +Y with a duplicated seam column (display vertices welded into control
    points) and a chain of joints along its axis; LBS weights fall off linearly between neighbouring joints."""
    cols = segments + 1 if seam else segments
    ys = np.linspace(0.0, length, rings)
    ang = np.linspace(0.0, 2 * np.pi, segments + 1)[:cols]
    yy, aa = np.meshgrid(ys, ang, indexing="ij")
    pos = np.stack([radius * np.cos(aa), yy, radius * np.sin(aa)], -1).reshape(-1, 3).astype(np.float32)
    if seam:  # exact copies of the first column
        pos.reshape(rings, cols, 3)[:, -1] = pos.reshape(rings, cols, 3)[:, 0]
    tris = []
    for r in range(rings - 1):
        for s in range(segments):
            a = r * cols + s
            b = r * cols + (s + 1) % cols
            c = (r + 1) * cols + s
            d = (r + 1) * cols + (s + 1) % cols
            tris += [[a, c, b], [b, c, d]]
    tris = np.array(tris, np.int64)
    topo = prepare_mesh(pos, tris)
    jy = np.linspace(0.0, length, n_joints)
    bind_joints = np.tile(np.eye(4), (n_joints, 1, 1))
    bind_joints[:, 1, 3] = jy
    parents = np.arange(-1, n_joints - 1).astype(np.int32)
    # weights: linear between the two joints around y
    seg = np.clip((pos[:, 1] / length * (n_joints - 1)).astype(int), 0, n_joints - 2)
    f = pos[:, 1] / length * (n_joints - 1) - seg
    joints = np.zeros((pos.shape[0], 4), np.uint16)
    weights = np.zeros((pos.shape[0], 4), np.float32)
    joints[:, 0] = seg
    joints[:, 1] = seg + 1
    weights[:, 0] = 1 - f
    weights[:, 1] = f
    binding = bind(topo, bind_joints, parents, method="weights", joints=joints, weights=weights)
    return Rig(topo, binding, pos, joints, weights, np.linalg.inv(bind_joints).astype(np.float32),
               bind_joints, parents)


def pose(rig: Rig, bend: float = 0.6, twist: float = 0.0, stretch: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(skin_mats, posed_joints) for the chain: every joint after the root bends by `bend` radians about Z,
    twists by `twist` about its Y axis and the child offsets scale by `stretch`."""
    j = rig.bind_joints.shape[0]
    local = np.tile(np.eye(4), (j, 1, 1))
    for k in range(j):
        if k == 0:
            local[k] = rig.bind_joints[0]
            local[k, :3, :3] = _rot([0, 1, 0], 0.3 * twist)
            continue
        off = rig.bind_joints[k, :3, 3] - rig.bind_joints[k - 1, :3, 3]
        local[k, :3, :3] = _rot([0, 0, 1], bend) @ _rot([0, 1, 0], twist)
        local[k, :3, 3] = off * stretch
    world = np.zeros_like(local)
    for k in range(j):
        world[k] = local[k] if rig.parents[k] < 0 else world[rig.parents[k]] @ local[k]
    return (world @ rig.inverse_bind).astype(np.float64), world
