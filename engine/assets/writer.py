"""GLB (binary glTF 2.0) writer: a small builder that produces spec-valid files from numpy arrays.

Usage::

    b = GltfBuilder(generator="skinengine assets/generate.py")
    mat = b.add_material("skin", base_color=(0.8, 0.6, 0.5, 1.0))
    mesh = b.add_mesh("body", [dict(positions=P, normals=N, indices=T, joints=J, weights=W, material=mat)])
    root = b.add_node("hips", translation=(0, 1, 0))
    body = b.add_node("body", mesh=mesh)
    skin = b.add_skin([root], inverse_bind=IBM, skeleton=root)
    b.set_node_skin(body, skin)
    b.add_animation("walk", [AnimChannel(root, "rotation", times, quats)])
    b.add_scene([root, body])
    b.save_glb("out.glb")

What the builder guarantees (glTF 2.0 section 3 and 5; each rule is checked, bad input raises ValueError):

- every accessor has its own bufferView, 4-byte aligned inside the single binary buffer; data is tightly
  packed so no ``byteStride`` is written (the spec only requires it for interleaved vertex data);
- vertex attributes get ``target`` ARRAY_BUFFER, indices ELEMENT_ARRAY_BUFFER, inverse-bind matrices and
  animation data no target;
- POSITION accessors and animation inputs carry ``min``/``max`` (required), other vertex attributes too;
- indices are UNSIGNED_SHORT when every index fits below 65535 (the primitive-restart value is never
  used), else UNSIGNED_INT; JOINTS_n is UNSIGNED_BYTE for skins up to 256 joints, else UNSIGNED_SHORT;
- WEIGHTS_n is FLOAT, each row non-negative and renormalised so its float32 sum is 1 within 2e-7; joints and
  weights of shape (N, 4k) are written as k sets JOINTS_0..JOINTS_{k-1} / WEIGHTS_0.. (4 slots each; a width
  that is not a multiple of 4 is padded with weight-0 slots);
- rotation outputs are unit quaternions (x, y, z, w); animation times strictly increasing and >= 0;
- a scene list, the default ``scene``, and ``asset.version``/``asset.generator``;
- float values below 1e-12 in magnitude are written as 0 (rounding noise would underflow when squared).

The output is deterministic: the same calls give the same bytes (JSON keys in insertion order, floats
written by ``repr``).
"""
from __future__ import annotations

import json
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.assets.glb import CHUNK_BIN, CHUNK_JSON, GLB_MAGIC

# glTF componentType codes and their numpy dtypes.
BYTE, UNSIGNED_BYTE, SHORT, UNSIGNED_SHORT, UNSIGNED_INT, FLOAT = 5120, 5121, 5122, 5123, 5125, 5126
_COMPONENT_OF_DTYPE = {
    np.dtype(np.int8): BYTE,
    np.dtype(np.uint8): UNSIGNED_BYTE,
    np.dtype(np.int16): SHORT,
    np.dtype(np.uint16): UNSIGNED_SHORT,
    np.dtype(np.uint32): UNSIGNED_INT,
    np.dtype(np.float32): FLOAT,
}
ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER = 34962, 34963
_TARGETS = {None: None, "vertex": ARRAY_BUFFER, "index": ELEMENT_ARRAY_BUFFER}
_TYPE_OF_SHAPE = {(): "SCALAR", (2,): "VEC2", (3,): "VEC3", (4,): "VEC4", (4, 4): "MAT4"}
_PATH_WIDTH = {"translation": 3, "rotation": 4, "scale": 3}
_INTERPOLATIONS = ("STEP", "LINEAR", "CUBICSPLINE")

@dataclass
class AnimChannel:
    """One animation channel to write. times (K,) seconds; values (K, C) for STEP/LINEAR or
    (K, 3, C) (in-tangent, value, out-tangent) for CUBICSPLINE; C = 3 (translation, scale) or 4
    (rotation, xyzw)."""

    node: int
    path: str
    times: np.ndarray
    values: np.ndarray
    interpolation: str = "LINEAR"


def _pad4(n: int) -> int:
    return (4 - n % 4) % 4


def _json_number(x: Any) -> float | int:
    """Exact JSON number for a numpy scalar (float32 widens exactly to float64)."""
    if isinstance(x, (np.integer, int)):
        return int(x)
    return float(x)


class GltfBuilder:
    """Accumulates glTF objects and one binary buffer; ``to_glb()`` / ``save_glb(path)`` serialise it.

    Every ``add_*`` method returns the glTF index of the new object.
    """

    def __init__(self, *, generator: str = "skinengine engine/assets/writer.py", extras: dict | None = None) -> None:
        self._bin = bytearray()
        self._json: dict[str, Any] = {"asset": {"version": "2.0", "generator": str(generator)}}
        if extras:
            self._json["asset"]["extras"] = dict(extras)
        self._input_cache: dict[bytes, int] = {}

    @classmethod
    def from_document(cls, doc: dict, binary: bytes | None) -> GltfBuilder:
        """Continue an existing glTF document (to add animations and save it again): ``doc`` is its JSON, whose
        buffers must be the one binary chunk (``binary``, at most one buffer without a ``uri``). Objects added
        later append to it; everything already there is kept as it is."""
        buffers = doc.get("buffers", [])
        if len(buffers) > 1 or any("uri" in b for b in buffers):
            raise ValueError("the document must hold its data in one binary buffer without a uri (merge its "
                             f"buffers first), got {len(buffers)} buffer(s)")
        if buffers and binary is None:
            raise ValueError("the document has a buffer but no binary data was given")
        b = cls.__new__(cls)
        b._json = json.loads(json.dumps(doc))
        b._json.pop("buffers", None)
        b._bin = bytearray(binary[: int(buffers[0]["byteLength"])] if buffers and binary is not None else b"")
        b._input_cache = {}
        return b

    # ------------------------------------------------------------------ low level

    def _list(self, key: str) -> list:
        return self._json.setdefault(key, [])

    def add_accessor(self, array: np.ndarray, *, target: str | None = None, normalized: bool = False,
                     min_max: bool = False, name: str | None = None) -> int:
        """Append ``array`` as one bufferView + accessor.

        array: (N,) scalars, (N, 2|3|4) vectors or (N, 4, 4) matrices (stored column-major as glTF
        wants, so pass matrices in the engine's column-vector convention, ``M[:3, 3]`` = translation).
        dtype must be one of int8, uint8, int16, uint16, uint32, float32.
        target: None, "vertex" (ARRAY_BUFFER) or "index" (ELEMENT_ARRAY_BUFFER).
        min_max: write per-component ``min``/``max``.
        """
        a = np.asarray(array)
        if a.dtype not in _COMPONENT_OF_DTYPE:
            raise ValueError(f"accessor dtype {a.dtype} is not a glTF component type; use one of "
                             f"{sorted(str(d) for d in _COMPONENT_OF_DTYPE)}")
        if a.ndim == 0 or a.shape[0] == 0:
            raise ValueError(f"accessor array must have at least one element, got shape {a.shape}")
        elem_shape = tuple(a.shape[1:])
        if elem_shape not in _TYPE_OF_SHAPE:
            raise ValueError(f"accessor element shape {elem_shape} is not one of {list(_TYPE_OF_SHAPE)}")
        if target not in _TARGETS:
            raise ValueError(f"target {target!r} is not one of {list(_TARGETS)}")
        if a.dtype.kind == "f":
            if not np.all(np.isfinite(a)):
                raise ValueError(f"accessor {name or ''} holds non-finite values")
            # Rounding noise such as 6e-17 in a quaternion squares to an underflow in readers that run
            # under np.errstate(all="raise"); no engine quantity is meaningful below 1e-12.
            a = np.where(np.abs(a) < 1e-12, np.float32(0), a).astype(np.float32)
        if elem_shape == (4, 4):
            # glTF matrices are column-major: the bytes of M.T in C order.
            raw = np.ascontiguousarray(np.swapaxes(a, 1, 2)).astype(a.dtype.newbyteorder("<"), copy=False)
        else:
            raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False)
        data = raw.tobytes()
        self._bin.extend(b"\0" * _pad4(len(self._bin)))
        view: dict[str, Any] = {"buffer": 0, "byteOffset": len(self._bin), "byteLength": len(data)}
        if _TARGETS[target] is not None:
            view["target"] = _TARGETS[target]
        self._bin.extend(data)
        views = self._list("bufferViews")
        views.append(view)
        acc: dict[str, Any] = {
            "bufferView": len(views) - 1,
            "componentType": _COMPONENT_OF_DTYPE[a.dtype],
            "count": int(a.shape[0]),
            "type": _TYPE_OF_SHAPE[elem_shape],
        }
        if normalized:
            if a.dtype.kind == "f" or a.dtype == np.uint32:
                raise ValueError(f"normalized accessors must be 8/16-bit integers, got {a.dtype}")
            acc["normalized"] = True
        if min_max:
            flat = a.reshape(a.shape[0], -1)
            if elem_shape == (4, 4):  # per component in storage (column-major) order
                flat = np.swapaxes(a, 1, 2).reshape(a.shape[0], -1)
            acc["min"] = [_json_number(v) for v in flat.min(axis=0)]
            acc["max"] = [_json_number(v) for v in flat.max(axis=0)]
        if name:
            acc["name"] = name
        accs = self._list("accessors")
        accs.append(acc)
        return len(accs) - 1

    # ------------------------------------------------------------------ objects

    def add_material(self, name: str, *, base_color: Sequence[float] = (1.0, 1.0, 1.0, 1.0),
                     metallic: float = 0.0, roughness: float = 0.6, double_sided: bool = False) -> int:
        """A metallic-roughness material with a constant base colour (linear RGBA in [0, 1])."""
        bc = np.asarray(base_color, np.float64)
        if bc.shape != (4,) or np.any(bc < 0) or np.any(bc > 1):
            raise ValueError(f"base_color must be 4 values in [0, 1], got {base_color!r}")
        for label, v in (("metallic", metallic), ("roughness", roughness)):
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{label} must be in [0, 1], got {v!r}")
        mat: dict[str, Any] = {
            "name": name,
            "pbrMetallicRoughness": {"baseColorFactor": [float(v) for v in bc],
                                     "metallicFactor": float(metallic), "roughnessFactor": float(roughness)},
        }
        if double_sided:
            mat["doubleSided"] = True
        mats = self._list("materials")
        mats.append(mat)
        return len(mats) - 1

    def add_mesh(self, name: str, primitives: Sequence[dict], *, joint_count: int | None = None) -> int:
        """A mesh of triangle-list primitives. Each primitive is a dict with keys
        positions (N,3), indices (T,3) or (3T,), and optional normals (N,3), texcoords (N,2),
        joints (N,4) int, weights (N,4) float, material (int).

        joint_count: the skin's joint count when the primitive is skinned (checks joint indices and
        picks UNSIGNED_BYTE up to 256 joints, else UNSIGNED_SHORT).
        """
        prims_json = []
        for pi, prim in enumerate(primitives):
            unknown = set(prim) - {"positions", "indices", "normals", "texcoords", "joints", "weights", "material"}
            if unknown:
                raise ValueError(f"primitive {pi}: unknown keys {sorted(unknown)}")
            pos = np.asarray(prim["positions"], np.float32)
            if pos.ndim != 2 or pos.shape[1] != 3 or pos.shape[0] == 0:
                raise ValueError(f"primitive {pi}: positions must be (N>0, 3), got {pos.shape}")
            n = pos.shape[0]
            attrs: dict[str, int] = {"POSITION": self.add_accessor(pos, target="vertex", min_max=True)}
            if prim.get("normals") is not None:
                nrm = np.asarray(prim["normals"], np.float64)
                if nrm.shape != (n, 3):
                    raise ValueError(f"primitive {pi}: normals must be ({n}, 3), got {nrm.shape}")
                length = np.linalg.norm(nrm, axis=1)
                if np.any(length < 1e-6):
                    raise ValueError(f"primitive {pi}: {int(np.sum(length < 1e-6))} zero-length normals")
                attrs["NORMAL"] = self.add_accessor((nrm / length[:, None]).astype(np.float32), target="vertex",
                                                    min_max=True)
            if prim.get("texcoords") is not None:
                uv = np.asarray(prim["texcoords"], np.float32)
                if uv.shape != (n, 2):
                    raise ValueError(f"primitive {pi}: texcoords must be ({n}, 2), got {uv.shape}")
                attrs["TEXCOORD_0"] = self.add_accessor(uv, target="vertex", min_max=True)
            has_j, has_w = prim.get("joints") is not None, prim.get("weights") is not None
            if has_j != has_w:
                raise ValueError(f"primitive {pi}: joints and weights must be given together")
            if has_j:
                attrs.update(self._skin_attributes(pi, n, prim["joints"], prim["weights"], joint_count))
            idx = np.asarray(prim["indices"]).reshape(-1)
            if idx.size == 0 or idx.size % 3:
                raise ValueError(f"primitive {pi}: index count must be a positive multiple of 3, got {idx.size}")
            if idx.min() < 0 or idx.max() >= n:
                raise ValueError(f"primitive {pi}: indices must be in [0, {n - 1}], got range "
                                 f"[{idx.min()}, {idx.max()}]")
            idx_dtype = np.uint16 if n <= 65535 else np.uint32  # max index n-1 <= 65534: no restart value
            pj: dict[str, Any] = {"attributes": attrs,
                                  "indices": self.add_accessor(idx.astype(idx_dtype), target="index"),
                                  "mode": 4}
            if prim.get("material") is not None:
                m = int(prim["material"])
                if not 0 <= m < len(self._json.get("materials", [])):
                    raise ValueError(f"primitive {pi}: material {m} not in [0, {len(self._json.get('materials', []))})")
                pj["material"] = m
            prims_json.append(pj)
        if not prims_json:
            raise ValueError("a mesh needs at least one primitive")
        meshes = self._list("meshes")
        meshes.append({"name": name, "primitives": prims_json})
        return len(meshes) - 1

    def _skin_attributes(self, pi: int, n: int, joints: np.ndarray, weights: np.ndarray,
                         joint_count: int | None) -> dict[str, int]:
        j = np.asarray(joints)
        w = np.asarray(weights, np.float64)
        if j.ndim != 2 or j.shape[0] != n or j.shape[1] < 1 or w.shape != j.shape:
            raise ValueError(f"primitive {pi}: joints and weights must be ({n}, 4k), got {j.shape} and {w.shape}")
        if j.shape[1] % 4:
            pad = 4 - j.shape[1] % 4
            j = np.concatenate([j, np.zeros((n, pad), j.dtype)], 1)
            w = np.concatenate([w, np.zeros((n, pad))], 1)
        if j.min() < 0:
            raise ValueError(f"primitive {pi}: negative joint index {j.min()}")
        limit = joint_count if joint_count is not None else int(j.max()) + 1
        if j.max() >= limit:
            raise ValueError(f"primitive {pi}: joint index {j.max()} out of range [0, {limit - 1}]")
        if np.any(w < 0) or not np.all(np.isfinite(w)):
            raise ValueError(f"primitive {pi}: weights must be finite and >= 0")
        total = w.sum(axis=1)
        if np.any(total <= 0):
            raise ValueError(f"primitive {pi}: {int(np.sum(total <= 0))} vertices have all-zero weights")
        w32 = (w / total[:, None]).astype(np.float32)
        # Make the float32 sum exactly representable near 1: put the rounding residue on the largest weight.
        big = np.argmax(w32, axis=1)
        rows = np.arange(n)
        others = w32.sum(axis=1, dtype=np.float32) - w32[rows, big]
        w32[rows, big] = np.float32(1.0) - others
        jdtype = np.uint8 if limit <= 256 else np.uint16
        j = np.where(w32 > 0, j, 0)  # unused slots point at joint 0 with weight 0
        return self.skin_sets(j.astype(jdtype), w32)

    def skin_sets(self, joints: np.ndarray, weights: np.ndarray) -> dict[str, int]:
        """Accessors of (N, 4k) joints (uint8/uint16) and float32 weights, written as they are (no
        renormalisation: the caller's exact float32 values), one JOINTS_s / WEIGHTS_s pair per 4 columns."""
        j, w = np.asarray(joints), np.asarray(weights)
        if j.ndim != 2 or j.shape[1] % 4 or w.shape != j.shape or w.dtype != np.float32 \
                or j.dtype not in (np.uint8, np.uint16):
            raise ValueError(f"joints (N,4k) uint8/uint16 and weights (N,4k) float32, got {j.shape} {j.dtype} and "
                             f"{w.shape} {w.dtype}")
        out: dict[str, int] = {}
        for k in range(j.shape[1] // 4):
            out[f"JOINTS_{k}"] = self.add_accessor(np.ascontiguousarray(j[:, 4 * k:4 * k + 4]), target="vertex")
            out[f"WEIGHTS_{k}"] = self.add_accessor(np.ascontiguousarray(w[:, 4 * k:4 * k + 4]), target="vertex",
                                                    min_max=True)
        return out

    def replace_skin_sets(self, mesh: int, primitive: int, joints: np.ndarray, weights: np.ndarray) -> None:
        """Point ``meshes[mesh].primitives[primitive]`` at new JOINTS_n/WEIGHTS_n accessors (``skin_sets``); its
        old sets are dropped from the primitive (and from a Draco extension's attribute map, so the decoder
        leaves them alone)."""
        prim = self._json["meshes"][int(mesh)]["primitives"][int(primitive)]
        n = prim["attributes"]["POSITION"]
        count = int(self._json["accessors"][int(n)]["count"])
        if np.asarray(joints).shape[0] != count:
            raise ValueError(f"meshes[{mesh}].primitives[{primitive}] has {count} vertices, the weights "
                             f"{np.asarray(joints).shape[0]} rows")
        for k in [k for k in prim["attributes"] if k.startswith(("JOINTS_", "WEIGHTS_"))]:
            del prim["attributes"][k]
        draco = prim.get("extensions", {}).get("KHR_draco_mesh_compression")
        if draco is not None:
            for k in [k for k in draco.get("attributes", {}) if k.startswith(("JOINTS_", "WEIGHTS_"))]:
                del draco["attributes"][k]
        prim["attributes"].update(self.skin_sets(joints, weights))

    def add_node(self, name: str, *, translation: Sequence[float] | None = None,
                 rotation: Sequence[float] | None = None, scale: Sequence[float] | None = None,
                 mesh: int | None = None, skin: int | None = None, children: Sequence[int] = ()) -> int:
        """A node with a TRS rest transform (rotation xyzw, normalised here; must not be zero)."""
        node: dict[str, Any] = {"name": name}
        if children:
            node["children"] = [int(c) for c in children]
        if mesh is not None:
            node["mesh"] = int(mesh)
        if skin is not None:
            node["skin"] = int(skin)
        if rotation is not None:
            q = np.asarray(rotation, np.float64)
            if q.shape != (4,) or np.linalg.norm(q) < 1e-6:
                raise ValueError(f"node {name!r}: rotation must be a non-zero quaternion xyzw, got {rotation!r}")
            q = (q / np.linalg.norm(q)).astype(np.float32)
            q[np.abs(q) < 1e-12] = 0
            if not np.allclose(q, [0, 0, 0, 1]):
                node["rotation"] = [float(v) for v in q]
        if scale is not None:
            s = np.asarray(scale, np.float32)
            if s.shape != (3,):
                raise ValueError(f"node {name!r}: scale must be 3 values, got {scale!r}")
            if not np.allclose(s, 1):
                node["scale"] = [float(v) for v in s]
        if translation is not None:
            t = np.asarray(translation, np.float32)
            t[np.abs(t) < 1e-12] = 0
            if t.shape != (3,):
                raise ValueError(f"node {name!r}: translation must be 3 values, got {translation!r}")
            if np.any(t != 0):
                node["translation"] = [float(v) for v in t]
        nodes = self._list("nodes")
        nodes.append(node)
        return len(nodes) - 1

    def set_children(self, node: int, children: Sequence[int]) -> None:
        """Set a node's children (for building hierarchies parents-last)."""
        nodes = self._json.get("nodes", [])
        for c in [node, *children]:
            if not 0 <= c < len(nodes):
                raise ValueError(f"node index {c} not in [0, {len(nodes)})")
        if children:
            nodes[node]["children"] = [int(c) for c in children]
        else:
            nodes[node].pop("children", None)

    def set_node_skin(self, node: int, skin: int) -> None:
        """Attach skin ``skin`` to ``node`` (which must carry a mesh)."""
        n = self._json["nodes"][node]
        if "mesh" not in n:
            raise ValueError(f"node {node} ({n.get('name')!r}) has no mesh to skin")
        n["skin"] = int(skin)

    def add_skin(self, joints: Sequence[int], *, inverse_bind: np.ndarray, skeleton: int | None = None,
                 name: str = "skin") -> int:
        """A skin over node indices ``joints`` with (J,4,4) inverse bind matrices (column-vector convention)."""
        jl = [int(j) for j in joints]
        ibm = np.asarray(inverse_bind, np.float32)
        if ibm.shape != (len(jl), 4, 4):
            raise ValueError(f"inverse_bind must be ({len(jl)}, 4, 4), got {ibm.shape}")
        if not np.allclose(ibm[:, 3, :], [0, 0, 0, 1], atol=1e-6):
            raise ValueError("inverse_bind matrices must be affine (last row 0 0 0 1)")
        ibm = ibm.copy()
        ibm[:, 3, :] = [0, 0, 0, 1]
        if len(set(jl)) != len(jl):
            raise ValueError(f"skin joints must be unique, got {jl}")
        skin: dict[str, Any] = {"name": name, "inverseBindMatrices": self.add_accessor(ibm), "joints": jl}
        if skeleton is not None:
            skin["skeleton"] = int(skeleton)
        skins = self._list("skins")
        skins.append(skin)
        return len(skins) - 1

    def add_animation(self, name: str, channels: Sequence[AnimChannel]) -> int:
        """An animation; channels with identical time arrays share one input accessor."""
        if not channels:
            raise ValueError(f"animation {name!r} needs at least one channel")
        samplers, chans = [], []
        seen = set()
        for ci, ch in enumerate(channels):
            if ch.path not in _PATH_WIDTH:
                raise ValueError(f"animation {name!r} channel {ci}: path {ch.path!r} not in {list(_PATH_WIDTH)}")
            if ch.interpolation not in _INTERPOLATIONS:
                raise ValueError(f"animation {name!r} channel {ci}: interpolation {ch.interpolation!r} "
                                 f"not in {list(_INTERPOLATIONS)}")
            if (ch.node, ch.path) in seen:
                raise ValueError(f"animation {name!r}: node {ch.node} path {ch.path} animated twice")
            seen.add((ch.node, ch.path))
            t = np.asarray(ch.times, np.float32).reshape(-1)
            if t.size == 0 or not np.all(np.isfinite(t)) or t[0] < 0 or np.any(np.diff(t) <= 0):
                raise ValueError(f"animation {name!r} channel {ci}: times must be finite, >= 0 and strictly "
                                 f"increasing, got {t[:6]}...")
            width = _PATH_WIDTH[ch.path]
            v = np.asarray(ch.values, np.float64)
            want = (t.size, 3, width) if ch.interpolation == "CUBICSPLINE" else (t.size, width)
            if v.shape != want:
                raise ValueError(f"animation {name!r} channel {ci}: values must be {want}, got {v.shape}")
            if ch.path == "rotation":
                if ch.interpolation == "CUBICSPLINE":
                    vals = v[:, 1]
                else:
                    vals = v
                norm = np.linalg.norm(vals, axis=-1)
                if np.any(norm < 1e-6):
                    raise ValueError(f"animation {name!r} channel {ci}: zero quaternion")
                vals = vals / norm[:, None]
                if ch.interpolation == "CUBICSPLINE":
                    v = v.copy()
                    v[:, 1] = vals
                else:
                    v = vals
            key = t.tobytes()
            if key not in self._input_cache:
                self._input_cache[key] = self.add_accessor(t, min_max=True)
            out = self.add_accessor(v.astype(np.float32).reshape(-1, width))
            samplers.append({"input": self._input_cache[key], "interpolation": ch.interpolation, "output": out})
            chans.append({"sampler": len(samplers) - 1, "target": {"node": int(ch.node), "path": ch.path}})
        anims = self._list("animations")
        anims.append({"name": name, "channels": chans, "samplers": samplers})
        return len(anims) - 1

    def add_scene(self, nodes: Sequence[int], *, name: str = "scene", default: bool = True) -> int:
        """A scene of root nodes; the first scene added (or any with default=True) becomes ``scene``."""
        scenes = self._list("scenes")
        scenes.append({"name": name, "nodes": [int(n) for n in nodes]})
        if default or "scene" not in self._json:
            self._json["scene"] = len(scenes) - 1
        return len(scenes) - 1

    # ------------------------------------------------------------------ output

    def _check(self) -> None:
        nodes = self._json.get("nodes", [])
        parent = [-1] * len(nodes)
        for i, n in enumerate(nodes):
            for c in n.get("children", []):
                if not 0 <= c < len(nodes) or c == i:
                    raise ValueError(f"node {i} ({n['name']!r}) has invalid child {c}")
                if parent[c] >= 0:
                    raise ValueError(f"node {c} has two parents ({parent[c]} and {i})")
                parent[c] = i
        for key, ref in (("mesh", "meshes"), ("skin", "skins")):
            for i, n in enumerate(nodes):
                if key in n and not 0 <= n[key] < len(self._json.get(ref, [])):
                    raise ValueError(f"node {i} refers to missing {key} {n[key]}")
        if "scenes" not in self._json:
            raise ValueError("add_scene() was never called: glTF files need a scene")
        for s in self._json["scenes"]:
            for r in s["nodes"]:
                if not 0 <= r < len(nodes) or parent[r] >= 0:
                    raise ValueError(f"scene root {r} is not a root node")

    def to_json(self) -> dict:
        """The glTF JSON document (a copy), with the buffer entry filled in."""
        doc = json.loads(json.dumps(self._json))
        if self._bin:
            doc["buffers"] = [{"byteLength": len(self._bin)}]
        return doc

    def to_glb(self) -> bytes:
        """Serialise as GLB: header, JSON chunk (space padded), BIN chunk (zero padded)."""
        self._check()
        js = json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=True).encode("ascii")
        js += b" " * _pad4(len(js))
        binary = bytes(self._bin) + b"\0" * _pad4(len(self._bin))
        total = 12 + 8 + len(js) + (8 + len(binary) if binary else 0)
        out = bytearray(struct.pack("<III", GLB_MAGIC, 2, total))
        out += struct.pack("<II", len(js), CHUNK_JSON) + js
        if binary:
            out += struct.pack("<II", len(binary), CHUNK_BIN) + binary
        return bytes(out)

    def save_glb(self, path: str | os.PathLike) -> Path:
        """Write the GLB atomically (temporary file then rename) and return its path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        data = self.to_glb()
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, p)
        return p
