"""Where the project's characters live, generating them on first use.

The project ships no third-party models: every character is built in code (engine.assets.gen) and
written as GLB. Small ones sit in ``assets/`` (committed); large ones (over 2 MB) are written to
``assets/cache/`` (git-ignored) the first time they are asked for. A file whose
``asset.extras.generator_version`` differs from the generator's is rebuilt.

    from engine.assets.library import character_path, CHARACTERS
    path = character_path("humanoid")      # assets/humanoid.glb
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engine.assets.gen.characters import SPECS, spec, write
from engine.assets.gen.rig import GENERATOR_VERSION
from engine.assets.glb import read_glb_json

#: Default asset folder: <repo>/assets, or $SKINENGINE_ASSETS_DIR when set.
ASSETS_DIR = Path(os.environ.get("SKINENGINE_ASSETS_DIR", Path(__file__).resolve().parents[2] / "assets"))


@dataclass(frozen=True)
class CharacterInfo:
    name: str
    description: str
    large: bool  # generated into assets/cache/ on first use (over 2 MB, not committed)


#: Every generated character with a one-line description.
CHARACTERS: list[CharacterInfo] = [CharacterInfo(s.name, s.description, s.large) for s in SPECS.values()]


def expected_path(name: str, *, assets_dir: str | os.PathLike | None = None) -> Path:
    """Where ``name`` lives (without generating it)."""
    s = spec(name)
    root = Path(assets_dir) if assets_dir is not None else ASSETS_DIR
    return (root / "cache" if s.large else root) / f"{s.name}.glb"


def is_current(path: Path) -> bool:
    """True when ``path`` is a GLB written by this generator version."""
    try:
        extras = read_glb_json(path).get("asset", {}).get("extras", {})
    except (OSError, ValueError):
        return False
    return extras.get("generator_version") == GENERATOR_VERSION


def character_path(name: str, *, regenerate: bool = False, assets_dir: str | os.PathLike | None = None) -> Path:
    """Path of ``name``'s GLB (assets/<name>.glb, or assets/cache/<name>.glb for large ones), generating
    it when missing, stale or ``regenerate`` is set. ValueError lists the names for an unknown one."""
    path = expected_path(name, assets_dir=assets_dir)
    if regenerate or not path.is_file() or not is_current(path):
        write(name, path)
    return path


def generate(name: str, out_dir: str | os.PathLike | None = None) -> Path:
    """Build ``name`` now into ``out_dir`` (default: its usual place) and return the path."""
    return character_path(name, regenerate=True, assets_dir=out_dir)
