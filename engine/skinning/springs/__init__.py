"""Spring deformer package (being split into modules; see solver.py for now)."""
from engine.skinning.springs.solver import *  # noqa: F403
from engine.skinning.springs.solver import __all__  # noqa: F401
