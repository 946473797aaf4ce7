"""Where the engine finds its data folders: a checkout's ``shaders/``, ``assets/`` (with the recorded sessions in
``assets/sessions/``) and ``examples/``, or the installed copies.

The repository keeps these folders at its root. A wheel ships the same folders as package data under
``engine/_data/`` (pyproject.toml maps them there; the repository layout is unchanged). ``data_dir`` is the one
function that decides which copy the engine reads; ``shipped_file`` finds the README's example files
(``examples/pose_arm.json``, ``assets/sessions/arm_pose.jsonl``) from any folder:

    from engine.paths import data_dir, cache_dir, shipped_file
    data_dir("shaders")   # <checkout>/shaders, or <site-packages>/engine/_data/shaders when installed
    cache_dir()           # <checkout>/assets/cache, or $XDG_CACHE_HOME/skinengine (~/.cache/skinengine)
    shipped_file("examples/pose_arm.json")   # as given when it exists, else the installed copy

Generated characters too large to ship (``humanoid_dense``) are written to ``cache_dir()`` on first use.

``check_writable`` is the one check of an output path a user gave (commands, the demo, replay, the editor):
refused before any work, with a message naming the option, the path and why.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_FOLDERS", "PACKAGED_DIR", "cache_dir", "check_writable", "checkout_root", "data_dir", "shipped_file"]

#: The data folders of the repository root that a wheel carries as package data.
DATA_FOLDERS = ("shaders", "assets", "examples")

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


def shipped_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as given when it exists or does not start with a data folder's name; else the copy of that file in
    the data folder the engine reads (``examples/pose_arm.json`` -> ``data_dir("examples") / "pose_arm.json"``),
    when there is one. So the README's examples name the same files in a checkout and from an installed tool."""
    p = Path(path)
    if p.exists() or p.is_absolute() or not p.parts or p.parts[0] not in DATA_FOLDERS:
        return p
    candidate = data_dir(p.parts[0]).joinpath(*p.parts[1:])
    return candidate if candidate.is_file() else p


def cache_dir() -> Path:
    """Where generated characters too large to ship are written: ``assets/cache/`` in a checkout, else the
    per-user cache folder ``$XDG_CACHE_HOME/skinengine`` (default ``~/.cache/skinengine``)."""
    root = checkout_root()
    if root is not None:
        return root / "assets" / "cache"
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "skinengine"


def check_writable(flag: str, value: str | os.PathLike[str], *, makes_parents: bool = False,
                   suffix: str | tuple[str, ...] | None = None) -> Path:
    """Refuse an output path that cannot be written, before any work: ValueError naming ``flag``, the path and
    why. Nothing is created: the folder (or, when the caller creates missing folders (``makes_parents``), its
    nearest existing ancestor) must be a writable directory, and an existing target a writable file. A value
    ending in a path separator names a folder of outputs (``export-frame --out DIR/``). ``suffix`` (one or
    several, lower case) is the file type the option takes."""
    text = os.fspath(value)
    p = Path(text)
    as_folder = text.endswith(("/", os.sep)) or p.is_dir()
    if suffix is not None and not as_folder:
        allowed = (suffix,) if isinstance(suffix, str) else suffix
        if p.suffix.lower() not in allowed:
            raise ValueError(f"{flag} must end in {' or '.join(allowed)}, got {p.name!r}")
    if as_folder and flag == "--out" and p.is_dir() and not text.endswith(("/", os.sep)) and p.suffix:
        raise ValueError(f"{flag} {text!r} cannot be written: it is a folder")
    if as_folder and suffix is not None:
        raise ValueError(f"{flag} {text!r} cannot be written: it is a folder")
    folder = p if as_folder else p.parent
    probe = folder
    while not probe.exists() and (makes_parents or as_folder) and probe != probe.parent:
        probe = probe.parent
    if not probe.exists():
        raise ValueError(f"{flag} {text!r} cannot be written: the folder {str(folder) or '.'!r} does not exist")
    if not probe.is_dir():
        raise ValueError(f"{flag} {text!r} cannot be written: {str(probe)!r} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {text!r} cannot be written: no write permission in {str(probe) or '.'!r}")
    if p.exists() and not as_folder and not os.access(p, os.W_OK):
        raise ValueError(f"{flag} {text!r} cannot be written: the file is read-only")
    return p
