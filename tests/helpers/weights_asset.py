"""A small skinned test asset for the weight tools: a tube along x with a left/right joint chain and K influences.

``tube_asset(path, influences=8)`` writes a .glb: joints Root (x = 0), Arm.L1..Arm.L4 (x = +0.25 .. +1) and
Arm.R1..Arm.R4 (x = -0.25 .. -1) (mirror images by name and position), a tube of radius 0.1 from x = -1.1 to 1.1,
each vertex weighted by a Gaussian of its distance to every joint, its ``influences`` largest kept (so 8 gives
JOINTS_0/JOINTS_1 sets), and a clip "wave" bending both arms (on different rhythms). Returns the written path.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.assets.writer import AnimChannel, GltfBuilder

__all__ = ["tube_asset", "JOINT_X", "JOINT_NAMES", "run_cli", "cli_refusal"]

JOINT_NAMES = ["Root", "Arm.L1", "Arm.L2", "Arm.L3", "Arm.L4", "Arm.R1", "Arm.R2", "Arm.R3", "Arm.R4"]
JOINT_X = np.array([0.0, 0.25, 0.5, 0.75, 1.0, -0.25, -0.5, -0.75, -1.0])
PARENTS = [-1, 0, 1, 2, 3, 0, 5, 6, 7]


def _quat_z(a: np.ndarray) -> np.ndarray:
    return np.stack([np.zeros_like(a), np.zeros_like(a), np.sin(a / 2), np.cos(a / 2)], 1)


def tube_mesh(rings: int = 45, sides: int = 12) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-1.1, 1.1, rings)
    a = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    pos = np.stack([np.repeat(x, sides), 0.1 * np.tile(np.cos(a), rings), 0.1 * np.tile(np.sin(a), rings)], 1)
    tris = []
    for r in range(rings - 1):
        for s in range(sides):
            i0, i1 = r * sides + s, r * sides + (s + 1) % sides
            j0, j1 = i0 + sides, i1 + sides
            tris += [(i0, j0, i1), (i1, j0, j1)]
    return pos.astype(np.float32), np.array(tris, np.uint32)


def tube_weights(pos: np.ndarray, influences: int, sigma: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
    d = pos[:, 0:1] - JOINT_X[None, :]
    g = np.exp(-(d / sigma) ** 2)
    order = np.argsort(-g, axis=1, kind="stable")[:, :influences]
    w = np.take_along_axis(g, order, axis=1)
    w /= w.sum(axis=1, keepdims=True)
    return order.astype(np.uint16), w.astype(np.float32)


def tube_asset(path: str | Path, *, influences: int = 8, rings: int = 45, sides: int = 12) -> Path:
    pos, tris = tube_mesh(rings, sides)
    joints, weights = tube_weights(pos, influences)
    b = GltfBuilder(generator="tests/helpers/weights_asset.py")
    nodes = []
    for i, name in enumerate(JOINT_NAMES):
        px = JOINT_X[PARENTS[i]] if PARENTS[i] >= 0 else 0.0
        nodes.append(b.add_node(name, translation=(float(JOINT_X[i] - px), 0.0, 0.0)))
    for i in range(len(PARENTS)):
        kids = [nodes[k] for k, q in enumerate(PARENTS) if q == i]
        if kids:
            b.set_children(nodes[i], kids)
    mesh = b.add_mesh("tube", [dict(positions=pos, indices=tris, joints=joints, weights=weights)],
                      joint_count=len(JOINT_NAMES))
    body = b.add_node("body", mesh=mesh)
    ibm = np.tile(np.eye(4, dtype=np.float32), (len(JOINT_NAMES), 1, 1))
    ibm[:, 0, 3] = -JOINT_X
    skin = b.add_skin(nodes, inverse_bind=ibm, skeleton=nodes[0])
    b.set_node_skin(body, skin)
    t = np.linspace(0, 1, 5).astype(np.float32)
    ang = 0.6 * np.sin(np.pi * t)
    other = 0.4 * np.sin(2 * np.pi * t)  # the right arm moves on its own rhythm (not a mirror of the left)
    chans = []
    for k in (1, 2, 3):
        chans.append(AnimChannel(nodes[k], "rotation", t, _quat_z(ang).astype(np.float32)))
        chans.append(AnimChannel(nodes[k + 4], "rotation", t, _quat_z(other).astype(np.float32)))
    b.add_animation("wave", chans)
    b.add_scene([nodes[0], body])
    return b.save_glb(Path(path))


def run_cli(capsys, argv: list) -> tuple[int, str, str]:
    """Run the command line in-process (faster than a subprocess): (exit status, stdout, stderr). The logging and
    warning hooks cli.run sets are restored afterwards."""
    import logging
    import warnings

    from engine import log
    from game import cli

    root = logging.getLogger()
    handlers, level, showwarning = list(root.handlers), root.level, warnings.showwarning
    try:
        status = cli.run([str(a) for a in argv])
    finally:
        for h in list(root.handlers):
            if h not in handlers:
                root.removeHandler(h)
        root.setLevel(level)
        warnings.showwarning = showwarning
        log._state["progress"] = True
        log._state["force"] = False
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def cli_refusal(capsys, argv: list) -> str:
    """``run_cli`` expecting a refusal: exit 2 with exactly one ``error:`` line, no traceback; returns the line."""
    status, _, err = run_cli(capsys, argv)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]
