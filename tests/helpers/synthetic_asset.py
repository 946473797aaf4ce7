"""Synthetic skeletons and clips for tests and benchmarks (no files needed).

``make_asset(n_joints)`` builds a branching humanoid-like tree (a spine with limbs hanging off it) with a skin
over all joints and one clip animating T/R/S of every joint with LINEAR keys (rotations wobble about random axes,
so slerp does real work). Deterministic for a given seed.
"""
from __future__ import annotations

import numpy as np

from engine.assets.model import Asset, Channel, Clip, Node, Scene, Skin
from engine.math import quat
from engine.math.transform import compose_trs

__all__ = ["make_asset"]


def make_asset(n_joints: int, *, n_keys: int = 30, duration: float = 1.0, seed: int = 0,
               branch: int = 4) -> Asset:
    """An asset with ``n_joints`` joint nodes under one non-joint root, one skin and one clip.

    Joint i's parent is joint ``i - 1`` except every ``branch``-th joint, which hangs off a joint ``branch`` or
    more steps back, so the tree has several levels of several nodes each.
    """
    if n_joints < 1:
        raise ValueError(f"n_joints must be >= 1, got {n_joints}")
    if n_keys < 1:
        raise ValueError(f"n_keys must be >= 1, got {n_keys}")
    rng = np.random.default_rng(seed)
    nodes = [Node(name="root", translation=np.array([0, 0, 0], np.float32))]
    for i in range(n_joints):
        if i == 0:
            parent = 0
        elif i % branch == 0:
            parent = 1 + int(rng.integers(0, max(1, i - branch + 1)))
        else:
            parent = i  # node index of joint i-1 is i
        t = rng.normal(0, 0.1, 3).astype(np.float32)
        t[1] += 0.2
        nodes.append(Node(name=f"joint{i}", parent=parent, translation=t))
        nodes[parent].children.append(i + 1)
    joints = np.arange(1, n_joints + 1)

    # inverse bind from the rest pose's world matrices (composed here with a plain per-node loop)
    world = np.zeros((len(nodes), 4, 4), np.float32)
    for k, nd in enumerate(nodes):
        loc = compose_trs(nd.translation, nd.rotation, nd.scale)
        world[k] = loc if nd.parent < 0 else world[nd.parent] @ loc
    skin = Skin(name="skin", joints=joints, inverse_bind=np.linalg.inv(world[joints]).astype(np.float32))

    times = np.linspace(0, duration, n_keys).astype(np.float32)
    channels = []
    for j in joints:
        axis = rng.normal(size=3)
        ang = 0.6 * np.sin(np.linspace(0, 2 * np.pi, n_keys) + rng.uniform(0, 6))
        rot = quat.from_axis_angle(np.broadcast_to(axis, (n_keys, 3)), ang).astype(np.float32)
        trans = (nodes[j].translation + rng.normal(0, 0.01, (n_keys, 3))).astype(np.float32)
        scl = (1 + rng.normal(0, 0.02, (n_keys, 3))).astype(np.float32)
        channels += [Channel(int(j), "translation", "LINEAR", times, trans),
                     Channel(int(j), "rotation", "LINEAR", times, rot),
                     Channel(int(j), "scale", "LINEAR", times, scl)]
    return Asset(path=None, nodes=nodes, skins=[skin], clips=[Clip("wobble", channels)],
                 scenes=[Scene("scene", [0])])
