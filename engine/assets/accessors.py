"""Bounds-checked reading of glTF bufferViews and accessors into numpy arrays.

Every accessor is checked against its bufferView and every bufferView against its buffer before a byte
is read (offset + stride * (count - 1) + element size <= length, component alignment, 4-byte alignment of
matrix columns), so a hostile file can neither read outside a buffer nor make the loader allocate more
than ``max_bytes``. Reads are ``np.ndarray`` views over the buffer bytes (strided where byteStride is
set), copied once; sparse substitutions are applied with one fancy-index assignment.

Roles: the caller says what an accessor is read for (``vertex``, ``index``, ``ibm``, ``animation``,
``sparse``...). Only vertex data may live in a bufferView with ``byteStride``; vertex attributes must be
4-byte aligned; a bufferView used for vertices may not also hold indices (and must agree with its
declared ``target``).

Compressed data (``engine.assets.gltf.compression``) reaches the reader decoded: a bufferView's bytes replaced
(``replace_view``, EXT_meshopt_compression) or an accessor's values given (``provide``, KHR_draco_mesh_compression);
both then pass the same checks as plain data.
"""
from __future__ import annotations

from typing import SupportsInt

import numpy as np

from engine.assets.errors import AssetError

COMPONENT_DTYPES: dict[int, np.dtype] = {
    5120: np.dtype("<i1"), 5121: np.dtype("<u1"), 5122: np.dtype("<i2"),
    5123: np.dtype("<u2"), 5125: np.dtype("<u4"), 5126: np.dtype("<f4"),
}
COMPONENT_NAMES = {5120: "BYTE", 5121: "UNSIGNED_BYTE", 5122: "SHORT", 5123: "UNSIGNED_SHORT",
                   5125: "UNSIGNED_INT", 5126: "FLOAT"}
TYPE_SHAPES: dict[str, tuple[int, ...]] = {
    "SCALAR": (1,), "VEC2": (2,), "VEC3": (3,), "VEC4": (4,), "MAT2": (2, 2), "MAT3": (3, 3), "MAT4": (4, 4),
}
TARGET_ROLE = {34962: "vertex", 34963: "index"}
# Divisors for normalized integers (glTF 2.0, "Animation" / "Meshes": c / (2^(n-1) - 1) clamped at -1
# for signed types, c / (2^n - 1) for unsigned ones).
NORMALIZED_DIVISOR = {5120: 127.0, 5121: 255.0, 5122: 32767.0, 5123: 65535.0}
STRIDE_ROLES = frozenset({"vertex"})


def element_layout(component_type: int, type_: str) -> tuple[int, int, int]:
    """(element size incl. matrix column padding, column stride, size of the last element without padding).

    Matrix columns start on 4-byte boundaries (MAT2 of bytes, MAT3 of bytes/shorts are padded)."""
    csize = COMPONENT_DTYPES[component_type].itemsize
    shape = TYPE_SHAPES[type_]
    if len(shape) == 1:
        n = shape[0] * csize
        return n, n, n
    rows = shape[0]
    col = rows * csize
    col_stride = (col + 3) & ~3
    return col_stride * rows, col_stride, col_stride * (rows - 1) + col


def _i(v: SupportsInt | str | None, default: int = 0) -> int:
    return default if v is None else int(v)


class AccessorReader:
    """Reads accessors of one document. ``buffers[i]`` is the bytes of buffer i, or None when the file
    gives no data for it (a .gltf buffer without uri): reading such a buffer is an error."""

    def __init__(self, doc: dict, buffers: list[bytes | None], *, max_bytes: int) -> None:
        self.doc = doc
        self.buffers = buffers
        self.max_bytes = max_bytes
        self.views: list[dict] = doc.get("bufferViews", [])
        self.accessors: list[dict] = doc.get("accessors", [])
        self._cache: dict[int, np.ndarray] = {}
        self._decoded_bytes = 0  # all decoded accessors together stay under 2 * max_bytes
        self._view_role: dict[int, tuple[str, str]] = {}  # bufferView -> (role, who set it)
        self._vertex_view_users: dict[int, set[int]] = {}
        self._view_data: dict[int, bytes] = {}  # bufferView -> its decompressed bytes (EXT_meshopt_compression)
        self._provided: set[int] = set()  # accessors decoded from Draco data (KHR_draco_mesh_compression)

    def provided(self, index: int) -> bool:
        """True when accessor ``index``'s values came from ``provide`` (Draco), not from a bufferView."""
        return index in self._provided

    def replace_view(self, bv_index: int, data: bytes) -> None:
        """Read bufferView ``bv_index`` from ``data`` (its decompressed bytes) instead of its buffer."""
        self._view_data[bv_index] = data

    def provide(self, index: int, values: np.ndarray, who: str) -> None:
        """Accessor ``index``'s values decoded elsewhere (count, *shape) in its component type: checked like read
        data (size limit, finiteness) and returned by ``read`` from now on."""
        acc = self.accessors[index]
        need = int(values.nbytes)
        if self._decoded_bytes + need > 2 * self.max_bytes:
            raise AssetError(who, f"decoding accessors[{index}] ({need} bytes) would exceed the limit of "
                                  f"2 x max_bytes = {2 * self.max_bytes} bytes of decoded accessor data")
        self._decoded_bytes += need
        out = np.ascontiguousarray(values, COMPONENT_DTYPES[int(acc["componentType"])])
        self._check_finite(out, index, who)
        out.setflags(write=False)
        self._cache[index] = out
        self._provided.add(index)

    def decoded(self, index: int) -> np.ndarray | None:
        """Accessor ``index`` if it was decoded already (None otherwise): what the loader's checks look at."""
        return self._cache.get(index)

    # ------------------------------------------------------------------------------------ structure
    def check_structure(self) -> None:
        """Check every bufferView and accessor against the declared lengths (no data needed)."""
        buffers = self.doc.get("buffers", [])
        for i, bv in enumerate(self.views):
            where = f"bufferViews[{i}]"
            blen = int(buffers[int(bv["buffer"])]["byteLength"])
            off, length = _i(bv.get("byteOffset")), int(bv["byteLength"])
            if off + length > blen:
                raise AssetError(where, f"byteOffset {off} + byteLength {length} = {off + length} exceeds "
                                        f"buffers[{int(bv['buffer'])}].byteLength {blen}")
            stride = bv.get("byteStride")
            if stride is not None:
                if int(stride) > length:
                    raise AssetError(f"{where}.byteStride", f"byteStride {int(stride)} is greater than "
                                                            f"byteLength {length}")
                if bv.get("target") == 34963:
                    raise AssetError(f"{where}.byteStride", "an index bufferView (target 34963) may not have "
                                                            "a byteStride")
        for i, acc in enumerate(self.accessors):
            self._check_accessor(i, acc)

    def _known(self, acc: dict) -> bool:
        return int(acc["componentType"]) in COMPONENT_DTYPES and acc["type"] in TYPE_SHAPES

    def _check_accessor(self, i: int, acc: dict) -> None:
        where = f"accessors[{i}]"
        if not self._known(acc):
            return  # warned by the validator; refused if something reads it
        ct, type_, count = int(acc["componentType"]), acc["type"], int(acc["count"])
        csize = COMPONENT_DTYPES[ct].itemsize
        esize, _, last = element_layout(ct, type_)
        if acc.get("normalized") and ct not in NORMALIZED_DIVISOR:
            raise AssetError(f"{where}.normalized", f"only BYTE/UNSIGNED_BYTE/SHORT/UNSIGNED_SHORT accessors may "
                                                    f"be normalized, not {COMPONENT_NAMES[ct]}")
        for key in ("min", "max"):
            if key in acc and len(acc[key]) != int(np.prod(TYPE_SHAPES[type_])):
                raise AssetError(f"{where}.{key}", f"{len(acc[key])} values for a {type_} accessor "
                                                   f"({int(np.prod(TYPE_SHAPES[type_]))} expected)")
        if count * esize > self.max_bytes:
            raise AssetError(f"{where}.count", f"count {count} x {esize} bytes exceeds the size limit "
                                               f"{self.max_bytes} bytes")
        if "bufferView" in acc:
            bv_index = int(acc["bufferView"])
            bv = self.views[bv_index]
            off = _i(acc.get("byteOffset"))
            if len(TYPE_SHAPES[type_]) == 2 and off % 4:
                raise AssetError(f"{where}.byteOffset", f"matrix accessors must be 4-byte aligned, byteOffset {off}")
            if off % csize:
                raise AssetError(f"{where}.byteOffset", f"byteOffset {off} is not a multiple of the component "
                                                        f"size {csize}")
            total = off + _i(bv.get("byteOffset"))
            if total % csize:
                raise AssetError(where, f"total byte offset {total} (bufferViews[{bv_index}].byteOffset + "
                                        f"byteOffset) is not a multiple of the component size {csize}")
            stride = _i(bv.get("byteStride"), esize)
            if stride < esize:
                raise AssetError(where, f"bufferViews[{bv_index}].byteStride {stride} is smaller than the "
                                        f"element size {esize}")
            end = off + stride * (count - 1) + last
            if end > int(bv["byteLength"]):
                raise AssetError(where, f"does not fit bufferViews[{bv_index}]: byteOffset {off} + stride "
                                        f"{stride} x (count {count} - 1) + element {last} = {end} > byteLength "
                                        f"{int(bv['byteLength'])}")
        sparse = acc.get("sparse")
        if sparse is not None:
            scount = int(sparse["count"])
            if scount > count:
                raise AssetError(f"{where}.sparse.count", f"sparse count {scount} exceeds the accessor count "
                                                          f"{count}")
            for part, part_size in (("indices", COMPONENT_DTYPES.get(int(sparse["indices"]["componentType"]))),
                                    ("values", None)):
                sub = sparse[part]
                pw = f"{where}.sparse.{part}"
                bv_index = int(sub["bufferView"])
                bv = self.views[bv_index]
                if bv.get("byteStride") is not None:
                    raise AssetError(f"{pw}.bufferView", f"bufferViews[{bv_index}] has a byteStride; only vertex "
                                                         "data may be strided")
                if part == "indices" and int(sub["componentType"]) not in (5121, 5123, 5125):
                    raise AssetError(f"{pw}.componentType", f"sparse indices must be UNSIGNED_BYTE/SHORT/INT, not "
                                                            f"{int(sub['componentType'])}")
                size = part_size.itemsize * scount if part_size is not None else esize * scount
                off = _i(sub.get("byteOffset"))
                if off + size > int(bv["byteLength"]):
                    raise AssetError(pw, f"byteOffset {off} + {size} bytes exceeds bufferViews[{bv_index}]."
                                         f"byteLength {int(bv['byteLength'])}")

    # ------------------------------------------------------------------------------------ reading
    def _claim_view(self, bv_index: int, role: str, who: str, acc_index: int) -> None:
        bv = self.views[bv_index]
        kind = "index" if role == "index" else "vertex" if role == "vertex" else "other"
        declared = TARGET_ROLE.get(bv.get("target"))  # type: ignore[arg-type]
        if declared is not None and kind != declared and kind in ("vertex", "index"):
            raise AssetError(who, f"bufferViews[{bv_index}] declares target {bv.get('target')} "
                                  f"({declared} data) but is used for {kind} data")
        prev = self._view_role.get(bv_index)
        if prev is not None and prev[0] != kind and {prev[0], kind} == {"vertex", "index"}:
            raise AssetError(who, f"bufferViews[{bv_index}] is used for {prev[0]} data by {prev[1]} and for "
                                  f"{kind} data here")
        if prev is None:
            self._view_role[bv_index] = (kind, who)
        if bv.get("byteStride") is not None and role not in STRIDE_ROLES:
            raise AssetError(who, f"bufferViews[{bv_index}] has byteStride {int(bv['byteStride'])}; only vertex "
                                  f"attribute data may be strided ({role} data may not)")
        if role == "vertex":
            users = self._vertex_view_users.setdefault(bv_index, set())
            users.add(acc_index)
            if len(users) > 1 and bv.get("byteStride") is None:
                raise AssetError(who, f"bufferViews[{bv_index}] holds several vertex attribute accessors but "
                                      "defines no byteStride")

    def meta(self, index: int, who: str) -> dict:
        """The accessor JSON, refusing unknown componentType/type."""
        acc = self.accessors[index]
        if int(acc["componentType"]) not in COMPONENT_DTYPES:
            raise AssetError(who, f"accessors[{index}].componentType {acc['componentType']} is not a glTF "
                                  "component type")
        if acc["type"] not in TYPE_SHAPES:
            raise AssetError(who, f"accessors[{index}].type {acc['type']!r} is not a glTF accessor type")
        return acc

    def has_data(self, index: int) -> bool:
        """True when the accessor's values come from the file (a bufferView or sparse data), False for an
        all-zero accessor (no bufferView, no sparse)."""
        acc = self.accessors[index]
        return index in self._provided or "bufferView" in acc or acc.get("sparse") is not None

    def claim(self, index: int, who: str, role: str) -> dict:
        """Record that accessor ``index`` is used as ``role`` data by ``who`` and check the bufferView rules
        for that role (stride, alignment, vertex/index usage) without reading data. Returns its JSON."""
        acc = self.meta(index, who)
        if "bufferView" in acc:
            bv_index = int(acc["bufferView"])
            self._claim_view(bv_index, role, who, index)
            if role == "vertex":
                bv = self.views[bv_index]
                total = _i(acc.get("byteOffset")) + _i(bv.get("byteOffset"))
                stride = bv.get("byteStride")
                if total % 4 or (stride is not None and int(stride) % 4):
                    raise AssetError(who, f"vertex attribute accessors[{index}] is not 4-byte aligned (byte "
                                          f"offset {total}, stride {stride})")
        sparse = acc.get("sparse")
        if sparse is not None:
            for part in ("indices", "values"):
                self._claim_view(int(sparse[part]["bufferView"]), "sparse", f"{who} (accessors[{index}].sparse."
                                                                            f"{part})", index)
        return acc

    def read(self, index: int, who: str, role: str) -> np.ndarray:
        """Raw stored values with sparse substitution applied: (count, n) or (count, r, c) matrices
        (row-major, i.e. already transposed from glTF's column-major storage); dtype as stored."""
        acc = self.claim(index, who, role)
        cached = self._cache.get(index)
        if cached is not None:
            return cached
        out = self._decode(index, acc, who)
        out.setflags(write=False)
        self._cache[index] = out
        return out

    def _view_bytes(self, bv_index: int, who: str) -> tuple[bytes, int]:
        if bv_index in self._view_data:
            return self._view_data[bv_index], 0
        bv = self.views[bv_index]
        b = int(bv["buffer"])
        data = self.buffers[b]
        if data is None:
            raise AssetError(who, f"bufferViews[{bv_index}] reads buffers[{b}], which has no data (no uri and "
                                  "not the GLB BIN chunk)")
        return data, _i(bv.get("byteOffset"))

    def _decode(self, index: int, acc: dict, who: str) -> np.ndarray:
        where = f"accessors[{index}]"
        ct, type_, count = int(acc["componentType"]), acc["type"], int(acc["count"])
        dt = COMPONENT_DTYPES[ct]
        shape = TYPE_SHAPES[type_]
        esize, col_stride, _ = element_layout(ct, type_)
        need = count * dt.itemsize * int(np.prod(shape))
        if self._decoded_bytes + need > 2 * self.max_bytes:
            raise AssetError(who, f"decoding accessors[{index}] ({need} bytes) would exceed the limit of "
                                  f"2 x max_bytes = {2 * self.max_bytes} bytes of decoded accessor data")
        self._decoded_bytes += need
        if "bufferView" in acc:
            bv_index = int(acc["bufferView"])
            data, view_off = self._view_bytes(bv_index, where)
            off = view_off + _i(acc.get("byteOffset"))
            stride = _i(self.views[bv_index].get("byteStride"), esize)
            if len(shape) == 1:
                arr = np.ndarray((count, shape[0]), dtype=dt, buffer=data, offset=off,
                                 strides=(stride, dt.itemsize))
            else:  # stored column-major: (count, column, row) -> transpose to (count, row, column)
                arr = np.ndarray((count, shape[1], shape[0]), dtype=dt, buffer=data, offset=off,
                                 strides=(stride, col_stride, dt.itemsize)).transpose(0, 2, 1)
            out = np.array(arr, order="C")  # the one copy out of the file bytes
        else:
            out = np.zeros((count, *shape), dtype=dt)
        sparse = acc.get("sparse")
        if sparse is not None:
            scount = int(sparse["count"])
            ind, val = sparse["indices"], sparse["values"]
            idt = COMPONENT_DTYPES[int(ind["componentType"])]
            data, view_off = self._view_bytes(int(ind["bufferView"]), f"{where}.sparse.indices")
            idx = np.frombuffer(data, dtype=idt, count=scount, offset=view_off + _i(ind.get("byteOffset")))
            idx = idx.astype(np.int64)
            if scount > 1 and np.any(np.diff(idx) <= 0):
                k = int(np.argmax(np.diff(idx) <= 0)) + 1
                raise AssetError(f"{where}.sparse.indices", f"indices must be strictly increasing: element {k} "
                                                            f"is {int(idx[k])} after {int(idx[k - 1])}")
            if scount and int(idx.max()) >= count:
                raise AssetError(f"{where}.sparse.indices", f"index {int(idx.max())} >= accessor count {count}")
            data, view_off = self._view_bytes(int(val["bufferView"]), f"{where}.sparse.values")
            n = int(np.prod(shape))
            if len(shape) == 1:
                vals = np.frombuffer(data, dtype=dt, count=scount * n, offset=view_off + _i(val.get("byteOffset")))
                out[idx] = vals.reshape(scount, n)
            else:
                vals = np.ndarray((scount, shape[1], shape[0]), dtype=dt, buffer=data,
                                  offset=view_off + _i(val.get("byteOffset")),
                                  strides=(esize, col_stride, dt.itemsize)).transpose(0, 2, 1)
                out[idx] = vals
        self._check_finite(out, index, who)
        return out

    @staticmethod
    def _check_finite(out: np.ndarray, index: int, who: str) -> None:
        if out.dtype.kind == "f" and out.size:
            finite = np.isfinite(out)
            if not finite.all():
                bad = int(np.argmin(finite.reshape(out.shape[0], -1).all(axis=1)))
                where = f"accessors[{index}]"
                prefix = "" if who == where else f"{where} "
                raise AssetError(who, f"{prefix}element {bad} holds a non-finite value (NaN or infinity): "
                                      f"{out[bad].ravel().tolist()}")

    def read_float(self, index: int, who: str, role: str) -> np.ndarray:
        """Values as float32, normalized integers decoded per the glTF spec."""
        raw = self.read(index, who, role)
        acc = self.accessors[index]
        ct = int(acc["componentType"])
        if raw.dtype.kind == "f":
            return raw
        if acc.get("normalized"):
            out = raw.astype(np.float32) / np.float32(NORMALIZED_DIVISOR[ct])
            if raw.dtype.kind == "i":
                np.maximum(out, np.float32(-1.0), out=out)
            return out
        return raw.astype(np.float32)

    def validate_all(self) -> None:
        """Decode every accessor whose data is present (finiteness, sparse indices), as the validator does."""
        for i, acc in enumerate(self.accessors):
            if i in self._cache or not self._known(acc) or not self.has_data(i):
                continue  # all-zero accessors (no bufferView, no sparse) hold nothing to check
            views = []
            if "bufferView" in acc:
                views.append(int(acc["bufferView"]))
            if acc.get("sparse") is not None:
                views += [int(acc["sparse"]["indices"]["bufferView"]), int(acc["sparse"]["values"]["bufferView"])]
            if any(v not in self._view_data and self.buffers[int(self.views[v]["buffer"])] is None for v in views):
                continue
            out = self._decode(i, acc, f"accessors[{i}]")
            out.setflags(write=False)
            self._cache[i] = out
