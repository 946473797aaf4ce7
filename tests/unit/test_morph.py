"""Morph targets without a GPU: the loader keeps them (no warning), weights channels sample by the glTF spec
(STEP / LINEAR / CUBICSPLINE), ``export-frame`` of the Khronos morph samples equals an independent numpy
evaluation of the spec's formula, the numpy deformers morph before skinning, the weld keeps apart what the deltas
separate, scripts set weights, ``inspect`` lists targets and weight channels, bad morph data is refused."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine.assets import AssetError, load
from engine.assets.model import Channel, Clip
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.morph import morph, split_by_deltas
from game import cli
from tests.conftest import shared_dir
from tests.unit.test_assets_loader import assemble, base_parts, write

SAMPLES = ["AnimatedMorphCube.glb", "AnimatedMorphCube_Quantized/AnimatedMorphCube.gltf"]


# ---- an independent reference: glTF's node transforms and the spec's morph formula ------------------------
def _quat_matrix(q: np.ndarray) -> np.ndarray:
    x, y, z, w = (float(v) for v in q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _world(asset, n: int) -> np.ndarray:
    m = np.eye(4)
    while n >= 0:
        node = asset.nodes[n]
        local = np.eye(4)
        local[:3, :3] = _quat_matrix(node.rotation) * np.asarray(node.scale, np.float64)
        local[:3, 3] = node.translation
        m = local @ m
        n = node.parent
    return m


def _spec_weights(ch: Channel, t: float) -> np.ndarray:
    """glTF 2.0 appendix C, written out per key interval (no engine code)."""
    times = ch.times.astype(np.float64)
    cubic = ch.interpolation == "CUBICSPLINE"
    vals = ch.values.astype(np.float64)
    if t <= times[0]:
        return vals[0, 1] if cubic else vals[0]
    if t >= times[-1]:
        return vals[-1, 1] if cubic else vals[-1]
    k = int(np.nonzero(times <= t)[0][-1])
    td = times[k + 1] - times[k]
    u = (t - times[k]) / td
    if ch.interpolation == "STEP":
        return vals[k]
    if ch.interpolation == "LINEAR":
        return (1 - u) * vals[k] + u * vals[k + 1]
    return ((2 * u**3 - 3 * u**2 + 1) * vals[k, 1] + td * (u**3 - 2 * u**2 + u) * vals[k, 2]
            + (-2 * u**3 + 3 * u**2) * vals[k + 1, 1] + td * (u**3 - u**2) * vals[k + 1, 0])


@pytest.mark.shared
@pytest.mark.parametrize("name", SAMPLES)
def test_khronos_samples_load_targets_without_warning(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "morph target(s) ignored" / "weights channel skipped" any more
        asset = load(shared_dir("gltf-samples") / name)
    prim = asset.meshes[0].primitives[0]
    assert prim.target_count == 2 and prim.target_positions.shape == (2, 24, 3)
    assert prim.target_normals is not None and prim.target_normals.shape == (2, 24, 3)
    assert np.abs(prim.target_positions).max() > 0
    (ch,) = asset.clips[0].channels
    assert ch.path == "weights" and ch.values.shape == (127, 2)


@pytest.mark.shared
@pytest.mark.parametrize("name", SAMPLES)
def test_export_frame_of_morph_samples_equals_the_spec(tmp_path, name, capsys):
    path = shared_dir("gltf-samples") / name
    out = tmp_path / "frames.npz"
    assert cli.run(["export-frame", str(path), "--device", "cpu", "--times", "0:4.5:0.37", "--out", str(out)]) == 0
    asset = load(path)
    (ch,) = asset.clips[0].channels
    prim = asset.meshes[asset.nodes[ch.node].mesh].primitives[0]
    world = _world(asset, ch.node)
    z = np.load(out)
    frames = z[f"node{ch.node}_mesh{asset.nodes[ch.node].mesh}_prim0"]
    moved = 0.0
    for t, got in zip(z["times"], frames):
        w = _spec_weights(ch, float(t))
        local = prim.positions.astype(np.float64) + np.einsum("m,mvc->vc", w, prim.target_positions)
        ref = local @ world[:3, :3].T + world[:3, 3]
        np.testing.assert_allclose(got, ref, atol=1e-5 * max(1.0, np.abs(ref).max()))
        moved = max(moved, float(np.abs(got - frames[0]).max()))
    assert moved > 1e-3  # the cube really changes shape over the clip
    single = tmp_path / "one.npz"
    assert cli.run(["export-frame", str(path), "--device", "cpu", "--time", "1.3", "--out", str(single)]) == 0
    w = _spec_weights(ch, 1.3)
    ref = (prim.positions + np.einsum("m,mvc->vc", w, prim.target_positions)) @ world[:3, :3].T + world[:3, 3]
    np.testing.assert_allclose(np.load(single)[f"node{ch.node}_mesh0_prim0"], ref, atol=1e-5)


@pytest.mark.parametrize("interp", ["STEP", "LINEAR", "CUBICSPLINE"])
def test_weight_channels_sample_by_the_spec(interp):
    from engine.anim import ClipSampler, Rig
    from engine.assets.model import Asset, Node

    rng = np.random.default_rng(3)
    times = np.array([0.0, 0.4, 1.1, 2.0], np.float32)
    values = rng.normal(size=(4, 3, 3) if interp == "CUBICSPLINE" else (4, 3)).astype(np.float32)
    ch = Channel(0, "weights", interp, times, values)
    rig = Rig.from_asset(Asset(path=None, nodes=[Node("n")]))
    sampler = ClipSampler(rig, Clip("c", [ch]))
    assert sampler.duration == pytest.approx(2.0) and sampler.skipped == []
    for t in (-1.0, 0.0, 0.1, 0.4, 0.75, 1.1, 1.9, 2.0, 3.0):
        np.testing.assert_allclose(sampler.sample_weights(t)[0], _spec_weights(ch, t), rtol=1e-5, atol=1e-5)


def _quad_with_targets(tmp_path, interp="CUBICSPLINE", *, weights_count=None, names=("open", "lift")):
    """The loader tests' skinned quad with two morph targets and a weights channel on its mesh node."""
    parts = base_parts()
    parts["T0"] = np.array([[0, 0, 0], [0.5, 0, 0], [0.5, 0, 0], [0, 0, 0]], np.float32)
    parts["T1"] = np.tile(np.array([0, 0, 0.25], np.float32), (4, 1))
    parts["wtimes"] = np.array([0.0, 1.0], np.float32)
    k = 3 * 2 if interp == "CUBICSPLINE" else 2
    parts["wvals"] = np.linspace(0, 1, weights_count or 2 * k).astype(np.float32)
    doc, blob = assemble(parts)
    names_list = list(parts)
    for t in ("T0", "T1"):
        acc = doc["accessors"][names_list.index(t)]
        acc["min"], acc["max"] = parts[t].min(0).tolist(), parts[t].max(0).tolist()
    wt = doc["accessors"][names_list.index("wtimes")]
    wt["min"], wt["max"] = [0.0], [1.0]
    doc["meshes"][0]["primitives"][0]["targets"] = [{"POSITION": names_list.index("T0")},
                                                    {"POSITION": names_list.index("T1")}]
    doc["meshes"][0]["weights"] = [0.5, 0.0]
    doc["meshes"][0]["extras"] = {"targetNames": list(names)}
    doc["animations"].append({"name": "face", "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}}],
                              "samplers": [{"input": names_list.index("wtimes"), "output": names_list.index("wvals"),
                                            "interpolation": interp}]})
    return write(tmp_path, doc, blob), parts


def test_loaded_weights_channel_and_inspect(tmp_path, capsys):
    path, parts = _quad_with_targets(tmp_path)
    asset = load(path)
    mesh = asset.meshes[0]
    assert mesh.target_names == ["open", "lift"] and mesh.weights.tolist() == [0.5, 0.0]
    ch = asset.clips[1].channels[0]
    assert ch.interpolation == "CUBICSPLINE" and ch.values.shape == (2, 3, 2)
    np.testing.assert_array_equal(ch.values.reshape(-1), parts["wvals"])  # (in, value, out) blocks of 2 weights
    assert cli.run(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "    morph targets: 2 ['open', 'lift'], default weights [0.5, 0]" in out
    assert "    weights channel: node 0 'quad' (mesh 0, 2 targets), CUBICSPLINE, 2 keys" in out


def test_cpu_session_morphs_before_skinning_and_scripts_override(tmp_path):
    from engine import Session
    from engine.skinning.skinning import lbs

    path, parts = _quad_with_targets(tmp_path, "LINEAR")
    asset = load(path)
    prim = asset.meshes[0].primitives[0]
    ch = asset.clips[1].channels[0]
    with Session(device="cpu", render=False, deformer="lbs") as s:
        c = s.spawn(path, clip="face", time=0.25, speed=0.0)
        w = _spec_weights(ch, 0.25)
        np.testing.assert_allclose(c.morph_weights("quad"), w, atol=1e-6)
        sp = c.loaded.skinned[0]
        g = s.world.get(c.entity, __import__("engine.components", fromlist=["SkeletonPose"]).SkeletonPose).globals
        ref = lbs(morph(prim.positions, prim.target_positions, w), prim.joints, prim.weights, sp.skin_matrices(g))
        (got,) = c.vertices().values()
        np.testing.assert_allclose(got, ref, atol=1e-6)
        c.set_morph_weights(0, [0.0, 1.0])
        (got,) = c.vertices().values()
        ref = lbs(prim.positions + prim.target_positions[1], prim.joints, prim.weights, sp.skin_matrices(g))
        np.testing.assert_allclose(got, ref, atol=1e-6)
        assert c.morph_nodes == {0: 2}
        with pytest.raises(ValueError, match="2 numbers"):
            c.set_morph_weights("quad", [1.0])
        with pytest.raises(ValueError, match="finite"):
            c.set_morph_weights("quad", [np.nan, 0])
        with pytest.raises(ValueError, match="no mesh node with morph targets 'nose'"):
            c.set_morph_weights("nose", [0, 0])
        c.set_morph_weights("quad", None)  # back to the clip
        np.testing.assert_allclose(c.morph_weights(0), w, atol=1e-6)


def test_weld_keeps_apart_vertices_whose_deltas_differ():
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0]], np.float32)  # vertex 1 == vertex 3
    tris = np.array([[0, 1, 2], [3, 4, 2]])
    same = np.zeros((1, 5, 3), np.float32)
    assert prepare_mesh(pos, tris, morph_deltas=same).n_control == 4
    split = same.copy()
    split[0, 3] = [0, 0, 1]  # the seam opens under the target
    topo = prepare_mesh(pos, tris, morph_deltas=split)
    assert topo.n_control == 5 and topo.control_of_display.tolist() == [0, 1, 2, 3, 4]
    cod, doc = split_by_deltas(np.array([0, 1, 0, 1]), np.zeros((2, 4, 3)), 0.0)
    assert cod.tolist() == [0, 1, 0, 1] and doc.tolist() == [0, 1]


def _refused(path) -> AssetError:
    with pytest.raises(AssetError) as exc, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load(path)
    return exc.value


def test_bad_morph_data_refused(tmp_path, capsys):
    path, _ = _quad_with_targets(tmp_path, "LINEAR", weights_count=3)  # not whole keys: the existing check
    err = _refused(path)
    assert err.where == "animations[1].samplers[0].output" and "not a multiple of 2" in err.reason
    path, _ = _quad_with_targets(tmp_path, "LINEAR", weights_count=6)  # whole keys, but 3 weights per key
    err = _refused(path)
    assert err.where == "animations[1].samplers[0].output"
    assert err.reason == "6 weights for 2 LINEAR keyframes of nodes[0]'s 2 morph targets (expected 4)"
    capsys.readouterr()
    assert cli.run(["inspect", str(path)]) == 2
    err_lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err_lines) == 1 and err_lines[0].startswith("error: ") and "(expected 4)" in err_lines[0]
    import json

    doc = json.loads(path.read_text())
    doc["meshes"][0]["weights"] = [0.5]
    p2 = tmp_path / "w.gltf"
    p2.write_text(json.dumps(doc))
    assert "1 weights for 2 morph targets" in _refused(p2).reason
    doc["meshes"][0]["weights"] = [0.5, 0]
    doc["nodes"][0]["weights"] = [1, 2, 3]
    p2.write_text(json.dumps(doc))
    err = _refused(p2)
    assert err.where == "nodes[0].weights" and "3 weights" in err.reason
    del doc["nodes"][0]["weights"]
    doc["animations"][1]["channels"][0]["target"]["node"] = 2  # a joint, no mesh
    p2.write_text(json.dumps(doc))
    assert "has no morph targets" in _refused(p2).reason


def test_with_morph_plans_a_morph_step_only_where_asked():
    from engine.skinning.gpu.plan import MORPHED, MORPHED_NORMALS, default_config, fusions, plan, with_morph

    lbs = default_config("lbs")
    assert [s.node.stage for s in plan(lbs).steps] == ["skin_copy"]  # today's fused path, unchanged
    m = with_morph(lbs, normals=True)
    steps = plan(m).steps
    assert [s.node.stage for s in steps] == ["morph", "skin", "copy"] and not fusions(m)
    assert steps[0].node.outputs == {"target": MORPHED, "normals": MORPHED_NORMALS}
    assert steps[1].node.inputs["source"] == MORPHED and steps[1].barrier_before
    assert with_morph(m) is m
    spring = with_morph(default_config("spring"))
    assert [n.stage for n in spring.order()][:3] == ["morph", "skin", "spring"]
    assert "normals" not in spring.nodes[0].outputs  # surface normals: recomputed from the morphed surface
    feedback = with_morph(default_config("spring-feedback"))
    assert feedback.node("skin").inputs["source"] == "deformed@previous"  # differential: reads its own result


def test_timeline_segments_play_and_crossfade_morph_weights():
    """A cutscene track's live segment gives its clip's morph weights at the segment's clip time, and over a
    segment's blend_in the weights fade from the previous segment's like the pose."""
    from engine.anim import ClipSampler, Rig
    from engine.anim.timeline import ClipSegment, TimelinePlayback
    from engine.assets.model import Asset, Node
    from engine.components import playback_weights

    times = np.array([0.0, 2.0], np.float32)
    up = Channel(0, "weights", "LINEAR", times, np.array([[0.0, 1.0], [1.0, 1.0]], np.float32))
    down = Channel(0, "weights", "LINEAR", times, np.array([[1.0, 0.0], [0.0, 0.0]], np.float32))
    rig = Rig.from_asset(Asset(path=None, nodes=[Node("n")]))
    samplers = [ClipSampler(rig, Clip("up", [up])), ClipSampler(rig, Clip("down", [down]))]
    fps = 10.0
    segs = [ClipSegment(0, 0.0, 1.0), ClipSegment(1, 1.0, 2.0, offset=0.5, blend_in=0.5)]
    pb = TimelinePlayback(rig, samplers, segs, fps=fps, driven=True)
    pb.seek(5)  # t = 0.5 in segment 0: clip time 0.5
    np.testing.assert_allclose(playback_weights(pb)[0], [0.25, 1.0], atol=1e-6)
    pb.seek(17)  # t = 1.7, after the fade: segment 1 at clip time 0.5 + 0.7
    np.testing.assert_allclose(playback_weights(pb)[0], [1.0 - 1.2 / 2.0, 0.0], atol=1e-6)
    pb.seek(12)  # t = 1.2, 40 % into the fade: segment 0 held at its trim end (clip time 1.0) -> segment 1
    prev, live = np.array([0.5, 1.0]), np.array([1.0 - 0.7 / 2.0, 0.0])
    np.testing.assert_allclose(playback_weights(pb)[0], prev + 0.4 * (live - prev), atol=1e-6)
