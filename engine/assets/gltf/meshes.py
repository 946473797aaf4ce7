"""Meshes: primitives (attribute names, sets and formats, KHR_mesh_quantization), indices (lists, strips, fans),
normals and joints/weights repaired where glTF allows it, morph targets (POSITION and NORMAL deltas kept in the
asset model, TANGENT deltas checked and dropped: the engine draws no tangent space), default weights and
extras.targetNames."""
from __future__ import annotations

import re

import numpy as np

from engine.assets.accessors import COMPONENT_NAMES
from engine.assets.errors import AssetError
from engine.assets.gltf.state import ATTR_FORMATS, NORMALIZED_STEP, UNIT_TOL, LoaderState
from engine.assets.model import Mesh, Primitive

_ATTR_RE = re.compile(r"^(POSITION|NORMAL|TANGENT|(TEXCOORD|COLOR|JOINTS|WEIGHTS)_(0|[1-9][0-9]*))$")


class MeshReader(LoaderState):
    """Builds the meshes of the asset model."""

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
            weights = np.asarray(raw_mesh.get("weights", [0.0] * n_targets), np.float64).astype(np.float32)
            if not np.all(np.isfinite(weights)):
                raise AssetError(f"meshes[{mi}].weights", "weights overflow float32")
            extras = raw_mesh.get("extras")
            names = extras.get("targetNames") if isinstance(extras, dict) else None
            target_names = [str(x) for x in names] if (isinstance(names, list) and len(names) == n_targets
                                                       and all(isinstance(x, str) for x in names)) else []
            meshes.append(Mesh(name=mesh.name or f"mesh{mi}", primitives=prims, weights=weights,
                               target_names=target_names))
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
        target_positions, target_normals = self._targets(raw, where, n_vertices)
        return Primitive(positions=positions, indices=indices, normals=normals, texcoords=texcoords,
                         joints=joints, weights=weights, material=material, target_positions=target_positions,
                         target_normals=target_normals)

    def _targets(self, raw: dict, where: str, n_vertices: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(M,N,3) POSITION and NORMAL deltas of the primitive's morph targets (zeros where a target lacks one;
        normals None when no target has NORMAL), after the checks above; deltas must be finite."""
        targets = raw.get("targets", [])
        if not targets:
            return None, None
        pos = np.zeros((len(targets), n_vertices, 3), np.float32)
        nrm = np.zeros((len(targets), n_vertices, 3), np.float32) if any("NORMAL" in t for t in targets) else None
        for t, target in enumerate(targets):
            for name, out in (("POSITION", pos), ("NORMAL", nrm)):
                if name in target and out is not None:
                    tw = f"{where}.targets[{t}].{name}"
                    d = np.asarray(self.reader.read_float(int(target[name]), tw, "vertex"), np.float32)
                    if d.shape != (n_vertices, 3) or not np.all(np.isfinite(d)):
                        raise AssetError(tw, f"accessors[{int(target[name])}]: deltas must be {n_vertices} finite "
                                             "VEC3 values")
                    out[t] = d
        return pos, nrm

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
        """JOINTS_0..n / WEIGHTS_0..n -> (N,4n) uint16 joints, (N,4n) float32 weights summing to 1 (repairs
        warned); with several sets each row is sorted by weight, largest first."""
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
        if n_sets > 1:  # every set kept (4 slots each), each row's influences sorted by weight (largest first)
            order = np.argsort(-w, axis=1, kind="stable")
            j = np.take_along_axis(j, order, axis=1)
            w = np.take_along_axis(w, order, axis=1)
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
