"""Automatic weights (bone heat, BBW): valid (>= 0, rows sum to 1, within the limit), each joint owns the skin
near its bone, and the posed mesh does not collapse (close to the asset's own weights' pose)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from engine.scene import load_asset
from engine.skinning.weights.io import primitive_weights
from tests.conftest import ROOT
from tests.helpers.weights_asset import JOINT_NAMES, JOINT_X, cli_refusal, tube_asset


def _pose(path, clip, time):
    from engine import Session

    with Session(device="cpu", render=False, deformer="lbs", strict=True) as s:
        ch = s.spawn(load_asset(path), clip=clip, time=time, speed=0.0, mode="clamp")
        return next(iter(ch.vertices().values()))


def _check(src, out, clip, limit, tol):
    (p,) = primitive_weights(load_asset(out))
    w = p.weights.astype(np.float64)
    assert np.all(w >= 0) and np.abs(w.sum(1) - 1).max() <= 1e-6 and (w > 0).sum(1).max() <= limit
    a, b = _pose(src, clip, 0.5), _pose(out, clip, 0.5)
    diag = float(np.linalg.norm(np.ptp(a, axis=0)))
    # no collapse: the pose stays near the pose of the asset's own weights and keeps its size
    assert np.median(np.linalg.norm(a - b, axis=1)) < tol * diag
    assert abs(np.linalg.norm(np.ptp(b, axis=0)) - diag) < 0.1 * diag
    return p


@pytest.mark.parametrize("method", ["heat", "bbw"])
def test_auto_weights_on_the_tube(tmp_path, method):
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=23, sides=8)
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "weights", "auto", str(src), "--method", method,
                        "--max-influences", "3", "--out", "o.glb"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    p = _check(src, tmp_path / "o.glb", "wave", 3, 0.03)
    d = p.dense()
    # the vertices at each joint's x belong mostly to that joint or its bone's neighbours
    for j, x in enumerate(JOINT_X):
        ring = np.abs(p.positions[:, 0] - x) < 1e-6
        if ring.any() and JOINT_NAMES[j] != "Root":
            assert d[ring].mean(0).argmax() in (j, j - 1 if j not in (1, 5) else 0), (JOINT_NAMES[j], method)


@pytest.mark.parametrize("method", ["heat", "bbw"])
def test_auto_weights_on_the_humanoid(tmp_path, method):
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "weights", "auto", "humanoid", "--method", method,
                        "--out", "h.glb"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    from engine.assets.library import source_path

    _check(source_path("humanoid"), tmp_path / "h.glb", "wave", 4, 0.02)


def test_auto_refuses_bad_limits(tmp_path, capsys):
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=5, sides=4)
    line = cli_refusal(capsys, ["weights", "auto", src, "--method", "heat", "--max-influences", "0", "--out",
                                tmp_path / "o.glb"])
    assert "--max-influences" in line


def test_auto_weights_seeded_by_comovement(tmp_path, capsys):
    """``--seed-clip``: each joint's co-movement region over the clip (its bone's middle as the reference) bounds
    the joints a vertex takes: the still root stays allowed everywhere, the left tip moves with the left arm and
    not with the right (another rhythm); every row of the written weights uses only allowed joints, or (none of
    its joints allowed) is the unseeded row; the seed changes the result."""
    from engine.authoring.weights import auto_weights, comovement_seed
    from tests.helpers.weights_asset import run_cli

    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=23, sides=8)
    loaded = load_asset(src)
    (p,) = primitive_weights(loaded)
    allowed = comovement_seed(loaded, p, "wave", frames=30, threshold=0.75)
    assert allowed.shape == (p.positions.shape[0], len(JOINT_NAMES)) and allowed[:, 0].all()
    tip = int(np.argmax(p.positions[:, 0]))
    assert allowed[tip, 3] and allowed[tip, 4] and not allowed[tip, 5:].any()
    status, out, err = run_cli(capsys, ["weights", "auto", src, "--method", "heat", "--max-influences", "3",
                                        "--seed-clip", "wave", "--out", tmp_path / "s.glb"])
    assert status == 0 and "seeded by co-movement" in out, err
    (q,) = primitive_weights(load_asset(tmp_path / "s.glb"))
    d = q.dense()
    assert np.all(d >= 0) and np.abs(d.sum(1) - 1).max() <= 1e-6 and (d > 0).sum(1).max() <= 3
    np.testing.assert_allclose(d, auto_weights(p, "heat", 3, seed=allowed), atol=1e-6)
    plain = auto_weights(p, "heat", 3)
    inside = ~((d > 0) & ~allowed).any(axis=1)
    assert np.all(inside | np.all(np.abs(d - plain) <= 1e-6, axis=1))
    assert np.abs(d - plain).max() > 0.05  # the regions changed the weights
    _check(src, tmp_path / "s.glb", "wave", 3, 0.03)  # and they still deform the tube without collapse


def test_auto_seed_refusals(tmp_path, capsys):
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=5, sides=4)
    base = ["weights", "auto", src, "--method", "heat", "--out", tmp_path / "o.glb"]
    assert "nope" in cli_refusal(capsys, base + ["--seed-clip", "nope"])
    assert "--seed-threshold" in cli_refusal(capsys, base + ["--seed-clip", "wave", "--seed-threshold", "2"])
    assert "--seed-frames" in cli_refusal(capsys, base + ["--seed-clip", "wave", "--seed-frames", "0"])
    assert "--seed-clip" in cli_refusal(capsys, base + ["--seed-frames", "5"])
    assert not (tmp_path / "o.glb").exists()
