"""One definition of every std430 layout and every constant shared between Python and GLSL.

A :class:`Std430Struct` is declared once in Python and produces both the numpy structured dtype used
to fill a buffer and the GLSL ``struct`` text the shaders include (through the shader library's
generated include ``generated/layouts.glsl``). Constants such as ``MAX_JOINTS`` and ``LOCAL_SIZE``
live in :data:`GLSL_CONSTANTS` and reach GLSL as ``#define``s, so no number is typed twice.

std430 rules implemented here (OpenGL 4.6 spec, section 7.6.2.2): a scalar aligns to 4 bytes, a vec2
to 8, a vec4 to 16; a matN is an array of N column vectors (so mat4 aligns to 16 and takes 64 bytes);
an array of T has stride = size of T rounded up to T's alignment (no std140 rounding to 16); a struct
aligns to its largest member and its size is rounded up to that alignment. ``vec3`` members are
refused: the project stores 3-vectors as vec4 (STYLE: SSBOs never hold vec3).

Matrices: GLSL matrices are column-major. A numpy (4,4) float32 matrix in this engine's column-vector
convention is written into a ``mat4`` field as ``m.T`` (the transpose makes numpy's row-major bytes
the column-major bytes GLSL expects); :func:`pack_mat4` does that for a batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# --- constants shared with GLSL (passed as #defines; never typed again in a shader) --------------
MAX_JOINTS = 256
"""Most joints one skin may have on the GPU (joint-matrix SSBO length per skin)."""
LOCAL_SIZE = 64
"""Compute work-group size (local_size_x) of the per-vertex deform kernels."""

# SSBO binding points of the deformed-vertex buffers the renderer pulls from (deformers write them).
BINDING_POSITIONS = 0
BINDING_NORMALS = 1
BINDING_TEXCOORDS = 2
BINDING_LIGHTS = 3
BINDING_INDICES = 4  # a mesh's index buffer (uint triangles) as an SSBO, where a shader declares it
BINDING_BLOBS = 5    # contact-shadow blobs (BLOB structs) of the compose pass
BINDING_SCREEN_RECTS = 6  # ivec4 (x0, y0, x1, y1) pixel rectangle per G-buffer (scene, then layers)
BINDING_MARKS = 7    # ivec2 (vertex, set) per marked vertex of the vertex-marks overlay (regions of interest)
# Image units the compose pass reads the scene G-buffer and the backdrop depth through (without layers).
IMAGE_GBUFFER_ZCOPY = 0
IMAGE_GBUFFER_ALBEDO = 1
IMAGE_GBUFFER_IDS = 2
IMAGE_BACKDROP_DEPTH = 3
CORNER_TRIANGLE_SHIFT = 6
"""Bit where the triangle index starts in a corner vertex's info word (engine/render/corners.py)."""
MAX_LIGHTS = 8
MAX_LAYERS = 8
"""Most layers (meshes with their own G-buffer) the compositor takes besides the scene G-buffer."""

# The silhouette filter (engine/render/silhouette.py on the GPU, engine/skinning/roi.py its numpy reference): both
# sides read the channels and thresholds from here, so neither imports the other.
SILHOUETTE_CHANNELS = ("normal", "depth", "position")
"""The G-buffer channels the filter runs on (normal is the default)."""
#: default thresholds per channel (normal: unit vectors; position: metres; depth: window depth)
SILHOUETTE_THRESHOLDS = {"normal": 0.4, "position": 0.02, "depth": 0.002}
#: the GLSL channel codes (u_sil_channel of include/silhouette.glsl), defines of every shader that includes it
SILHOUETTE_DEFINES = {"SIL_NORMAL": 0, "SIL_DEPTH": 1, "SIL_POSITION": 2}

GLSL_CONSTANTS: dict[str, int] = {
    "MAX_JOINTS": MAX_JOINTS,
    "LOCAL_SIZE": LOCAL_SIZE,
    "BINDING_POSITIONS": BINDING_POSITIONS,
    "BINDING_NORMALS": BINDING_NORMALS,
    "BINDING_TEXCOORDS": BINDING_TEXCOORDS,
    "BINDING_LIGHTS": BINDING_LIGHTS,
    "BINDING_INDICES": BINDING_INDICES,
    "BINDING_BLOBS": BINDING_BLOBS,
    "BINDING_SCREEN_RECTS": BINDING_SCREEN_RECTS,
    "BINDING_MARKS": BINDING_MARKS,
    "IMAGE_GBUFFER_ZCOPY": IMAGE_GBUFFER_ZCOPY,
    "IMAGE_GBUFFER_ALBEDO": IMAGE_GBUFFER_ALBEDO,
    "IMAGE_GBUFFER_IDS": IMAGE_GBUFFER_IDS,
    "IMAGE_BACKDROP_DEPTH": IMAGE_BACKDROP_DEPTH,
    "CORNER_TRIANGLE_SHIFT": CORNER_TRIANGLE_SHIFT,
    "MAX_LIGHTS": MAX_LIGHTS,
    "MAX_LAYERS": MAX_LAYERS,
}

# GLSL type -> (numpy base dtype, numpy sub-shape, base alignment, size) under std430.
_TYPES: dict[str, tuple[str, tuple[int, ...], int, int]] = {
    "float": ("<f4", (), 4, 4),
    "int": ("<i4", (), 4, 4),
    "uint": ("<u4", (), 4, 4),
    "vec2": ("<f4", (2,), 8, 8),
    "ivec2": ("<i4", (2,), 8, 8),
    "uvec2": ("<u4", (2,), 8, 8),
    "vec4": ("<f4", (4,), 16, 16),
    "ivec4": ("<i4", (4,), 16, 16),
    "uvec4": ("<u4", (4,), 16, 16),
    "mat4": ("<f4", (4, 4), 16, 64),
}
_REFUSED = {"vec3": "vec4", "ivec3": "ivec4", "uvec3": "uvec4", "mat3": "mat4 (or three vec4)",
            "bool": "uint", "double": "float"}


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


@dataclass(frozen=True)
class Std430Field:
    name: str
    glsl_type: str
    count: int  # 0 = not an array
    offset: int


class Std430Struct:
    """A std430 struct declared once: ``Std430Struct("Light", [("direction", "vec4"), ("color", "vec4")])``.

    fields: (name, glsl_type) or (name, glsl_type, array_count). ``.dtype`` is the numpy structured
    dtype (itemsize = the std430 array stride of the struct), ``.glsl()`` the GLSL declaration.
    """

    def __init__(self, name: str, fields: list[tuple]) -> None:
        if not name.isidentifier():
            raise ValueError(f"struct name {name!r} is not a GLSL identifier")
        if not fields:
            raise ValueError(f"struct {name!r} needs at least one field, got {fields!r}")
        self.name = name
        offset = 0
        align = 4
        out: list[Std430Field] = []
        seen: set[str] = set()
        for f in fields:
            if len(f) not in (2, 3):
                raise ValueError(f"field {f!r} of {name}: expected (name, type) or (name, type, count)")
            fname, ftype = f[0], f[1]
            count = int(f[2]) if len(f) == 3 else 0
            if not str(fname).isidentifier() or fname in seen:
                raise ValueError(f"field name {fname!r} of {name} is not a new GLSL identifier")
            seen.add(fname)
            if ftype in _REFUSED:
                raise ValueError(f"field {name}.{fname}: type {ftype!r} is not allowed in SSBO layouts; "
                                 f"use {_REFUSED[ftype]} (valid types: {sorted(_TYPES)})")
            if ftype not in _TYPES:
                raise ValueError(f"field {name}.{fname}: unknown type {ftype!r}; valid types: {sorted(_TYPES)}")
            if len(f) == 3 and count < 1:
                raise ValueError(f"field {name}.{fname}: array count must be >= 1, got {f[2]!r}")
            _, _, a, size = _TYPES[ftype]
            offset = _round_up(offset, a)
            out.append(Std430Field(fname, ftype, count, offset))
            offset += size * max(count, 1)  # std430 array stride = element size (already aligned)
            align = max(align, a)
        self.fields: tuple[Std430Field, ...] = tuple(out)
        self.alignment = align
        self.size = _round_up(offset, align)
        self.dtype = np.dtype({
            "names": [f.name for f in out],
            "formats": [self._np_format(f) for f in out],
            "offsets": [f.offset for f in out],
            "itemsize": self.size,
        })

    @staticmethod
    def _np_format(f: Std430Field) -> tuple | str:
        base, shape, _, _ = _TYPES[f.glsl_type]
        shape = ((f.count,) if f.count else ()) + shape
        return (base, shape) if shape else base

    def glsl(self) -> str:
        """GLSL declaration of the struct, with the std430 offsets as comments."""
        lines = [f"struct {self.name} {{"]
        for f in self.fields:
            arr = f"[{f.count}]" if f.count else ""
            lines.append(f"    {f.glsl_type} {f.name}{arr};  // offset {f.offset}")
        lines.append(f"}};  // std430 size {self.size}, alignment {self.alignment}")
        return "\n".join(lines)

    def zeros(self, n: int) -> np.ndarray:
        """A zeroed array of ``n`` structs ready to fill and upload (``arr.tobytes()``)."""
        if n < 0:
            raise ValueError(f"struct count must be >= 0, got {n}")
        return np.zeros(n, self.dtype)

    def __repr__(self) -> str:
        return f"Std430Struct({self.name!r}, size={self.size})"


def pack_mat4(m: np.ndarray) -> np.ndarray:
    """(..., 4, 4) column-vector-convention matrices -> the same shape transposed for GLSL mat4 (float32)."""
    m = np.asarray(m, np.float32)
    if m.shape[-2:] != (4, 4):
        raise ValueError(f"expected (...,4,4) matrices, got shape {m.shape}")
    return np.ascontiguousarray(np.swapaxes(m, -1, -2))


# --- the layouts themselves (one definition each) -------------------------------------------------
LIGHT = Std430Struct("Light", [
    ("direction", "vec4"),  # xyz: unit vector from the surface towards the light (world), w unused
    ("color", "vec4"),      # rgb: linear radiance scale, a: wrap factor of the soft diffuse term
])
"""Directional light of the scene renderer (uniform block ``Lights``, std140: identical to std430 for
these two vec4 members)."""

BLOB = Std430Struct("Blob", [
    ("ellipse", "vec4"),  # world centre x, z and half extents x, z of the soft contact shadow on the ground
    ("params", "vec4"),   # x: darkness in [0, 1], yzw unused
])
"""Contact-shadow blob under one entity (SSBO ``Blobs`` of the blob pass)."""

LAYOUTS: tuple[Std430Struct, ...] = (LIGHT, BLOB)


def layouts_glsl() -> str:
    """Text of the generated include ``generated/layouts.glsl``: every struct in :data:`LAYOUTS`."""
    parts = ["// Generated from engine/render/layouts.py; do not edit (one definition of each layout)."]
    parts += [s.glsl() for s in LAYOUTS]
    return "\n".join(parts) + "\n"
