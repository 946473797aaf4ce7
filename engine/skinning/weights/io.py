"""The skinned primitives of an asset with their weights as stored, and writing weights back into the file.

Reading: :func:`primitive_weights` gives, per skinned primitive instanced in the default scene (keyed
``node{n}_mesh{m}_prim{p}`` as ``export-frame``), the bind positions, triangles, the skin's joint names and the
weights of every JOINTS_n/WEIGHTS_n set exactly as the file stores them (normalized integers decoded per the
glTF spec, no renormalisation), so that tools can keep locked joints bit for bit; a row whose weights are all
zero takes the loader's repair (weight 1 on its first joint). Draco-compressed weights are taken from the loader
(decoded there).

Writing: :func:`save_weights` re-reads the source document (as engine.anim.save does for poses: materials,
textures, clips and extensions survive) and replaces the JOINTS_n/WEIGHTS_n attributes of the edited primitives
with new accessors: UNSIGNED_BYTE joints for skins up to 256 joints (else UNSIGNED_SHORT) and FLOAT weights
(never quantised: a dragged vertex must land where LBS of the new weights puts it). The old accessors are left
unreferenced. A mesh instanced by several nodes holds one set of weights: the last edit of it wins.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.components import PrimitiveKey

__all__ = ["PrimitiveWeights", "primitive_weights", "save_weights", "parse_vertex", "find_primitive"]


@dataclass(eq=False)
class PrimitiveWeights:
    """One skinned primitive instance: what the weight tools need."""

    key: PrimitiveKey
    positions: np.ndarray        # (V,3) float32 bind positions (glTF POSITION)
    triangles: np.ndarray        # (T,3) int64
    joints: np.ndarray           # (V,M) int64 slots as stored (M = 4 per set)
    weights: np.ndarray          # (V,M) float32 as stored (normalized ints decoded)
    joint_names: list[str]       # per skin joint, the node name
    joint_nodes: np.ndarray      # (J,) node index of each skin joint
    inverse_bind: np.ndarray     # (J,4,4) float32
    skinned: Any = field(repr=False, default=None)  # engine.skinning.instances.SkinnedPrimitive

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @property
    def slots(self) -> int:
        return int(self.joints.shape[1])

    def dense(self) -> np.ndarray:
        """(V, J) float64 weights."""
        from engine.skinning.weights.table import to_dense

        return to_dense(self.joints, self.weights, self.n_joints)

    def joint_index(self, name: str, what: str = "joint") -> int:
        """Index of the skin joint named ``name`` (ValueError listing the names)."""
        if name in self.joint_names:
            return self.joint_names.index(name)
        shown = ", ".join(self.joint_names[:40]) + (" ..." if len(self.joint_names) > 40 else "")
        raise ValueError(f"{what} {name!r} is not a joint of the skin of {self.key.export_key}; joints: {shown}")

    def bind_joint_positions(self) -> np.ndarray:
        """(J,3) joint positions at bind (from the inverse bind matrices)."""
        return np.linalg.inv(np.asarray(self.inverse_bind, np.float64))[:, :3, 3]


def _raw_sets(doc: dict, binary: bytes | None, mesh: int, prim: int) -> tuple[np.ndarray, np.ndarray] | None:
    """JOINTS_n / WEIGHTS_n of one primitive as stored (weights decoded to float32), or None when they are not
    plain accessors (Draco)."""
    from engine.assets.accessors import AccessorReader

    raw = doc["meshes"][mesh]["primitives"][prim]
    if "KHR_draco_mesh_compression" in raw.get("extensions", {}):
        return None
    attrs = raw["attributes"]
    n = sum(1 for k in attrs if k.startswith("JOINTS_"))
    if n == 0 or any(f"JOINTS_{k}" not in attrs or f"WEIGHTS_{k}" not in attrs for k in range(n)):
        return None
    reader = AccessorReader(doc, [binary], max_bytes=1 << 31)
    if any("bufferView" not in doc["accessors"][int(attrs[f"WEIGHTS_{k}"])] for k in range(n)):
        return None
    j = np.concatenate([reader.read(int(attrs[f"JOINTS_{k}"]), "joints", "vertex") for k in range(n)], 1)
    w = np.concatenate([reader.read_float(int(attrs[f"WEIGHTS_{k}"]), "weights", "vertex") for k in range(n)], 1)
    return j.astype(np.int64), np.asarray(w, np.float32)


def primitive_weights(loaded: Any) -> list[PrimitiveWeights]:
    """Every skinned primitive instanced in the default scene of ``loaded`` (engine.scene.LoadedAsset), in
    scene order. ValueError when there is none."""
    asset = loaded.asset
    if not loaded.skinned:
        raise ValueError(f"{loaded.name}: the asset has no skin (no skinned mesh primitive in its default scene)")
    doc = binary = None
    if asset.path is not None:
        from engine.anim.save import read_document

        doc, binary = read_document(asset.path)
    out = []
    for sp in loaded.skinned:
        prim = sp.primitive
        raw = _raw_sets(doc, binary, sp.mesh, sp.prim) if doc is not None else None
        loaded_j, loaded_w = np.asarray(prim.joints, np.int64), np.asarray(prim.weights, np.float32)
        if raw is None or raw[0].shape != loaded_j.shape:
            raw = (loaded_j, loaded_w)
        joints, weights = raw[0].copy(), raw[1].copy()
        # rows the loader repaired (all weights zero: bound to their first joint) take the repaired values
        empty = weights.astype(np.float64).sum(axis=1) <= 0
        joints[empty], weights[empty] = loaded_j[empty], loaded_w[empty]
        names = [asset.nodes[int(n)].name or f"node{int(n)}" for n in sp.skin.joints]
        out.append(PrimitiveWeights(sp.key, np.asarray(prim.positions, np.float32),
                                    np.asarray(prim.indices, np.int64), joints, weights, names,
                                    np.asarray(sp.skin.joints, np.int64), np.asarray(sp.skin.inverse_bind,
                                                                                     np.float32), sp))
    return out


def find_primitive(prims: list[PrimitiveWeights], key: str | None) -> PrimitiveWeights:
    """The primitive named ``key`` (``node{n}_mesh{m}_prim{p}``), or the first skinned one for None."""
    if key is None:
        return prims[0]
    for p in prims:
        if p.key.export_key == key:
            return p
    raise ValueError(f"primitive {key!r} is not a skinned primitive of the asset; skinned: "
                     f"{[p.key.export_key for p in prims]}")


def parse_vertex(text: str, prims: list[PrimitiveWeights]) -> tuple[PrimitiveWeights, int]:
    """``KEY:I`` -> (primitive, vertex index), checked."""
    key, sep, idx = str(text).rpartition(":")
    if not sep or not key:
        raise ValueError(f"--vertex must be KEY:I (e.g. node2_mesh0_prim0:17), got {text!r}")
    p = find_primitive(prims, key)
    try:
        i = int(idx)
    except ValueError:
        raise ValueError(f"--vertex {text!r}: vertex index {idx!r} is not an integer") from None
    if not 0 <= i < p.positions.shape[0]:
        raise ValueError(f"--vertex {text!r}: vertex {i} out of range [0, {p.positions.shape[0] - 1}]")
    return p, i


def save_weights(source: str | Path, out: str | Path,
                 updates: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, int]]) -> Path:
    """Write ``source`` to ``out`` (.glb) with new weights: (mesh, primitive) -> (joints (V,M) int, weights
    (V,M) float32, joint count of the skin), M a multiple of 4 (one JOINTS_n/WEIGHTS_n pair per 4 columns)."""
    from engine.anim.save import read_document
    from engine.assets.writer import GltfBuilder

    o = Path(out)
    if o.suffix.lower() != ".glb":
        raise ValueError(f"--out must end in .glb, got {o.name!r}")
    doc, binary = read_document(source)
    builder = GltfBuilder.from_document(doc, binary)
    for (mesh, prim), (joints, weights, n_joints) in updates.items():
        j = np.asarray(joints).astype(np.uint8 if n_joints <= 256 else np.uint16)
        builder.replace_skin_sets(mesh, prim, j, np.asarray(weights, np.float32))
    return builder.save_glb(o)
