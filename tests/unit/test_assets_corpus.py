"""Acceptance tests of the glTF loader on the shared corpora.

* ../shared/gltf-samples: every Khronos sample loads (the Draco one decoded through DracoPy) with
  the counts of the samples README table (primitives, vertices, skins x joints, clips, channels).
* ../shared/gltf-invalid: the glTF-Validator test assets. The expected report beside each asset lists
  message codes; :data:`CODE_CLASS` sorts every error code the corpus uses into one of
  - "structural": the loader must raise AssetError (broken container/JSON, out-of-bounds data,
    unresolved references, loops, bad indices, non-finite values, bad keyframes, ...);
  - "repairable": the loader may load, repairing with a warning (non-unit quaternions, weights not
    summing to 1, min/max metadata that disagrees with the data, ...);
  - "other": schema rules about parts this loader does not use (cameras, tangents, colors, unsupported
    extensions): load or AssetError, never another exception.
  Assets with only warnings/infos must load, except the few in :data:`CLEAN_BUT_REFUSED`, which this
  loader refuses on purpose (the reason is asserted).

File lists are collected at import time with a fallback to empty lists; ``test_shared_corpora_present``
calls ``shared_dir`` so a missing ../shared skips (or fails under CI=true).
"""
from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.assets import AssetError, AssetWarning, load
from tests.conftest import INVALID, SAMPLES, shared_dir

STRUCTURAL, REPAIRABLE, OTHER = "structural", "repairable", "other"
# One table: validator error code -> how the loader must treat an asset whose report holds it.
CODE_CLASS: dict[str, str] = {
    # container and JSON
    **dict.fromkeys([
        "GLB_CHUNK_LENGTH_UNALIGNED", "GLB_CHUNK_TOO_BIG", "GLB_DUPLICATE_CHUNK", "GLB_EMPTY_CHUNK",
        "GLB_INVALID_MAGIC", "GLB_INVALID_VERSION", "GLB_LENGTH_MISMATCH", "GLB_LENGTH_TOO_SMALL",
        "GLB_UNEXPECTED_BIN_CHUNK", "GLB_UNEXPECTED_END_OF_CHUNK_DATA", "GLB_UNEXPECTED_END_OF_CHUNK_HEADER",
        "GLB_UNEXPECTED_END_OF_HEADER", "GLB_UNEXPECTED_FIRST_CHUNK", "INVALID_JSON",
    ], STRUCTURAL),
    # schema: types, required properties, ranges, references, dependencies, versions, extensions
    **dict.fromkeys([
        "TYPE_MISMATCH", "ARRAY_TYPE_MISMATCH", "UNDEFINED_PROPERTY", "EMPTY_ENTITY", "UNRESOLVED_REFERENCE",
        "VALUE_NOT_IN_RANGE", "VALUE_MULTIPLE_OF", "DUPLICATE_ELEMENTS", "ONE_OF_MISMATCH", "UNSATISFIED_DEPENDENCY",
        "UNKNOWN_ASSET_MAJOR_VERSION", "ASSET_MIN_VERSION_GREATER_THAN_VERSION", "UNUSED_EXTENSION_REQUIRED",
        "UNDECLARED_EXTENSION", "UNEXPECTED_EXTENSION_OBJECT", "NON_REQUIRED_EXTENSION",
    ], STRUCTURAL),
    # buffers, bufferViews, accessors: bounds, alignment, strides, data
    **dict.fromkeys([
        "BUFFER_BYTE_LENGTH_MISMATCH", "BUFFER_MISSING_GLB_DATA", "BUFFER_DATA_URI_MIME_TYPE_INVALID", "INVALID_URI",
        "IO_ERROR", "BUFFER_VIEW_TOO_LONG", "BUFFER_VIEW_TOO_BIG_BYTE_STRIDE", "BUFFER_VIEW_INVALID_BYTE_STRIDE",
        "BUFFER_VIEW_TARGET_OVERRIDE", "ACCESSOR_TOO_LONG", "ACCESSOR_OFFSET_ALIGNMENT",
        "ACCESSOR_TOTAL_OFFSET_ALIGNMENT", "ACCESSOR_MATRIX_ALIGNMENT", "ACCESSOR_SMALL_BYTESTRIDE",
        "ACCESSOR_SPARSE_COUNT_OUT_OF_RANGE", "ACCESSOR_NORMALIZED_INVALID", "ACCESSOR_INVALID_FLOAT",
        "ACCESSOR_INDEX_OOB", "ACCESSOR_INDEX_PRIMITIVE_RESTART", "ACCESSOR_JOINTS_INDEX_OOB",
        "ACCESSOR_WEIGHTS_NEGATIVE", "ACCESSOR_ANIMATION_INPUT_NEGATIVE", "ACCESSOR_ANIMATION_INPUT_NON_INCREASING",
        "ACCESSOR_INVALID_IBM",
    ], STRUCTURAL),
    # meshes, nodes, skins, animations, images
    **dict.fromkeys([
        "MESH_PRIMITIVE_ATTRIBUTES_ACCESSOR_UNSIGNED_INT", "MESH_PRIMITIVE_ACCESSOR_UNALIGNED",
        "MESH_PRIMITIVE_UNEQUAL_ACCESSOR_COUNT", "MESH_PRIMITIVE_ACCESSOR_WITHOUT_BYTESTRIDE",
        "MESH_PRIMITIVE_INDICES_ACCESSOR_WITH_BYTESTRIDE", "MESH_PRIMITIVE_INDICES_ACCESSOR_INVALID_FORMAT",
        "MESH_PRIMITIVE_INVALID_ATTRIBUTE", "MESH_PRIMITIVE_INDEXED_SEMANTIC_CONTINUITY",
        "MESH_PRIMITIVE_MORPH_TARGET_INVALID_ATTRIBUTE_COUNT", "MESH_PRIMITIVE_MORPH_TARGET_NO_BASE_ACCESSOR",
        "MESH_PRIMITIVE_POSITION_ACCESSOR_WITHOUT_BOUNDS", "MESH_PRIMITIVES_UNEQUAL_TARGETS_COUNT",
        "MESH_INVALID_WEIGHTS_COUNT", "MESH_PRIMITIVE_ATTRIBUTES_ACCESSOR_INVALID_FORMAT",
        "MESH_PRIMITIVE_JOINTS_WEIGHTS_MISMATCH", "MESH_PRIMITIVE_TOO_FEW_TEXCOORDS",
        "NODE_LOOP", "NODE_PARENT_OVERRIDE", "NODE_MATRIX_TRS", "NODE_MATRIX_NON_TRS", "SCENE_NON_ROOT_NODE",
        "NODE_SKIN_WITH_NON_SKINNED_MESH", "NODE_WEIGHTS_INVALID",
        "SKIN_NO_COMMON_ROOT", "SKIN_IBM_INVALID_FORMAT", "INVALID_IBM_ACCESSOR_COUNT",
        "SKIN_IBM_ACCESSOR_WITH_BYTESTRIDE",
        "ANIMATION_DUPLICATE_TARGETS", "ANIMATION_CHANNEL_TARGET_NODE_MATRIX",
        "ANIMATION_CHANNEL_TARGET_NODE_WEIGHTS_NO_MORPHS", "ANIMATION_SAMPLER_ACCESSOR_WITH_BYTESTRIDE",
        "ANIMATION_SAMPLER_INPUT_ACCESSOR_INVALID_FORMAT", "ANIMATION_SAMPLER_INPUT_ACCESSOR_TOO_FEW_ELEMENTS",
        "ANIMATION_SAMPLER_INPUT_ACCESSOR_WITHOUT_BOUNDS", "ANIMATION_SAMPLER_OUTPUT_ACCESSOR_INVALID_COUNT",
        "ANIMATION_SAMPLER_OUTPUT_ACCESSOR_INVALID_FORMAT",
        "IMAGE_DATA_INVALID", "IMAGE_UNEXPECTED_EOS", "IMAGE_MIME_TYPE_INVALID", "IMAGE_BUFFER_VIEW_WITH_BYTESTRIDE",
    ], STRUCTURAL),
    # repaired with a warning
    **dict.fromkeys([
        "ACCESSOR_ANIMATION_SAMPLER_OUTPUT_NON_NORMALIZED_QUATERNION", "ROTATION_NON_UNIT",
        "ACCESSOR_WEIGHTS_NON_NORMALIZED", "ACCESSOR_JOINTS_INDEX_DUPLICATE", "ACCESSOR_VECTOR3_NON_UNIT",
        "ACCESSOR_MIN_MISMATCH", "ACCESSOR_MAX_MISMATCH", "ACCESSOR_ELEMENT_OUT_OF_MIN_BOUND",
        "ACCESSOR_ELEMENT_OUT_OF_MAX_BOUND",
    ], REPAIRABLE),
    # about parts the model does not keep, or hints: load or AssetError
    **dict.fromkeys([
        "CAMERA_XMAG_YMAG_ZERO", "CAMERA_ZFAR_LEQUAL_ZNEAR", "PATTERN_MISMATCH", "ACCESSOR_NON_CLAMPED",
        "ACCESSOR_INVALID_SIGN", "NODE_SKIN_NO_SCENE", "SKIN_SKELETON_INVALID",
        "KHR_ANIMATION_POINTER_ANIMATION_CHANNEL_TARGET_NODE", "KHR_ANIMATION_POINTER_ANIMATION_CHANNEL_TARGET_PATH",
    ], OTHER),
}

# Assets without validator errors that this loader refuses on purpose, with a fragment of the reason.
CLEAN_BUT_REFUSED: dict[str, str] = {
    "base/data/animation/valid.gltf": "strictly increasing",  # input accessor without data: all-zero times
    "base/data/skin/ignored_animated_transform.gltf": "strictly increasing",  # same
    "base/data/skin/valid.gltf": "not affine",  # IBM accessor without data: all-zero matrices
    "base/data/asset/min_version_valid.gltf": "2.1",  # needs glTF 2.1 features
    "base/data/buffer/data_uri.glb": "base64",  # non-base64 data: URI
    "base/data/buffer/non_relative_uri.gltf": "scheme 'http'",  # never fetch from the network
    "base/data/image/unrecognized_format.gltf": "cannot decode",  # images must decode
    "base/data/mesh/invalid_tangent.gltf": "points",  # unsupported primitive mode
    "base/data/mesh/primitive_no_position.gltf": "no POSITION",
    "base/data/root/named_objects.gltf": "no data",  # meshes read a buffer without uri
    "base/data/root/unused_objects.gltf": "no data",
}


def _collect(root: Path) -> list[str]:
    try:
        if not root.is_dir():
            return []
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.suffix in (".gltf", ".glb"))
    except OSError:
        return []


SAMPLE_FILES = _collect(SAMPLES)
INVALID_FILES = _collect(INVALID)


def test_shared_corpora_present():
    samples, invalid = shared_dir("gltf-samples"), shared_dir("gltf-invalid")
    assert _collect(samples) and _collect(invalid), "the shared corpora are empty"


# ------------------------------------------------------------------------------------------ samples
def _readme_table(folder: Path) -> dict[str, dict[str, str]]:
    rows = {}
    header = None
    for line in (folder / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "file" and "verts" in cells:
            header = cells
            continue
        if header and len(cells) == len(header) and cells[0].endswith((".gltf", ".glb")):
            rows[cells[0]] = dict(zip(header, cells))
        elif header and not line.startswith("|") and rows:
            break
    return rows


def _load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssetWarning)
        return load(path)


@pytest.mark.shared
@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_sample_loads_with_readme_counts(name):
    folder = shared_dir("gltf-samples")
    row = _readme_table(folder)[name]
    asset = _load(folder / name)
    meshes, prims = (int(x) for x in row["mesh/prim"].split("/"))
    assert len(asset.meshes) == meshes
    assert sum(len(m.primitives) for m in asset.meshes) == prims
    assert sum(p.vertex_count for m in asset.meshes for p in m.primitives) == int(row["verts"])
    skins = re.match(r"(\d+) × (\d+)", row["skins × joints"])
    if skins:
        assert len(asset.skins) == int(skins.group(1))
        assert {len(s.joints) for s in asset.skins} == {int(skins.group(2))}
    else:
        assert asset.skins == []
    clips = re.match(r"(\d+) \((\d+) ch\)", row["clips (ch)"])
    if clips:
        assert len(asset.clips) == int(clips.group(1))
        loaded = sum(len(c.channels) for c in asset.clips)
        assert loaded == int(clips.group(2))  # morph weights channels included
        if row["paths"] == "W":
            assert {c.path for clip in asset.clips for c in clip.channels} == {"weights"}
            assert not any("morph" in w or "weights channel" in w for w in asset.warnings)
    else:
        assert asset.clips == []
    for m in asset.meshes:
        for p in m.primitives:
            assert p.positions.dtype == np.float32 and p.positions.shape == (p.vertex_count, 3)
            assert p.indices.dtype == np.uint32 and p.indices.ndim == 2 and p.indices.shape[1] == 3
            assert p.indices.size == 0 or int(p.indices.max()) < p.vertex_count
            if p.is_skinned:
                assert p.joints.dtype == np.uint16 and p.weights.dtype == np.float32
                np.testing.assert_allclose(p.weights.sum(axis=1), 1, atol=1e-5)
    for clip in asset.clips:
        for ch in clip.channels:
            assert np.all(np.diff(ch.times) > 0) and ch.times[0] >= 0
            if ch.path == "rotation":
                q = ch.values[:, 1] if ch.interpolation == "CUBICSPLINE" else ch.values
                np.testing.assert_allclose(np.linalg.norm(q.astype(np.float64), axis=1), 1, atol=1e-5)


@pytest.mark.shared
def test_normalized_weights_decode_like_float_weights():
    folder = shared_dir("gltf-samples") / "AssetGenerator" / "Animation_SkinType"
    ref = _load(folder / "Animation_SkinType_00.gltf").meshes[0].primitives[0]  # FLOAT weights
    for name, step in (("Animation_SkinType_01.gltf", 1 / 255), ("Animation_SkinType_02.gltf", 1 / 65535)):
        prim = _load(folder / name).meshes[0].primitives[0]
        assert prim.weights.dtype == np.float32
        np.testing.assert_array_equal(prim.joints, ref.joints)
        np.testing.assert_allclose(prim.weights, ref.weights, atol=2 * step)
        np.testing.assert_allclose(prim.weights.sum(axis=1), 1, atol=1e-6)


@pytest.mark.shared
def test_absent_ibm_is_identity_and_present_ibm_is_read():
    folder = shared_dir("gltf-samples") / "AssetGenerator" / "Animation_Skin"
    skin = _load(folder / "Animation_Skin_04.gltf").skins[0]
    np.testing.assert_array_equal(skin.inverse_bind, np.tile(np.eye(4, dtype=np.float32), (2, 1, 1)))
    with_ibm = _load(folder / "Animation_Skin_00.gltf").skins[0]
    assert with_ibm.inverse_bind.shape == (2, 4, 4)
    assert not np.allclose(with_ibm.inverse_bind, np.eye(4))
    np.testing.assert_allclose(with_ibm.inverse_bind[:, 3], np.tile([0, 0, 0, 1], (2, 1)))


@pytest.mark.shared
def test_data_uri_and_external_buffers_give_the_same_asset():
    folder = shared_dir("gltf-samples")
    a, b = _load(folder / "SimpleSkin.gltf"), _load(folder / "SimpleSkin_glTF" / "SimpleSkin.gltf")
    pa, pb = a.meshes[0].primitives[0], b.meshes[0].primitives[0]
    for attr in ("positions", "indices", "joints", "weights"):
        np.testing.assert_array_equal(getattr(pa, attr), getattr(pb, attr))
    np.testing.assert_array_equal(a.skins[0].inverse_bind, b.skins[0].inverse_bind)
    np.testing.assert_array_equal(a.clips[0].channels[0].values, b.clips[0].channels[0].values)


@pytest.mark.shared
def test_interpolation_modes_and_images():
    folder = shared_dir("gltf-samples")
    asset = _load(folder / "InterpolationTest.glb")
    seen = {(c.channels[0].interpolation, c.channels[0].path) for c in asset.clips}
    assert seen == {(i, p) for i in ("STEP", "LINEAR", "CUBICSPLINE") for p in ("translation", "rotation", "scale")}
    for clip in asset.clips:
        ch = clip.channels[0]
        width = 4 if ch.path == "rotation" else 3
        expected = (len(ch.times), 3, width) if ch.interpolation == "CUBICSPLINE" else (len(ch.times), width)
        assert ch.values.shape == expected
    cesium = _load(folder / "CesiumMan.glb")
    img = cesium.images[cesium.materials[0].base_color_image]
    assert img.rgba.dtype == np.uint8 and img.rgba.ndim == 3 and img.rgba.shape[2] == 4
    assert img.rgba.shape[0] > 1 and img.rgba.shape[1] > 1


# ------------------------------------------------------------------------------------------ invalid corpus
def _expected(path: Path) -> tuple[list[str], int]:
    report = json.loads(path.with_name(path.name + ".report.json").read_text(encoding="utf-8"))
    errors = sorted({m["code"] for m in report["issues"]["messages"] if m["severity"] == 0})
    return errors, int(report["issues"]["numErrors"])


def classify(errors: list[str]) -> str:
    """'structural' if any error code is; else 'repairable' if all are; 'other' for the rest; 'clean'."""
    if not errors:
        return "clean"
    unknown = [c for c in errors if c not in CODE_CLASS]
    assert not unknown, f"unclassified validator codes {unknown}: add them to CODE_CLASS"
    classes = {CODE_CLASS[c] for c in errors}
    if STRUCTURAL in classes:
        return STRUCTURAL
    return REPAIRABLE if classes == {REPAIRABLE} else OTHER


@pytest.mark.shared
@pytest.mark.parametrize("name", INVALID_FILES)
def test_invalid_corpus(name):
    folder = shared_dir("gltf-invalid")
    path = folder / name
    errors, _ = _expected(path)
    category = classify(errors)
    try:
        asset = _load(path)
    except AssetError as exc:
        assert str(exc).startswith(f"{exc.where}: ") and exc.where and exc.reason
        if category == "clean":
            assert name in CLEAN_BUT_REFUSED, f"clean asset refused: {exc}"
            assert CLEAN_BUT_REFUSED[name] in str(exc)
        return
    assert category != STRUCTURAL, f"structural errors {errors} but the asset loaded"
    if category == REPAIRABLE:
        assert asset.warnings, f"repairable errors {errors} loaded without a warning"
    if category == "clean":
        assert name not in CLEAN_BUT_REFUSED, "listed as refused but it loads: update CLEAN_BUT_REFUSED"


@pytest.mark.shared
def test_invalid_corpus_counts(capsys):
    """Every structural asset refused; print the loaded / refused counts per category."""
    folder = shared_dir("gltf-invalid")
    counts: dict[str, list[int]] = {}
    for name in INVALID_FILES:
        category = classify(_expected(folder / name)[0])
        try:
            _load(folder / name)
            outcome = 0
        except AssetError:
            outcome = 1
        counts.setdefault(category, [0, 0])[outcome] += 1
    with capsys.disabled():
        print("\ngltf-invalid: " + ", ".join(f"{k}: {v[0]} loaded / {v[1]} refused" for k, v in sorted(counts.items())))
    assert counts.get(STRUCTURAL, [0, 0])[0] == 0
    assert sum(a + b for a, b in counts.values()) == len(INVALID_FILES)
