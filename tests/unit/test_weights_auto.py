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
