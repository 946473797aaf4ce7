"""glTF 2.0 loader with validation: ``load(path) -> Asset``.

Pipeline (each stage raises :class:`AssetError` naming the offending part, JSON-pointer style):

1. read the file (size-bounded); split a GLB container strictly (``engine.assets.glb``); decode the JSON
   as strict UTF-8 (a BOM is invalid JSON, NaN/Infinity literals are refused);
2. schema-level validation of the JSON document (``engine.assets.validate``): types, required
   properties, ranges, references, extensions, version;
3. build the pygltflib ``GLTF2`` object model from the validated dict (pygltflib's own readers are
   lenient, so the container and the JSON are parsed here first);
4. resolve buffers (GLB BIN chunk, base64 ``data:`` URIs, files beside the asset; no URI may leave the
   asset's folder) and check every bufferView / accessor against them (``engine.assets.accessors``);
5. nodes (single parent, no loops, TRS xor a decomposable matrix), scenes, meshes (attributes, indices,
   joints/weights), skins, animations, images (Pillow) and materials, into ``engine.assets.model``; transforms
   whose products float32 cannot hold are refused (``engine.assets.extent``).

Every stage is linear in the size of the file (node hierarchies are walked once, whatever their depth); the
node count is bounded by ``max_nodes``.

Repairable problems (non-unit quaternions, weights not summing to 1, min/max metadata that disagrees with
the data, ...) are repaired, appended to ``Asset.warnings`` and issued as :class:`AssetWarning`.
No exception other than AssetError leaves :func:`load`: anything unexpected from json, pygltflib or
Pillow is wrapped with the part that was being read.
"""
from __future__ import annotations

import base64
import binascii
import io
import json
import os
import re
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np

from engine.assets.accessors import COMPONENT_NAMES, AccessorReader
from engine.assets.errors import AssetError, AssetWarning
from engine.assets.extent import check_extents
from engine.assets.glb import is_glb, parse_glb
from engine.assets.model import Asset, Channel, Clip, Image, Material, Mesh, Node, Primitive, Scene, Skin
from engine.assets.validate import validate_document
from engine.math.transform import decompose

DEFAULT_MAX_BYTES = 512 * 2**20
#: Most nodes a file may declare. Every node is a Python object with its own checks, so loading costs some
#: microseconds per node: the limit keeps a hostile file (a 300k-node chain) from stalling the loader, far above
#: any character or scene this engine is made for (hundreds of nodes). Hierarchy depth has no limit of its own:
#: the rig set-up and forward kinematics are linear / logarithmic in it.
DEFAULT_MAX_NODES = 65536
BUFFER_MIME = ("application/octet-stream", "application/gltf-buffer")
IMAGE_MIME = ("image/png", "image/jpeg")
_ATTR_RE = re.compile(r"^(POSITION|NORMAL|TANGENT|(TEXCOORD|COLOR|JOINTS|WEIGHTS)_(0|[1-9][0-9]*))$")
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_DATA_URI_RE = re.compile(r"^data:([^;,]*)((?:;[^;,=]+=[^;,]*)*)(;base64)?,(.*)$", re.S)
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


def load(path: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES,
         max_nodes: int = DEFAULT_MAX_NODES) -> Asset:
    """Load and validate a .gltf or .glb file into an :class:`Asset`.

    ``max_bytes`` bounds the file size, the total buffer bytes, every accessor and every decoded image,
    so a hostile file cannot exhaust memory; ``max_nodes`` bounds the node count (checked before anything
    else is built), so it cannot exhaust time. Raises AssetError for every problem; repairable problems
    are warned about (``AssetWarning``) and listed in ``Asset.warnings``.
    """
    for name, value in (("max_bytes", max_bytes), ("max_nodes", max_nodes)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    loader = _Loader(Path(path), max_bytes, max_nodes)
    try:
        # Float exceptions are not errors here: every result that matters is checked explicitly
        # (np.isfinite on decoded data and transforms), whatever the caller's np.errstate says.
        with np.errstate(all="ignore"):
            asset = loader.run()
    except AssetError:
        raise
    except RecursionError as exc:
        raise AssetError(loader.part, "structure nested too deeply") from exc
    except MemoryError as exc:
        raise AssetError(loader.part, "out of memory while reading") from exc
    except Exception as exc:  # noqa: BLE001 - the contract: only AssetError leaves load()
        raise AssetError(loader.part, f"unexpected {type(exc).__name__} while reading: {exc}") from exc
    for message in asset.warnings:
        warnings.warn(message, AssetWarning, stacklevel=2)
    return asset


class _Loader:
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

    # --------------------------------------------------------------------------------------- top level
    def run(self) -> Asset:
        data = self._read_file()
        self.part = "JSON"
        bin_chunk: bytes | None = None
        is_binary = is_glb(data) or self.path.suffix.lower() == ".glb"
        if is_binary:
            self.part = "GLB header"
            parts = parse_glb(data)
            self.warnings.extend(parts.warnings)
            json_bytes, bin_chunk = parts.json, parts.bin
        else:
            json_bytes = data
        self.part = "JSON"
        doc = _parse_json(json_bytes)
        nodes = doc.get("nodes") if isinstance(doc, dict) else None
        if isinstance(nodes, list) and len(nodes) > self.max_nodes:
            raise AssetError("nodes", f"{len(nodes)} nodes, over the limit max_nodes={self.max_nodes}")
        self.part = "root"
        self.warnings.extend(validate_document(doc))
        self.doc = doc
        self.quantized = "KHR_mesh_quantization" in doc.get("extensionsRequired", [])
        self.part = "root (pygltflib)"
        self._gltf = _to_pygltflib(doc)

        self.part = "buffers"
        buffers = self._load_buffers(is_binary, bin_chunk)
        self._reader = AccessorReader(doc, buffers, max_bytes=self.max_bytes)
        self.part = "accessors"
        self.reader.check_structure()

        asset = Asset(path=self.path)
        self.part = "nodes"
        asset.nodes = self._nodes()
        self.part = "scenes"
        asset.scenes, asset.scene = self._scenes(asset.nodes)
        self.part = "meshes"
        asset.meshes = self._meshes()
        self.part = "skins"
        asset.skins = self._skins(asset.nodes)
        self.part = "nodes"
        self._node_mesh_checks(asset)
        self.part = "animations"
        asset.clips = self._animations(asset)
        self.part = "transforms"
        check_extents(asset)
        self.part = "images"
        asset.images = self._images()
        self.part = "materials"
        asset.materials = self._materials()
        self.part = "accessors"
        self.reader.validate_all()
        self._check_min_max()
        asset.warnings = list(self.warnings)
        return asset

    def _read_file(self) -> bytes:
        where = self.path.name or str(self.path)
        try:
            size = self.path.stat().st_size
        except OSError as exc:
            raise AssetError(where, f"cannot read the file: {exc.strerror or exc}") from exc
        if not self.path.is_file():
            raise AssetError(where, "not a regular file")
        if size > self.max_bytes:
            raise AssetError(where, f"file size {size} bytes exceeds the limit max_bytes={self.max_bytes}")
        self.spend(size, where)
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise AssetError(where, f"cannot read the file: {exc.strerror or exc}") from exc

    # --------------------------------------------------------------------------------------- buffers
    def _load_buffers(self, is_binary: bool, bin_chunk: bytes | None) -> list[bytes | None]:
        buffers = self.doc.get("buffers", [])
        total = sum(int(b["byteLength"]) for b in buffers)
        if total > self.max_bytes:
            raise AssetError("buffers", f"total byteLength {total} exceeds the limit max_bytes={self.max_bytes}")
        out: list[bytes | None] = []
        bin_used = False
        for i, b in enumerate(buffers):
            where = f"buffers[{i}]"
            self.part = where
            declared = int(b["byteLength"])
            uri = b.get("uri")
            if uri is None:
                if is_binary and i == 0:
                    if bin_chunk is None:
                        raise AssetError(where, "refers to the GLB BIN chunk, but the file has none")
                    if len(bin_chunk) < declared:
                        raise AssetError(f"{where}.byteLength", f"byteLength {declared} exceeds the GLB BIN chunk "
                                                                f"({len(bin_chunk)} bytes)")
                    if len(bin_chunk) - declared > 3:
                        self.warn(f"{where}.byteLength", f"GLB BIN chunk has {len(bin_chunk) - declared} bytes more "
                                                         "than byteLength (expected at most 3 bytes of padding)")
                    bin_used = True
                    out.append(bin_chunk)
                else:
                    out.append(None)  # placeholder buffer: valid, but unreadable if something uses it
                continue
            if is_binary and uri.startswith("data:"):
                self.warn(f"{where}.uri", "data: URI inside a GLB")
            data = self._resolve_uri(uri, f"{where}.uri", BUFFER_MIME)
            if len(data) != declared:
                raise AssetError(f"{where}.byteLength", f"byteLength {declared} does not match the data "
                                                        f"({len(data)} bytes)")
            out.append(data)
        if bin_chunk is not None and not bin_used:
            self.warn("GLB BIN chunk", "present but no buffer refers to it")
        return out

    def _resolve_uri(self, uri: str, where: str, mimes: tuple[str, ...]) -> bytes:
        if uri.startswith("data:"):
            m = _DATA_URI_RE.match(uri)
            if m is None or not m.group(3):
                raise AssetError(where, "data URI must be base64 encoded ('data:<mime>;base64,...')")
            mime = m.group(1)
            if mime not in mimes:
                raise AssetError(where, f"data URI MIME type {mime!r} is not one of {', '.join(mimes)}")
            payload = m.group(4)
            if len(payload) * 3 // 4 > self.max_bytes:
                raise AssetError(where, f"data URI payload exceeds the limit max_bytes={self.max_bytes}")
            try:
                return base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise AssetError(where, f"invalid base64 data: {exc}") from exc
        return self._read_relative(uri, where)

    def _read_relative(self, uri: str, where: str) -> bytes:
        """Read a file named by a relative URI; refuse anything that would leave the asset's folder."""
        if _SCHEME_RE.match(uri):
            scheme = uri.split(":", 1)[0]
            raise AssetError(where, f"URI scheme {scheme!r} is not allowed (only relative paths and data: URIs)")
        if uri.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", uri):
            raise AssetError(where, f"absolute path {uri!r} is not allowed (URIs must be relative)")
        if "?" in uri or "#" in uri:
            raise AssetError(where, f"URI {uri!r} with a query or fragment is not allowed")
        rel = unquote(uri)
        if "\x00" in rel:
            raise AssetError(where, "URI contains a NUL character")
        parts = re.split(r"[/\\]", rel)
        if any(p == ".." for p in parts):
            raise AssetError(where, f"URI {uri!r} leaves the asset's folder ('..' is not allowed)")
        if rel.startswith(("/", "\\")):
            raise AssetError(where, f"absolute path {uri!r} is not allowed (URIs must be relative)")
        folder = self.path.resolve().parent
        target = (folder / rel).resolve()
        if target != folder and folder not in target.parents:
            raise AssetError(where, f"URI {uri!r} resolves outside the asset's folder")
        try:
            size = target.stat().st_size
            if not target.is_file():
                raise AssetError(where, f"{rel!r} is not a regular file")
            if size > self.max_bytes:
                raise AssetError(where, f"{rel!r} has {size} bytes, over the limit max_bytes={self.max_bytes}")
            self.spend(size, where)
            return target.read_bytes()
        except OSError as exc:
            raise AssetError(where, f"cannot read {rel!r}: {exc.strerror or exc}") from exc

    # --------------------------------------------------------------------------------------- nodes
    def _nodes(self) -> list[Node]:
        g = self.gltf
        n = len(g.nodes)
        parent = np.full(n, -1, np.int64)
        for i, node in enumerate(g.nodes):
            for k, c in enumerate(node.children or []):
                c = int(c)
                if c == i:
                    raise AssetError(f"nodes[{i}].children[{k}]", f"node loop: nodes[{i}] is its own child")
                if parent[c] >= 0:
                    raise AssetError(f"nodes[{c}]", f"has two parents: nodes[{parent[c]}] and nodes[{i}]")
                parent[c] = i
        # With at most one parent each, a loop is a cycle of parent links: walk up, colouring nodes.
        state = np.zeros(n, np.int8)  # 0 new, 1 on the current path, 2 known to reach a root
        for start in range(n):
            path = []
            v = start
            while v >= 0 and state[v] == 0:
                state[v] = 1
                path.append(v)
                v = int(parent[v])
            if v >= 0 and state[v] == 1:
                raise AssetError(f"nodes[{v}]", f"node loop: nodes[{v}] is its own ancestor")
            state[path] = 2
        nodes = []
        for i, node in enumerate(g.nodes):
            where = f"nodes[{i}]"
            self.part = where
            m = Node(name=node.name or f"node{i}", parent=int(parent[i]),
                     children=[int(c) for c in (node.children or [])])
            raw = self.doc["nodes"][i]
            if "matrix" in raw:
                if any(k in raw for k in ("translation", "rotation", "scale")):
                    raise AssetError(where, "has both a matrix and translation/rotation/scale")
                mat = np.asarray(node.matrix, np.float64).reshape(4, 4).T  # column-major in the file
                _check_trs_matrix(mat, f"{where}.matrix")
                m.matrix = mat.astype(np.float32)
                t, r, s = decompose(mat)
                m.translation, m.rotation, m.scale = t, r, s
            else:
                if node.translation is not None:
                    m.translation = np.asarray(node.translation, np.float32)
                if node.scale is not None:
                    m.scale = np.asarray(node.scale, np.float32)
                if node.rotation is not None:
                    q = np.asarray(node.rotation, np.float64)
                    length = float(np.linalg.norm(q))
                    if length < 1e-6:
                        raise AssetError(f"{where}.rotation", f"zero-length quaternion {q.tolist()}")
                    if abs(length - 1) > UNIT_TOL:
                        self.warn(f"{where}.rotation", f"non-unit quaternion (length {length:.6g}) normalised")
                    m.rotation = (q / length).astype(np.float32)
            for key in ("translation", "rotation", "scale", "matrix"):
                value = getattr(m, key)
                if value is not None and not np.isfinite(value).all():
                    raise AssetError(f"{where}.{key}", f"value {value.ravel().tolist()} overflows float32")
            m.mesh = None if node.mesh is None else int(node.mesh)
            m.skin = None if node.skin is None else int(node.skin)
            nodes.append(m)
        return nodes

    def _scenes(self, nodes: list[Node]) -> tuple[list[Scene], int]:
        scenes = []
        for i, sc in enumerate(self.gltf.scenes):
            roots = [int(r) for r in (sc.nodes or [])]
            for k, r in enumerate(roots):
                if nodes[r].parent >= 0:
                    raise AssetError(f"scenes[{i}].nodes[{k}]", f"nodes[{r}] is not a root node (its parent is "
                                                                f"nodes[{nodes[r].parent}])")
            scenes.append(Scene(name=sc.name or f"scene{i}", nodes=roots))
        default = self.doc.get("scene")
        return scenes, 0 if default is None else int(default)

    # --------------------------------------------------------------------------------------- meshes
    def _attr_format_check(self, name: str, acc_index: int, who: str) -> None:
        base = name.split("_")[0] if name not in ("POSITION", "NORMAL", "TANGENT") else name
        types, formats, quant = ATTR_FORMATS[base]
        acc = self.reader.meta(acc_index, who)
        fmt = (int(acc["componentType"]), bool(acc.get("normalized", False)))
        allowed = formats + (quant if self.quantized else ())
        if acc["type"] not in types or fmt not in allowed:
            names = ", ".join(f"{COMPONENT_NAMES[c]}{' normalized' if nrm else ''}" for c, nrm in allowed)
            raise AssetError(who, f"accessors[{acc_index}] is {acc['type']} {COMPONENT_NAMES[fmt[0]]}"
                                  f"{' normalized' if fmt[1] else ''}; {name} must be {'/'.join(types)} of {names}")

    def _meshes(self) -> list[Mesh]:
        meshes = []
        texcoords_needed = self._material_texcoords()
        for mi, mesh in enumerate(self.gltf.meshes):
            raw_mesh = self.doc["meshes"][mi]
            prims = []
            target_counts = set()
            for pi, _prim in enumerate(mesh.primitives):
                where = f"meshes[{mi}].primitives[{pi}]"
                self.part = where
                raw = raw_mesh["primitives"][pi]
                prims.append(self._primitive(raw, where, texcoords_needed))
                target_counts.add(len(raw.get("targets", [])))
            if len(target_counts) > 1:
                raise AssetError(f"meshes[{mi}]", f"primitives have different numbers of morph targets "
                                                  f"{sorted(target_counts)}")
            n_targets = target_counts.pop()
            if "weights" in raw_mesh and len(raw_mesh["weights"]) != n_targets:
                raise AssetError(f"meshes[{mi}].weights", f"{len(raw_mesh['weights'])} weights for {n_targets} "
                                                          "morph targets")
            if n_targets:
                self.warn(f"meshes[{mi}]", f"{n_targets} morph target(s) ignored (morphing is not supported); "
                                           "the base mesh is used")
            meshes.append(Mesh(name=mesh.name or f"mesh{mi}", primitives=prims))
        return meshes

    def _material_texcoords(self) -> dict[int, tuple[int, str]]:
        """material index -> (highest texCoord set used, where)."""
        out: dict[int, tuple[int, str]] = {}
        for i, mat in enumerate(self.doc.get("materials", [])):
            infos = [(f"materials[{i}].{k}", mat.get(k)) for k in ("normalTexture", "occlusionTexture",
                                                                    "emissiveTexture")]
            pbr = mat.get("pbrMetallicRoughness", {})
            infos += [(f"materials[{i}].pbrMetallicRoughness.{k}", pbr.get(k))
                      for k in ("baseColorTexture", "metallicRoughnessTexture")]
            best = (-1, "")
            for where, info in infos:
                if info is not None and int(info.get("texCoord", 0)) > best[0]:
                    best = (int(info.get("texCoord", 0)), where)
            out[i] = best
        return out

    def _primitive(self, raw: dict, where: str, texcoords_needed: dict[int, tuple[int, str]]) -> Primitive:
        reader = self.reader
        attrs: dict = raw["attributes"]
        for name in attrs:
            if not (_ATTR_RE.match(name) or name.startswith("_")):
                raise AssetError(f"{where}.attributes.{name}", "invalid attribute name")
        sets: dict[str, list[int]] = {}
        for name in attrs:
            if "_" in name and not name.startswith("_"):
                sem, idx = name.split("_")
                sets.setdefault(sem, []).append(int(idx))
        for sem, idxs in sets.items():
            if sorted(idxs) != list(range(len(idxs))):
                missing = min(set(range(max(idxs) + 1)) - set(idxs))
                raise AssetError(f"{where}.attributes", f"{sem}_{max(idxs)} is used but {sem}_{missing} is missing "
                                                        "(indexed attributes must be contiguous from 0)")
        if len(sets.get("JOINTS", [])) != len(sets.get("WEIGHTS", [])):
            raise AssetError(f"{where}.attributes", f"{len(sets.get('JOINTS', []))} JOINTS_n but "
                                                    f"{len(sets.get('WEIGHTS', []))} WEIGHTS_n sets")
        mode = int(raw.get("mode", 4))
        if mode in (0, 1, 2, 3):
            kind = "points" if mode == 0 else "lines"
            raise AssetError(f"{where}.mode", f"mode {mode} ({kind}) is unsupported: only triangles (4, 5, 6)",
                             unsupported=True)
        if mode not in (4, 5, 6):
            raise AssetError(f"{where}.mode", f"unknown primitive mode {mode} (valid: 0..6)")
        if "POSITION" not in attrs:
            raise AssetError(f"{where}.attributes", "no POSITION attribute: a primitive without positions "
                                                    "cannot be drawn", unsupported=True)
        counts = {}
        for name, a in attrs.items():
            a = int(a)
            who = f"{where}.attributes.{name}"
            if name.startswith("_"):
                if int(self.reader.meta(a, who)["componentType"]) == 5125:
                    raise AssetError(who, f"accessors[{a}]: application-specific attributes may not be "
                                          "UNSIGNED_INT")
                continue
            self._attr_format_check(name, a, who)
            counts[name] = int(self.doc["accessors"][a]["count"])
        if len(set(counts.values())) > 1:
            raise AssetError(f"{where}.attributes", "attribute accessors have different counts: "
                             + ", ".join(f"{k}={v}" for k, v in counts.items()))
        n_vertices = counts["POSITION"]
        pos_index = int(attrs["POSITION"])
        pos_acc = self.doc["accessors"][pos_index]
        if "min" not in pos_acc or "max" not in pos_acc:
            raise AssetError(f"{where}.attributes.POSITION", f"accessors[{pos_index}] must define min and max")
        # Claim every accessor of the primitive first (usage rules), then read them (bounds, finiteness).
        for name, a in attrs.items():
            if not name.startswith("_"):
                reader.claim(int(a), f"{where}.attributes.{name}", "vertex")
        if "indices" in raw:
            reader.claim(int(raw["indices"]), f"{where}.indices", "index")
        for t, target in enumerate(raw.get("targets", [])):
            for name, a in target.items():
                reader.claim(int(a), f"{where}.targets[{t}].{name}", "vertex")
        arrays = {}
        for name, a in attrs.items():
            if name.startswith("_"):
                continue
            arrays[name] = reader.read_float(int(a), f"{where}.attributes.{name}", "vertex") \
                if not name.startswith("JOINTS") else reader.read(int(a), f"{where}.attributes.{name}", "vertex")
        positions = np.ascontiguousarray(arrays["POSITION"], np.float32)
        normals = None
        if "NORMAL" in arrays:
            normals = self._unit_normals(arrays["NORMAL"], f"{where}.attributes.NORMAL")
        texcoords = None
        if "TEXCOORD_0" in arrays:
            texcoords = np.ascontiguousarray(arrays["TEXCOORD_0"], np.float32)
        for cname in [k for k in arrays if k.startswith("COLOR_")]:
            c = arrays[cname]
            if c.size and (c.min() < 0 or c.max() > 1) and reader.has_data(int(attrs[cname])):
                raise AssetError(f"{where}.attributes.{cname}", "color values outside [0, 1]")
        if "TANGENT" in arrays and reader.has_data(int(attrs["TANGENT"])):
            w = arrays["TANGENT"][:, 3]
            if w.size and not np.all(np.abs(np.abs(w) - 1) < 1e-3):
                raise AssetError(f"{where}.attributes.TANGENT", "tangent w (handedness) must be +1 or -1")
        material = raw.get("material")
        material = None if material is None else int(material)
        if material is not None:
            need, mwhere = texcoords_needed.get(material, (-1, ""))
            have = len(sets.get("TEXCOORD", []))
            if need >= have:
                raise AssetError(f"{where}.attributes", f"{mwhere} uses TEXCOORD_{need} but the primitive has "
                                                        f"{have} texcoord set(s)")
        joints = weights = None
        if sets.get("JOINTS"):
            weight_type = int(self.doc["accessors"][int(attrs["WEIGHTS_0"])]["componentType"])
            joints, weights = self._skin_attributes(arrays, len(sets["JOINTS"]), where, weight_type)
        indices = self._indices(raw, where, n_vertices, mode)
        for t, target in enumerate(raw.get("targets", [])):
            for name, a in target.items():
                tw = f"{where}.targets[{t}].{name}"
                if name not in attrs:
                    raise AssetError(tw, f"morph target attribute {name} has no base attribute")
                acc = reader.meta(int(a), tw)
                if int(acc["count"]) != n_vertices:
                    raise AssetError(tw, f"accessors[{int(a)}] has count {int(acc['count'])}, the primitive "
                                         f"has {n_vertices} vertices")
                if name == "POSITION" and ("min" not in acc or "max" not in acc):
                    raise AssetError(tw, f"accessors[{int(a)}] must define min and max")
                reader.read(int(a), tw, "vertex")
        return Primitive(positions=positions, indices=indices, normals=normals, texcoords=texcoords,
                         joints=joints, weights=weights, material=material)

    def _unit_normals(self, n: np.ndarray, where: str) -> np.ndarray:
        n = np.asarray(n, np.float32)
        length = np.linalg.norm(n, axis=1)
        bad = np.abs(length - 1) > UNIT_TOL
        if bad.any():
            zero = length < 1e-12
            self.warn(where, f"{int(bad.sum())} non-unit normal(s) normalised"
                             + (f" ({int(zero.sum())} zero-length left as zero)" if zero.any() else ""))
            safe = np.where(zero, 1.0, length).astype(np.float32)
            n = n / safe[:, None]
        return np.ascontiguousarray(n, np.float32)

    def _skin_attributes(self, arrays: dict, n_sets: int, where: str,
                         weight_type: int) -> tuple[np.ndarray, np.ndarray]:
        """JOINTS_n / WEIGHTS_n -> (N,4) uint16 joints, (N,4) float32 weights summing to 1 (repairs warned)."""
        j = np.concatenate([arrays[f"JOINTS_{k}"] for k in range(n_sets)], axis=1).astype(np.int64)
        w = np.concatenate([arrays[f"WEIGHTS_{k}"] for k in range(n_sets)], axis=1).astype(np.float32)
        wname = f"{where}.attributes.WEIGHTS_0"
        if w.size and w.min() < 0:
            v = int(np.argmax((w < 0).any(axis=1)))
            raise AssetError(wname, f"negative weight at vertex {v}: {w[v].tolist()}")
        w = np.where(j >= 0, w, 0).astype(np.float32)
        # duplicate joints with non-zero weight in one vertex: harmless for skinning, but reported
        if j.shape[1] > 1:
            js = np.sort(np.where(w > 0, j, -1 - np.arange(j.shape[1])[None, :]), axis=1)
            dup = (np.diff(js, axis=1) == 0).any(axis=1)
            if dup.any():
                self.warn(f"{where}.attributes.JOINTS_0", f"{int(dup.sum())} vertex(es) list the same joint twice "
                                                          "(weights add up)")
        if n_sets > 1:  # keep the 4 largest influences per vertex
            order = np.argsort(-w, axis=1, kind="stable")[:, :4]
            dropped = np.take_along_axis(w, np.argsort(-w, axis=1, kind="stable")[:, 4:], axis=1)
            j = np.take_along_axis(j, order, axis=1)
            w = np.take_along_axis(w, order, axis=1)
            if dropped.size and dropped.max() > 0:
                self.warn(f"{where}.attributes", f"more than 4 influences per vertex: kept the 4 largest of "
                                                 f"{4 * n_sets}")
        total = w.sum(axis=1, dtype=np.float64)
        if not np.isfinite(total).all():
            raise AssetError(wname, "weights overflow float32")
        zero = total <= 0
        if zero.any():  # repair: bind the vertex rigidly to its first listed joint
            self.warn(wname, f"{int(zero.sum())} vertex(es) have all weights zero (first: vertex "
                             f"{int(np.argmax(zero))}); bound to their first joint with weight 1")
            w[zero] = 0
            w[zero, 0] = 1
            total = np.where(zero, 1.0, total)
        # tolerance before the repair is reported: float rounding, or a few quanta of normalized ints
        tol = 2e-3 if n_sets > 1 else 1e-4 + 8 * NORMALIZED_STEP.get(weight_type, 0)
        off = np.abs(total - 1) > tol
        if off.any():
            self.warn(wname, f"weights of {int(off.sum())} vertex(es) do not sum to 1 (worst {total[off][0]:.6g}); "
                             "renormalised")
        w = (w / total[:, None]).astype(np.float32)
        if j.max(initial=0) > np.iinfo(np.uint16).max:
            raise AssetError(f"{where}.attributes.JOINTS_0", f"joint index {int(j.max())} exceeds 65535")
        return np.ascontiguousarray(j, np.uint16), np.ascontiguousarray(w, np.float32)

    def _indices(self, raw: dict, where: str, n_vertices: int, mode: int) -> np.ndarray:
        if "indices" in raw:
            who = f"{where}.indices"
            ai = int(raw["indices"])
            acc = self.reader.meta(ai, who)
            ct = int(acc["componentType"])
            if acc["type"] != "SCALAR" or ct not in (5121, 5123, 5125) or acc.get("normalized"):
                raise AssetError(who, f"accessors[{ai}] must be SCALAR UNSIGNED_BYTE/SHORT/INT, not normalized "
                                      f"(got {acc['type']} {COMPONENT_NAMES[ct]})")
            idx = self.reader.read(ai, who, "index").reshape(-1)
            restart = {5121: 0xFF, 5123: 0xFFFF, 5125: 0xFFFFFFFF}[ct]
            if idx.size:
                hi = int(idx.max())
                if hi == restart:
                    k = int(np.argmax(idx == restart))
                    raise AssetError(who, f"index {k} is the primitive restart value {restart}")
                if hi >= n_vertices:
                    k = int(np.argmax(idx >= n_vertices))
                    raise AssetError(who, f"index {int(idx[k])} at position {k} >= vertex count {n_vertices}")
            idx = idx.astype(np.uint32)
        else:
            idx = np.arange(n_vertices, dtype=np.uint32)
        if mode == 4:
            extra = idx.size % 3
            if extra:
                self.warn(where, f"{idx.size} indices is not a multiple of 3: the last {extra} dropped")
                idx = idx[:idx.size - extra]
            tris = idx.reshape(-1, 3)
        else:
            k = max(idx.size - 2, 0)
            i = np.arange(k)
            if mode == 5:  # strip, glTF spec: triangle i = (v_i, v_{i+1+i%2}, v_{i+2-i%2}) (odd ones flipped)
                a = idx[i]
                b = np.where(i % 2 == 0, idx[i + 1], idx[i + 2]) if k else idx[:0]
                c = np.where(i % 2 == 0, idx[i + 2], idx[i + 1]) if k else idx[:0]
            else:  # fan: (0, i+1, i+2)
                a = np.full(k, idx[0] if idx.size else 0, np.uint32)
                b, c = idx[i + 1], idx[i + 2]
            tris = np.stack([a, b, c], axis=1).astype(np.uint32) if k else np.zeros((0, 3), np.uint32)
        return np.ascontiguousarray(tris, np.uint32)

    # --------------------------------------------------------------------------------------- skins
    def _skins(self, nodes: list[Node]) -> list[Skin]:
        skins = []
        top = self._tops(nodes)
        for si, skin in enumerate(self.gltf.skins):
            where = f"skins[{si}]"
            self.part = where
            joints = np.array([int(j) for j in skin.joints], np.int64)
            if len(set(top[joints].tolist())) > 1:
                raise AssetError(f"{where}.joints", "joints do not have a common root (they lie in different "
                                                    "node trees)")
            skeleton = None if skin.skeleton is None else int(skin.skeleton)
            if skeleton is not None and not self._under(nodes, skeleton)[joints].all():
                self.warn(f"{where}.skeleton", f"nodes[{skeleton}] is not an ancestor of every joint; "
                                               "ignored as a hint")
            n_j = len(joints)
            if skin.inverseBindMatrices is None:
                ibm = np.tile(np.eye(4, dtype=np.float32), (n_j, 1, 1))
            else:
                a = int(skin.inverseBindMatrices)
                who = f"{where}.inverseBindMatrices"
                acc = self.reader.meta(a, who)
                if acc["type"] != "MAT4" or int(acc["componentType"]) != 5126 or acc.get("normalized"):
                    raise AssetError(who, f"accessors[{a}] must be MAT4 FLOAT, got {acc['type']} "
                                          f"{COMPONENT_NAMES[int(acc['componentType'])]}")
                if int(acc["count"]) != n_j:
                    raise AssetError(who, f"accessors[{a}] has count {int(acc['count'])}, the skin has {n_j} joints")
                ibm = np.array(self.reader.read(a, who, "ibm"), np.float32)
                last = ibm[:, 3, :]
                bad = np.abs(last - np.array([0, 0, 0, 1], np.float32)).max(axis=1) > 1e-5
                if bad.any():
                    k = int(np.argmax(bad))
                    raise AssetError(who, f"matrix {k} is not affine: last row {last[k].tolist()} (expected 0,0,0,1)")
            skins.append(Skin(name=skin.name or f"skin{si}", joints=joints.astype(np.int64), inverse_bind=ibm,
                              skeleton=skeleton))
        return skins

    @staticmethod
    def _tops(nodes: list[Node]) -> np.ndarray:
        """Topmost ancestor of every node (set-up code, memoised walk; loops were refused before)."""
        top = np.arange(len(nodes))
        done = np.zeros(len(nodes), bool)
        for i in range(len(nodes)):
            chain = []
            v = i
            while not done[v] and nodes[v].parent >= 0:
                chain.append(v)
                v = nodes[v].parent
            root = int(top[v]) if done[v] else v
            top[chain] = root
            done[chain] = True
            top[v] = root
            done[v] = True
        return top

    @staticmethod
    def _under(nodes: list[Node], top: int) -> np.ndarray:
        """(N,) bool: ``top`` and every node below it (one walk over that subtree, however deep)."""
        mark = np.zeros(len(nodes), bool)
        stack = [top]
        while stack:
            v = stack.pop()
            mark[v] = True
            stack.extend(nodes[v].children)
        return mark

    def _node_mesh_checks(self, asset: Asset) -> None:
        in_scene: set[int] = set()
        if asset.scenes:
            for si in range(len(asset.scenes)):
                in_scene.update(asset.scene_nodes(si))
        for i, node in enumerate(asset.nodes):
            where = f"nodes[{i}]"
            raw = self.doc["nodes"][i]
            if node.mesh is None:
                continue
            mesh = asset.meshes[node.mesh]
            n_targets = len(self.doc["meshes"][node.mesh]["primitives"][0].get("targets", []))
            if "weights" in raw and len(raw["weights"]) != n_targets:
                raise AssetError(f"{where}.weights", f"{len(raw['weights'])} weights but meshes[{node.mesh}] has "
                                                     f"{n_targets} morph targets")
            skinned = [p.is_skinned for p in mesh.primitives]
            if node.skin is None:
                if any(skinned):
                    self.warn(where, f"meshes[{node.mesh}] has JOINTS/WEIGHTS but the node has no skin: drawn "
                                     "unskinned")
                continue
            if not all(skinned):
                pi = skinned.index(False)
                raise AssetError(f"{where}.skin", f"meshes[{node.mesh}].primitives[{pi}] has no JOINTS_0/WEIGHTS_0, "
                                                  "so it cannot be skinned")
            skin = asset.skins[node.skin]
            n_j = len(skin.joints)
            for pi, p in enumerate(mesh.primitives):
                assert p.joints is not None  # all primitives are skinned (checked above)
                hi = int(p.joints.max(initial=0))
                if hi >= n_j:
                    raise AssetError(f"meshes[{node.mesh}].primitives[{pi}].attributes.JOINTS_0",
                                     f"joint index {hi} >= joint count {n_j} (skins[{node.skin}] via {where})")
            if in_scene and i in in_scene and not set(skin.joints.tolist()) <= in_scene:
                self.warn(f"skins[{node.skin}]", f"joints are not in the scene of skinned {where}; they are "
                                                 "evaluated from the node hierarchy anyway")

    # --------------------------------------------------------------------------------------- animations
    def _animations(self, asset: Asset) -> list[Clip]:
        clips = []
        for ai, anim in enumerate(self.gltf.animations):
            awhere = f"animations[{ai}]"
            self.part = awhere
            channels = []
            seen: dict[tuple[int, str], int] = {}
            sampler_cache: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
            for ci, ch in enumerate(anim.channels):
                where = f"{awhere}.channels[{ci}]"
                tgt = ch.target
                path = tgt.path
                if tgt.node is None:
                    self.warn(f"{where}.target", "no target node: channel skipped")
                    continue
                node_i = int(tgt.node)
                if path not in ("translation", "rotation", "scale", "weights"):
                    self.warn(f"{where}.target.path", f"unsupported path {path!r}: channel skipped")
                    continue
                key = (node_i, path)
                if key in seen:
                    raise AssetError(f"{where}.target", f"nodes[{node_i}].{path} is already animated by channel "
                                                        f"{seen[key]}")
                seen[key] = ci
                node = asset.nodes[node_i]
                if path == "weights":
                    has_morphs = node.mesh is not None and bool(
                        self.doc["meshes"][node.mesh]["primitives"][0].get("targets"))
                    if not has_morphs:
                        raise AssetError(f"{where}.target", f"weights channel on nodes[{node_i}], which has no "
                                                            "morph targets")
                    self._sampler(anim, ai, int(ch.sampler), path, sampler_cache)  # validate anyway
                    self.warn(where, "morph-target weights channel skipped (morphing is not supported)")
                    continue
                if node.matrix is not None:
                    raise AssetError(f"{where}.target", f"nodes[{node_i}] is defined by a matrix and cannot be "
                                                        f"animated through {path}")
                s = int(ch.sampler)
                samp = self.gltf.animations[ai].samplers[s]
                interp = samp.interpolation or "LINEAR"
                if interp not in ("LINEAR", "STEP", "CUBICSPLINE"):  # validate.py refuses these first
                    raise AssetError(f"{awhere}.samplers[{s}].interpolation",
                                     f"value {interp!r} is not allowed (valid: LINEAR, STEP, CUBICSPLINE)")
                times, values = self._sampler(anim, ai, s, path, sampler_cache)
                channels.append(Channel(node=node_i, path=path, interpolation=interp, times=times, values=values))
            clips.append(Clip(name=anim.name or f"clip{ai}", channels=channels))
        return clips

    def _sampler(self, anim, ai: int, s: int, path: str,
                 cache: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        if (s, path) in cache:
            return cache[(s, path)]
        swhere = f"animations[{ai}].samplers[{s}]"
        samp = anim.samplers[s]
        interp = samp.interpolation or "LINEAR"
        a_in, a_out = int(samp.input), int(samp.output)
        acc_in = self.reader.meta(a_in, f"{swhere}.input")
        if acc_in["type"] != "SCALAR" or int(acc_in["componentType"]) != 5126 or acc_in.get("normalized"):
            raise AssetError(f"{swhere}.input", f"accessors[{a_in}] must be SCALAR FLOAT, got {acc_in['type']} "
                                                f"{COMPONENT_NAMES[int(acc_in['componentType'])]}")
        if "min" not in acc_in or "max" not in acc_in:
            raise AssetError(f"{swhere}.input", f"accessors[{a_in}] must define min and max")
        times = self.reader.read(a_in, f"{swhere}.input", "animation").reshape(-1).astype(np.float32)
        if times.size and times.min() < 0:
            k = int(np.argmax(times < 0))
            raise AssetError(f"{swhere}.input", f"accessors[{a_in}]: negative time {float(times[k])} at key {k}")
        if times.size > 1:
            d = np.diff(times)
            if (d <= 0).any():
                k = int(np.argmax(d <= 0)) + 1
                raise AssetError(f"{swhere}.input", f"accessors[{a_in}]: times must be strictly increasing, key {k} "
                                                    f"is {float(times[k])} after {float(times[k - 1])}")
        n = times.size
        if interp == "CUBICSPLINE" and n < 2:
            raise AssetError(f"{swhere}.input", f"CUBICSPLINE needs at least 2 keyframes, got {n}")
        acc_out = self.reader.meta(a_out, f"{swhere}.output")
        fmt = (int(acc_out["componentType"]), bool(acc_out.get("normalized", False)))
        if path == "weights":
            ok = acc_out["type"] == "SCALAR" and fmt in ROTATION_FORMATS
            if not ok:
                raise AssetError(f"{swhere}.output", f"accessors[{a_out}]: weights output must be SCALAR float or "
                                                     "normalized int")
            out = self.reader.read_float(a_out, f"{swhere}.output", "animation")
            per_key = 3 * n if interp == "CUBICSPLINE" else n
            if per_key == 0 or out.shape[0] % per_key:
                raise AssetError(f"{swhere}.output", f"accessors[{a_out}] count {out.shape[0]} is not a multiple of "
                                                     f"{per_key}")
            cache[(s, path)] = (times, out)
            return times, out
        want_type = "VEC4" if path == "rotation" else "VEC3"
        allowed = ROTATION_FORMATS if path == "rotation" else ((F,) + ((B, B_N, UB, UB_N, S, S_N, US, US_N)
                                                                       if self.quantized else ()))
        if acc_out["type"] != want_type or fmt not in allowed:
            raise AssetError(f"{swhere}.output", f"accessors[{a_out}] is {acc_out['type']} "
                                                 f"{COMPONENT_NAMES[fmt[0]]}{' normalized' if fmt[1] else ''}; "
                                                 f"{path} output must be {want_type} "
                                                 f"{'float or normalized int' if path == 'rotation' else 'FLOAT'}")
        expected = 3 * n if interp == "CUBICSPLINE" else n
        if int(acc_out["count"]) != expected:
            raise AssetError(f"{swhere}.output", f"accessors[{a_out}] has count {int(acc_out['count'])}, expected "
                                                 f"{expected} for {n} {interp} keyframes")
        values = np.array(self.reader.read_float(a_out, f"{swhere}.output", "animation"), np.float32)
        if interp == "CUBICSPLINE":
            values = values.reshape(n, 3, -1)
        if path == "rotation":
            q = values[:, 1] if interp == "CUBICSPLINE" else values
            length = np.linalg.norm(q.astype(np.float64), axis=1)
            if length.size and length.min() < 1e-6:
                k = int(np.argmin(length))
                raise AssetError(f"{swhere}.output", f"accessors[{a_out}]: zero-length quaternion at key {k}")
            step = NORMALIZED_STEP.get(fmt[0], 0) if fmt[1] else 0
            bad = np.abs(length - 1) > UNIT_TOL + 4 * step
            if bad.any():
                self.warn(f"{swhere}.output", f"{int(bad.sum())} non-unit quaternion(s) normalised (e.g. key "
                                              f"{int(np.argmax(bad))}, length {float(length[bad][0]):.6g})")
            q /= length[:, None].astype(np.float32)
        cache[(s, path)] = (times, values)
        return times, values

    # --------------------------------------------------------------------------------------- images, materials
    def _images(self) -> list[Image]:
        from PIL import Image as PILImage

        images = []
        for i, img in enumerate(self.doc.get("images", [])):
            where = f"images[{i}]"
            self.part = where
            if "uri" in img:
                data = self._resolve_uri(img["uri"], f"{where}.uri", IMAGE_MIME)
            else:
                bv_index = int(img["bufferView"])
                bv = self.doc["bufferViews"][bv_index]
                if bv.get("byteStride") is not None:
                    raise AssetError(f"{where}.bufferView", f"bufferViews[{bv_index}] has a byteStride; image data "
                                                            "may not be strided")
                b = int(bv["buffer"])
                buf = self.reader.buffers[b]
                if buf is None:
                    raise AssetError(f"{where}.bufferView", f"bufferViews[{bv_index}] reads buffers[{b}], which has "
                                                            "no data")
                off = int(bv.get("byteOffset", 0))
                data = buf[off:off + int(bv["byteLength"])]
            rgba = self._decode_image(data, where, PILImage)
            images.append(Image(name=img.get("name") or f"image{i}", rgba=rgba))
        return images

    def _decode_image(self, data: bytes, where: str, PILImage) -> np.ndarray:  # noqa: N803
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", PILImage.DecompressionBombWarning)
                with PILImage.open(io.BytesIO(data)) as im:
                    w, h = im.size
                    if w * h * 4 > self.max_bytes:
                        raise AssetError(where, f"{w}x{h} image exceeds the limit max_bytes={self.max_bytes}")
                    if im.format not in ("PNG", "JPEG"):
                        self.warn(where, f"image format {im.format} is not PNG or JPEG")
                    rgba = np.asarray(im.convert("RGBA"), dtype=np.uint8)
        except AssetError:
            raise
        except Exception as exc:  # noqa: BLE001 - Pillow raises many types for bad data
            raise AssetError(where, f"cannot decode the image: {type(exc).__name__}: {exc}") from exc
        return np.ascontiguousarray(rgba)

    def _materials(self) -> list[Material]:
        mats = []
        textures = self.doc.get("textures", [])
        for i, m in enumerate(self.gltf.materials):
            pbr = m.pbrMetallicRoughness
            mat = Material(name=m.name or f"material{i}", double_sided=bool(m.doubleSided))
            if pbr is not None:
                if pbr.baseColorFactor is not None:
                    mat.base_color_factor = np.asarray(pbr.baseColorFactor, np.float32)
                tex = pbr.baseColorTexture
                if tex is not None:
                    src = textures[int(tex.index)].get("source")
                    mat.base_color_image = None if src is None else int(src)
                    mat.base_color_texcoord = int(tex.texCoord or 0)
            mats.append(mat)
        return mats

    def _check_min_max(self) -> None:
        """Warn where an accessor's min/max metadata disagrees with its (decoded) data."""
        for i, acc in enumerate(self.doc.get("accessors", [])):
            data = self.reader._cache.get(i)
            if data is None or data.size == 0 or ("min" not in acc and "max" not in acc):
                continue
            # min/max list components in storage order: matrices column-major
            flat = (data.transpose(0, 2, 1) if data.ndim == 3 else data).reshape(data.shape[0], -1)
            if flat.dtype.kind == "f":
                flat = flat.astype(np.float32)
            for key, actual in (("min", flat.min(axis=0)), ("max", flat.max(axis=0))):
                if key not in acc or len(acc[key]) != actual.size:
                    continue
                declared = np.asarray(acc[key], np.float64)
                if flat.dtype.kind == "f":
                    declared = declared.astype(np.float32).astype(np.float64)
                if not np.allclose(declared, actual.astype(np.float64), rtol=1e-6, atol=1e-6):
                    self.warn(f"accessors[{i}].{key}", f"declared {declared.tolist()} but the data gives "
                                                       f"{actual.tolist()}")


# ------------------------------------------------------------------------------------------- helpers
def _parse_json(data: bytes):
    if not data:
        raise AssetError("JSON", "empty document")
    if data.startswith(b"\xef\xbb\xbf"):
        raise AssetError("JSON", "byte order mark (BOM) at the start; glTF JSON must be UTF-8 without a BOM")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AssetError("JSON", f"not valid UTF-8: {exc}") from exc

    def _no_constant(name: str):
        raise AssetError("JSON", f"invalid JSON literal {name}")

    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise AssetError("JSON", f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc


_HINTS: dict[type, dict[str, tuple[str, type | None]]] = {}


def _field_plan(cls: type) -> dict[str, tuple[str, type | None]]:
    """For each dataclass field: ("obj", cls) / ("list", cls) when it nests pygltflib objects, else
    ("raw", None). Cached per class (typing introspection is slow)."""
    import dataclasses
    import typing

    plan = _HINTS.get(cls)
    if plan is not None:
        return plan
    plan = {}
    for name, hint in typing.get_type_hints(cls).items():
        kind, target = "raw", None
        args = typing.get_args(hint)
        if typing.get_origin(hint) is typing.Union:  # Optional[X]
            hint = next(a for a in args if a is not type(None))
            args = typing.get_args(hint)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint) and hint.__name__ != "Attributes":
            kind, target = "obj", hint
        elif typing.get_origin(hint) is list and args and isinstance(args[0], type) \
                and dataclasses.is_dataclass(args[0]) and args[0].__name__ != "Attributes":
            kind, target = "list", args[0]
        plan[name] = (kind, target)
    _HINTS[cls] = plan
    return plan


def _build(cls: type, d: dict):
    """Construct pygltflib dataclass ``cls`` from a validated JSON object: known fields only, nested
    objects converted, ``extras`` dropped (ignored by the loader; glTF allows non-object extras, which
    pygltflib's own decoder rejects), mesh ``attributes``/``targets`` kept as dicts."""
    plan = _field_plan(cls)
    kwargs = {}
    for key, value in d.items():
        entry = plan.get(key)
        if entry is None or key == "extras":
            continue
        kind, target = entry
        if target is None:  # a "raw" field
            pass
        elif kind == "obj" and isinstance(value, dict):
            value = _build(target, value)
        elif kind == "list" and isinstance(value, list):
            value = [_build(target, v) for v in value]
        kwargs[key] = value
    return cls(**kwargs)


def _to_pygltflib(doc: dict):
    """pygltflib's ``GLTF2`` object model of the validated document.

    Built directly through the dataclass constructors: ``GLTF2.from_dict`` (dataclasses_json) takes
    seconds on a 900-node file and rejects non-object ``extras``."""
    import pygltflib

    try:
        return _build(pygltflib.GLTF2, doc)
    except Exception as exc:  # noqa: BLE001 - wrap whatever the constructors raise
        raise AssetError("root", f"pygltflib could not build the document: {type(exc).__name__}: {exc}") from exc


def _check_trs_matrix(m: np.ndarray, where: str) -> None:
    """A node matrix must be affine and decomposable into T * R * S (orthogonal columns, non-zero scale)."""
    if np.abs(m[3] - np.array([0, 0, 0, 1])).max() > 1e-6:
        raise AssetError(where, f"not decomposable to TRS: last row {m[3].tolist()} (expected 0,0,0,1)")
    cols = m[:3, :3]
    s = np.linalg.norm(cols, axis=0)
    if s.min() < 1e-12:
        raise AssetError(where, "not decomposable to TRS: a zero scale column")
    u = cols / s
    gram = u.T @ u
    if np.abs(gram - np.eye(3)).max() > 1e-3:
        raise AssetError(where, "not decomposable to TRS: the 3x3 part has shear (columns not orthogonal)")

