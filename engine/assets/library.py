"""Where the project's characters live, generating them on first use.

The project ships no third-party models: every character is built in code (engine.assets.gen) and
written as GLB. Small ones sit in ``assets/`` (committed, and shipped in the wheel as package data); large
ones (over 2 MB) are written to ``engine.paths.cache_dir()`` the first time they are asked for:
``assets/cache/`` (git-ignored) in a checkout, the per-user cache folder (``$XDG_CACHE_HOME/skinengine``,
default ``~/.cache/skinengine``) when installed. With ``$SKINENGINE_ASSETS_DIR`` or ``assets_dir=`` set,
small ones go to that folder and large ones to its ``cache/``. A file whose
``asset.extras.generator_version`` differs from the generator's is rebuilt (into the cache folder when the
installed copy cannot be rewritten).

    from engine.assets.library import character_path, CHARACTERS
    path = character_path("humanoid")      # assets/humanoid.glb
    path = source_path("humanoid")         # the same; source_path("x.glb") is Path("x.glb")
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engine.assets.gen.characters import SPECS, spec
from engine.assets.gen.rig import GENERATOR_VERSION
from engine.assets.glb import read_glb_json
from engine.log import progress
from engine.paths import cache_dir, data_dir

_ASSETS_ENV = os.environ.get("SKINENGINE_ASSETS_DIR")
#: Default asset folder: $SKINENGINE_ASSETS_DIR when set, else the checkout's assets/ or the installed copy.
ASSETS_DIR = Path(_ASSETS_ENV) if _ASSETS_ENV else data_dir("assets")


@dataclass(frozen=True)
class CharacterInfo:
    name: str
    description: str
    large: bool  # generated into the cache folder on first use (over 2 MB, not committed)


#: Every generated character with a one-line description.
CHARACTERS: list[CharacterInfo] = [CharacterInfo(s.name, s.description, s.large) for s in SPECS.values()]


def expected_path(name: str, *, assets_dir: str | os.PathLike | None = None) -> Path:
    """Where ``name`` lives (without generating it)."""
    s = spec(name)
    if assets_dir is not None or _ASSETS_ENV:
        root = Path(assets_dir) if assets_dir is not None else ASSETS_DIR
        return (root / "cache" if s.large else root) / f"{s.name}.glb"
    return (cache_dir() if s.large else ASSETS_DIR) / f"{s.name}.glb"


def is_current(path: Path) -> bool:
    """True when ``path`` is a GLB written by this generator version."""
    try:
        extras = read_glb_json(path).get("asset", {}).get("extras", {})
    except (OSError, ValueError):
        return False
    return extras.get("generator_version") == GENERATOR_VERSION


def character_path(name: str, *, regenerate: bool = False, assets_dir: str | os.PathLike | None = None) -> Path:
    """Path of ``name``'s GLB (assets/<name>.glb, or <cache>/<name>.glb for large ones), generating
    it when missing, stale or ``regenerate`` is set. ValueError lists the names for an unknown one."""
    path = expected_path(name, assets_dir=assets_dir)
    if not regenerate and path.is_file() and is_current(path):
        return path
    try:
        _write(name, path)
    except PermissionError:
        if assets_dir is not None or path.parent == cache_dir():
            raise
        path = cache_dir() / path.name  # a read-only installed copy that is stale: rebuild into the cache
        if regenerate or not (path.is_file() and is_current(path)):
            _write(name, path)
    return path


def _write(name: str, path: Path) -> None:
    """Build ``name`` and write its GLB to ``path``; large characters show a progress bar (stderr, terminals)."""
    s = spec(name)
    with progress(total=2, desc=f"generating {s.name}", unit="step", enabled=s.large) as bar:
        character = s.build()
        bar.update()
        character.to_builder().save_glb(path)
        bar.update()


def generate(name: str, out_dir: str | os.PathLike | None = None) -> Path:
    """Build ``name`` now into ``out_dir`` (default: its usual place) and return the path."""
    return character_path(name, regenerate=True, assets_dir=out_dir)


def source_path(source: str | os.PathLike) -> Path:
    """The file an asset argument names: a .gltf/.glb path or an existing file as given, else a generated
    character's GLB (generated on first use). ValueError lists the characters for anything else."""
    text = os.fspath(source)
    if text.lower().endswith((".glb", ".gltf")) or Path(text).is_file():
        return Path(text)
    known = [c.name for c in CHARACTERS]
    if text not in known:
        raise ValueError(f"{text!r} is neither a .gltf/.glb file nor a generated character; "
                         f"characters: {', '.join(known)}")
    return character_path(text)
