"""Animations: channels (one per node and path) and their samplers' keyframes (strictly increasing times,
CUBICSPLINE tangents, rotations normalised); morph-target weight channels are kept as (K, M) / (K, 3, M) values
(M = the target count of the node's mesh)."""
from __future__ import annotations

import numpy as np

from engine.assets.accessors import COMPONENT_NAMES
from engine.assets.errors import AssetError
from engine.assets.gltf.state import (
    B_N,
    NORMALIZED_STEP,
    ROTATION_FORMATS,
    S_N,
    UB,
    UB_N,
    UNIT_TOL,
    US,
    US_N,
    B,
    F,
    LoaderState,
    S,
)
from engine.assets.model import Asset, Channel, Clip


class AnimationReader(LoaderState):
    """Builds the clips of the asset model."""

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
                    s = int(ch.sampler)
                    interp = anim.samplers[s].interpolation or "LINEAR"
                    times, flat = self._sampler(anim, ai, s, path, sampler_cache)
                    assert node.mesh is not None  # has_morphs above
                    m = asset.meshes[node.mesh].target_count
                    k = times.shape[0]
                    per_key = 3 * m if interp == "CUBICSPLINE" else m
                    if flat.size != k * per_key:
                        raise AssetError(f"{awhere}.samplers[{s}].output",
                                         f"{flat.size} weights for {k} {interp} keyframes of nodes[{node_i}]'s "
                                         f"{m} morph targets (expected {k * per_key})")
                    values = np.ascontiguousarray(flat, np.float32).reshape((k, 3, m) if interp == "CUBICSPLINE"
                                                                            else (k, m))
                    channels.append(Channel(node=node_i, path=path, interpolation=interp, times=times,
                                            values=values))
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
