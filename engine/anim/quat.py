"""Former home of the quaternion helpers, now :mod:`engine.math.quat` (the engine's one implementation).

Kept only so existing ``from engine.anim.quat import ...`` lines (the deformer graph's) keep working while they
move to ``engine.math.quat``; new code imports ``engine.math.quat``.
"""
from engine.math.quat import *  # noqa: F401,F403 - re-export of the moved module
from engine.math.quat import __all__  # noqa: F401
