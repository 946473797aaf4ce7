"""What every stage of the glTF loader shares: the loader's state (the document, the accessor reader, the warnings,
the part being read, the bytes read so far) and the limits and accessor formats the stages check against."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.assets.accessors import AccessorReader
from engine.assets.errors import AssetError

DEFAULT_MAX_BYTES = 512 * 2**20
#: Most nodes a file may declare. Every node is a Python object with its own checks, so loading costs some
#: microseconds per node: the limit keeps a hostile file (a 300k-node chain) from stalling the loader, far above
#: any character or scene this engine is made for (hundreds of nodes). Hierarchy depth has no limit of its own:
#: the rig set-up and forward kinematics are linear / logarithmic in it.
DEFAULT_MAX_NODES = 65536
# Accepted component types per attribute: FLOAT or normalized integer types (n = normalized).
F, UB_N, US_N, B_N, S_N, UB, US, B, S = (5126, False), (5121, True), (5123, True), (5120, True), \
    (5122, True), (5121, False), (5123, False), (5120, False), (5122, False)
ATTR_FORMATS: dict[str, tuple[tuple[str, ...], tuple[tuple[int, bool], ...], tuple[tuple[int, bool], ...]]] = {
    # name: (accessor types, formats, extra formats allowed by KHR_mesh_quantization)
    "POSITION": (("VEC3",), (F,), (B, B_N, UB, UB_N, S, S_N, US, US_N)),
    "NORMAL": (("VEC3",), (F,), (B_N, S_N)),
    "TANGENT": (("VEC4",), (F,), (B_N, S_N)),
    "TEXCOORD": (("VEC2",), (F, UB_N, US_N), (B, B_N, UB, S, S_N, US)),
    "COLOR": (("VEC3", "VEC4"), (F, UB_N, US_N), ()),
    "JOINTS": (("VEC4",), (UB, US), ()),
    "WEIGHTS": (("VEC4",), (F, UB_N, US_N), ()),
}
ROTATION_FORMATS = (F, B_N, UB_N, S_N, US_N)
NORMALIZED_STEP = {5121: 1 / 255, 5123: 1 / 65535}
UNIT_TOL = 1e-3  # |length - 1| above which a quaternion / normal is reported as repaired


class LoaderState:
    """The state of one :func:`engine.assets.gltf.load` call; each stage of the loader is a mixin over it."""

    def __init__(self, path: Path, max_bytes: int, max_nodes: int = DEFAULT_MAX_NODES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.max_nodes = max_nodes
        self.part = "file"
        self.warnings: list[str] = []
        self.doc: dict = {}
        self._gltf: Any = None  # pygltflib.GLTF2 (untyped), set by run()
        self._reader: AccessorReader | None = None
        self.quantized = False
        self.bytes_read = 0  # file + external buffers + external images, bounded by 2 * max_bytes

    @property
    def gltf(self) -> Any:
        """The pygltflib document (after ``run`` parsed the JSON)."""
        if self._gltf is None:
            raise RuntimeError("the glTF document is not parsed yet")
        return self._gltf

    @property
    def reader(self) -> AccessorReader:
        """The accessor reader (after ``run`` loaded the buffers)."""
        if self._reader is None:
            raise RuntimeError("the glTF buffers are not loaded yet")
        return self._reader

    def spend(self, n: int, where: str) -> None:
        """Account for ``n`` bytes read from disk; refuse past 2 * max_bytes (a file referenced many times)."""
        self.bytes_read += n
        if self.bytes_read > 2 * self.max_bytes:
            raise AssetError(where, f"reading {n} more bytes exceeds the limit of 2 x max_bytes = "
                                    f"{2 * self.max_bytes} bytes read in total")

    def warn(self, where: str, reason: str) -> None:
        self.warnings.append(f"{where}: {reason}")
