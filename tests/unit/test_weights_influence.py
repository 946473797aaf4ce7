"""Lewis-Anjyo co-movement: synthetic trajectories (same motion 1, opposite 1, rotated copy 1, independent noise
low, quadrature 0), a bent tube's region, and the `influence` command's npz."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

from engine.skinning.weights.influence import comovement, region, suggest_joints
from tests.conftest import ROOT
from tests.helpers.weights_asset import cli_refusal, tube_asset


def test_synthetic_scores():
    rng = np.random.default_rng(1)
    f = 200
    t = np.linspace(0, 4 * np.pi, f)
    p = np.stack([np.cos(t), 0.5 * np.sin(2 * t), 0.1 * t], 1)
    rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    quad = np.stack([np.sin(t), np.zeros(f), np.zeros(f)], 1)
    ref = np.stack([np.cos(t), np.zeros(f), np.zeros(f)], 1)
    q = np.stack([p + 3.0, -p, p @ rot.T * 2.0, rng.normal(size=(f, 3)), np.zeros((f, 3))], 1)
    s = comovement(p, q)
    np.testing.assert_allclose(s[:3], 1.0, atol=1e-9)
    assert s[3] < 0.3 and s[4] == 0.0
    assert comovement(ref, quad[:, None])[0] < 1e-9  # quadrature: no linear relation
    assert list(region(s, 0.75)) == [0, 1, 2]


def test_bent_tube_region_and_joints(tmp_path):
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=23, sides=8)
    out = tmp_path / "r.npz"
    tip = 22 * 8  # first vertex of the last ring (x = +1.1, the left arm's end)
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "influence", str(src), "--clip", "wave", "--vertex",
                        f"node9_mesh0_prim0:{tip}", "--frames", "12", "--out", str(out)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    d = np.load(out)
    score, reg = d["node9_mesh0_prim0_score"], d["node9_mesh0_prim0_region"]
    assert score.dtype == np.float32 and score.shape == (23 * 8,) and reg.dtype == np.int32
    from engine.scene import load_asset
    from engine.skinning.weights.io import primitive_weights

    (p,) = primitive_weights(load_asset(src))
    x = p.positions[:, 0]
    np.testing.assert_array_equal(reg, np.flatnonzero(score >= 0.75))
    assert tip in reg and score[tip] > 0.999
    assert set(np.flatnonzero(x > 0.5)) <= set(reg)  # the left forearm moves with its tip
    assert score[x < -0.6].max() < 0.75  # the right arm moves on its own
    assert set(d.files) == {"node9_mesh0_prim0_score", "node9_mesh0_prim0_region"}
    assert "joints: Arm.L3" in r.stdout or "joints: Arm.L4" in r.stdout


def test_suggest_joints_prefers_the_moving_bone():
    f = 20
    t = np.linspace(0, 1, f)
    traj = np.zeros((f, 4, 3))
    traj[:, :2, 0] = np.sin(3 * t)[:, None]
    joints = np.zeros((f, 3, 3))
    joints[:, 1, 0] = 0.5 * np.sin(3 * t)
    joints[:, 2, 1] = np.cos(7 * t)
    best, sc = suggest_joints(traj, np.array([0, 1]), joints, count=2)
    assert best[0] == 1 and sc[0] > 0.99


def test_influence_refuses_bad_input(tmp_path, capsys):
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=5, sides=4)
    for args, words in ((["--vertex", "node9_mesh0_prim0:999"], "out of range"),
                        (["--vertex", "node9_mesh0_prim0:1", "--threshold", "2"], "threshold"),
                        (["--vertex", "node9_mesh0_prim0:1", "--clip", "nope"], "nope")):
        assert words in cli_refusal(capsys, ["influence", src, *args, "--out", tmp_path / "r.npz"])
