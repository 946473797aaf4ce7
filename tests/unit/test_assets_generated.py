"""Generated characters and the GLB writer: files load (pygltflib and engine.assets.load) with the stated
counts, are spec-shaped (alignment, min/max, component types), closed and manifold, skin and animate
sensibly; the generator is deterministic; surface nets and its manifold repair work on known shapes.

The dense humanoid is never built here (about 15 s): its generator is tested at a coarse grid step.
"""
from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

import numpy as np
import pytest

pygltflib = pytest.importorskip("pygltflib")

from engine.assets.gen import humanoid as H  # noqa: E402
from engine.assets.gen import shapes  # noqa: E402
from engine.assets.gen.isosurface import make_manifold, surface_nets, triangulate_quads  # noqa: E402
from engine.assets.gen.meshutil import topology_report, weld_by_position  # noqa: E402
from engine.assets.gen.preview import pose, skin  # noqa: E402
from engine.assets.gen.rig import GENERATOR_VERSION  # noqa: E402
from engine.assets.glb import read_glb_json  # noqa: E402
from engine.assets.library import CHARACTERS, character_path, expected_path, is_current  # noqa: E402
from engine.assets.writer import AnimChannel, GltfBuilder  # noqa: E402
from engine.math.quat import to_matrix as quat_to_mat3  # noqa: E402
from engine.math.transform import compose_trs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["cylinder", "box", "plus", "humanoid"]
COARSE = 0.03  # humanoid grid step for generator tests (~2.7k vertices, < 1 s)

_DTYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}


class Glb:
    """A GLB read back with pygltflib plus raw accessor decoding (independent of engine.assets)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.g = pygltflib.GLTF2().load_binary(str(path))
        self.blob = self.g.binary_blob()

    def acc(self, i: int) -> np.ndarray:
        a = self.g.accessors[i]
        bv = self.g.bufferViews[a.bufferView]
        n = _WIDTH[a.type]
        off = (bv.byteOffset or 0) + (a.byteOffset or 0)
        arr = np.frombuffer(self.blob, _DTYPES[a.componentType], a.count * n, off).reshape(a.count, n)
        if a.type == "MAT4":
            return arr.reshape(-1, 4, 4).transpose(0, 2, 1)  # column-major storage
        return arr[:, 0] if n == 1 else arr

    @property
    def prim(self):
        return self.g.meshes[0].primitives[0]

    def attr(self, name: str) -> np.ndarray:
        return self.acc(getattr(self.prim.attributes, name))

    def triangles(self) -> np.ndarray:
        return self.acc(self.prim.indices).reshape(-1, 3).astype(np.int64)

    def clip(self, name: str):
        for a in self.g.animations:
            if a.name == name:
                return a
        raise KeyError(name)

    def channel(self, clip: str, node_name: str, path: str) -> tuple[np.ndarray, np.ndarray]:
        a = self.clip(clip)
        for c in a.channels:
            if self.g.nodes[c.target.node].name == node_name and c.target.path == path:
                s = a.samplers[c.sampler]
                return self.acc(s.input), self.acc(s.output)
        raise KeyError((clip, node_name, path))

    def node_world(self) -> dict[int, np.ndarray]:
        world: dict[int, np.ndarray] = {}

        def visit(i: int, parent: np.ndarray) -> None:
            n = self.g.nodes[i]
            m = compose_trs(n.translation or [0, 0, 0], n.rotation or [0, 0, 0, 1], n.scale or [1, 1, 1],
                            dtype=np.float64)
            world[i] = parent @ m
            for c in n.children or []:
                visit(c, world[i])

        for r in self.g.scenes[self.g.scene].nodes:
            visit(r, np.eye(4))
        return world


@pytest.fixture(scope="module")
def files() -> dict[str, Glb]:
    return {name: Glb(character_path(name)) for name in SMALL}


@pytest.fixture(scope="module")
def coarse():
    return H.humanoid(cell=COARSE, name="humanoid_coarse")


def quat_angle_deg(q: np.ndarray) -> np.ndarray:
    return np.degrees(2 * np.arccos(np.clip(np.abs(q[..., 3]), 0, 1)))


# --------------------------------------------------------------------------------------- the files


@pytest.mark.parametrize("name", SMALL)
def test_file_is_spec_shaped(files, name):
    f = files[name]
    g = f.g
    assert g.asset.version == "2.0" and g.asset.generator.startswith("skinengine")
    assert read_glb_json(f.path)["asset"]["extras"]["generator_version"] == GENERATOR_VERSION
    assert g.scene == 0 and g.scenes[0].nodes
    assert len(g.buffers) == 1 and g.buffers[0].byteLength == len(f.blob)
    for bv in g.bufferViews:
        assert bv.byteOffset % 4 == 0 and bv.byteStride is None
        assert bv.byteOffset + bv.byteLength <= len(f.blob)
    attrs = f.prim.attributes
    pos = g.accessors[attrs.POSITION]
    p = f.attr("POSITION")
    np.testing.assert_array_equal(pos.min, p.min(axis=0))
    np.testing.assert_array_equal(pos.max, p.max(axis=0))
    assert g.bufferViews[pos.bufferView].target == pygltflib.ARRAY_BUFFER
    assert g.bufferViews[g.accessors[f.prim.indices].bufferView].target == pygltflib.ELEMENT_ARRAY_BUFFER
    assert g.accessors[f.prim.indices].componentType == pygltflib.UNSIGNED_SHORT  # all under 65535 vertices
    assert g.accessors[attrs.JOINTS_0].componentType == pygltflib.UNSIGNED_BYTE
    assert g.accessors[attrs.WEIGHTS_0].componentType == pygltflib.FLOAT
    n = np.linalg.norm(f.attr("NORMAL"), axis=1)
    np.testing.assert_allclose(n, 1.0, atol=1e-5)
    assert f.attr("TEXCOORD_0").shape == (len(p), 2)
    tris = f.triangles()
    assert tris.min() >= 0 and tris.max() < len(p)
    # every animation input has min/max and strictly increasing times; rotations are unit quaternions
    for a in g.animations:
        for s in a.samplers:
            acc = g.accessors[s.input]
            t = f.acc(s.input)
            assert acc.min == [float(t.min())] and acc.max == [float(t.max())]
            assert t[0] >= 0 and np.all(np.diff(t) > 0)
        for c in a.channels:
            if c.target.path == "rotation":
                q = f.acc(a.samplers[c.sampler].output)
                np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("name", SMALL)
def test_skin_weights_and_joints(files, name):
    f = files[name]
    w = f.attr("WEIGHTS_0").astype(np.float64)
    j = f.attr("JOINTS_0")
    skin_ = f.g.skins[0]
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=2e-7)
    assert j.max() < len(skin_.joints)
    assert np.all(j[w == 0] == 0)
    # inverse bind matrices invert the joints' rest world matrices
    world = f.node_world()
    ibm = f.acc(skin_.inverseBindMatrices)
    for k, node in enumerate(skin_.joints):
        np.testing.assert_allclose(world[node] @ ibm[k], np.eye(4), atol=1e-5)
    # the skinned mesh node is a root with identity transform
    body = [i for i, nd in enumerate(f.g.nodes) if nd.mesh is not None]
    assert len(body) == 1 and f.g.nodes[body[0]].skin == 0 and body[0] in f.g.scenes[0].nodes


def test_counts(files):
    def welded(name):
        return len(weld_by_position(files[name].attr("POSITION"))[0])

    cyl = files["cylinder"]
    assert 2000 <= len(cyl.attr("POSITION")) <= 4000 and len(cyl.g.skins[0].joints) == 3
    # the dissertation's Table 1 counts, welded by position (display vertices are split at hard edges)
    assert welded("box") == 1802 and len(files["box"].triangles()) == 3600
    assert len(files["box"].g.skins[0].joints) == 4
    assert welded("plus") == 5634 and len(files["plus"].triangles()) == 11264
    assert len(files["plus"].g.skins[0].joints) == 17
    hum = files["humanoid"]
    assert 10_000 <= len(hum.attr("POSITION")) <= 20_000
    names = [hum.g.nodes[i].name for i in hum.g.skins[0].joints]
    assert len(names) >= 20
    for want in ("hips", "spine", "chest", "neck", "head", "upper_arm_L", "forearm_R", "hand_L", "thigh_R",
                 "shin_L", "foot_R", "toe_L"):
        assert want in names
    by_name = {nd.name: nd for nd in hum.g.nodes}
    assert len(by_name["hips"].children) >= 3 and len(by_name["chest"].children) >= 3


@pytest.mark.parametrize("name", SMALL)
def test_closed_manifold(files, name):
    f = files[name]
    rep = topology_report(f.attr("POSITION"), f.triangles())
    assert rep["boundary_edges"] == 0 and rep["nonmanifold_edges"] == 0, rep
    assert rep["inconsistent_edges"] == 0 and rep["degenerate_triangles"] == 0, rep
    assert rep["euler"] == 2 and rep["components"] == 1, rep


@pytest.mark.parametrize("name", SMALL)
def test_outward_winding(files, name):
    """Triangles wind counter-clockwise seen from outside: signed volume > 0, and face normals agree
    with the stored vertex normals."""
    f = files[name]
    p = f.attr("POSITION").astype(np.float64)
    t = f.triangles()
    vol = np.einsum("ij,ij->i", p[t[:, 0]], np.cross(p[t[:, 1]], p[t[:, 2]])).sum() / 6
    assert vol > 0
    fn = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    agree = np.einsum("ij,ij->i", fn, f.attr("NORMAL")[t].sum(axis=1)) > 0
    assert agree.mean() > 0.999


def test_characters_stand_on_the_ground(files):
    for name in SMALL:
        p = files[name].attr("POSITION")
        assert abs(float(p[:, 1].min())) < 2e-3, name
    p = files["humanoid"].attr("POSITION")
    assert 1.7 <= p[:, 1].max() <= 1.8
    assert abs(p[:, 0].max() + p[:, 0].min()) < 0.01  # symmetric about x = 0


def test_clips_and_durations(files):
    expect = {
        "cylinder": {"twist": 2.0, "bend": 2.0, "stretch": 2.0, "twist180": 1.0, "bend90": 1.0, "bend135": 1.0},
        "box": {"bend": 2.0},
        "plus": {"bend": 2.0},
        "humanoid": {"idle": 4.0, "walk": 1.1, "wave": 3.0, "stretch": 3.0},
    }
    for name, clips in expect.items():
        f = files[name]
        for clip, dur in clips.items():
            a = f.clip(clip)
            end = max(float(f.acc(s.input)[-1]) for s in a.samplers)
            assert end == pytest.approx(dur, abs=1e-6), (name, clip)


def test_humanoid_clips_loop_and_move(files):
    f = files["humanoid"]
    for clip in ("idle", "walk", "wave", "stretch"):
        a = f.clip(clip)
        moved = 0.0
        for c in a.channels:
            s = a.samplers[c.sampler]
            assert s.interpolation == "LINEAR"
            t, v = f.acc(s.input), f.acc(s.output).astype(np.float64)
            assert len(t) >= 30
            np.testing.assert_allclose(v[0], v[-1], atol=1e-5, err_msg=f"{clip} does not loop")
            if c.target.path == "rotation":
                rest = np.asarray(f.g.nodes[c.target.node].rotation or [0, 0, 0, 1])
                moved = max(moved, float(np.max(quat_angle_deg(v) - quat_angle_deg(rest))))
        assert moved > 5.0, clip


def test_cylinder_twist_reaches_180_degrees(files):
    f = files["cylinder"]
    t, q = f.channel("twist", "mid", "rotation")
    angle = quat_angle_deg(q.astype(np.float64))
    assert angle.max() == pytest.approx(180.0, abs=1e-3)
    assert float(t[np.argmax(angle)]) == pytest.approx(1.0)
    assert angle[0] == pytest.approx(0.0, abs=1e-3) and angle[-1] == pytest.approx(0.0, abs=1e-3)
    # about the bone axis (+Y): the rotation axis of every non-trivial key is +-Y
    axis = q[angle > 1, :3] / np.linalg.norm(q[angle > 1, :3], axis=1, keepdims=True)
    np.testing.assert_allclose(np.abs(axis[:, 1]), 1.0, atol=1e-5)
    # consecutive keys less than 180 degrees apart, so LINEAR slerp goes the intended way
    assert np.all(np.einsum("ij,ij->i", q[1:], q[:-1]) > 0)
    _, q180 = f.channel("twist180", "mid", "rotation")
    assert quat_angle_deg(q180.astype(np.float64)) == pytest.approx([180.0, 180.0], abs=1e-3)


def test_cylinder_bend_and_stretch(files):
    f = files["cylinder"]
    _, q = f.channel("bend", "mid", "rotation")
    assert quat_angle_deg(q.astype(np.float64)).max() == pytest.approx(135.0, abs=1e-3)
    _, tr = f.channel("stretch", "tip", "translation")
    assert tr[:, 1].min() == pytest.approx(0.5) and tr[:, 1].max() == pytest.approx(0.75)  # bone 1.0 -> 1.5x
    # weights blend smoothly across the middle joint: root-only at the bottom, none at the top
    p, w, j = f.attr("POSITION"), f.attr("WEIGHTS_0"), f.attr("JOINTS_0")
    root_w = np.where(j == 0, w, 0).sum(axis=1)
    assert np.all(root_w[p[:, 1] < 0.3] > 0.999) and np.all(root_w[p[:, 1] > 0.7] < 1e-6)
    mid_band = (p[:, 1] > 0.45) & (p[:, 1] < 0.55)
    assert np.all((root_w[mid_band] > 0.2) & (root_w[mid_band] < 0.8))
    order = np.argsort(p[:, 1])
    assert np.all(np.diff(root_w[order]) <= 1e-6)  # monotone along the tube


# --------------------------------------------------------------------------------------- engine loader


@pytest.mark.parametrize("name", SMALL)
def test_engine_loader_reads_generated(files, name):
    from engine.assets import load

    a = load(character_path(name))
    f = files[name]
    prim = a.meshes[0].primitives[0]
    assert prim.vertex_count == len(f.attr("POSITION"))
    assert prim.triangle_count == len(f.triangles())
    assert prim.is_skinned and len(a.skins[0].joints) == len(f.g.skins[0].joints)
    np.testing.assert_allclose(prim.weights.sum(axis=1), 1.0, atol=1e-6)
    assert [c.name for c in a.clips] == [x.name for x in f.g.animations]
    assert not a.warnings


# --------------------------------------------------------------------------------------- generator


def test_humanoid_generator_coarse(coarse):
    ch = coarse
    rep = topology_report(ch.positions, ch.indices)
    assert rep["boundary_edges"] == 0 and rep["nonmanifold_edges"] == 0 and rep["euler"] == 2
    assert rep["components"] == 1
    assert ch.rig.count == 21 and set(ch.clips) == {"idle", "walk", "wave", "stretch"}
    np.testing.assert_allclose(ch.weights.sum(axis=1), 1.0, atol=1e-6)
    # weights follow the anatomy: extreme vertices belong to the right bones
    dom = ch.joints[np.arange(len(ch.joints)), np.argmax(ch.weights, axis=1)]
    names = ch.rig.names
    p = ch.positions
    assert names[dom[np.argmax(p[:, 0])]] == "hand_L"  # the character's left is +X (it faces +Z)
    assert names[dom[np.argmin(p[:, 0])]] == "hand_R"
    assert names[dom[np.argmax(p[:, 1])]] == "head"
    assert names[dom[np.argmax(p[:, 2] * (p[:, 0] > 0))]] == "toe_L"
    # no thigh pulls on the other leg
    left_leg = (p[:, 0] > 0.05) & (p[:, 1] < 0.7)
    right_thigh = names.index("thigh_R")
    assert not np.any((ch.joints[left_leg] == right_thigh) & (ch.weights[left_leg] > 0))


def test_humanoid_walk_frame_is_sane(coarse):
    ch = coarse
    rest = ch.positions.astype(np.float64)
    for t in (0.0, 0.3, 0.55, 0.8):
        p, n = skin(ch, pose(ch, "walk", t))
        assert np.all(np.isfinite(p)) and np.all(np.isfinite(n))
        assert 1.6 < p[:, 1].max() < 1.8 and -0.06 < p[:, 1].min() < 0.06
        moved = np.linalg.norm(p - rest, axis=1)
        assert moved.max() > 0.1  # the legs swing
    # mid-swing: the feet are apart along Z
    p, _ = skin(ch, pose(ch, "walk", 1.1 / 4))
    feet_l, feet_r = p[(rest[:, 1] < 0.06) & (rest[:, 0] > 0)], p[(rest[:, 1] < 0.06) & (rest[:, 0] < 0)]
    assert abs(feet_l[:, 2].mean() - feet_r[:, 2].mean()) > 0.15


def test_generation_is_deterministic(coarse):
    a = H.humanoid(cell=COARSE, name="humanoid_coarse").to_builder().to_glb()
    assert a == coarse.to_builder().to_glb()
    assert shapes.plus().to_builder().to_glb() == shapes.plus().to_builder().to_glb()


def assert_same_glb(a: Path, b: Path) -> None:
    """Same glTF objects and accessor data up to float rounding (bytes may differ by an ulp between
    platforms whose sin/cos differ in the last bit)."""
    ga, gb = Glb(a), Glb(b)
    assert len(ga.g.accessors) == len(gb.g.accessors) and len(ga.g.nodes) == len(gb.g.nodes)
    assert [n.name for n in ga.g.nodes] == [n.name for n in gb.g.nodes]
    assert [x.name for x in ga.g.animations] == [x.name for x in gb.g.animations]
    for i, (x, y) in enumerate(zip(ga.g.accessors, gb.g.accessors)):
        assert (x.count, x.type, x.componentType) == (y.count, y.type, y.componentType), i
        np.testing.assert_allclose(ga.acc(i).astype(np.float64), gb.acc(i).astype(np.float64), atol=1e-5)


def test_committed_files_match_generator(tmp_path):
    """The files in assets/ are what the current generator writes (regenerate and commit after changes)."""
    from engine.assets.gen.characters import write

    for name in ("cylinder", "box", "plus"):
        path, _ = write(name, tmp_path / f"{name}.glb")
        assert_same_glb(path, character_path(name))


def test_shape_parameters_validated():
    with pytest.raises(ValueError, match="segments"):
        shapes.cylinder(segments=2)
    with pytest.raises(ValueError, match="cell"):
        H.mesh_surface(H.primitives(), 5.0)


# --------------------------------------------------------------------------------------- library / CLI


def test_library_lists_and_rejects():
    names = [c.name for c in CHARACTERS]
    assert names == ["cylinder", "box", "plus", "humanoid", "humanoid_dense"]
    assert all(c.description and "\n" not in c.description for c in CHARACTERS)
    with pytest.raises(ValueError, match="humanoid_dense"):
        character_path("dragon")
    assert expected_path("humanoid_dense").parent.name == "cache"
    assert expected_path("humanoid_dense").parent.parent == expected_path("humanoid").parent


def test_library_generates_missing_and_stale(tmp_path):
    p = character_path("box", assets_dir=tmp_path)
    assert p == tmp_path / "box.glb" and is_current(p)
    first = p.read_bytes()
    p.write_bytes(b"not a glb")
    assert not is_current(p)
    assert character_path("box", assets_dir=tmp_path).read_bytes() == first
    # an older generator version is rebuilt
    doc = read_glb_json(p)
    doc["asset"]["extras"]["generator_version"] = GENERATOR_VERSION - 1
    js = json.dumps(doc).encode()
    js += b" " * ((4 - len(js) % 4) % 4)
    old = first[:12] + struct.pack("<II", len(js), 0x4E4F534A) + js
    p.write_bytes(old)
    assert not is_current(p)
    assert character_path("box", assets_dir=tmp_path).read_bytes() == first


def test_generate_script(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("assets_generate", ROOT / "assets" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--out", str(tmp_path), "--only", "cylinder"]) == 0
    assert_same_glb(tmp_path / "cylinder.glb", character_path("cylinder"))
    assert "cylinder" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        mod.main(["--only", "dragon"])


# --------------------------------------------------------------------------------------- writer


def _tiny_builder() -> GltfBuilder:
    b = GltfBuilder(generator="test")
    root = b.add_node("root", translation=(0, 1, 0))
    tip = b.add_node("tip", translation=(0, 1, 0), rotation=(0, 0, 0.3826834, 0.9238795))
    b.set_children(root, [tip])
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    mesh = b.add_mesh("tri", [dict(positions=pos, indices=np.array([[0, 1, 2]]),
                                   joints=np.array([[0, 1, 0, 0]] * 3), weights=np.array([[3, 1, 0, 0]] * 3))],
                      joint_count=2)
    ibm = np.tile(np.eye(4, dtype=np.float32), (2, 1, 1))
    ibm[:, 1, 3] = [-1, -2]
    skin_ = b.add_skin([root, tip], inverse_bind=ibm, skeleton=root)
    body = b.add_node("body", mesh=mesh, skin=skin_)
    b.add_animation("spin", [AnimChannel(tip, "rotation", np.array([0.0, 0.5, 1.0]),
                                         np.array([[0, 0, 0, 2.0], [0, 0, 1, 1], [0, 0, 0, 1]])),
                             AnimChannel(root, "translation", np.array([0.0, 0.5, 1.0]), np.zeros((3, 3)))])
    b.add_scene([root, body])
    return b


def test_writer_roundtrip(tmp_path):
    path = _tiny_builder().save_glb(tmp_path / "tiny.glb")
    f = Glb(path)
    np.testing.assert_allclose(f.attr("WEIGHTS_0"), [[0.75, 0.25, 0, 0]] * 3)
    ibm = f.acc(f.g.skins[0].inverseBindMatrices)
    assert ibm[1, 1, 3] == -2 and ibm[1, 3, 1] == 0  # stored column-major, read back as written
    a = f.g.animations[0]
    assert a.samplers[0].input == a.samplers[1].input  # equal time arrays share one accessor
    q = f.acc(a.samplers[0].output)
    np.testing.assert_allclose(q[0], [0, 0, 0, 1]) and np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1)
    assert f.g.nodes[1].rotation == pytest.approx([0, 0, 0.3826834, 0.9238795])
    assert len(path.read_bytes()) % 4 == 0
    assert _tiny_builder().to_glb() == path.read_bytes()


@pytest.mark.parametrize("bad, match", [
    (dict(indices=np.array([[0, 1, 3]])), "indices"),
    (dict(joints=np.array([[0, 5, 0, 0]] * 3)), "joint index"),
    (dict(weights=np.zeros((3, 4))), "all-zero weights"),
    (dict(weights=-np.ones((3, 4))), "weights must be"),
    (dict(normals=np.zeros((3, 3))), "zero-length normals"),
    (dict(positions=np.zeros((3, 2))), "positions"),
])
def test_writer_rejects_bad_mesh(bad, match):
    b = GltfBuilder()
    prim = dict(positions=np.eye(3, dtype=np.float32), indices=np.array([[0, 1, 2]]),
                joints=np.zeros((3, 4), int), weights=np.array([[1.0, 0, 0, 0]] * 3))
    prim.update(bad)
    with pytest.raises(ValueError, match=match):
        b.add_mesh("m", [prim], joint_count=2)


def test_writer_rejects_bad_animation_and_scene():
    b = GltfBuilder()
    n = b.add_node("n")
    with pytest.raises(ValueError, match="strictly"):
        b.add_animation("a", [AnimChannel(n, "translation", np.array([0.0, 0.0]), np.zeros((2, 3)))])
    with pytest.raises(ValueError, match="path"):
        b.add_animation("a", [AnimChannel(n, "weights", np.array([0.0]), np.zeros((1, 3)))])
    with pytest.raises(ValueError, match="values must be"):
        b.add_animation("a", [AnimChannel(n, "rotation", np.array([0.0]), np.zeros((1, 3)))])
    with pytest.raises(ValueError, match="scene"):
        b.to_glb()
    with pytest.raises(ValueError, match="dtype"):
        b.add_accessor(np.zeros(3, np.float64))


# --------------------------------------------------------------------------------------- surface nets


def _grid(h: float = 0.05, r: float = 1.3):
    g = np.arange(-r, r + 1e-9, h)
    return np.stack(np.meshgrid(g, g, g, indexing="ij"), -1), np.full(3, g[0]), h


def test_surface_nets_sphere_and_torus():
    p, origin, h = _grid()
    sphere = np.linalg.norm(p, axis=-1) - 1.0
    v, q = surface_nets(sphere, origin, h)
    t = triangulate_quads(v, q)
    rep = topology_report(v, t)
    assert rep["euler"] == 2 and rep["boundary_edges"] == 0 and rep["nonmanifold_edges"] == 0
    assert np.abs(np.linalg.norm(v, axis=1) - 1.0).max() < 0.3 * h
    ring = np.sqrt((np.sqrt(p[..., 0] ** 2 + p[..., 2] ** 2) - 0.7) ** 2 + p[..., 1] ** 2) - 0.25
    v, q = surface_nets(ring, origin, h)
    assert topology_report(v, triangulate_quads(v, q))["euler"] == 0  # genus 1
    with pytest.raises(ValueError, match="boundary"):
        surface_nets(sphere - 5.0, origin, h)


def test_make_manifold_repairs_thin_diagonal():
    """A thin rod along a grid diagonal leaves ambiguous faces; the repair keeps it one closed sheet."""
    p, origin, h = _grid(0.1, 1.0)
    axis = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    along = np.clip(p @ axis, -0.7, 0.7)
    rod = np.linalg.norm(p - along[..., None] * axis, axis=-1) - 0.055
    v, q = surface_nets(rod, origin, h)
    assert topology_report(v, triangulate_quads(v, q))["nonmanifold_edges"] > 0  # the problem exists
    fixed, flips = make_manifold(rod, origin, h)
    assert flips > 0
    v, q = surface_nets(fixed, origin, h)
    rep = topology_report(v, triangulate_quads(v, q))
    assert rep["nonmanifold_edges"] == 0 and rep["boundary_edges"] == 0 and rep["euler"] == 2
    assert rep["components"] == 1


def test_rig_rest_rotations_roundtrip():
    ch = shapes.plus()
    world = ch.rig.world()
    # each arm joint's local +Y points along its arm, outward from the centre
    for k, _name in enumerate(ch.rig.names[1:], start=1):
        d = world[k, :3, 3] - world[0, :3, 3]
        np.testing.assert_allclose(world[k, :3, :3] @ [0, 1, 0], d / np.linalg.norm(d), atol=1e-6)
    q = ch.rig.rest_q[1]
    np.testing.assert_allclose(quat_to_mat3(q) @ [0, 1, 0], [1, 0, 0], atol=1e-9)
