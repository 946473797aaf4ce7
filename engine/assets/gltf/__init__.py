"""glTF 2.0 loader with validation: ``load(path) -> Asset``.

Pipeline (each stage raises :class:`AssetError` naming the offending part, JSON-pointer style):

1. read the file (size-bounded); split a GLB container strictly (``engine.assets.glb``); decode the JSON
   as strict UTF-8 (a BOM is invalid JSON, NaN/Infinity literals are refused);
2. schema-level validation of the JSON document (``engine.assets.validate``): types, required
   properties, ranges, references, extensions, version;
3. build the pygltflib ``GLTF2`` object model from the validated dict (pygltflib's own readers are
   lenient, so the container and the JSON are parsed here first);
4. resolve buffers (GLB BIN chunk, base64 ``data:`` URIs, files beside the asset; no URI may leave the
   asset's folder), decode EXT_meshopt_compression bufferViews, check every bufferView / accessor against them
   (``engine.assets.accessors``) and decode KHR_draco_mesh_compression primitives (``compression``);
5. nodes (single parent, no loops, TRS xor a decomposable matrix), scenes, meshes (attributes, indices,
   joints/weights), skins, animations, images (Pillow) and materials, into ``engine.assets.model``; transforms
   whose products float32 cannot hold are refused (``engine.assets.extent``).

The stages live in this package, one module each: ``sources`` (file, foreign formats, buffers, URIs),
``compression`` (meshopt, Draco), ``document`` (JSON, pygltflib), ``nodes`` (nodes, scenes, skins), ``meshes``,
``animations``, ``images`` (images, materials), over the shared ``state``; this module runs them in order
(:class:`_Loader`).

Every stage is linear in the size of the file (node hierarchies are walked once, whatever their depth); the
node count is bounded by ``max_nodes``.

Repairable problems (non-unit quaternions, weights not summing to 1, min/max metadata that disagrees with
the data, ...) are repaired, appended to ``Asset.warnings`` and issued as :class:`AssetWarning`.
No exception other than AssetError leaves :func:`load`: anything unexpected from json, pygltflib or
Pillow is wrapped with the part that was being read.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np

from engine.assets.accessors import AccessorReader
from engine.assets.errors import AssetError, AssetWarning
from engine.assets.extent import check_extents
from engine.assets.glb import is_glb, parse_glb
from engine.assets.gltf.animations import AnimationReader
from engine.assets.gltf.compression import CompressionReader
from engine.assets.gltf.document import parse_json, to_pygltflib
from engine.assets.gltf.images import ImageReader
from engine.assets.gltf.meshes import MeshReader
from engine.assets.gltf.nodes import NodeReader
from engine.assets.gltf.sources import BUFFER_MIME, IMAGE_MIME
from engine.assets.gltf.state import (
    ATTR_FORMATS,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_NODES,
    NORMALIZED_STEP,
    ROTATION_FORMATS,
    UNIT_TOL,
)
from engine.assets.model import Asset
from engine.assets.validate import validate_document

__all__ = ["load", "uri_resolver", "DEFAULT_MAX_BYTES", "DEFAULT_MAX_NODES", "BUFFER_MIME", "IMAGE_MIME",
           "ATTR_FORMATS", "ROTATION_FORMATS", "NORMALIZED_STEP", "UNIT_TOL"]


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


def uri_resolver(path: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES) -> _Loader:
    """An object whose ``resolve_uri(uri, where, mimes)`` reads the buffers and images of the glTF file at
    ``path`` by the loader's rules (relative, inside the asset's folder; base64 ``data:`` URIs)."""
    return _Loader(Path(path), max_bytes)


class _Loader(CompressionReader, NodeReader, MeshReader, AnimationReader, ImageReader):
    """One load: the stages (mixins over :class:`~engine.assets.gltf.state.LoaderState`) in pipeline order."""

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
        doc = parse_json(json_bytes)
        nodes = doc.get("nodes") if isinstance(doc, dict) else None
        if isinstance(nodes, list) and len(nodes) > self.max_nodes:
            raise AssetError("nodes", f"{len(nodes)} nodes, over the limit max_nodes={self.max_nodes}")
        self.part = "root"
        self.warnings.extend(validate_document(doc))
        self.doc = doc
        self.quantized = "KHR_mesh_quantization" in doc.get("extensionsRequired", [])
        self.part = "root (pygltflib)"
        self._gltf = to_pygltflib(doc)

        self.part = "buffers"
        buffers = self._load_buffers(is_binary, bin_chunk)
        self._reader = AccessorReader(doc, buffers, max_bytes=self.max_bytes)
        self._decode_meshopt(buffers)
        self.part = "accessors"
        self.reader.check_structure()
        self._decode_draco()

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

    def _check_min_max(self) -> None:
        """Warn where an accessor's min/max metadata disagrees with its (decoded) data."""
        for i, acc in enumerate(self.doc.get("accessors", [])):
            data = self.reader.decoded(i)
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
                if self.reader.provided(i):
                    # Draco declares the bounds of its quantisation grid: only data outside them is wrong
                    outside = actual < declared if key == "min" else actual > declared
                    if not np.any(outside & ~np.isclose(declared, actual, rtol=1e-6, atol=1e-6)):
                        continue
                if not np.allclose(declared, actual.astype(np.float64), rtol=1e-6, atol=1e-6):
                    self.warn(f"accessors[{i}].{key}", f"declared {declared.tolist()} but the data gives "
                                                       f"{actual.tolist()}")
