"""Saving an edited asset: the source glTF/GLB, kept as it is, with keyed poses added as animation clips.

The source file is re-read as a document (not rebuilt from the loaded :class:`engine.assets.model.Asset`), so
materials, textures, extensions and every other clip survive untouched. A ``.gltf`` source has its buffers and
images (data URIs or files beside it) gathered into the one binary chunk of the output GLB. A keyed clip is
written as one channel per node and path (translation, rotation, scale of every node that is not given as a
matrix) with LINEAR interpolation between its keys, so that sampling the clip at a key gives back exactly the
keyed local pose; a clip of the same name in the source is replaced.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.assets.writer import AnimChannel, GltfBuilder
from engine.math import quat

__all__ = ["pose_channels", "read_document", "save_with_poses"]


def pose_channels(rig: Rig, keys: Mapping[float, Pose]) -> list[AnimChannel]:
    """Animation channels keying ``keys`` (time seconds -> local pose of ``rig``): translation, rotation and
    scale of every TRS node, LINEAR, times ascending. Rotations are kept on one hemisphere from key to key."""
    if not keys:
        raise ValueError("a keyed clip needs at least one key")
    times = np.array(sorted(float(t) for t in keys), np.float64)
    if not (np.isfinite(times).all() and times[0] >= 0):
        raise ValueError(f"key times must be finite and >= 0, got {times.tolist()}")
    poses = [keys[t] for t in sorted(keys)]
    for p in poses:
        if p.count != rig.count:
            raise ValueError(f"a keyed pose has {p.count} nodes, the rig {rig.count}")
    t = np.stack([p.translation for p in poses], axis=1)  # (N, K, 3)
    r = np.stack([quat.continuous(q) for q in np.stack([p.rotation for p in poses], axis=1)])
    s = np.stack([p.scale for p in poses], axis=1)
    out = []
    for n in np.flatnonzero(~rig.has_matrix):
        for path, values in (("translation", t[n]), ("rotation", r[n]), ("scale", s[n])):
            out.append(AnimChannel(int(n), path, times.astype(np.float32), np.asarray(values, np.float32)))
    return out


def _embed(builder_doc: dict, binary: bytearray, data: bytes) -> int:
    """Append ``data`` to the binary chunk as a new bufferView (4-byte aligned); its index."""
    binary.extend(b"\0" * ((4 - len(binary) % 4) % 4))
    views = builder_doc.setdefault("bufferViews", [])
    views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(data)})
    binary.extend(data)
    return len(views) - 1


def read_document(path: str | Path) -> tuple[dict, bytes | None]:
    """The glTF JSON of ``path`` and its one binary chunk: a GLB as it is; a .gltf with every buffer and image
    that has a ``uri`` (data URI or a file beside it) moved into the binary chunk."""
    from engine.assets.glb import is_glb, parse_glb
    from engine.assets.gltf import BUFFER_MIME, IMAGE_MIME, uri_resolver

    p = Path(path)
    raw = p.read_bytes()
    if is_glb(raw):
        parts = parse_glb(raw)
        return json.loads(parts.json), parts.bin
    doc = json.loads(raw)
    buffers = doc.get("buffers", [])
    resolver = uri_resolver(p, max_bytes=1 << 31)  # the loader's URI rules: relative, inside the asset's folder
    blobs = [resolver.resolve_uri(b["uri"], f"buffers[{i}].uri", BUFFER_MIME) if "uri" in b else b""
             for i, b in enumerate(buffers)]
    binary = bytearray()
    starts = []
    for blob in blobs:
        binary.extend(b"\0" * ((4 - len(binary) % 4) % 4))
        starts.append(len(binary))
        binary.extend(blob)
    for view in doc.get("bufferViews", []):
        view["byteOffset"] = starts[int(view["buffer"])] + int(view.get("byteOffset", 0))
        view["buffer"] = 0
    for i, img in enumerate(doc.get("images", [])):
        if "uri" in img:
            data = resolver.resolve_uri(img["uri"], f"images[{i}].uri", IMAGE_MIME)
            mime = img.get("mimeType") or ("image/png" if data[:4] == b"\x89PNG" else "image/jpeg")
            img.pop("uri")
            img["bufferView"] = _embed(doc, binary, data)
            img["mimeType"] = mime
    doc["buffers"] = [{"byteLength": len(binary)}] if binary or buffers else []
    if not doc["buffers"]:
        doc.pop("buffers")
    return doc, bytes(binary) if binary else None


def save_with_poses(source: str | Path, out: str | Path, rig: Rig,
                    clips: Mapping[str, Mapping[float, Pose]]) -> Path:
    """Write ``source`` (a .gltf/.glb the rig was built from) to ``out`` (.glb) with every keyed clip
    (name -> {time: local pose}) added; a source clip of the same name is replaced."""
    o = Path(out)
    if o.suffix.lower() != ".glb":
        raise ValueError(f"the posed asset must be written as .glb, got {o.name!r}")
    doc, binary = read_document(source)
    if len(doc.get("nodes", [])) != rig.count:
        raise ValueError(f"{Path(source).name} has {len(doc.get('nodes', []))} nodes, the rig {rig.count}")
    names = set(clips)
    kept = [a for a in doc.get("animations", []) if a.get("name") not in names]
    if kept:
        doc["animations"] = kept
    else:
        doc.pop("animations", None)
    builder = GltfBuilder.from_document(doc, binary)
    for name, keys in clips.items():
        builder.add_animation(name, pose_channels(rig, keys))
    return builder.save_glb(o)
