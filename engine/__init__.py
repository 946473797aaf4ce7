"""Expressive character-skinning engine.

The runtime is importable and testable without a window: ``engine.assets`` loads glTF 2.0,
``engine.anim`` samples clips and runs forward kinematics, ``engine.skinning`` holds the numpy
reference deformers, ``engine.render`` owns every GL object, ``engine.ecs`` is the world and schedule.
"""
