"""Files artists have (issue 27 item 8): Draco- and meshopt-compressed glTF decoded at load, other formats (FBX, OBJ,
.blend, ...) refused in one line, built-in character names at `inspect`, `export-frame` of an asset with nothing
skinned refused."""
from __future__ import annotations

import base64
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial import cKDTree

from engine.assets import AssetError, load
from engine.assets.library import CHARACTERS
from game import cli
from game.commands.export_frame import deformed_frame
from tests.conftest import ROOT, shared_dir

CYLINDER = ROOT / "assets" / "cylinder.glb"
DRACO_WHERE = "meshes[0].primitives[0].extensions.KHR_draco_mesh_compression"


def _load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean file loads without repairs
        return load(path)


def _error_line(capsys, argv: list[str]) -> str:
    assert cli.run(argv) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------------------ KHR_draco_mesh_compression
@pytest.fixture(scope="module")
def rigged_pair():
    folder = shared_dir("gltf-samples")
    return _load(folder / "RiggedSimple_Draco" / "RiggedSimple.gltf"), _load(folder / "RiggedSimple.glb")


def _nearest(draco, plain, tol: float) -> np.ndarray:
    """For each Draco vertex the plain vertex it came from (Draco reorders vertices): the nearest in position,
    the normal telling apart the vertices of a seam (one position, several normals); positions within ``tol``."""
    def key(prim):
        return np.concatenate([prim.positions, tol * prim.normals], axis=1)

    _, idx = cKDTree(key(plain)).query(key(draco))
    dist = np.linalg.norm(draco.positions - plain.positions[idx], axis=1)
    assert dist.max() <= tol, dist.max()
    return idx


def test_draco_sample_equals_the_uncompressed_one(rigged_pair):
    draco, plain = rigged_pair
    d, p = draco.meshes[0].primitives[0], plain.meshes[0].primitives[0]
    assert (d.vertex_count, d.triangle_count) == (p.vertex_count, p.triangle_count)
    tol = 1e-3 * float(np.linalg.norm(p.positions.max(axis=0) - p.positions.min(axis=0)))
    idx = _nearest(d, p, tol)
    np.testing.assert_allclose(d.positions, p.positions[idx], atol=tol)
    np.testing.assert_array_equal(d.joints, p.joints[idx])
    np.testing.assert_allclose(d.weights, p.weights[idx], atol=2e-3)
    np.testing.assert_allclose(d.normals, p.normals[idx], atol=2e-2)
    # the same triangles, perhaps reordered and rotated: compare as sets of vertex triples
    draco_tris = {tuple(np.roll(t, -int(np.argmin(t)))) for t in idx[d.indices]}
    plain_tris = {tuple(np.roll(t, -int(np.argmin(t)))) for t in p.indices}
    assert draco_tris == plain_tris
    assert [len(s.joints) for s in draco.skins] == [len(s.joints) for s in plain.skins]
    assert [(c.name, c.duration, len(c.channels)) for c in draco.clips] == \
        [(c.name, c.duration, len(c.channels)) for c in plain.clips]


def test_draco_sample_skins_and_animates_like_the_uncompressed_one(rigged_pair):
    draco, plain = rigged_pair
    p = plain.meshes[0].primitives[0]
    tol = 1e-3 * float(np.linalg.norm(p.positions.max(axis=0) - p.positions.min(axis=0)))
    idx = _nearest(draco.meshes[0].primitives[0], p, tol)
    for t in (0.0, 0.5, 1.25, 2.0):
        a = deformed_frame(draco, clip=0, time=t, device="cpu")
        b = deformed_frame(plain, clip=0, time=t, device="cpu")
        assert [k.export_key for k in a] == [k.export_key for k in b]
        for (ka, va), vb in zip(a.items(), b.values()):
            np.testing.assert_allclose(va, vb[idx], atol=4 * tol, err_msg=f"{ka.export_key} at t={t}")


def _draco_copy(tmp_path: Path) -> tuple[Path, dict]:
    src = shared_dir("gltf-samples") / "RiggedSimple_Draco"
    for f in src.iterdir():
        shutil.copy(f, tmp_path / f.name)
    path = tmp_path / "RiggedSimple.gltf"
    return path, json.loads(path.read_text())


def test_corrupt_draco_buffer_is_one_error_naming_the_primitive(tmp_path, capsys):
    path, doc = _draco_copy(tmp_path)
    bv = doc["bufferViews"][4]
    data = bytearray((tmp_path / "RiggedSimple0.bin").read_bytes())
    data[bv["byteOffset"]:bv["byteOffset"] + 5] = b"OCARD"  # the "DRACO" magic
    (tmp_path / "RiggedSimple0.bin").write_bytes(bytes(data))
    with pytest.raises(AssetError) as info:
        load(path)
    assert str(info.value) == f"{DRACO_WHERE}: corrupt Draco data in bufferViews[4]: Input mesh is not draco encoded"
    assert _error_line(capsys, ["inspect", str(path)]) == f"error: {info.value}"


def test_draco_attribute_map_is_checked(tmp_path):
    path, doc = _draco_copy(tmp_path)
    doc["meshes"][0]["primitives"][0]["extensions"]["KHR_draco_mesh_compression"]["attributes"]["NORMAL"] = 7
    path.write_text(json.dumps(doc))
    with pytest.raises(AssetError) as info:
        load(path)
    assert str(info.value) == (f"{DRACO_WHERE}.attributes.NORMAL: the Draco data has no attribute with unique id 7 "
                               "(it has [0, 1, 2, 3])")
    doc["meshes"][0]["primitives"][0]["extensions"]["KHR_draco_mesh_compression"]["attributes"]["NORMAL"] = 0
    path.write_text(json.dumps(doc))
    with pytest.raises(AssetError) as info:
        load(path)
    assert str(info.value) == (f"{DRACO_WHERE}.attributes.NORMAL: the Draco data gives 160 x 4 values, "
                               "accessors[7] declares 160 VEC3")


# ------------------------------------------------------------------------------ EXT_meshopt_compression
def _grid(n: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An n x n vertex grid: positions, texcoords, triangle indices (uint16)."""
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n))
    uv = np.stack([u.ravel(), v.ravel()], axis=1).astype(np.float32)
    pos = np.stack([uv[:, 0], 0.1 * np.sin(3 * uv[:, 1]), uv[:, 1]], axis=1).astype(np.float32)
    q = np.arange(n * n).reshape(n, n)[:-1, :-1].ravel()
    tris = np.concatenate([np.stack([q, q + n, q + 1], 1), np.stack([q + 1, q + n, q + n + 1], 1)])
    return pos, uv, tris.astype(np.uint16).ravel()


def _meshopt_gltf(path: Path, *, corrupt: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A glTF whose vertex and index data are EXT_meshopt_compression bufferViews (the spec's layout: the
    compressed bytes in buffer 0, an uncompressed-size fallback buffer 1 without data); texcoords use the
    EXPONENTIAL filter."""
    import meshopt

    pos, uv, idx = _grid()
    uv_rows = meshopt.encode_filter_exp(uv, 23, "Separate")
    parts = [meshopt.encode_gltf_buffer(pos, "ATTRIBUTES"), meshopt.encode_gltf_buffer(uv_rows, "ATTRIBUTES"),
             meshopt.encode_gltf_buffer(idx.astype(np.uint32), "TRIANGLES")]
    if corrupt:
        parts[0] = b"\x00" * len(parts[0])
    blob, offsets = b"", []
    for p in parts:
        offsets.append(len(blob))
        blob += p + b"\x00" * (-len(p) % 4)
    layout = [(pos.nbytes, 12, len(pos), "ATTRIBUTES", None, 34962), (uv.nbytes, 8, len(uv), "ATTRIBUTES",
              "EXPONENTIAL", 34962), (len(idx) * 2, 2, len(idx), "TRIANGLES", None, 34963)]
    views, fallback_offset = [], 0
    for (length, stride, count, mode, filt, target), off, part in zip(layout, offsets, parts):
        ext = {"buffer": 0, "byteOffset": off, "byteLength": len(part), "byteStride": stride, "count": count,
               "mode": mode}
        if filt:
            ext["filter"] = filt
        view = {"buffer": 1, "byteOffset": fallback_offset, "byteLength": length, "target": target,
                "extensions": {"EXT_meshopt_compression": ext}}
        if mode == "ATTRIBUTES":
            view["byteStride"] = stride
        views.append(view)
        fallback_offset += length + (-length % 4)
    doc = {
        "asset": {"version": "2.0"},
        "extensionsUsed": ["EXT_meshopt_compression"], "extensionsRequired": ["EXT_meshopt_compression"],
        "buffers": [{"uri": "data:application/octet-stream;base64," + base64.b64encode(blob).decode(),
                     "byteLength": len(blob)},
                    {"byteLength": fallback_offset, "extensions": {"EXT_meshopt_compression": {"fallback": True}}}],
        "bufferViews": views,
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": len(pos), "type": "VEC3",
             "min": pos.min(axis=0).tolist(), "max": pos.max(axis=0).tolist()},
            {"bufferView": 1, "componentType": 5126, "count": len(uv), "type": "VEC2"},
            {"bufferView": 2, "componentType": 5123, "count": len(idx), "type": "SCALAR"},
        ],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1}, "indices": 2}]}],
        "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}], "scene": 0,
    }
    path.write_text(json.dumps(doc))
    return pos, uv, idx


def test_meshopt_file_decodes_to_its_source(tmp_path):
    path = tmp_path / "grid.gltf"
    pos, uv, idx = _meshopt_gltf(path)
    prim = _load(path).meshes[0].primitives[0]
    np.testing.assert_array_equal(prim.positions, pos)  # the attribute codec is lossless
    np.testing.assert_allclose(prim.texcoords, uv, atol=1e-6)  # the 23-bit exponential filter nearly so
    # the triangle codec keeps the triangles and their winding but may rotate each one's corners
    def canonical(tris: np.ndarray) -> np.ndarray:
        return np.stack([np.roll(t, -int(np.argmin(t))) for t in tris.reshape(-1, 3)])

    np.testing.assert_array_equal(canonical(prim.indices), canonical(idx))


def test_corrupt_meshopt_data_is_one_error_naming_the_buffer_view(tmp_path, capsys):
    path = tmp_path / "grid.gltf"
    _meshopt_gltf(path, corrupt=True)
    with pytest.raises(AssetError) as info:
        load(path)
    assert str(info.value).startswith("bufferViews[0].extensions.EXT_meshopt_compression: corrupt meshopt data: ")
    assert _error_line(capsys, ["inspect", str(path)]) == f"error: {info.value}"


def test_meshopt_layout_rules(tmp_path):
    path = tmp_path / "grid.gltf"
    _meshopt_gltf(path)
    doc = json.loads(path.read_text())
    doc["bufferViews"][0]["extensions"]["EXT_meshopt_compression"]["count"] = 35
    path.write_text(json.dumps(doc))
    with pytest.raises(AssetError) as info:
        load(path)
    assert str(info.value) == ("bufferViews[0].extensions.EXT_meshopt_compression: byteStride 12 x count 35 = 420 "
                               "differs from the bufferView's byteLength 432")


# ------------------------------------------------------------------------------ other formats
_FBX_BINARY = b"Kaydara FBX Binary  \x00\x1a\x00" + bytes(16)
_FOREIGN = [
    ("hero.fbx", _FBX_BINARY, "FBX"),
    ("hero.glb", _FBX_BINARY, "FBX"),  # the content decides, whatever the name
    ("hero.fbx", b"; FBX 7.4.0 project file\nFBXHeaderExtension: {\n", "FBX"),
    ("hero.obj", b"# Blender OBJ\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "OBJ"),
    ("hero.dae", b'<?xml version="1.0"?>\n<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema">', "COLLADA"),
    ("hero.xml", b'<?xml version="1.0"?>\n<COLLADA version="1.4.1">', "COLLADA"),
    ("hero.blend", b"BLENDER-v300REND", "Blender .blend"),
    ("hero.usdc", b"PXR-USDC" + bytes(8), "USD"),
    ("hero.usda", b"#usda 1.0\n(\n)\n", "USD"),
    ("hero.usdz", b"PK\x03\x04" + bytes(8), "USD"),
    ("hero.stl", b"solid hero\nfacet normal 0 0 1\n", "STL"),
    ("hero.stl", bytes(80) + b"\x01\x00\x00\x00", "STL"),
    ("hero.ply", b"ply\nformat ascii 1.0\n", "PLY"),
    ("hero.data", b"ply\nformat binary_little_endian 1.0\n", "PLY"),
    ("hero.3ds", b"MM\x10\x00\x00\x00", "3DS"),
]


@pytest.mark.parametrize("name, content, fmt", _FOREIGN)
def test_other_formats_are_refused_in_one_line(tmp_path, capsys, name, content, fmt):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(AssetError) as info:
        load(path)
    assert info.value.unsupported
    assert str(info.value) == f"{name}: {fmt} is not supported; export glTF 2.0 (.glb/.gltf) from your DCC tool"
    assert _error_line(capsys, ["inspect", str(path)]) == f"error: {info.value}"


def test_gltf_content_under_another_name_still_loads(tmp_path):
    shutil.copy(CYLINDER, tmp_path / "cylinder.obj")
    assert _load(tmp_path / "cylinder.obj").meshes


def test_broken_json_stays_a_json_error(tmp_path):
    (tmp_path / "x.gltf").write_text("{nope")
    with pytest.raises(AssetError) as info:
        load(tmp_path / "x.gltf")
    assert info.value.where == "JSON"


# ------------------------------------------------------------------------------ commands
@pytest.mark.parametrize("name", [c.name for c in CHARACTERS if not c.large])
def test_inspect_takes_a_character_name(capsys, name):
    assert cli.run(["inspect", name]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"asset {name}.glb: ") and "skins: 1" in out


def test_inspect_unknown_name(capsys):
    line = _error_line(capsys, ["inspect", "nosuch"])
    assert line == "error: 'nosuch' is neither a .gltf/.glb file nor a generated character; characters: " + \
        ", ".join(c.name for c in CHARACTERS)


def test_export_frame_refuses_an_asset_with_nothing_skinned(tmp_path, capsys):
    box = shared_dir("gltf-samples") / "Box.glb"
    for extra in ([], ["--frames", "3"]):
        out = tmp_path / "x.npz"
        line = _error_line(capsys, ["export-frame", str(box), "--device", "cpu", "--out", str(out), *extra])
        assert line == (f"error: {box}: nothing to export: the asset has no skinned mesh primitive in its default "
                        "scene (export-frame writes deformed skinned vertices; `render` draws static meshes)")
        assert not out.exists()


def test_shipped_files_are_found_from_any_folder(tmp_path, monkeypatch):
    from engine.paths import data_dir, shipped_file

    monkeypatch.chdir(tmp_path)
    assert shipped_file("examples/pose_arm.json") == data_dir("examples") / "pose_arm.json"
    assert shipped_file("assets/sessions/arm_pose.jsonl") == data_dir("assets") / "sessions" / "arm_pose.jsonl"
    assert shipped_file("examples/nope.json") == Path("examples/nope.json")  # missing: as given, for its error
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "pose_arm.json").write_text("{}")
    assert shipped_file("examples/pose_arm.json") == Path("examples/pose_arm.json")  # the user's own file wins
