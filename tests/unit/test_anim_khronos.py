"""engine.anim on the Khronos samples against an INDEPENDENT reference evaluator written here.

The reference reads the glTF JSON through pygltflib (accessors decoded below), samples each channel with a
per-channel bisect and plain-float slerp / Hermite code, and composes world matrices with a per-node recursion.
It shares no code with engine.anim. Skinned vertices are computed inline on both sides
(v' = sum_k w_k M_k v, with M = world(joint) @ IBM, world-space skinning as the glTF spec defines it); rigid
meshes use world(node) @ v. Results must agree within 1e-4 of the bounding-box diagonal.

Two sources feed the engine side: ``raw`` builds the engine.assets.model.Asset in this file from the same
decoded JSON (so these tests check engine.anim even while the loader is unfinished), and ``loader`` uses
engine.assets.load (engine/assets/gltf/).
"""
from __future__ import annotations

import base64
import bisect
import functools
import math
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pygltflib
import pytest

from engine.anim.fk import global_matrices, skin_matrices
from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.anim.sampling import ClipSampler
from engine.assets import model as m
from tests.conftest import shared_dir

pytestmark = pytest.mark.shared

SKINNED = ["CesiumMan.glb", "RiggedFigure.glb", "RiggedSimple.glb", "Fox.glb", "SimpleSkin.gltf",
           "SimpleSkin_glTF/SimpleSkin.gltf", "RecursiveSkeletons.glb"] + [
    f"AssetGenerator/Animation_Skin/Animation_Skin_{i:02d}.gltf" for i in (1, 5, 6, 7, 8, 9)]

# --------------------------------------------------------------------------------------------------------------
# Raw glTF access (pygltflib JSON + our own accessor decoding)
_CT = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_NC = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}


class Raw:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.g = pygltflib.GLTF2().load(str(path))
        self._bufs: dict[int, bytes] = {}

    def buffer(self, i: int) -> bytes:
        if i not in self._bufs:
            uri = self.g.buffers[i].uri
            if uri is None:
                data = self.g.binary_blob()
            elif uri.startswith("data:"):
                data = base64.b64decode(uri.split(",", 1)[1])
            else:
                data = (self.path.parent / unquote(uri)).read_bytes()
            self._bufs[i] = data
        return self._bufs[i]

    def accessor(self, i: int) -> np.ndarray:
        """(count, ncomp) float64, normalized integers decoded."""
        a = self.g.accessors[i]
        assert a.sparse is None, "sparse accessors are not used by these samples"
        dt = np.dtype(_CT[a.componentType])
        nc = _NC[a.type]
        out = np.zeros((a.count, nc), np.float64)
        if a.bufferView is not None:
            bv = self.g.bufferViews[a.bufferView]
            data = self.buffer(bv.buffer)
            start = (bv.byteOffset or 0) + (a.byteOffset or 0)
            elem = dt.itemsize * nc
            stride = bv.byteStride or elem
            rows = [np.frombuffer(data, dt, nc, start + r * stride) for r in range(a.count)] if stride != elem \
                else [np.frombuffer(data, dt, a.count * nc, start).reshape(a.count, nc)]
            out[:] = np.concatenate([r.reshape(-1, nc) for r in rows]).astype(np.float64)
        if a.normalized:
            div = {np.int8: 127.0, np.uint8: 255.0, np.int16: 32767.0, np.uint16: 65535.0}[dt.type]
            out = np.maximum(out / div, -1.0)
        return out


def _node_matrix_json(node: pygltflib.Node) -> np.ndarray | None:
    return None if node.matrix is None else np.array(node.matrix, np.float64).reshape(4, 4).T  # column-major


def raw_to_asset(raw: Raw) -> m.Asset:
    """A minimal conversion into the asset model, for the ``raw`` source (no validation)."""
    g = raw.g
    nodes = []
    for i, n in enumerate(g.nodes):
        node = m.Node(name=n.name or f"node{i}", children=list(n.children or []), mesh=n.mesh, skin=n.skin)
        mat = _node_matrix_json(n)
        if mat is not None:
            node.matrix = mat.astype(np.float32)
        else:
            node.translation = np.array(n.translation or [0, 0, 0], np.float32)
            r = np.array(n.rotation or [0, 0, 0, 1], np.float64)
            node.rotation = (r / np.linalg.norm(r)).astype(np.float32)
            node.scale = np.array(n.scale or [1, 1, 1], np.float32)
        nodes.append(node)
    for i, n in enumerate(nodes):
        for c in n.children:
            nodes[c].parent = i
    meshes = []
    for me in g.meshes:
        prims = []
        for p in me.primitives:
            pos = raw.accessor(p.attributes.POSITION).astype(np.float32)
            idx = (raw.accessor(p.indices).astype(np.uint32).reshape(-1, 3) if p.indices is not None
                   else np.arange(len(pos), dtype=np.uint32).reshape(-1, 3))
            j = w = None
            if p.attributes.JOINTS_0 is not None:
                j = raw.accessor(p.attributes.JOINTS_0).astype(np.uint16)
                w = raw.accessor(p.attributes.WEIGHTS_0)
                w = (w / w.sum(1, keepdims=True)).astype(np.float32)
            prims.append(m.Primitive(positions=pos, indices=idx, joints=j, weights=w))
        meshes.append(m.Mesh(me.name or "", prims))
    skins = []
    for s in g.skins:
        nj = len(s.joints)
        ibm = (np.tile(np.eye(4, dtype=np.float32), (nj, 1, 1)) if s.inverseBindMatrices is None else
               raw.accessor(s.inverseBindMatrices).reshape(nj, 4, 4).transpose(0, 2, 1).astype(np.float32))
        skins.append(m.Skin(s.name or "", np.array(s.joints), ibm, s.skeleton))
    clips = []
    for a_i, an in enumerate(g.animations):
        chans = []
        for ch in an.channels:
            smp = an.samplers[ch.sampler]
            times = raw.accessor(smp.input)[:, 0].astype(np.float32)
            vals = raw.accessor(smp.output)
            if smp.interpolation == "CUBICSPLINE":
                vals = vals.reshape(len(times), 3, vals.shape[1])
            elif ch.target.path == "rotation":  # the asset model's contract: normalised at load
                vals = vals / np.linalg.norm(vals, axis=1, keepdims=True)
            chans.append(m.Channel(ch.target.node, ch.target.path, smp.interpolation or "LINEAR", times,
                                   vals.astype(np.float32)))
        clips.append(m.Clip(an.name or f"anim{a_i}", chans))
    scenes = [m.Scene(s.name or "", list(s.nodes or [])) for s in g.scenes]
    return m.Asset(path=raw.path, meshes=meshes, nodes=nodes, skins=skins, clips=clips, scenes=scenes,
                   scene=g.scene or 0)


# --------------------------------------------------------------------------------------------------------------
# The independent reference: plain floats, one channel and one node at a time.
def _qnorm(q):
    n = math.sqrt(sum(c * c for c in q))
    return [c / n for c in q]


def _ref_slerp(a, b, u):
    d = sum(x * y for x, y in zip(a, b))
    if d < 0:
        b, d = [-x for x in b], -d
    if d > 0.99999:
        return _qnorm([x + u * (y - x) for x, y in zip(a, b)])
    th = math.acos(min(d, 1.0))
    sa, sb = math.sin((1 - u) * th) / math.sin(th), math.sin(u * th) / math.sin(th)
    return [sa * x + sb * y for x, y in zip(a, b)]


def _ref_sample(times, out, interp, path, t):
    """One channel at time t. ``out``: (K, C) or, for CUBICSPLINE, the flat (3K, C) accessor rows."""
    k_n = len(times)

    def vert(k):
        v = list(out[3 * k + 1]) if interp == "CUBICSPLINE" else list(out[k])
        # glTF rotations are unit quaternions; files store them rounded (SimpleSkin: 0.707, 0.707), and the
        # asset model normalises them at load, so the reference does too before interpolating.
        return _qnorm(v) if path == "rotation" and interp != "CUBICSPLINE" else v

    if t <= times[0]:
        return vert(0)
    if t >= times[-1]:
        return vert(k_n - 1)
    k = bisect.bisect_right(times, t) - 1
    t0, t1 = times[k], times[k + 1]
    u = (t - t0) / (t1 - t0)
    if interp == "STEP":
        return vert(k)
    if interp == "LINEAR":
        a, b = vert(k), vert(k + 1)
        return _ref_slerp(a, b, u) if path == "rotation" else [x + u * (y - x) for x, y in zip(a, b)]
    dt = t1 - t0
    p0, m0 = out[3 * k + 1], out[3 * k + 2] * dt
    p1, m1 = out[3 * (k + 1) + 1], out[3 * (k + 1)] * dt
    u2, u3 = u * u, u * u * u
    v = [(2 * u3 - 3 * u2 + 1) * p0[c] + (u3 - 2 * u2 + u) * m0[c] + (-2 * u3 + 3 * u2) * p1[c]
         + (u3 - u2) * m1[c] for c in range(len(p0))]
    return _qnorm(v) if path == "rotation" else v


def _ref_trs(t, r, s):
    x, y, z, w = _qnorm(r)
    rot = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
           [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
           [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    mat = np.eye(4)
    for i in range(3):
        for j in range(3):
            mat[i, j] = rot[i][j] * s[j]
        mat[i, 3] = t[i]
    return mat


class Reference:
    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        g = raw.g
        self.parent = {c: i for i, n in enumerate(g.nodes) for c in (n.children or [])}
        self.anims = []
        for an in g.animations:
            chans = []
            for ch in an.channels:
                smp = an.samplers[ch.sampler]
                chans.append((ch.target.node, ch.target.path, smp.interpolation or "LINEAR",
                              list(raw.accessor(smp.input)[:, 0]), raw.accessor(smp.output)))
            self.anims.append(chans)

    def worlds(self, anim: int | None, t: float) -> list[np.ndarray]:
        g = self.raw.g
        over: dict[tuple[int, str], list[float]] = {}
        if anim is not None:
            for node, path, interp, times, out in self.anims[anim]:
                if path != "weights":
                    over[(node, path)] = _ref_sample(times, out, interp, path, t)
        memo: dict[int, np.ndarray] = {}

        def world(i):
            if i not in memo:
                n = g.nodes[i]
                loc = _node_matrix_json(n)
                if loc is None:
                    loc = _ref_trs(over.get((i, "translation"), n.translation or [0, 0, 0]),
                                   over.get((i, "rotation"), n.rotation or [0, 0, 0, 1]),
                                   over.get((i, "scale"), n.scale or [1, 1, 1]))
                memo[i] = loc if i not in self.parent else world(self.parent[i]) @ loc
            return memo[i]

        return [world(i) for i in range(len(g.nodes))]

    def positions(self, worlds: list[np.ndarray]) -> dict[tuple[int, int], np.ndarray]:
        """Posed positions of every primitive of every mesh node, keyed by (node, primitive)."""
        g, raw = self.raw.g, self.raw
        out = {}
        for i, n in enumerate(g.nodes):
            if n.mesh is None:
                continue
            for pi, p in enumerate(g.meshes[n.mesh].primitives):
                v = np.c_[raw.accessor(p.attributes.POSITION), np.ones(raw.g.accessors[p.attributes.POSITION].count)]
                if n.skin is not None and p.attributes.JOINTS_0 is not None:
                    sk = g.skins[n.skin]
                    ibm = (np.tile(np.eye(4), (len(sk.joints), 1, 1)) if sk.inverseBindMatrices is None else
                           raw.accessor(sk.inverseBindMatrices).reshape(-1, 4, 4).transpose(0, 2, 1))
                    mats = np.stack([worlds[j] @ ibm[k] for k, j in enumerate(sk.joints)])
                    jw = raw.accessor(p.attributes.JOINTS_0).astype(int)
                    ww = raw.accessor(p.attributes.WEIGHTS_0)
                    ww = ww / ww.sum(1, keepdims=True)
                    out[(i, pi)] = np.einsum("vk,vkij,vj->vi", ww, mats[jw], v)[:, :3]
                else:
                    out[(i, pi)] = (v @ worlds[i].T)[:, :3]
        return out


# --------------------------------------------------------------------------------------------------------------
# Engine side
def _engine_positions(asset: m.Asset, g: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    out = {}
    for i, n in enumerate(asset.nodes):
        if n.mesh is None:
            continue
        for pi, p in enumerate(asset.meshes[n.mesh].primitives):
            v = np.c_[p.positions.astype(np.float64), np.ones(p.vertex_count)]
            if n.skin is not None and p.is_skinned:
                mats = skin_matrices(g, asset.skins[n.skin]).astype(np.float64)
                out[(i, pi)] = np.einsum("vk,vkij,vj->vi", p.weights, mats[p.joints.astype(int)], v)[:, :3]
            else:
                out[(i, pi)] = (v @ g[i].T.astype(np.float64))[:, :3]
    return out


@functools.cache
def _raw(path: Path) -> Raw:
    """pygltflib parsing is slow on RecursiveSkeletons (~1 s); parse each file once per session (read-only)."""
    return Raw(path)


def _load(rel: str, source: str) -> tuple[Raw, m.Asset]:
    path = shared_dir("gltf-samples") / rel
    raw = _raw(path)
    if source == "raw":
        return raw, raw_to_asset(raw)
    from engine.assets import load

    return raw, load(path)


def _times(clip: m.Clip, n: int = 6) -> list[float]:
    """Before the start, the first key, interior non-key times, the end and after it."""
    end = clip.end
    interior = list(np.linspace(clip.start, end, n + 2)[1:-1] + 0.37 * (end - clip.start) / (n + 2))
    return [-0.1, clip.start] + [min(x, end) for x in interior] + [end, end + 0.5]


def _compare(raw: Raw, asset: m.Asset, worlds_only: bool = False) -> int:
    ref = Reference(raw)
    rig = Rig.from_asset(asset)
    assert len(asset.clips) == len(ref.anims)
    samplers = [ClipSampler(rig, c) for c in asset.clips]
    cases = [(None, 0.0)] + [(ci, t) for ci, c in enumerate(asset.clips) for t in _times(c)]
    checked = 0
    for ci, t in cases:
        pose = Pose.rest(rig)
        if ci is not None:
            samplers[ci].sample(t, pose)
        g = global_matrices(rig, pose)
        rw = ref.worlds(ci, t)
        scale = 1 + max(float(np.abs(w[:3, 3]).max()) for w in rw)
        np.testing.assert_allclose(g, np.stack(rw), atol=2e-5 * scale, err_msg=f"world matrices clip={ci} t={t}")
        if worlds_only:
            checked += 1
            continue
        want = ref.positions(rw)
        got = _engine_positions(asset, g)
        assert want.keys() == got.keys()
        allpos = np.concatenate(list(want.values()))
        diag = float(np.linalg.norm(allpos.max(0) - allpos.min(0)))
        for key in want:
            err = np.abs(got[key] - want[key]).max()
            assert err <= 1e-4 * diag, (f"{raw.path.name} clip={ci} t={t:.4f} mesh node/prim {key}: "
                                        f"max error {err:.3g} > 1e-4 * diag {diag:.3g}")
        checked += 1
    return checked


@pytest.mark.parametrize("source", ["raw", "loader"])
@pytest.mark.parametrize("rel", SKINNED)
def test_skinned_samples_match_the_reference(rel: str, source: str) -> None:
    raw, asset = _load(rel, source)
    n = _compare(raw, asset)
    assert n >= 1 + 8 * len(asset.clips)


@pytest.mark.parametrize("source", ["raw", "loader"])
def test_interpolation_test_node_world_matrices(source: str) -> None:
    raw, asset = _load("InterpolationTest.glb", source)
    interps = {ch.interpolation for c in asset.clips for ch in c.channels}
    assert interps == {"STEP", "LINEAR", "CUBICSPLINE"}
    _compare(raw, asset, worlds_only=True)
    # extra times right around keys (STEP jumps, cubic tangents)
    ref = Reference(raw)
    rig = Rig.from_asset(asset)
    for ci, clip in enumerate(asset.clips):
        s = ClipSampler(rig, clip)
        for key in clip.channels[0].times:
            for t in (float(key) - 1e-3, float(key), float(key) + 1e-3):
                g = global_matrices(rig, s.sample(t, Pose.rest(rig)))
                np.testing.assert_allclose(g, np.stack(ref.worlds(ci, t)), atol=1e-4,
                                           err_msg=f"{clip.name} t={t}")


@pytest.mark.parametrize("source", ["raw", "loader"])
@pytest.mark.parametrize("rel", ["SimpleSkin.gltf", "Fox.glb"])
def test_skin_matrices_identity_at_bind(rel: str, source: str) -> None:
    """Both files' rest pose is the bind pose, so world @ IBM must be the identity for every joint."""
    _, asset = _load(rel, source)
    rig = Rig.from_asset(asset)
    g = global_matrices(rig, Pose.rest(rig))
    for skin in asset.skins:
        sm = skin_matrices(g, skin)
        scale = 1 + float(np.abs(rig.bind_globals(skin)[:, :3, 3]).max())
        np.testing.assert_allclose(sm, np.tile(np.eye(4), (len(skin.joints), 1, 1)), atol=1e-5 * scale)


@pytest.mark.parametrize("source", ["raw", "loader"])
def test_recursive_skeletons_skin_parents(source: str) -> None:
    """84 skins over one mesh; nested skeletons: a skin's root joint hangs below a joint of another skin, which
    must not count as its parent within the skin."""
    _, asset = _load("RecursiveSkeletons.glb", source)
    rig = Rig.from_asset(asset)
    assert len(asset.skins) == 84
    roots = 0
    for k, skin in enumerate(asset.skins):
        sp = rig.skin_parents(k)
        assert sp.shape == (len(skin.joints),)
        roots += int(np.sum(sp < 0))
        for j, p in enumerate(sp):
            if p >= 0:  # p's node is an ancestor of j's node
                a = int(rig.parents[skin.joints[j]])
                while a >= 0 and a != skin.joints[p]:
                    a = int(rig.parents[a])
                assert a == skin.joints[p]
    assert roots >= 84
