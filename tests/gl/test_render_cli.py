"""`main.py render` end to end on small assets: the PNG, the npz channels (keys, dtypes, shapes, -1
background), positions equal to the barycentric interpolation of the named deformed triangle, and the
stored view / projection matrices put a known world point on its pixel."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine import Session
from engine.assets import load
from engine.render.surface import interpolate_surface, pixel_of
from game.commands.render_frame import render_frame
from tests.conftest import ROOT, shared_dir

pytestmark = pytest.mark.gl

W, H = 96, 72
FLOATS3 = ("position", "normal", "barycentric")
INTS = ("triangle", "node", "mesh", "primitive")


def _args(asset, out, *extra):
    from main import build_parser

    return build_parser().parse_args(["render", str(asset), "--width", str(W), "--height", str(H), "--out",
                                      str(out / "frame.png"), "--gbuffer", str(out / "frame.npz"),
                                      "--device", "cpu", *extra])


def _check_npz(path, asset_path, clip, time):
    g = np.load(path)
    assert set(g.files) == set(FLOATS3) | set(INTS) | {"depth", "view", "projection"}
    for k in FLOATS3:
        assert g[k].shape == (H, W, 3) and g[k].dtype == np.float32, k
    for k in INTS:
        assert g[k].shape == (H, W) and g[k].dtype == np.int32, k
    assert g["depth"].shape == (H, W) and g["depth"].dtype == np.float32
    assert g["view"].shape == (4, 4) and g["projection"].shape == (4, 4) and g["view"].dtype == np.float32
    hit = g["triangle"] >= 0
    assert 30 < hit.sum() < H * W - 30, "the asset should cover part of the image, not none or all of it"
    for k in INTS:
        assert np.all(g[k][~hit] == -1) and np.all(g[k][hit] >= 0), k
    assert np.all(g["depth"][~hit] == 1.0) and np.all((g["depth"][hit] > 0) & (g["depth"][hit] < 1))
    # positions are the barycentric interpolation of the named triangle of the deformed mesh
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asset = load(asset_path)
    with Session(device="cpu", render=False, strict=True) as s:
        ch = s.spawn(asset, clip=clip, time=time, speed=0.0, mode="clamp")
        meshes = {tuple(k): pos for k, pos in ch.vertices().items()}
    allp = np.concatenate(list(meshes.values()))
    size = float(np.linalg.norm(allp.max(0) - allp.min(0)))
    for key, pos in meshes.items():
        sel = hit & (g["node"] == key[0]) & (g["mesh"] == key[1]) & (g["primitive"] == key[2])
        if not sel.any():
            continue
        tris = asset.meshes[key[1]].primitives[key[2]].indices
        interp, _ = interpolate_surface(pos, tris, g["triangle"][sel], g["barycentric"][sel])
        err = np.linalg.norm(interp - g["position"][sel], axis=1)
        assert err.max() < 1e-3 * size, f"{key}: position error {err.max():.2e} for model size {size:.2f}"
    # view / projection reproduce the pixel (and depth) of a surface point
    ys, xs = np.nonzero(hit)
    i = len(ys) // 2
    px = pixel_of(g["projection"].astype(np.float64) @ g["view"].astype(np.float64), g["position"][ys[i], xs[i]],
                  W, H)
    assert abs(px[0] - (xs[i] + 0.5)) < 0.02 and abs(px[1] - (ys[i] + 0.5)) < 0.02
    assert abs(px[2] - g["depth"][ys[i], xs[i]]) < 1e-4
    return g


def test_render_cylinder_with_camera(tmp_path):
    asset = ROOT / "assets" / "cylinder.glb"
    assert render_frame(_args(asset, tmp_path, "--camera", "1.5,1.2,2.5:0,0.6,0", "--fov", "40")) == 0
    from PIL import Image

    img = np.asarray(Image.open(tmp_path / "frame.png"))
    assert img.shape[:2] == (H, W)
    g = _check_npz(tmp_path / "frame.npz", asset, None, 0.0)
    # the camera looks at (0, 0.6, 0): the image centre's ray passes through that point
    vp = g["projection"].astype(np.float64) @ g["view"].astype(np.float64)
    c = pixel_of(vp, [0.0, 0.6, 0.0], W, H)
    np.testing.assert_allclose(c[:2], [W / 2, H / 2], atol=1e-3)


def test_render_rigged_simple_animated(tmp_path):
    asset = shared_dir("gltf-samples") / "RiggedSimple.glb"
    assert render_frame(_args(asset, tmp_path, "--clip", "0", "--time", "0.6")) == 0
    g = _check_npz(tmp_path / "frame.npz", asset, "0", 0.6)
    assert set(np.unique(g["node"][g["node"] >= 0])) <= set(range(64))


def test_render_debug_view_and_bad_arguments(tmp_path):
    asset = ROOT / "assets" / "cylinder.glb"
    assert render_frame(_args(asset, tmp_path, "--view", "normal")) == 0
    from PIL import Image

    img = np.asarray(Image.open(tmp_path / "frame.png"))[..., :3].astype(int)
    g = np.load(tmp_path / "frame.npz")
    hit = g["triangle"] >= 0
    # the normal view shows n * 0.5 + 0.5 of the stored normals
    np.testing.assert_allclose(img[hit] / 255.0, g["normal"][hit] * 0.5 + 0.5, atol=0.03)
    with pytest.raises(ValueError, match="--view must be one of"):
        render_frame(_args(asset, tmp_path, "--view", "bogus"))
    with pytest.raises(ValueError, match="camera must look like"):
        render_frame(_args(asset, tmp_path, "--camera", "1,2:3"))
    with pytest.raises(ValueError, match="--up must"):
        render_frame(_args(asset, tmp_path, "--up", "0,1"))
