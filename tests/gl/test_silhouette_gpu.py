"""The silhouette filter on the GPU (issue 12 item 4, research 7.3): render/silhouette.comp finds the same
silhouette pixels as the numpy reference (engine.skinning.roi over Session.gbuffer()) on the cylinder seen from
the side and on the humanoid, for every channel, with and without the compositor's frame id targets; only the
selected meshes' pixels come back; the "silhouette" debug view shows the same pixels; the silhouette tool picks
the same edit with either filter; ``edit --debug-silhouette`` writes the view."""
from __future__ import annotations

import json

import numpy as np
import pytest

from engine import Session
from engine.authoring.silhouette import silhouette_edit
from engine.render.camera import Camera
from engine.render.look import LookSettings
from engine.render.silhouette import SILHOUETTE_CHANNELS, SILHOUETTE_THRESHOLDS
from engine.skinning import roi
from game.cli import run
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

CYLINDER = ROOT / "assets" / "cylinder.glb"
EYE, TARGET = [0.0, 0.5, 1.2], [0.0, 0.5, 0.0]


def _mesh_ids(s, ch):
    return [i.handle.id for i in s.meshes.instances[ch.entity] if i.skinned is not None]


def _same_as_reference(s, ch, channel):
    """The GPU pixels and filter values of one channel against the numpy reference of the same frame."""
    gb = s.gbuffer()
    surface = gb["mesh"] >= 0
    thr = SILHOUETTE_THRESHOLDS[channel]
    ref_values = roi.laplacian_edges(gb[channel])
    ref = roi.silhouette_pixels(gb[channel], surface, threshold=thr)
    got = s.renderer.silhouette_pixels(channel, mesh_ids=_mesh_ids(s, ch))
    assert ref.sum() > 50, channel
    differ = got.mask() != ref
    # float32 GPU vs float64 reference: a pixel may only flip where the reference sits on the threshold
    assert np.all(np.abs(ref_values[differ] - thr) < 1e-3 * thr), (channel, int(differ.sum()))
    assert differ.sum() <= 2, channel
    values = s.renderer.silhouette_edges(channel)
    np.testing.assert_allclose(values[surface], ref_values[surface], atol=0.01 * thr, rtol=1e-4)
    assert not values[~surface].any()
    # what the tool reads back: triangle and barycentrics of each pixel, as the G-buffer holds them
    same = ~differ[got.rows, got.cols]
    np.testing.assert_array_equal(got.triangle[same], gb["triangle"][got.rows, got.cols][same])
    np.testing.assert_allclose(got.barycentric[same], gb["barycentric"][got.rows, got.cols][same], atol=0)
    return got


@pytest.mark.parametrize("channel", SILHOUETTE_CHANNELS)
def test_cylinder_from_the_side(channel):
    with Session(width=200, height=200, deformer="lbs", strict=True) as s:
        ch = s.spawn(str(CYLINDER), clip=None)
        s.camera = Camera(eye=np.array(EYE), target=np.array(TARGET), aspect=1.0, near=0.1, far=10.0)
        s.render()
        got = _same_as_reference(s, ch, channel)
        # the two outline columns, left and right of the middle
        assert (got.cols < 100).sum() > 50 and (got.cols >= 100).sum() > 50
        assert len(s.renderer.silhouette_pixels(channel, mesh_ids=[max(_mesh_ids(s, ch)) + 1])) == 0


@pytest.mark.parametrize("shadows", ["blob", "map"])  # "map": the compositor writes the frame id targets
def test_humanoid_side_view(shadows):
    with Session(width=240, height=200, deformer="lbs", look=LookSettings(shadows=shadows), strict=True) as s:
        ch = s.spawn("humanoid", clip="idle", speed=0.0)
        s.fit_camera(direction=(1.0, 0.2, 0.3))
        s.render()
        assert s.renderer._frame_ids_written == (shadows == "map")
        for channel in SILHOUETTE_CHANNELS:
            _same_as_reference(s, ch, channel)


def test_debug_view_shows_the_filter():
    with Session(width=240, height=200, deformer="lbs", strict=True) as s:
        ch = s.spawn("humanoid", clip="idle", speed=0.0)
        s.fit_camera(direction=(1.0, 0.2, 0.0))
        s.render()
        gb = s.gbuffer()
        surface = gb["mesh"] >= 0
        for channel in ("normal", "depth"):
            img = s.silhouette_image(channel)
            yellow = (img[..., 0] > 200) & (img[..., 1] > 150) & (img[..., 2] < 80)
            ref = roi.silhouette_pixels(gb[channel], surface, threshold=SILHOUETTE_THRESHOLDS[channel])
            assert ref.sum() > 50 and (yellow != ref).sum() <= 2, channel
            assert img[~surface][..., :3].max() < 40  # no surface: the debug views' dark clear
        assert s.renderer.view == "color"  # restored
        lit = s.render()
        assert not np.array_equal(lit, img)
        assert _mesh_ids(s, ch)
        with pytest.raises(ValueError, match="channel"):
            s.silhouette_image("albedo")
        with pytest.raises(ValueError, match="threshold"):
            s.silhouette_image("normal", -1.0)


def test_tool_picks_the_same_edit_with_either_filter():
    w = h = 240
    cam = Camera(eye=np.array(EYE), target=np.array(TARGET), aspect=1.0, near=0.1, far=10.0)
    m = cam.projection_for(1.0) @ cam.view
    pts = []
    for y in (0.35, 0.5, 0.65):
        c = m @ np.array([0.12, y, 0.0, 1.0])
        pts.append([(c[0] / c[3] + 1) * 0.5 * w, (1 - c[1] / c[3]) * 0.5 * h])
    with Session(width=w, height=h, deformer="spring", strict=True) as s:
        ch = s.spawn(str(CYLINDER), clip=None)
        s.camera = cam
        s.render()
        key_g, gpu = silhouette_edit(s, ch, np.array(pts), rings=2, gpu=True)
        key_n, ref = silhouette_edit(s, ch, np.array(pts), rings=2, gpu=False)
    assert key_g == key_n
    for name in ("kinematic", "passive", "static"):
        np.testing.assert_array_equal(getattr(gpu, name), getattr(ref, name))
    np.testing.assert_allclose(gpu.local_targets(), ref.local_targets(), atol=1e-9)


def test_edit_debug_silhouette(tmp_path, capsys):
    w = h = 200
    doc = {"version": 1, "camera": {"eye": EYE, "target": TARGET, "fov": 45, "width": w, "height": h},
           "strokes": [{"role": "silhouette", "space": "window", "points": [[130, 80], [132, 120]], "rings": 1,
                        "channel": "depth"}]}
    (tmp_path / "sil.json").write_text(json.dumps(doc))
    png = tmp_path / "dbg" / "sil.png"
    assert run(["edit", str(CYLINDER), "--strokes", str(tmp_path / "sil.json"), "--export-frame",
                str(tmp_path / "x.npz"), "--debug-silhouette", str(png)]) == 0
    from PIL import Image

    img = np.asarray(Image.open(png))
    assert img.shape == (h, w, 4)
    yellow = (img[..., 0] > 200) & (img[..., 1] > 150) & (img[..., 2] < 80)
    assert yellow.sum() > 100 and (yellow.sum(0) > 0).sum() <= 8  # the two outline columns (depth channel)
    capsys.readouterr()
    assert run(["edit", str(CYLINDER), "--strokes", str(tmp_path / "sil.json"), "--export-frame",
                str(tmp_path / "x.npz"), "--debug-silhouette", str(tmp_path / "sil.jpg")]) == 2
    assert "--debug-silhouette must end in .png" in capsys.readouterr().err
