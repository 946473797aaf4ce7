"""Systems of the demo scene: plain functions over world queries, registered in game/demo.py's schedule.

ANIMATION  advance each Animator's playback by the fixed step and sample its pose
SKELETON   forward kinematics to world matrices (placement included), batched per rig
DEFORM     deform skinned meshes (CPU numpy LBS here; the GPU deformer graph replaces it when available)
RENDER     hand the deformed vertices to the renderer and draw
"""
from __future__ import annotations

import numpy as np

from engine.anim import global_matrices_batched
from engine.ecs import Clock, World
from game.components import Animator, Character, Placement, SkeletonPose


def animation_system(world: World) -> None:
    clock = world.resource(Clock)
    for _e, (anim,) in world.query(Animator):
        anim.playback.advance(clock.step)
        anim.playback.evaluate(anim.pose)


def skeleton_system(world: World) -> None:
    """Forward kinematics batched per rig: every character sharing an asset is one stacked FK call."""
    groups: dict[int, list] = {}
    for _e, (char, anim, place, skel) in world.query(Character, Animator, Placement, SkeletonPose):
        groups.setdefault(id(char.rig), []).append((char.rig, anim.pose, place, skel))
    for rows in groups.values():
        rig = rows[0][0]
        t = np.stack([r[1].translation for r in rows])
        q = np.stack([r[1].rotation for r in rows])
        sc = np.stack([r[1].scale for r in rows])
        g = global_matrices_batched(rig, t, q, sc)
        g = np.matmul(np.stack([r[2].matrix for r in rows])[:, None], g)
        for (_rig, _pose, _place, skel), gi in zip(rows, g):
            skel.globals[...] = gi
