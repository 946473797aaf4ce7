"""The user's folders for the application's own files (XDG base directories on every platform):

* :func:`user_config_dir` -- ``$XDG_CONFIG_HOME/skinengine`` (default ``~/.config/skinengine``): the panel layout
  (``imgui.ini``: docked panels, their sizes and tabs) kept between runs;
* :func:`user_cache_dir` -- ``$XDG_CACHE_HOME/skinengine`` (default ``~/.cache/skinengine``): the editor's
  autosave (the session's recording, game/editor/autosave.py).

A relative ``XDG_*`` value is ignored (the specification says so). Nothing is created until a file is written.
(engine.paths.cache_dir is the generated characters' cache, which is ``assets/cache`` in a checkout; these are
always the user's.)
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["user_config_dir", "user_cache_dir", "layout_ini_path"]

APP = "skinengine"


def _xdg(var: str, default: str) -> Path:
    base = os.environ.get(var) or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / default) / APP


def user_config_dir() -> Path:
    """``$XDG_CONFIG_HOME/skinengine`` (default ``~/.config/skinengine``)."""
    return _xdg("XDG_CONFIG_HOME", ".config")


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/skinengine`` (default ``~/.cache/skinengine``)."""
    return _xdg("XDG_CACHE_HOME", ".cache")


def layout_ini_path(name: str) -> str:
    """The imgui ini file of one window kind (``"editor"``, ``"demo"``) in the config folder, its folder made;
    "" (no layout kept) when the folder cannot be made."""
    folder = user_config_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ""
    return str(folder / f"{name}-layout.ini")
