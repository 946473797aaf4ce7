"""Compressed geometry, decoded at load so the rest of the loader reads plain data:

* ``EXT_meshopt_compression`` (a bufferView's bytes compressed by meshoptimizer's codecs; the ``meshopt`` package
  decodes them): each such bufferView is decoded once, right after the buffers are read, and the accessor reader
  reads the decoded bytes in its place (``AccessorReader.replace_view``), so vertex data, indices and animation
  data pass the same checks as uncompressed ones.
* ``KHR_draco_mesh_compression`` (a primitive's attributes and indices in one Draco bitstream; the ``DracoPy``
  package decodes it): the extension's ``attributes`` map names each attribute's Draco unique id; the decoded
  values are handed to the accessor reader as the values of the primitive's accessors (``AccessorReader.provide``),
  which the mesh stage then reads, checks and repairs like any other.

A bitstream the decoder refuses is one AssetError naming the bufferView (meshopt) or the primitive (Draco).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.assets.accessors import COMPONENT_DTYPES, TYPE_SHAPES
from engine.assets.errors import AssetError
from engine.assets.gltf.state import LoaderState

DRACO = "KHR_draco_mesh_compression"
MESHOPT = "EXT_meshopt_compression"
_MESHOPT_MODES = ("ATTRIBUTES", "TRIANGLES", "INDICES")
_MESHOPT_FILTERS = ("NONE", "OCTAHEDRAL", "QUATERNION", "EXPONENTIAL")


def _int(obj: dict, key: str, where: str, *, lo: int, default: int | None = None) -> int:
    value = obj.get(key, default)
    if value is None:
        raise AssetError(where, f"missing required property {key!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise AssetError(f"{where}.{key}", f"must be an integer >= {lo}, got {value!r}")
    return value


class CompressionReader(LoaderState):
    """Decodes EXT_meshopt_compression bufferViews and KHR_draco_mesh_compression primitives."""

    # ------------------------------------------------------------------------------ EXT_meshopt_compression
    def _decode_meshopt(self, buffers: list[bytes | None]) -> None:
        views = self.doc.get("bufferViews", [])
        for i, bv in enumerate(views):
            ext = bv.get("extensions", {}).get(MESHOPT)
            if ext is None:
                continue
            where = f"bufferViews[{i}].extensions.{MESHOPT}"
            self.part = where
            self.reader.replace_view(i, self._meshopt_view(bv, ext, where, buffers))

    def _meshopt_view(self, bv: dict, ext: Any, where: str, buffers: list[bytes | None]) -> bytes:
        import meshopt

        if not isinstance(ext, dict):
            raise AssetError(where, "must be an object")
        b = _int(ext, "buffer", where, lo=0)
        if b >= len(buffers):
            raise AssetError(f"{where}.buffer", f"buffers[{b}] does not exist ({len(buffers)} buffers)")
        offset = _int(ext, "byteOffset", where, lo=0, default=0)
        length = _int(ext, "byteLength", where, lo=1)
        stride = _int(ext, "byteStride", where, lo=1)
        count = _int(ext, "count", where, lo=1)
        mode = ext.get("mode")
        if mode not in _MESHOPT_MODES:
            raise AssetError(f"{where}.mode", f"{mode!r} is not one of {', '.join(_MESHOPT_MODES)}")
        filt = ext.get("filter", "NONE")
        if filt not in _MESHOPT_FILTERS:
            raise AssetError(f"{where}.filter", f"{filt!r} is not one of {', '.join(_MESHOPT_FILTERS)}")
        # the extension's validity rules (EXT_meshopt_compression, "JSON schema updates")
        if bv.get("byteStride") is not None and int(bv["byteStride"]) != stride:
            raise AssetError(f"{where}.byteStride", f"{stride} differs from the bufferView's byteStride "
                                                    f"{int(bv['byteStride'])}")
        if stride * count != int(bv["byteLength"]):
            raise AssetError(where, f"byteStride {stride} x count {count} = {stride * count} differs from the "
                                    f"bufferView's byteLength {int(bv['byteLength'])}")
        if mode == "ATTRIBUTES" and (stride % 4 or stride > 256):
            raise AssetError(f"{where}.byteStride", f"{stride}: mode ATTRIBUTES needs a multiple of 4, at most 256")
        if mode != "ATTRIBUTES":
            if stride not in (2, 4):
                raise AssetError(f"{where}.byteStride", f"{stride}: mode {mode} needs 2 or 4")
            if filt != "NONE":
                raise AssetError(f"{where}.filter", f"{filt}: mode {mode} takes no filter")
            if mode == "TRIANGLES" and count % 3:
                raise AssetError(f"{where}.count", f"{count}: mode TRIANGLES needs a multiple of 3")
        if (filt == "OCTAHEDRAL" and stride not in (4, 8)) or (filt == "QUATERNION" and stride != 8) \
                or (filt == "EXPONENTIAL" and stride % 4):
            raise AssetError(f"{where}.byteStride", f"{stride} does not suit filter {filt}")
        if stride * count > self.max_bytes:
            raise AssetError(where, f"{stride * count} decoded bytes exceed the limit max_bytes={self.max_bytes}")
        data = buffers[b]
        if data is None:
            raise AssetError(f"{where}.buffer", f"buffers[{b}] has no data (no uri and not the GLB BIN chunk)")
        if offset + length > len(data):
            raise AssetError(where, f"byteOffset {offset} + byteLength {length} exceeds buffers[{b}] "
                                    f"({len(data)} bytes)")
        try:
            out = meshopt.decode_gltf_buffer(data[offset:offset + length], count, stride, mode, filt)
        except (ValueError, RuntimeError) as exc:
            raise AssetError(where, f"corrupt meshopt data: {exc}") from exc
        return np.ascontiguousarray(out).tobytes()

    # --------------------------------------------------------------------------- KHR_draco_mesh_compression
    def _decode_draco(self) -> None:
        for mi, mesh in enumerate(self.doc.get("meshes", [])):
            for pi, prim in enumerate(mesh.get("primitives", [])):
                ext = prim.get("extensions", {}).get(DRACO)
                if ext is not None:
                    where = f"meshes[{mi}].primitives[{pi}].extensions.{DRACO}"
                    self.part = where
                    self._draco_primitive(prim, ext, where)

    def _draco_primitive(self, prim: dict, ext: Any, where: str) -> None:
        import DracoPy

        if not isinstance(ext, dict):
            raise AssetError(where, "must be an object")
        bv_index = _int(ext, "bufferView", where, lo=0)
        views = self.doc.get("bufferViews", [])
        if bv_index >= len(views):
            raise AssetError(f"{where}.bufferView", f"bufferViews[{bv_index}] does not exist ({len(views)} "
                                                    "bufferViews)")
        mapping = ext.get("attributes")
        if not isinstance(mapping, dict) or not mapping:
            raise AssetError(f"{where}.attributes", "must be an object mapping attribute names to Draco ids")
        for name, uid in mapping.items():
            if name not in prim["attributes"]:
                raise AssetError(f"{where}.attributes.{name}", "is not an attribute of the primitive")
            if isinstance(uid, bool) or not isinstance(uid, int) or uid < 0:
                raise AssetError(f"{where}.attributes.{name}", f"must be an integer >= 0, got {uid!r}")
        mode = int(prim.get("mode", 4))
        if mode != 4:
            raise AssetError(where, f"a Draco primitive must be triangles (mode 4), not mode {mode}")
        bv = views[bv_index]
        data = self.reader.buffers[int(bv["buffer"])]
        if data is None:
            raise AssetError(f"{where}.bufferView", f"bufferViews[{bv_index}] reads buffers[{int(bv['buffer'])}], "
                                                    "which has no data")
        offset = int(bv.get("byteOffset", 0))
        try:
            decoded = DracoPy.decode(data[offset:offset + int(bv["byteLength"])])
        except Exception as exc:  # noqa: BLE001 - DracoPy raises its own types (FileTypeException, ...)
            raise AssetError(where, f"corrupt Draco data in bufferViews[{bv_index}]: {exc}") from exc
        faces = getattr(decoded, "faces", None)
        if faces is None:
            raise AssetError(where, f"bufferViews[{bv_index}] holds a Draco point cloud, not a triangle mesh")
        by_id = {int(a["unique_id"]): a for a in decoded.attributes}
        for name, uid in mapping.items():
            who = f"{where}.attributes.{name}"
            if uid not in by_id:
                raise AssetError(who, f"the Draco data has no attribute with unique id {uid} (it has "
                                      f"{sorted(by_id)})")
            a = int(prim["attributes"][name])
            self.reader.provide(a, self._draco_values(a, np.asarray(by_id[uid]["data"]), who), who)
        if "indices" not in prim:
            raise AssetError(where, "a Draco primitive needs an indices accessor")
        a = int(prim["indices"])
        self.reader.provide(a, self._draco_values(a, np.asarray(faces).reshape(-1, 1), f"{where} indices"),
                            f"{where} indices")

    def _draco_values(self, a: int, values: np.ndarray, who: str) -> np.ndarray:
        """Decoded Draco values as accessor ``a`` stores them: its count, its shape, its component type."""
        acc = self.reader.meta(a, who)
        shape = TYPE_SHAPES[acc["type"]]
        count = int(acc["count"])
        if len(shape) != 1:
            raise AssetError(who, f"accessors[{a}] is {acc['type']}; Draco attributes are vectors")
        if values.ndim != 2 or values.shape[0] != count or values.shape[1] != shape[0]:
            got = values.shape if values.ndim == 2 else (values.size,)
            raise AssetError(who, f"the Draco data gives {got[0]} x {got[-1]} values, accessors[{a}] declares "
                                  f"{count} {acc['type']}")
        dt = COMPONENT_DTYPES[int(acc["componentType"])]
        if dt.kind in "iu" and values.size:
            info = np.iinfo(dt)
            lo, hi = values.min(), values.max()
            if lo < info.min or hi > info.max:
                raise AssetError(who, f"Draco values {lo}..{hi} do not fit accessors[{a}]'s {dt.name}")
        return values.astype(dt)
