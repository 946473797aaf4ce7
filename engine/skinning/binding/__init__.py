"""Attachment binding (research ch. 3), being split into modules: smooth.py holds the whole of it for now."""
from engine.skinning.binding.smooth import *  # noqa: F403
from engine.skinning.binding.smooth import DEFAULT_GAP_THRESHOLD, __all__  # noqa: F401
