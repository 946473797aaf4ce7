"""A character's armature put under a scaled root (issue 26, item 1): the same shape in other units.

`scaled_copy(asset, k, mesh_space)` inserts a new root node scaled k above the skin's top joint and multiplies
every joint offset under it by 1/k, so every joint's world position stays where it was while its world matrix
gains the scale k (a Blender export with the armature scaled 100x and centimetre offsets). mesh_space "world":
the mesh stays in world units (inverse binds recomputed from the new joint matrices); "armature": the mesh is
given in the armature's own units, as Blender exports a mesh parented to a scaled armature (positions / k,
inverse bind matrices mapping those to the joints). Either way LBS gives the original world positions, and so
must every deformer. `posed_globals` poses a rig by turning named joints about an axis of their parent's frame.
"""
from __future__ import annotations

import copy

import numpy as np

from engine.anim.fk import global_matrices_batched
from engine.anim.rig import Rig
from engine.assets.model import Asset, Node

#: a pose of the humanoid with the elbows at 110 deg, the knees at 100-120 deg and a raised upper arm
TURNS: dict[str, tuple[tuple[float, float, float], float]] = {
    "forearm_L": ((0, 0, 1), 110.0), "forearm_R": ((0, 0, 1), -110.0), "shin_L": ((1, 0, 0), 100.0),
    "shin_R": ((1, 0, 0), 120.0), "upper_arm_L": ((1, 0, 0), 40.0)}

#: a deep bend where the springs' inner sides meet and the contact term acts: elbows and knees at 150 deg
DEEP: dict[str, tuple[tuple[float, float, float], float]] = {
    **TURNS, "forearm_L": ((0, 0, 1), 150.0), "forearm_R": ((0, 0, 1), -150.0), "shin_L": ((1, 0, 0), 150.0),
    "shin_R": ((1, 0, 0), 150.0)}
#: SpringParams of the contact tests at DEEP: contact on, fewer iterations and passes than the defaults (the
#: result does not depend on the units at any count; these keep the tests short)
CONTACT_PARAMS: dict[str, object] = {"contact": True, "max_iterations": 20, "contact_passes": 3}


def _world(asset: Asset) -> np.ndarray:
    rig = Rig.from_asset(asset)
    return global_matrices_batched(rig, rig.translation[None], rig.rotation[None], rig.scale[None])[0]


def scaled_copy(asset: Asset, k: float, mesh_space: str = "world") -> Asset:
    """A copy of `asset` (one skin) with its armature under a root node scaled k and its offsets scaled 1/k."""
    a = copy.deepcopy(asset)
    skin = a.skins[0]
    joints = {int(j) for j in skin.joints}
    top = [j for j in joints if a.nodes[j].parent not in joints]
    old_parent = a.nodes[top[0]].parent
    root = len(a.nodes)
    a.nodes.append(Node(name="scaled_root", parent=old_parent, children=[],
                        scale=np.full(3, k, np.float32)))
    if old_parent >= 0:
        a.nodes[old_parent].children = [c for c in a.nodes[old_parent].children if c not in top] + [root]
    elif a.scenes:
        sc = a.scenes[a.scene]
        sc.nodes = [n for n in sc.nodes if n not in top] + [root]
    for t in top:
        a.nodes[t].parent = root
        a.nodes[root].children.append(t)
    under = set()
    stack = list(top)
    while stack:
        n = stack.pop()
        under.add(n)
        stack.extend(a.nodes[n].children)
    for n in under:
        a.nodes[n].translation = (np.asarray(a.nodes[n].translation, np.float64) / k).astype(np.float32)
    for clip in a.clips:
        for ch in clip.channels:
            if ch.node in under and ch.path == "translation":
                ch.values = (np.asarray(ch.values, np.float64) / k).astype(np.float32)
    world = _world(a).astype(np.float64)
    jw = world[np.asarray(skin.joints)]
    if mesh_space == "world":
        skin.inverse_bind = np.linalg.inv(jw).astype(np.float32)
    elif mesh_space == "armature":
        rw = world[root]
        skin.inverse_bind = (np.linalg.inv(jw) @ rw).astype(np.float32)
        inv = np.linalg.inv(rw)
        for node in a.nodes:
            if node.skin is not None and node.mesh is not None:
                for prim in a.meshes[node.mesh].primitives:
                    p = np.asarray(prim.positions, np.float64)
                    prim.positions = (p @ inv[:3, :3].T + inv[:3, 3]).astype(np.float32)
    else:
        raise ValueError(f"mesh_space must be 'world' or 'armature', got {mesh_space!r}")
    return a


def posed_globals(asset: Asset, turns: dict[str, tuple[tuple[float, float, float], float]]) -> np.ndarray:
    """Node world matrices (N,4,4) of the rest pose with named nodes turned: name -> (axis, degrees) (the axis
    in the node's own local frame, applied after its rest rotation)."""
    from engine.math.quat import from_axis_angle, multiply

    rig = Rig.from_asset(asset)
    r = np.array(rig.rotation, np.float32)
    for i, name in enumerate(rig.names):
        if name in turns:
            axis, deg = turns[name]
            q = from_axis_angle(np.asarray(axis, np.float32), float(np.radians(deg)))
            r[i] = multiply(r[i], q)
    return global_matrices_batched(rig, rig.translation[None], r[None], rig.scale[None])[0]
