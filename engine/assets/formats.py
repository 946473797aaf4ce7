"""Files artists have that are not glTF: recognised by their first bytes or their extension, so the loader can say
in one line what the file is and what to do (``FBX is not supported; export glTF 2.0 ...``) instead of a JSON
parse error.

    foreign_format(Path("hero.fbx"), head)   # "FBX"; None for glTF (or anything unrecognised)
"""
from __future__ import annotations

from pathlib import Path

#: What the loader reads, named in every refusal.
SUPPORTED = "glTF 2.0 (.glb/.gltf)"

# Magic bytes at the very start of the file. STL, OBJ and 3DS files have none to speak of (3DS opens with the chunk
# id 0x4D4D, an ASCII STL with "solid", a binary STL with an arbitrary 80-byte header): their extension decides.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"Kaydara FBX Binary", "FBX"),
    (b"; FBX ", "FBX"),
    (b"BLENDER", "Blender .blend"),
    (b"PXR-USDC", "USD"),
    (b"#usda ", "USD"),
    (b"ply\n", "PLY"),
    (b"ply\r\n", "PLY"),
)
_SUFFIXES = {
    ".obj": "OBJ", ".fbx": "FBX", ".dae": "COLLADA", ".blend": "Blender .blend", ".blend1": "Blender .blend",
    ".usd": "USD", ".usda": "USD", ".usdc": "USD", ".usdz": "USD", ".stl": "STL", ".ply": "PLY", ".3ds": "3DS",
}


def foreign_format(path: Path, head: bytes) -> str | None:
    """The name of the non-glTF format of the file at ``path`` whose first bytes are ``head`` (a few hundred
    bytes are enough), or None when it may be glTF. Content wins over the extension: a glTF JSON or GLB named
    ``.obj`` is read as glTF, an FBX named ``.glb`` is refused as FBX."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if (text.startswith(b"<?xml") and b"<COLLADA" in head) or text.startswith(b"<COLLADA"):
        return "COLLADA"
    if head.startswith(b"glTF") or text.startswith(b"{"):
        return None  # a GLB or a JSON document: the glTF loader judges it
    return _SUFFIXES.get(path.suffix.lower())


def refusal(name: str) -> str:
    """The one-line reason a file of format ``name`` is refused."""
    return f"{name} is not supported; export {SUPPORTED} from your DCC tool"
