"""Expressive character-skinning engine.

``from engine import Session`` is the scripting API (engine/session.py): load characters, play clips, deform on
the GPU or with numpy, render, read the G-buffer, pick surface points, read deformed vertices back. THE frame
is engine/frame.py; the deformer table is engine/skinning/registry.py.

Packages: ``engine.assets`` loads glTF 2.0, ``engine.anim`` samples clips and runs forward kinematics,
``engine.skinning`` holds the numpy reference deformers and (``engine.skinning.gpu``) the deformer graph,
``engine.gpu`` the GL context and GPU resource owner below render and skinning, ``engine.render`` the renderer,
``engine.ecs`` the world and schedule.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Session", "Character", "__version__"]

#: the package version (pyproject.toml reads it from here)
__version__ = "0.1.0"

if TYPE_CHECKING:
    from engine.session import Character, Session


def __getattr__(name: str) -> Any:
    # Lazy: importing a submodule (engine.assets, engine.ecs) must not pull in moderngl and the renderer.
    if name in ("Session", "Character"):
        from engine import session

        return getattr(session, name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
