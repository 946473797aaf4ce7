"""Silhouette editing (issue 12 item 4, research 7.3): the Laplacian edge filter of the G-buffer finds the
cylinder's two outline columns seen from the side; an accent stroke beside the right outline moves that chain
onto itself (edit command, role "silhouette") with the static ring held."""
from __future__ import annotations

import json

import numpy as np
import pytest

from engine import Session
from engine.render.camera import Camera
from engine.skinning import roi
from game.cli import run
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

W, H = 240, 240
EYE, TARGET = [0.0, 0.5, 1.2], [0.0, 0.5, 0.0]
CYLINDER = ROOT / "assets" / "cylinder.glb"


def _project(cam, p):
    c = cam.projection_for(W / H) @ cam.view @ np.r_[p, 1.0]
    return [float((c[0] / c[3] + 1) * 0.5 * W), float((1 - c[1] / c[3]) * 0.5 * H)]


@pytest.mark.parametrize("channel", ["normal", "position"])
def test_cylinder_outline_from_the_side(channel):
    with Session(width=W, height=H, deformer="spring", strict=True) as s:
        ch = s.spawn(str(CYLINDER), clip=None)
        s.camera = Camera(eye=np.array(EYE), target=np.array(TARGET), aspect=W / H, near=0.1, far=10.0)
        s.render()
        gb = s.gbuffer()
        key = ch.skinned_primitives[0]
        surface = gb["mesh"] >= 0
        mask = roi.silhouette_pixels(gb[channel], surface, threshold=roi.SILHOUETTE_THRESHOLDS[channel])
        topo = ch.topology(key)
        x = np.asarray(topo.positions, np.float64)
        sil = roi.silhouette_vertices(topo, gb["triangle"][mask], gb["barycentric"][mask], positions=x,
                                      eye=np.array(EYE))
    r = float(np.abs(x[:, 0]).max())
    wall = sil[(x[sil, 1] > 0.1) & (x[sil, 1] < 0.9)]
    assert wall.size > 20
    # every silhouette vertex of the wall is on one of the two outline columns seen from +Z: x = -r or x = +r
    assert np.all(np.abs(x[wall, 0]) > 0.95 * r) and np.all(np.abs(x[wall, 2]) < 0.35 * r)
    assert (x[wall, 0] > 0).sum() > 8 and (x[wall, 0] < 0).sum() > 8
    # and the interior of the wall (facing the camera) is not silhouette
    front = np.flatnonzero((x[:, 2] > 0.9 * r) & (x[:, 1] > 0.2) & (x[:, 1] < 0.8))
    assert not set(front.tolist()) & set(wall.tolist())


def test_accent_stroke_moves_the_outline(tmp_path):
    cam = Camera(eye=np.array(EYE), target=np.array(TARGET), aspect=W / H, near=0.1, far=10.0)
    px = 0.02  # the accent stroke runs 2 cm right of the outline x = r (in the plane z = 0)
    pts = [_project(cam, [0.1 + px, y, 0.0]) for y in (0.35, 0.5, 0.65)]
    doc = {"version": 1, "camera": {"eye": EYE, "target": TARGET, "fov": 45, "width": W, "height": H},
           "strokes": [{"role": "silhouette", "space": "window", "points": pts, "rings": 2}]}
    (tmp_path / "sil.json").write_text(json.dumps(doc))
    out = tmp_path / "sil.npz"
    assert run(["edit", str(CYLINDER), "--strokes", str(tmp_path / "sil.json"), "--export-frame", str(out),
                "--save", str(tmp_path / "sil_edits.json")]) == 0
    assert run(["export-frame", str(CYLINDER), "--deformer", "spring", "--out", str(tmp_path / "plain.npz")]) == 0
    a, plain = np.load(out), np.load(tmp_path / "plain.npz")
    key = next(k for k in a.files if not k.endswith(("_kinematic", "_passive", "_static")))
    kin, static = a[f"{key}_kinematic"], a[f"{key}_static"]
    x0 = plain[key]
    assert kin.size >= 6
    assert np.all(x0[kin, 0] > 0.09) and x0[kin, 1].min() > 0.3 and x0[kin, 1].max() < 0.7  # the right outline
    d = a[key] - x0
    assert 0.008 < d[kin, 0].mean() < 0.025  # pulled out towards the accent stroke
    assert np.abs(d[static]).max() < 1e-4
    saved = json.loads((tmp_path / "sil_edits.json").read_text())
    assert saved["primitives"][key]["edits"][0]["kinematic"]


def test_laplacian_solver_meets_the_stroke(tmp_path):
    """--solver laplacian: the CPU baseline puts the chain on the accent stroke exactly, holds the static ring
    and leaves the rest where the deformer put it."""
    cam = Camera(eye=np.array(EYE), target=np.array(TARGET), aspect=W / H, near=0.1, far=10.0)
    pts = [_project(cam, [0.12, y, 0.0]) for y in (0.35, 0.5, 0.65)]
    doc = {"version": 1, "camera": {"eye": EYE, "target": TARGET, "fov": 45, "width": W, "height": H},
           "strokes": [{"role": "silhouette", "space": "window", "points": pts, "rings": 2}]}
    (tmp_path / "sil.json").write_text(json.dumps(doc))
    out = tmp_path / "lap.npz"
    assert run(["edit", str(CYLINDER), "--strokes", str(tmp_path / "sil.json"), "--solver", "laplacian",
                "--export-frame", str(out), "--screenshot", str(tmp_path / "lap.png")]) == 0
    assert run(["export-frame", str(CYLINDER), "--deformer", "spring", "--out", str(tmp_path / "plain.npz")]) == 0
    a, plain = np.load(out), np.load(tmp_path / "plain.npz")
    key = next(k for k in a.files if not k.endswith(("_kinematic", "_passive", "_static")))
    kin, pas, static = (a[f"{key}_{s}"] for s in ("kinematic", "passive", "static"))
    d = a[key] - plain[key]
    # each chain vertex keeps its depth and lands on the stroke's vertical line x = 0.12 (seen from +Z)
    z = a[key][kin, 2]
    x_on_line = 0.12 * (EYE[2] - z) / EYE[2]
    np.testing.assert_allclose(a[key][kin, 0], x_on_line, atol=2e-3)
    assert np.abs(d[pas]).max() > 1e-3 and np.abs(d[static]).max() < 1e-6
    outside = np.ones(len(d), bool)
    outside[np.concatenate([kin, pas, static])] = False
    assert np.abs(d[outside]).max() < 1e-6


def test_silhouette_refusals(tmp_path, capsys):
    doc = {"version": 1, "camera": {"eye": EYE, "target": TARGET, "fov": 45, "width": W, "height": H},
           "strokes": [{"role": "silhouette", "space": "window", "points": [[150, 100], [150, 140]],
                        "channel": "albedo"}]}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert run(["edit", str(CYLINDER), "--strokes", str(tmp_path / "bad.json"), "--export-frame",
                str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "channel" in err[0]
