"""`weights edit` and the classic tools: paint, smooth, normalize (locked joints kept bit for bit), mirror by
name, limit, prune; every output row >= 0, summing to 1 within 1e-6, within the limit; bad ops exit 2."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from engine.scene import load_asset
from engine.skinning.weights import paint as P
from engine.skinning.weights.io import primitive_weights
from engine.skinning.weights.table import normalize
from tests.conftest import ROOT
from tests.helpers.weights_asset import JOINT_NAMES, cli_refusal, tube_asset


@pytest.fixture(scope="module")
def tube(tmp_path_factory):
    return tube_asset(tmp_path_factory.mktemp("edit") / "tube.glb", influences=4, rings=23, sides=8)


def _prim(path):
    (p,) = primitive_weights(load_asset(path))
    return p


def _edit(tmp_path, src, ops, out="out.glb"):
    (tmp_path / "ops.json").write_text(json.dumps({"version": 1, "ops": ops}))
    return subprocess.run([sys.executable, str(ROOT / "main.py"), "weights", "edit", str(src), "--ops", "ops.json",
                           "--out", out], capture_output=True, text=True, cwd=tmp_path)


def _valid(p, limit=None):
    w = p.weights.astype(np.float64)
    assert np.all(w >= 0)
    assert np.abs(w.sum(axis=1) - 1).max() <= 1e-6
    if limit is not None:
        assert (w > 0).sum(axis=1).max() <= limit


def test_edit_ops_keep_locked_joints_bit_for_bit(tube, tmp_path):
    ops = [{"op": "paint", "joint": "Arm.L2", "center": [0.5, 0.1, 0.0], "radius": 0.3, "value": 0.8, "mode": "add"},
           {"op": "smooth", "iterations": 3},
           {"op": "prune", "threshold": 0.02},
           {"op": "normalize", "locked": ["Arm.L1", "Root"]}]
    r = _edit(tmp_path, tube, ops)
    assert r.returncode == 0, r.stderr
    a, b = _prim(tube), _prim(tmp_path / "out.glb")
    da, db = a.dense(), b.dense()
    for name in ("Arm.L1", "Root"):
        j = JOINT_NAMES.index(name)
        assert np.array_equal(da[:, j].astype(np.float32).view(np.uint32), db[:, j].astype(np.float32).view(np.uint32))
    assert np.abs(db - da).max() > 0.05  # the edit did something
    _valid(b)


def test_edit_limit_and_validity(tube, tmp_path):
    r = _edit(tmp_path, tube, [{"op": "limit", "max": 2}])
    assert r.returncode == 0, r.stderr
    _valid(_prim(tmp_path / "out.glb"), limit=2)


def test_paint_modes_and_vertex_lists():
    w = normalize(np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]))
    lock = np.zeros(3, bool)
    f = np.array([1.0, 1.0, 0.0])
    rep = P.paint(w, 2, f, 0.6, "replace", lock)
    np.testing.assert_allclose(rep[:2, 2], 0.6)
    np.testing.assert_allclose(rep.sum(1), 1)
    np.testing.assert_array_equal(rep[2], w[2])  # factor 0: untouched
    np.testing.assert_allclose(rep[0, :2], [0.2, 0.2])  # the others fill the rest in proportion
    add = P.paint(w, 0, f, 0.1, "add", lock)
    np.testing.assert_allclose(add[:2, 0], [0.6, 0.3])
    sub = P.paint(w, 0, f, 0.9, "subtract", lock)
    np.testing.assert_allclose(sub[:2, 0], 0.0)
    with pytest.raises(ValueError, match="locked"):
        P.paint(w, 0, f, 0.1, "add", np.array([True, False, False]))


def test_smoothing_lowers_the_dirichlet_energy(tube):
    p = _prim(tube)
    e = P.edge_graph(p.positions, p.triangles)
    rng = np.random.default_rng(0)
    noisy = normalize(p.dense() + 0.2 * rng.random(p.dense().shape) * (p.dense() > 0))
    lock = np.zeros(p.n_joints, bool)
    out = P.smooth(noisy, e, 4, lock)
    assert P.dirichlet_energy(out, e) < 0.5 * P.dirichlet_energy(noisy, e)
    np.testing.assert_allclose(out.sum(1), 1, atol=1e-12)


def test_mirror_is_symmetric_by_name(tube, tmp_path):
    # break the symmetry on the + side, then mirror + -> -
    ops = [{"op": "paint", "joint": "Arm.L3", "center": [0.6, 0.0, 0.0], "radius": 0.35, "value": 0.9,
            "mode": "replace"},
           {"op": "mirror", "axis": "x", "from": "+"}]
    r = _edit(tmp_path, tube, ops)
    assert r.returncode == 0, r.stderr
    p = _prim(tmp_path / "out.glb")
    d = p.dense()
    perm = P.mirror_map(p.joint_names)
    assert perm[JOINT_NAMES.index("Arm.L3")] == JOINT_NAMES.index("Arm.R3")
    pos = p.positions
    from scipy.spatial import cKDTree

    neg = np.flatnonzero(pos[:, 0] < -1e-4)
    refl = pos[neg] * np.array([-1, 1, 1])
    _, src = cKDTree(pos).query(refl)
    np.testing.assert_allclose(d[neg][:, perm], d[src], atol=2e-7)
    assert d[neg][:, JOINT_NAMES.index("Arm.R3")].max() > 0.8  # the painted side came across
    _valid(p)


def test_prune_and_limit_functions():
    w = normalize(np.array([[0.5, 0.3, 0.15, 0.05], [0.01, 0.01, 0.01, 0.97]]))
    lock = np.zeros(4, bool)
    pr = P.prune(w, 0.1, lock)
    assert pr[0, 3] == 0 and pr[1, :3].sum() == 0 and np.allclose(pr.sum(1), 1)
    lm = P.limit(w, 2, np.array([False, False, False, True]))
    assert (lm[0] > 0).sum() == 2 and lm[0, 3] == 0.05  # the locked joint is kept with its value
    assert np.allclose(lm.sum(1), 1)
    # locked joints leaving room: the row keeps an unlocked weight to fill it, so the locked ones never change
    w = np.array([[0.24, 0.73, 0.03, 0.0]])
    lock = np.array([True, True, False, False])
    for out in (P.prune(w, 0.05, lock), P.limit(w, 3, lock), P.limit(np.array([[0.24, 0.7, 0.03, 0.03]]), 3, lock)):
        assert out[0, 0] == 0.24 and out[0, 1] in (0.73, 0.7) and abs(out.sum() - 1) < 1e-12


@pytest.mark.parametrize("ops, words", [
    ([{"op": "paint", "joint": "Nope", "vertices": [1], "value": 0.5}], "'Nope'"),
    ([{"op": "paint", "joint": "Root", "vertices": [10 ** 6], "value": 0.5}], "out of range"),
    ([{"op": "smooth"}], "missing"),
    ([{"op": "twirl"}], "op must be one of"),
    ([{"op": "limit", "max": 0}], "max"),
    ([{"op": "mirror", "axis": "w", "from": "+"}], "axis"),
    ([{"op": "paint", "joint": "Root", "center": [0, 0, "x"], "radius": 1, "value": 0.5}], "center"),
])
def test_edit_refuses_malformed_ops(tube, tmp_path, capsys, ops, words):
    (tmp_path / "ops.json").write_text(json.dumps({"version": 1, "ops": ops}))
    line = cli_refusal(capsys, ["weights", "edit", tube, "--ops", tmp_path / "ops.json", "--out", tmp_path / "o.glb"])
    assert words in line and not (tmp_path / "o.glb").exists()


def test_edit_refuses_a_bad_version(tube, tmp_path, capsys):
    (tmp_path / "ops.json").write_text('{"version": 2, "ops": []}')
    line = cli_refusal(capsys, ["weights", "edit", tube, "--ops", tmp_path / "ops.json", "--out", tmp_path / "o.glb"])
    assert "version" in line
