"""Where the engine finds its data folders: a checkout's ``shaders/`` and ``assets/``, or the installed copies.

The repository keeps ``shaders/`` and ``assets/`` at its root. A wheel ships the same folders as package data
under ``engine/_data/`` (pyproject.toml maps them there; the repository layout is unchanged). ``data_dir`` is
the one function that decides which copy the engine reads:

    from engine.paths import data_dir, cache_dir
    data_dir("shaders")   # <checkout>/shaders, or <site-packages>/engine/_data/shaders when installed
    cache_dir()           # <checkout>/assets/cache, or $XDG_CACHE_HOME/skinengine (~/.cache/skinengine)

Generated characters too large to ship (``humanoid_dense``) are written to ``cache_dir()`` on first use.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_FOLDERS", "PACKAGED_DIR", "cache_dir", "checkout_root", "data_dir"]

#: The data folders of the repository root that a wheel carries as package data.
DATA_FOLDERS = ("shaders", "assets")

_ENGINE_DIR = Path(__file__).resolve().parent
#: Where an installed wheel keeps its copies of DATA_FOLDERS.
PACKAGED_DIR = _ENGINE_DIR / "_data"


def checkout_root() -> Path | None:
    """The repository root when the engine runs from a checkout (or an editable install), else None."""
    if PACKAGED_DIR.is_dir():
        return None
    root = _ENGINE_DIR.parent
    if (root / "pyproject.toml").is_file() and all((root / name).is_dir() for name in DATA_FOLDERS):
        return root
    return None


def data_dir(name: str) -> Path:
    """The folder ``name`` (one of DATA_FOLDERS) the engine reads: the checkout's, else the packaged copy."""
    if name not in DATA_FOLDERS:
        raise ValueError(f"unknown data folder {name!r}; choose one of {', '.join(DATA_FOLDERS)}")
    root = checkout_root()
    return (root if root is not None else PACKAGED_DIR) / name


def cache_dir() -> Path:
    """Where generated characters too large to ship are written: ``assets/cache/`` in a checkout, else the
    per-user cache folder ``$XDG_CACHE_HOME/skinengine`` (default ``~/.cache/skinengine``)."""
    root = checkout_root()
    if root is not None:
        return root / "assets" / "cache"
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "skinengine"
