"""Unit tests of the glTF loader on small hand-made files (written to tmp_path): the three containers,
decoding rules (sparse, byteStride, normalized integers, strips/fans, matrices), repairs with warnings,
and hostile input, each error naming the offending part."""
from __future__ import annotations

import base64
import io
import json
import struct
import warnings

import numpy as np
import pytest

from engine.assets import AssetError, AssetWarning, load
from engine.assets.glb import parse_glb, read_glb_json

# ------------------------------------------------------------------------------------------ builders
COMPONENT = {np.dtype("float32"): 5126, np.dtype("uint8"): 5121, np.dtype("uint16"): 5123,
             np.dtype("uint32"): 5125, np.dtype("int8"): 5120, np.dtype("int16"): 5122}
TYPES = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}


def base_parts() -> dict[str, np.ndarray]:
    """A skinned quad (4 vertices, 2 triangles, 2 joints) with one rotation channel."""
    positions = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    ibm = np.tile(np.eye(4, dtype=np.float32), (2, 1, 1))
    ibm[1, 1, 3] = -1.0  # joint 1 sits at y = 1
    return {
        "POSITION": positions,
        "NORMAL": np.tile(np.array([0, 0, 1], np.float32), (4, 1)),
        "JOINTS_0": np.array([[0, 1, 0, 0]] * 4, np.uint8),
        "WEIGHTS_0": np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0.25, 0.75, 0, 0], [0.5, 0.5, 0, 0]], np.float32),
        "indices": np.array([0, 1, 2, 0, 2, 3], np.uint16),
        "ibm": ibm.transpose(0, 2, 1).reshape(2, 16),  # stored column-major
        "times": np.array([0.0, 0.5, 1.0], np.float32),
        "rotations": np.array([[0, 0, 0, 1], [0, 0, 0.38268343, 0.92387953], [0, 0, 0.70710678, 0.70710678]],
                              np.float32),
    }


def assemble(parts: dict[str, np.ndarray]) -> tuple[dict, bytes]:
    """glTF dict + one binary blob; accessor i = i-th part in base_parts order, one bufferView each."""
    blob = bytearray()
    accessors, views = [], []
    for i, (name, arr) in enumerate(parts.items()):
        arr = np.ascontiguousarray(arr)
        ncomp = 1 if arr.ndim == 1 else arr.shape[1]
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": arr.nbytes})
        blob += arr.tobytes()
        blob += b"\0" * (-len(blob) % 4)
        acc = {"bufferView": i, "componentType": COMPONENT[arr.dtype], "count": int(arr.shape[0]),
               "type": TYPES[ncomp] if name != "ibm" else "MAT4"}
        if name in ("POSITION", "times"):
            flat = arr.reshape(arr.shape[0], -1)
            acc["min"], acc["max"] = flat.min(0).tolist(), flat.max(0).tolist()
        accessors.append(acc)
    names = list(parts)
    idx = {n: names.index(n) for n in names}
    doc = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0, 1]}],
        "nodes": [{"mesh": 0, "skin": 0, "name": "quad"}, {"children": [2], "name": "root"},
                  {"translation": [0, 1, 0], "name": "tip"}],
        "meshes": [{"primitives": [{"attributes": {k: idx[k] for k in ("POSITION", "NORMAL", "JOINTS_0", "WEIGHTS_0")
                                                   if k in idx}, "indices": idx["indices"]}]}],
        "skins": [{"joints": [1, 2], "inverseBindMatrices": idx["ibm"]}],
        "animations": [{"name": "bend", "channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}],
                        "samplers": [{"input": idx["times"], "output": idx["rotations"]}]}],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": len(blob)}],
    }
    return doc, bytes(blob)


def glb_bytes(doc: dict, blob: bytes | None) -> bytes:
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    chunks = struct.pack("<II", len(js), 0x4E4F534A) + js
    if blob is not None:
        b = blob + b"\0" * (-len(blob) % 4)
        chunks += struct.pack("<II", len(b), 0x004E4942) + b
    return struct.pack("<III", 0x46546C67, 2, 12 + len(chunks)) + chunks


def write(tmp_path, doc: dict, blob: bytes, kind: str = "datauri", name: str = "asset"):
    """Write the asset as 'datauri' (.gltf, base64 buffer), 'external' (.gltf + .bin) or 'glb'."""
    doc = json.loads(json.dumps(doc))
    if kind == "glb":
        p = tmp_path / f"{name}.glb"
        p.write_bytes(glb_bytes(doc, blob))
        return p
    if kind == "external":
        (tmp_path / f"{name}.bin").write_bytes(blob)
        doc["buffers"][0].setdefault("uri", f"{name}.bin")
    else:
        doc["buffers"][0].setdefault("uri", "data:application/octet-stream;base64," + base64.b64encode(blob).decode())
    p = tmp_path / f"{name}.gltf"
    p.write_text(json.dumps(doc))
    return p


def load_quiet(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssetWarning)
        return load(path, **kw)


def refused(path, **kw) -> AssetError:
    with pytest.raises(AssetError) as info:
        load_quiet(path, **kw)
    return info.value


# ------------------------------------------------------------------------------------------ valid input
@pytest.mark.parametrize("kind", ["datauri", "external", "glb"])
def test_three_containers_load_the_same_data(tmp_path, kind):
    parts = base_parts()
    doc, blob = assemble(parts)
    asset = load(write(tmp_path, doc, blob, kind))
    assert asset.warnings == []
    prim = asset.meshes[0].primitives[0]
    np.testing.assert_array_equal(prim.positions, parts["POSITION"])
    assert prim.positions.dtype == np.float32
    assert prim.indices.dtype == np.uint32 and prim.indices.tolist() == [[0, 1, 2], [0, 2, 3]]
    assert prim.joints.dtype == np.uint16 and prim.joints[2].tolist() == [0, 1, 0, 0]
    np.testing.assert_allclose(prim.weights, parts["WEIGHTS_0"])
    assert [n.parent for n in asset.nodes] == [-1, -1, 1] and asset.nodes[1].children == [2]
    skin = asset.skins[0]
    assert skin.joints.tolist() == [1, 2]
    np.testing.assert_allclose(skin.inverse_bind[1][:3, 3], [0, -1, 0])  # column-major read back correctly
    ch = asset.clips[0].channels[0]
    assert (ch.node, ch.path, ch.interpolation) == (2, "rotation", "LINEAR")
    np.testing.assert_allclose(ch.times, [0, 0.5, 1])
    assert asset.clips[0].duration == pytest.approx(1.0)
    assert asset.scene_nodes() == [0, 1, 2]


def test_missing_ibm_means_identity(tmp_path):
    doc, blob = assemble(base_parts())
    del doc["skins"][0]["inverseBindMatrices"]
    asset = load_quiet(write(tmp_path, doc, blob))
    np.testing.assert_array_equal(asset.skins[0].inverse_bind, np.tile(np.eye(4, dtype=np.float32), (2, 1, 1)))


def test_sparse_accessor_is_applied(tmp_path):
    parts = base_parts()
    parts["sparse_idx"] = np.array([1, 3], np.uint16)
    parts["sparse_val"] = np.array([[5, 5, 5], [7, 7, 7]], np.float32)
    doc, blob = assemble(parts)
    pos = doc["accessors"][0]
    pos["sparse"] = {"count": 2, "indices": {"bufferView": 8, "componentType": 5123}, "values": {"bufferView": 9}}
    pos["max"] = [7, 7, 7]
    prim = load(write(tmp_path, doc, blob)).meshes[0].primitives[0]
    expected = parts["POSITION"].copy()
    expected[[1, 3]] = parts["sparse_val"]
    np.testing.assert_array_equal(prim.positions, expected)


def test_interleaved_byte_stride(tmp_path):
    parts = base_parts()
    doc, blob = assemble(parts)
    inter = np.concatenate([parts["POSITION"], parts["NORMAL"]], axis=1)  # (4, 6) float32, stride 24
    off = len(blob)
    blob += inter.tobytes()
    doc["bufferViews"].append({"buffer": 0, "byteOffset": off, "byteLength": inter.nbytes, "byteStride": 24,
                               "target": 34962})
    doc["buffers"][0]["byteLength"] = len(blob)
    doc["accessors"][0].update(bufferView=8, byteOffset=0)
    doc["accessors"][1].update(bufferView=8, byteOffset=12)
    prim = load(write(tmp_path, doc, blob)).meshes[0].primitives[0]
    np.testing.assert_array_equal(prim.positions, parts["POSITION"])
    np.testing.assert_array_equal(prim.normals, parts["NORMAL"])


@pytest.mark.parametrize("dtype,scale", [(np.uint8, 255), (np.uint16, 65535)])
def test_normalized_integer_weights(tmp_path, dtype, scale):
    parts = base_parts()
    parts["WEIGHTS_0"] = np.round(parts["WEIGHTS_0"] * scale).astype(dtype)
    doc, blob = assemble(parts)
    doc["accessors"][3]["normalized"] = True
    prim = load(write(tmp_path, doc, blob)).meshes[0].primitives[0]
    np.testing.assert_allclose(prim.weights, base_parts()["WEIGHTS_0"], atol=1.0 / scale)
    np.testing.assert_allclose(prim.weights.sum(axis=1), 1, atol=1e-6)


def test_normalized_short_rotation_output_decoded(tmp_path):
    parts = base_parts()
    parts["rotations"] = np.round(parts["rotations"] * 32767).astype(np.int16)
    doc, blob = assemble(parts)
    doc["accessors"][7]["normalized"] = True
    ch = load(write(tmp_path, doc, blob)).clips[0].channels[0]
    np.testing.assert_allclose(ch.values, base_parts()["rotations"], atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(ch.values, axis=1), 1, atol=1e-6)


@pytest.mark.parametrize("mode,expected", [(5, [[0, 1, 2], [1, 3, 2]]), (6, [[0, 1, 2], [0, 2, 3]])])
def test_strip_and_fan_become_triangle_lists(tmp_path, mode, expected):
    doc, blob = assemble(base_parts())
    prim = doc["meshes"][0]["primitives"][0]
    del prim["indices"]
    prim["mode"] = mode
    tris = load_quiet(write(tmp_path, doc, blob)).meshes[0].primitives[0].indices
    assert tris.tolist() == expected


@pytest.mark.parametrize("mode", [0, 1, 3])
def test_points_and_lines_refused_as_unsupported(tmp_path, mode):
    doc, blob = assemble(base_parts())
    doc["meshes"][0]["primitives"][0]["mode"] = mode
    err = refused(write(tmp_path, doc, blob))
    assert err.unsupported and err.where == "meshes[0].primitives[0].mode"


def test_matrix_node_decomposed(tmp_path):
    doc, blob = assemble(base_parts())
    c, s = np.cos(0.5), np.sin(0.5)
    m = np.array([[2 * c, -2 * s, 0, 1], [2 * s, 2 * c, 0, 2], [0, 0, 2, 3], [0, 0, 0, 1]])
    doc["nodes"][1]["matrix"] = m.T.reshape(-1).tolist()  # column-major in the file
    node = load(write(tmp_path, doc, blob)).nodes[1]
    np.testing.assert_allclose(node.matrix, m, atol=1e-6)
    np.testing.assert_allclose(node.translation, [1, 2, 3], atol=1e-6)
    np.testing.assert_allclose(node.scale, [2, 2, 2], atol=1e-6)
    np.testing.assert_allclose(node.rotation, [0, 0, np.sin(0.25), np.cos(0.25)], atol=1e-6)


def test_embedded_png_image_decoded_to_rgba(tmp_path):
    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.new("RGB", (3, 2), (10, 20, 30)).save(buf, "PNG")
    png = buf.getvalue()
    doc, blob = assemble(base_parts())
    off = len(blob)
    blob += png + b"\0" * (-len(png) % 4)
    doc["bufferViews"].append({"buffer": 0, "byteOffset": off, "byteLength": len(png)})
    doc["buffers"][0]["byteLength"] = len(blob)
    doc["images"] = [{"bufferView": 8, "mimeType": "image/png"}]
    doc["textures"] = [{"source": 0}]
    doc["materials"] = [{"pbrMetallicRoughness": {"baseColorFactor": [1, 0.5, 0.5, 1],
                                                  "baseColorTexture": {"index": 0}}}]
    doc["meshes"][0]["primitives"][0]["material"] = 0
    parts_uv = np.zeros((4, 2), np.float32)
    off = len(blob)
    blob += parts_uv.tobytes()
    doc["bufferViews"].append({"buffer": 0, "byteOffset": off, "byteLength": parts_uv.nbytes})
    doc["accessors"].append({"bufferView": 9, "componentType": 5126, "count": 4, "type": "VEC2"})
    doc["meshes"][0]["primitives"][0]["attributes"]["TEXCOORD_0"] = 8
    doc["buffers"][0]["byteLength"] = len(blob)
    asset = load(write(tmp_path, doc, blob, "glb"))
    assert asset.images[0].rgba.shape == (2, 3, 4) and asset.images[0].rgba.dtype == np.uint8
    assert asset.images[0].rgba[0, 0].tolist() == [10, 20, 30, 255]
    mat = asset.materials[asset.meshes[0].primitives[0].material]
    assert mat.base_color_image == 0
    np.testing.assert_allclose(mat.base_color_factor, [1, 0.5, 0.5, 1])


def test_morph_targets_kept_without_warning(tmp_path):
    doc, blob = assemble(base_parts())
    doc["meshes"][0]["primitives"][0]["targets"] = [{"POSITION": 1}]  # NORMAL data reused as a delta
    doc["accessors"][1]["min"], doc["accessors"][1]["max"] = [0, 0, 1], [0, 0, 1]
    doc["meshes"][0]["weights"] = [0.25]
    doc["meshes"][0]["extras"] = {"targetNames": ["lift"]}
    asset = load_quiet(write(tmp_path, doc, blob))
    assert not any("morph" in w for w in asset.warnings)
    prim = asset.meshes[0].primitives[0]
    assert prim.vertex_count == 4 and prim.target_count == 1 and prim.target_normals is None
    np.testing.assert_array_equal(prim.target_positions[0], np.tile([0, 0, 1], (4, 1)))
    assert asset.meshes[0].weights.tolist() == [0.25] and asset.meshes[0].target_names == ["lift"]


# ------------------------------------------------------------------------------------------ repairs
def test_non_unit_quaternions_normalised_with_warning(tmp_path):
    parts = base_parts()
    parts["rotations"] = parts["rotations"] * 2
    doc, blob = assemble(parts)
    doc["nodes"][1]["rotation"] = [0, 0, 0, 0.5]
    with pytest.warns(AssetWarning) as rec:
        asset = load(write(tmp_path, doc, blob))
    text = " ".join(str(w.message) for w in rec)
    assert "nodes[1].rotation" in text and "animations[0].samplers[0].output" in text
    assert asset.nodes[1].rotation.tolist() == [0, 0, 0, 1]
    np.testing.assert_allclose(np.linalg.norm(asset.clips[0].channels[0].values, axis=1), 1, atol=1e-6)
    assert any("non-unit" in w for w in asset.warnings)


def test_weights_renormalised_with_warning(tmp_path):
    parts = base_parts()
    parts["WEIGHTS_0"] = parts["WEIGHTS_0"] * 0.5
    parts["WEIGHTS_0"][0] = 0  # all-zero vertex: bound to its first joint
    doc, blob = assemble(parts)
    with pytest.warns(AssetWarning, match=r"WEIGHTS_0"):
        prim = load(write(tmp_path, doc, blob)).meshes[0].primitives[0]
    np.testing.assert_allclose(prim.weights.sum(axis=1), 1, atol=1e-6)
    assert prim.weights[0].tolist() == [1, 0, 0, 0]
    np.testing.assert_allclose(prim.weights[2], [0.25, 0.75, 0, 0])


# ------------------------------------------------------------------------------------------ hostile input
def test_huge_count_refused_without_allocating(tmp_path):
    doc, blob = assemble(base_parts())
    doc["accessors"][0]["count"] = 2**40
    err = refused(write(tmp_path, doc, blob))
    assert err.where.startswith("accessors[0]")


def test_huge_zero_accessor_bounded_by_max_bytes(tmp_path):
    doc, blob = assemble(base_parts())
    doc["accessors"].append({"componentType": 5126, "count": 10**9, "type": "MAT4"})  # no bufferView: zeros
    err = refused(write(tmp_path, doc, blob))
    assert err.where == "accessors[8].count" and "limit" in err.reason


def test_accessor_past_its_buffer_view(tmp_path):
    doc, blob = assemble(base_parts())
    doc["accessors"][0]["count"] = 5
    err = refused(write(tmp_path, doc, blob))
    assert err.where == "accessors[0]" and "bufferViews[0]" in err.reason


@pytest.mark.parametrize("uri,fragment", [
    ("../outside.bin", ".."),
    ("/etc/passwd", "absolute"),
    ("file:///etc/passwd", "scheme 'file'"),
    ("http://example.com/a.bin", "scheme 'http'"),
    ("sub/%2E%2E/%2E%2E/outside.bin", ".."),
])
def test_uris_may_not_leave_the_folder(tmp_path, uri, fragment):
    (tmp_path / "outside.bin").write_bytes(b"\0" * 4)
    sub = tmp_path / "asset"
    sub.mkdir()
    doc, blob = assemble(base_parts())
    doc["buffers"][0]["uri"] = uri
    err = refused(write(sub, doc, blob))
    assert err.where == "buffers[0].uri" and fragment in err.reason


def test_data_uri_mime_and_encoding_checked(tmp_path):
    doc, blob = assemble(base_parts())
    doc["buffers"][0]["uri"] = "data:text/plain;base64," + base64.b64encode(blob).decode()
    assert "MIME" in refused(write(tmp_path, doc, blob)).reason
    doc["buffers"][0]["uri"] = "data:application/octet-stream;base64,@@@@"
    assert refused(write(tmp_path, doc, blob)).where == "buffers[0].uri"


def test_byte_length_must_match_data(tmp_path):
    doc, blob = assemble(base_parts())
    doc["buffers"][0]["byteLength"] = len(blob) + 4
    assert refused(write(tmp_path, doc, blob, "external")).where == "buffers[0].byteLength"


def test_non_finite_translation_refused(tmp_path):
    doc, blob = assemble(base_parts())
    p = write(tmp_path, doc, blob)
    p.write_text(p.read_text().replace('"translation": [0, 1, 0]', '"translation": [0, 1e999, 0]'))
    err = refused(p)
    assert err.where == "nodes[2].translation[1]" and "finite" in err.reason


def test_nan_position_refused(tmp_path):
    parts = base_parts()
    parts["POSITION"][2, 1] = np.nan
    doc, blob = assemble(parts)
    doc["accessors"][0].update(min=[0, 0, 0], max=[1, 1, 0])
    err = refused(write(tmp_path, doc, blob))
    assert err.where == "meshes[0].primitives[0].attributes.POSITION"
    assert "accessors[0] element 2" in err.reason and "non-finite" in err.reason


def test_joint_index_out_of_range(tmp_path):
    parts = base_parts()
    parts["JOINTS_0"][3] = [0, 7, 0, 0]
    doc, blob = assemble(parts)
    err = refused(write(tmp_path, doc, blob))
    assert str(err).startswith("meshes[0].primitives[0].attributes.JOINTS_0: joint index 7 >= joint count 2")


@pytest.mark.parametrize("value,fragment", [(4, ">= vertex count 4"), (0xFFFF, "primitive restart")])
def test_indices_out_of_range(tmp_path, value, fragment):
    parts = base_parts()
    parts["indices"][4] = value
    doc, blob = assemble(parts)
    err = refused(write(tmp_path, doc, blob))
    assert err.where == "meshes[0].primitives[0].indices" and fragment in err.reason


def test_negative_weight_refused(tmp_path):
    parts = base_parts()
    parts["WEIGHTS_0"][1] = [1.5, -0.5, 0, 0]
    doc, blob = assemble(parts)
    assert refused(write(tmp_path, doc, blob)).where == "meshes[0].primitives[0].attributes.WEIGHTS_0"


@pytest.mark.parametrize("times,fragment", [([0, 0.5, 0.5], "strictly increasing"), ([-1, 0.5, 1], "negative")])
def test_bad_keyframe_times(tmp_path, times, fragment):
    parts = base_parts()
    parts["times"] = np.array(times, np.float32)
    doc, blob = assemble(parts)
    err = refused(write(tmp_path, doc, blob))
    assert err.where == "animations[0].samplers[0].input" and fragment in err.reason


def test_cubicspline_needs_three_outputs_per_key(tmp_path):
    doc, blob = assemble(base_parts())
    doc["animations"][0]["samplers"][0]["interpolation"] = "CUBICSPLINE"
    err = refused(write(tmp_path, doc, blob))
    assert err.where == "animations[0].samplers[0].output" and "expected 9" in err.reason


def test_ibm_must_match_joint_count(tmp_path):
    doc, blob = assemble(base_parts())
    doc["skins"][0]["joints"] = [1]
    err = refused(write(tmp_path, doc, blob))
    assert err.where == "skins[0].inverseBindMatrices" and "1 joints" in err.reason


@pytest.mark.parametrize("edit,where", [
    (lambda d: d["nodes"][2].update(children=[1]), "nodes[1]"),  # loop 1 -> 2 -> 1
    (lambda d: d["nodes"][0].update(children=[2]), "nodes[2]"),  # two parents
    (lambda d: d["nodes"][1].update(matrix=np.eye(4).reshape(-1).tolist(), rotation=[0, 0, 0, 1]), "nodes[1]"),
    (lambda d: d["scenes"][0].update(nodes=[0, 2]), "scenes[0].nodes[1]"),  # not a root
    (lambda d: d["nodes"][0].update(mesh=3), "nodes[0].mesh"),  # unresolved
    (lambda d: d.update(materials=[]), "materials"),  # EMPTY_ENTITY
    (lambda d: d["asset"].update(version="3.0"), "asset.version"),
])
def test_structural_errors_name_the_part(tmp_path, edit, where):
    doc, blob = assemble(base_parts())
    edit(doc)
    assert refused(write(tmp_path, doc, blob)).where == where


def test_unsupported_required_extension(tmp_path):
    doc, blob = assemble(base_parts())
    doc["extensionsUsed"] = doc["extensionsRequired"] = ["KHR_texture_basisu"]
    err = refused(write(tmp_path, doc, blob))
    assert err.unsupported and "unsupported required extension" in err.reason
    doc["extensionsUsed"] = []
    assert refused(write(tmp_path, doc, blob)).where in ("extensionsUsed", "extensionsRequired[0]")


# ------------------------------------------------------------------------------------------ containers
def test_truncated_glb(tmp_path):
    doc, blob = assemble(base_parts())
    data = glb_bytes(doc, blob)
    p = tmp_path / "t.glb"
    for cut in (0, 5, 12, 17, len(data) - 8):
        p.write_bytes(data[:cut])
        assert refused(p).where.startswith("GLB"), cut


def test_glb_container_rules():
    doc, _ = assemble(base_parts())
    good = glb_bytes(doc, b"\1\2\3\4")
    parts = parse_glb(good)
    assert parts.bin == b"\1\2\3\4" and json.loads(parts.json)["asset"]["version"] == "2.0"
    with pytest.raises(AssetError, match="GLB header: bad magic"):
        parse_glb(b"glTX" + good[4:])
    with pytest.raises(AssetError, match="version 1"):
        parse_glb(good[:4] + struct.pack("<I", 1) + good[8:])
    bad_len = bytearray(good)
    struct.pack_into("<I", bad_len, 12, 7)  # JSON chunk length not a multiple of 4
    with pytest.raises(AssetError, match="multiple of 4"):
        parse_glb(bytes(bad_len))
    two_json = glb_bytes(doc, None)
    js = two_json[12:]
    doubled = struct.pack("<III", 0x46546C67, 2, 12 + 2 * len(js)) + js + js
    with pytest.raises(AssetError, match="duplicate JSON chunk"):
        parse_glb(doubled)
    assert parse_glb(good + b"\0").warnings  # trailing bytes: warning only


def test_read_glb_json_shares_the_container_checks(tmp_path):
    doc, _ = assemble(base_parts())
    good = glb_bytes(doc, b"\1\2\3\4")
    p = tmp_path / "j.glb"
    p.write_bytes(good)
    assert read_glb_json(p) == json.loads(parse_glb(good).json)
    for bad, reason in ((b"glTX" + good[4:], "bad magic"), (good[:4] + struct.pack("<I", 1) + good[8:], "version 1"),
                        (good[:10], "unexpected end of header"), (good[:-8], "truncated file")):
        p.write_bytes(bad)
        with pytest.raises(AssetError, match=reason):
            parse_glb(bad)
        with pytest.raises(ValueError, match=reason):  # the same rule, as the ValueError of a file API
            read_glb_json(p)


def test_json_bom_and_literals_refused(tmp_path):
    doc, blob = assemble(base_parts())
    p = write(tmp_path, doc, blob)
    text = p.read_bytes()
    p.write_bytes(b"\xef\xbb\xbf" + text)
    assert "BOM" in refused(p).reason
    p.write_bytes(text.replace(b'"translation": [0, 1, 0]', b'"translation": [0, NaN, 0]'))
    assert refused(p).where == "JSON"


def test_file_size_limit_and_bad_paths(tmp_path):
    doc, blob = assemble(base_parts())
    p = write(tmp_path, doc, blob)
    assert "max_bytes" in refused(p, max_bytes=100).reason
    assert refused(tmp_path / "missing.gltf").where == "missing.gltf"
    assert refused(tmp_path).where  # a directory: AssetError, not IsADirectoryError
    with pytest.raises(ValueError, match="max_bytes"):
        load(p, max_bytes=0)


def test_zero_accessors_bounded_in_total(tmp_path):
    doc, blob = assemble(base_parts())
    # 30 all-zero morph-target accessors: each under max_bytes, together over 2 x max_bytes
    n = 3000
    doc["accessors"] += [{"componentType": 5126, "count": n, "type": "VEC3", "min": [0, 0, 0], "max": [0, 0, 0]}
                         for _ in range(31)]
    prim = doc["meshes"][0]["primitives"][0]
    prim["attributes"] = {"POSITION": 8}
    prim["targets"] = [{"POSITION": 9 + k} for k in range(30)]
    del prim["indices"]
    del doc["nodes"][0]["skin"]
    err = refused(write(tmp_path, doc, blob), max_bytes=50_000)
    assert err.where.startswith("meshes[0].primitives[0].targets[") and "2 x max_bytes" in err.reason
    for acc in doc["accessors"][8:]:
        acc["count"] = 3
    assert load_quiet(write(tmp_path, doc, blob), max_bytes=50_000).meshes[0].primitives[0].vertex_count == 3


def test_file_read_many_times_bounded_in_total(tmp_path):
    from PIL import Image as PILImage

    rng = np.random.default_rng(0)
    PILImage.fromarray(rng.integers(0, 255, (20, 20, 3), dtype=np.uint8)).save(tmp_path / "noise.png")
    size = (tmp_path / "noise.png").stat().st_size
    doc, blob = assemble(base_parts())
    doc["images"] = [{"uri": "noise.png"} for _ in range(40)]
    p = write(tmp_path, doc, blob)
    limit = max(p.stat().st_size, 20 * size // 2)
    assert len(load_quiet(p).images) == 40
    err = refused(p, max_bytes=limit)
    assert err.where.startswith("images[") and "2 x max_bytes" in err.reason


def test_deeply_nested_json_is_an_asset_error(tmp_path):
    p = tmp_path / "deep.gltf"
    p.write_text('{"asset": {"version": "2.0"}, "extras": ' + "[" * 100000 + "]" * 100000 + "}")
    assert refused(p).where == "JSON"
