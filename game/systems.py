"""Systems of the demo scene: plain functions over world queries, registered in game/demo.py's schedule.

ANIMATION  advance each Animator's playback by the fixed step and sample its pose
SKELETON   forward kinematics to world matrices (placement included), batched per rig
DEFORM     deform skinned meshes (CPU numpy LBS here; the GPU deformer graph replaces it when available)
RENDER     hand the deformed vertices to the renderer and draw
"""
from __future__ import annotations

import numpy as np

from engine.anim import global_matrices
from engine.ecs import Clock, World
from game.components import Animator, Character, Placement, SkeletonPose


def animation_system(world: World) -> None:
    clock = world.resource(Clock)
    for _e, (anim,) in world.query(Animator):
        anim.playback.advance(clock.step)
        anim.playback.evaluate(anim.pose)


def skeleton_system(world: World) -> None:
    for _e, (char, anim, place, skel) in world.query(Character, Animator, Placement, SkeletonPose):
        g = global_matrices(char.rig, anim.pose)
        np.matmul(place.matrix, g, out=skel.globals)
