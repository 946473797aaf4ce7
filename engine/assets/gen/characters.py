"""Registry of the generated characters: name -> description and builder (used by engine.assets.library
and assets/generate.py)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.assets.gen import humanoid as _humanoid
from engine.assets.gen import shapes as _shapes
from engine.assets.gen.rig import Character


@dataclass(frozen=True)
class CharacterSpec:
    """name; one-line description; builder; large: over 2 MB, so generated into assets/cache/ on first
    use instead of being committed."""

    name: str
    description: str
    build: Callable[[], Character]
    large: bool = False


SPECS: dict[str, CharacterSpec] = {s.name: s for s in (
    CharacterSpec("cylinder", "capped tube r=0.1 m, 1 m along +Y, root/mid/tip joints; twist, bend, stretch "
                  "(+ held poses twist90/135/180, bend45/90/135, stretch150)", _shapes.cylinder),
    CharacterSpec("box", "subdivided box 0.2x0.8x0.2 m, 1802 vertices, 4-joint chain along +Y; bend, twist",
                  _shapes.box),
    CharacterSpec("plus", "upright plus, 5634 vertices, 17 joints (centre + 4 arms x 4); bend, wave", _shapes.plus),
    CharacterSpec("humanoid", "1.75 m person in A-pose, ~16k vertices, 21 joints; idle, walk, wave, stretch",
                  _humanoid.humanoid),
    CharacterSpec("humanoid_dense", "the humanoid meshed finer, ~90k vertices (generated into assets/cache/)",
                  lambda: _humanoid.humanoid(cell=_humanoid.DENSE_CELL, name="humanoid_dense"), large=True),
)}


def spec(name: str) -> CharacterSpec:
    """The spec of ``name``; ValueError listing the valid names."""
    try:
        return SPECS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown character {name!r}; choose one of {', '.join(SPECS)}") from None


def build(name: str) -> Character:
    return spec(name).build()


def write(name: str, path: str | Path) -> tuple[Path, Character]:
    """Build ``name`` and write it as GLB to ``path`` (atomically)."""
    ch = build(name)
    return ch.to_builder().save_glb(path), ch
