"""The GPU morph stage equals the numpy reference: a skinned + morphed character (RiggedSimple with two generated
targets and a CUBICSPLINE weights channel) under every skinning method, skinned normals from the morphed bind
normals, springs resting on the morphed shape, the Khronos morph samples through ``export-frame --device gpu``;
and meshes without targets keep the fused path."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine.assets import load
from engine.assets.model import Channel
from engine.skinning import meshprep as M
from engine.skinning import skinning as S
from engine.skinning.binding import per_control
from engine.skinning.gpu.graph import DeformerGraph, default_config
from engine.skinning.morph import morph, morph_normals
from game import cli
from tests.conftest import shared_dir
from tests.unit.test_morph import SAMPLES, _spec_weights, _world

pytestmark = [pytest.mark.gl, pytest.mark.shared]


def _morphed_rigged_simple():
    """RiggedSimple (a skinned cylinder, two joints) with two targets: a radial bulge (with a NORMAL delta) and a
    sideways shift of its upper half; default weights (0.5, 0); a CUBICSPLINE weights channel in clip 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asset = load(shared_dir("gltf-samples") / "RiggedSimple.glb")
    node = next(i for i, n in enumerate(asset.nodes) if n.mesh is not None and n.skin is not None)
    mesh = asset.meshes[asset.nodes[node].mesh]
    for p in mesh.primitives:
        n = p.vertex_count
        c = p.positions - p.positions.mean(0)
        bulge = np.zeros((n, 3), np.float32)
        bulge[:, :2] = 0.4 * c[:, :2]
        shift = np.zeros((n, 3), np.float32)
        shift[p.positions[:, 2] > np.median(p.positions[:, 2]), 0] = 0.5
        p.target_positions = np.stack([bulge, shift])
        p.target_normals = np.zeros((2, n, 3), np.float32)
        p.target_normals[0, :, 2] = 0.3
    mesh.weights = np.array([0.5, 0.0], np.float32)
    values = np.zeros((3, 3, 2), np.float32)
    values[:, 1] = [[0, 0], [1, 0.5], [0.2, 1]]
    values[:, 0], values[:, 2] = 0.7, -0.4
    asset.clips[0].channels.append(Channel(node, "weights", "CUBICSPLINE", np.array([0, 0.5, 1], np.float32), values))
    return asset, node


@pytest.fixture(scope="module")
def morphed():
    return _morphed_rigged_simple()


@pytest.mark.parametrize("method", ["lbs", "dqs", "rigid", "irs"])
def test_skinned_and_morphed_gpu_equals_numpy(morphed, method):
    from engine import Session

    asset, node = morphed
    got = {}
    for device in ("cpu", "gpu"):
        with Session(device=device, render=False, deformer=method) as s:
            ch = s.spawn(asset, clip=0, time=0.3, speed=0.0)
            clip_frame = ch.vertices()
            weights = ch.morph_weights(node)
            ch.set_morph_weights(node, [0.2, 0.9])
            got[device] = (clip_frame, ch.vertices(), weights)
    np.testing.assert_allclose(got["gpu"][2], _spec_weights(asset.clips[0].channels[-1], 0.3), atol=1e-6)
    for k in (0, 1):
        for key, cpu in got["cpu"][k].items():
            np.testing.assert_allclose(got["gpu"][k][key], cpu, atol=2e-5)
    # the weights really move the surface (against the same pose at the rest weights)
    with Session(device="gpu", render=False, deformer=method) as s:
        ch = s.spawn(asset, clip=0, time=0.3, speed=0.0)
        ch.set_morph_weights(node, [0.0, 0.0])
        (rest,) = ch.vertices().values()
    (moved,) = got["gpu"][1].values()
    assert np.abs(moved - rest).max() > 0.1


def test_skinned_normals_transform_the_morphed_bind_normals(gl_ctx, morphed):
    from engine.gpu.resources import GpuResources

    asset, node = morphed
    prim = asset.meshes[asset.nodes[node].mesh].primitives[0]
    skin = asset.skins[asset.nodes[node].skin]
    topo = M.prepare_mesh(prim.positions, prim.indices.astype(np.int64), morph_deltas=prim.target_positions)
    ib = np.asarray(skin.inverse_bind, np.float64)
    bind = np.linalg.inv(ib)
    posed = bind.copy()
    posed[1, :3, :3] = bind[1, :3, :3] @ np.array([[1, 0, 0], [0, 0.6, -0.8], [0, 0.8, 0.6]])
    skin_mats = (posed @ ib).astype(np.float32)
    w = np.array([0.8, -0.3], np.float32)
    res = GpuResources(gl_ctx)
    graph = DeformerGraph(gl_ctx, res)
    try:
        h = graph.add_mesh(topo, None, prim.joints, prim.weights, ib, np.array([-1, 0], np.int32),
                           config=default_config("lbs"), normals=prim.normals,
                           morph=(prim.target_positions, prim.target_normals, np.zeros(2, np.float32)))
        plain = graph.add_mesh(M.prepare_mesh(prim.positions, prim.indices.astype(np.int64)), None, prim.joints,
                               prim.weights, ib, np.array([-1, 0], np.int32), config=default_config("lbs"),
                               normals=prim.normals)
        graph.set_morph_weights(h, w)
        for handle in (h, plain):
            graph.set_pose(handle, skin_mats, posed)
        graph.run()
        p, n = graph.download(h)
        c = topo.control_of_display
        j, wt = per_control(topo, prim.joints)[c], per_control(topo, prim.weights)[c]
        np.testing.assert_allclose(p, S.lbs(morph(prim.positions, prim.target_positions, w), j, wt, skin_mats),
                                   atol=1e-5)
        nref = S.lbs_normals(morph_normals(prim.normals, prim.target_normals, w), j, wt, skin_mats)
        np.testing.assert_allclose(n, nref, atol=1e-5)
        # the morphed mesh runs morph -> skin -> copy in a batch of its own; the plain one keeps skin_copy
        stages = {tuple(s.node.stage for s in b.plan.steps) for b in graph._batches.values()}
        assert stages == {("morph", "skin", "copy"), ("skin_copy",)}
        np.testing.assert_allclose(graph.download(plain)[0], S.lbs(prim.positions, j, wt, skin_mats), atol=1e-5)
    finally:
        graph.release()
        res.release_all()


def test_springs_rest_on_the_morphed_shape(morphed):
    """At the bind pose the springs have nothing to correct when their rest is the morphed shape: they give the
    rigid skinning of the morphed mesh (the numpy reference and the GPU alike)."""
    from engine import Session

    asset, node = morphed
    out = {}
    for device in ("cpu", "gpu"):
        for method in ("rigid", "spring"):
            with Session(device=device, render=False, deformer=method) as s:
                ch = s.spawn(asset, clip=0, time=0.0, speed=0.0)
                ch.set_morph_weights(node, [0.5, 0.0])  # the default weights (the clip starts at 0)
                (out[device, method],) = ch.vertices().values()
    bind = asset.meshes[0].primitives[0].positions
    assert np.abs(out["gpu", "rigid"] - bind).max() > 0.1  # morphed, not the bind shape
    for device in ("cpu", "gpu"):
        np.testing.assert_allclose(out[device, "spring"], out[device, "rigid"], atol=1e-4)


@pytest.mark.parametrize("name", SAMPLES)
def test_export_frame_gpu_of_morph_samples(tmp_path, name):
    path = shared_dir("gltf-samples") / name
    out = tmp_path / "frames.npz"
    assert cli.run(["export-frame", str(path), "--device", "gpu", "--times", "0:4:0.5", "--out", str(out)]) == 0
    asset = load(path)
    (ch,) = asset.clips[0].channels
    prim = asset.meshes[asset.nodes[ch.node].mesh].primitives[0]
    world = _world(asset, ch.node)
    z = np.load(out)
    for t, got in zip(z["times"], z[f"node{ch.node}_mesh0_prim0"]):
        local = prim.positions + np.einsum("m,mvc->vc", _spec_weights(ch, float(t)), prim.target_positions)
        np.testing.assert_allclose(got, local @ world[:3, :3].T + world[:3, 3], atol=1e-5)


def test_render_draws_the_static_cube_morphed(tmp_path):
    path = shared_dir("gltf-samples") / "AnimatedMorphCube.glb"
    images = []
    for t in ("0", "1.3"):
        out = tmp_path / f"cube_{t}.png"
        assert cli.run(["render", str(path), "--clip", "0", "--time", t, "--width", "96", "--height", "72",
                        "--camera", "0,1.5,3:0,0,0", "--out", str(out)]) == 0
        from PIL import Image

        images.append(np.asarray(Image.open(out)).astype(np.int32))
    changed = np.abs(images[0] - images[1]).sum(axis=-1) > 30
    assert changed.mean() > 0.05  # the cube's silhouette and shading change with the weights


def test_crowd_and_bake_keep_each_instance_weights(morphed):
    """Characters of one morphed asset share a batch but not their weights; a bake's block of instances takes
    each frame's weights from the clip (GPU equals the numpy reference)."""
    from engine import Session
    from engine.bake import bake

    asset, node = morphed
    times = np.array([0.0, 0.2, 0.45, 0.8, 1.0])
    got = {}
    for device in ("cpu", "gpu"):
        with Session(device=device, render=False, deformer="dqs") as s:
            crowd = [s.spawn(asset, clip=0, time=0.3, speed=0.0, position=(2.0 * i, 0, 0)) for i in range(3)]
            crowd[1].set_morph_weights(node, [1.0, 0.0])
            crowd[2].set_morph_weights(node, [0.0, 1.0])
            s.step(1)
            frames = [next(iter(c.vertices().values())) for c in crowd]
            got[device] = (frames, bake(s, crowd[0], times))
    for a, b in zip(got["cpu"][0], got["gpu"][0]):
        np.testing.assert_allclose(b, a, atol=2e-5)
    assert np.abs(got["gpu"][0][1] - got["gpu"][0][2] - [-2.0, 0, 0]).max() > 0.1  # not the same shape
    for key, cpu in got["cpu"][1].items():
        np.testing.assert_allclose(got["gpu"][1][key], cpu, atol=2e-5)
