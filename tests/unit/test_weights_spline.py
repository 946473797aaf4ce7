"""Bang-Lee isoline splines: the joint's field hits the iso-values at the strokes, the local solve leaves vertices
outside its region alone, the anchor basis K reproduces the solve, and the `weights spline` command."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from engine.authoring.weights import _densify3
from engine.scene import load_asset
from engine.skinning.weights.io import primitive_weights
from engine.skinning.weights.spline import SplineField, SplineSamples, closest_surface_points
from tests.conftest import ROOT
from tests.helpers.weights_asset import JOINT_NAMES, cli_refusal, tube_asset


def _ring(x, r=0.1, n=9):
    a = np.linspace(0, 2 * np.pi, n)
    return [[x, r * np.cos(t), r * np.sin(t)] for t in a]


@pytest.fixture(scope="module")
def tube(tmp_path_factory):
    return tube_asset(tmp_path_factory.mktemp("spline") / "tube.glb", influences=4, rings=45, sides=12)


def _samples(topo, pts):
    f, b = closest_surface_points(topo.positions, topo.triangles, _densify3(np.asarray(pts), 0.01))
    return SplineSamples(f, b, np.linspace(0, 1, len(f)), np.zeros(1))


@pytest.mark.parametrize("local", [False, True])
def test_field_hits_iso_values_and_the_anchor_basis_matches(tube, local):
    (p,) = primitive_weights(load_asset(tube))
    topo = p.skinned.topology()
    j = JOINT_NAMES.index("Arm.L2")
    cur = p.dense()[topo.display_of_control, j]
    sp = [_samples(topo, _ring(0.6)), _samples(topo, _ring(0.3))]
    field = SplineField(topo.positions, topo.triangles, cur, sp, local=local, topology=topo)
    for isos in ([0.9, 0.1], [0.5, 0.2], [0.0, 1.0]):
        w = field.weights(np.array(isos))
        vals = field.sample_values(w)
        n0 = sp[0].faces.size
        assert np.abs(vals[:n0] - isos[0]).max() < 0.02 and np.abs(vals[n0:] - isos[1]).max() < 0.02
    if local:
        out = np.setdiff1d(np.arange(topo.n_control), field.free)
        assert out.size > 0
        np.testing.assert_array_equal(field.weights(np.array([0.9, 0.1]))[out], np.clip(cur[out], 0, 1))
    if not local:  # K: the direct solve of (alpha Q + A^T A) w = A^T s with s from the anchors equals c + K a
        import scipy.sparse.linalg as spla

        a = np.array([0.7, 0.3])
        lam = field.constraint_weight
        direct = spla.spsolve((field.alpha * field.q + lam * (field.a.T @ field.a)).tocsc(),
                              lam * (field.a.T @ (field.h @ a)))
        np.testing.assert_allclose(field.c + field.k @ a, direct, atol=1e-9)


def test_weights_spline_command(tube, tmp_path, capsys):
    strokes = {"version": 1, "strokes": [
        {"role": "isoline", "space": "world", "iso": 0.8, "points": _ring(0.55)},
        {"role": "isoline", "space": "world", "iso": 0.2, "points": _ring(0.25)}]}
    (tmp_path / "s.json").write_text(json.dumps(strokes))
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "weights", "spline", str(tube), "--joint", "Arm.L2",
                        "--splines", "s.json", "--local", "--out", "o.glb"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (p,) = primitive_weights(load_asset(tmp_path / "o.glb"))
    d = p.dense()
    j = JOINT_NAMES.index("Arm.L2")
    for s in strokes["strokes"]:
        f, b = closest_surface_points(p.positions, p.triangles, _densify3(np.asarray(s["points"]), 0.01))
        assert np.abs((b * d[p.triangles[f], j]).sum(1) - s["iso"]).max() < 0.02
    w = p.weights.astype(np.float64)
    assert np.all(w >= 0) and np.abs(w.sum(1) - 1).max() <= 1e-6
    # bad input: an iso outside [0, 1], an unknown joint
    strokes["strokes"][0]["iso"] = 1.5
    (tmp_path / "bad.json").write_text(json.dumps(strokes))
    for args, words in ((["--joint", "Arm.L2", "--splines", tmp_path / "bad.json"], "iso"),
                        (["--joint", "Nope", "--splines", tmp_path / "s.json"], "'Nope'")):
        assert words in cli_refusal(capsys, ["weights", "spline", tube, *args, "--out", tmp_path / "x.glb"])
