"""Mohr 2003 direct manipulation: LBS of the new weights reaches the target projected onto the hull (two and four
bones, inside and outside; the LP with six influences), and the `weights drag` contract through export-frame."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import minimize

from engine.skinning.skinning import lbs
from engine.skinning.weights.mohr import drag_vertex, drag_vertex_poses, hull_points, project_to_hull
from tests.conftest import ROOT
from tests.helpers.weights_asset import cli_refusal, tube_asset


def _mats(rng, n):
    m = np.tile(np.eye(4), (n, 1, 1))
    for i in range(n):
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        m[i, :3, :3] = q * np.sign(np.linalg.det(q))
        m[i, :3, 3] = 0.3 * rng.normal(size=3)
    return m.astype(np.float32)


def _closest_on_hull(q, t):
    """Independent check: the hull's closest point by SLSQP over the simplex."""
    k = q.shape[0]
    r = minimize(lambda w: ((q.T @ w - t) ** 2).sum(), np.full(k, 1 / k), method="SLSQP", bounds=[(0, 1)] * k,
                 constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}], options={"ftol": 1e-15, "maxiter": 500})
    return q.T @ r.x


def _reach(v, mats, joints, w):
    """Where LBS puts vertex v with the new weights (the engine's numpy LBS)."""
    return lbs(v[None], joints[None], w[None].astype(np.float32), mats)[0]


@pytest.mark.parametrize("k", [2, 4, 6])
@pytest.mark.parametrize("where", ["inside", "outside"])
def test_drag_reaches_the_projected_target(k, where):
    rng = np.random.default_rng(k + (10 if where == "outside" else 0))
    mats = _mats(rng, 7)
    v = np.array([0.3, 0.5, -0.2], np.float32)
    joints = rng.permutation(7)[:k]
    prev = rng.random(k)
    prev /= prev.sum()
    q = hull_points(v, mats, joints)
    if where == "inside":
        bary = rng.random(k) + 0.1
        target = q.T @ (bary / bary.sum())
        if k == 2:
            target = q.T @ np.array([0.3, 0.7])
    else:
        target = q.mean(axis=0) + 2.0 * rng.normal(size=3)
    r = drag_vertex(v, mats, joints, prev, target)
    assert np.all(r.weights >= 0) and abs(r.weights.sum() - 1) < 1e-12
    reached = _reach(v, mats, joints, r.weights)
    if where == "inside":
        assert r.inside
        np.testing.assert_allclose(reached, target, atol=1e-5)
    else:
        assert not r.inside
        np.testing.assert_allclose(reached, _closest_on_hull(q, target), atol=1e-5)
        np.testing.assert_allclose(r.reached, _closest_on_hull(q, target), atol=1e-6)


def test_lp_changes_the_weights_least():
    """Six influences, target inside: the LP solution is no farther (L1) from the previous weights than the
    previous weights pushed by any other exact solution found by random barycentrics."""
    rng = np.random.default_rng(3)
    mats = _mats(rng, 6)
    v = np.array([0.1, 0.2, 0.3], np.float32)
    joints = np.arange(6)
    prev = np.full(6, 1 / 6)
    q = hull_points(v, mats, joints)
    target = q.T @ np.array([0.3, 0.1, 0.2, 0.1, 0.2, 0.1])
    r = drag_vertex(v, mats, joints, prev, target)
    np.testing.assert_allclose(q.T @ r.weights, target, atol=1e-9)
    assert np.abs(r.weights - prev).sum() <= np.abs(np.array([0.3, 0.1, 0.2, 0.1, 0.2, 0.1]) - prev).sum() + 1e-9
    assert (r.weights > 0).sum() > 4  # not just a 4-point face: the LP kept weights spread


def test_multi_pose_is_the_least_squares_compromise():
    rng = np.random.default_rng(8)
    poses = [_mats(rng, 3), _mats(rng, 3)]
    v = np.array([0.2, 0.0, 0.1], np.float32)
    joints = np.arange(3)
    targets = [rng.normal(size=3), rng.normal(size=3)]
    r = drag_vertex_poses(v, poses, joints, np.full(3, 1 / 3), targets)
    q = np.hstack([hull_points(v, m, joints) for m in poses])
    np.testing.assert_allclose(q.T @ r.weights, _closest_on_hull(q, np.concatenate(targets)), atol=1e-6)


def test_projection_of_a_point_inside_is_itself():
    q = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    p, w, inside = project_to_hull(q, np.array([0.1, 0.2, 0.3]))
    assert inside and np.allclose(p, [0.1, 0.2, 0.3]) and np.allclose(w, [0.4, 0.1, 0.2, 0.3])
    p, w, inside = project_to_hull(q, np.array([2.0, -1.0, 0.0]))
    assert not inside and np.allclose(p, [1, 0, 0])


def _main(*args, cwd):
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)


@pytest.mark.parametrize("offset", [0.01, 0.5])
def test_weights_drag_contract(tmp_path, offset):
    """export-frame of the written asset puts the vertex at the target's closest point in the hull (within 1e-5
    of the diagonal) and every other vertex where it was."""
    from engine.scene import load_asset
    from engine.skinning.weights.io import primitive_weights

    src = tube_asset(tmp_path / "tube.glb", influences=8, rings=17, sides=8)
    r = _main("export-frame", src, "--clip", "wave", "--time", "0.5", "--device", "cpu", "--out", "before.npz",
              cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    before = np.load(tmp_path / "before.npz")["node9_mesh0_prim0"]
    vtx = 70
    target = before[vtx] + np.array([offset, -offset, 0.3 * offset])
    r = _main("weights", "drag", src, "--clip", "wave", "--time", "0.5", "--vertex", f"node9_mesh0_prim0:{vtx}",
              "--target", ",".join(repr(float(x)) for x in target), "--out", "out.glb", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = _main("export-frame", "out.glb", "--clip", "wave", "--time", "0.5", "--device", "cpu", "--out", "after.npz",
              cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    after = np.load(tmp_path / "after.npz")["node9_mesh0_prim0"]
    diag = float(np.linalg.norm(np.ptp(before, axis=0)))
    (p,) = primitive_weights(load_asset(src))
    from engine.authoring.weights import posed_skin_matrices

    mats = posed_skin_matrices(load_asset(src), [p], clip="wave", time=0.5)[p.key]
    q = hull_points(p.positions[vtx], mats, np.flatnonzero(p.dense()[vtx] > 0))
    expect = _closest_on_hull(q, target)
    assert np.linalg.norm(after[vtx] - expect) <= 1e-5 * diag
    others = np.arange(before.shape[0]) != vtx
    np.testing.assert_allclose(after[others], before[others], atol=1e-6)
    (o,) = primitive_weights(load_asset(tmp_path / "out.glb"))
    assert np.all(o.weights >= 0) and np.abs(o.weights.astype(np.float64).sum(1) - 1).max() <= 1e-6


@pytest.mark.parametrize("args, words", [
    (["--vertex", "node9_mesh0_prim0:100000", "--target", "0,0,0"], "out of range"),
    (["--vertex", "node9_mesh0_prim0:3", "--target", "0,nan,0"], "finite"),
    (["--vertex", "node9_mesh0_prim0:3", "--target", "0,0,0", "--joints", "Arm.L1,Nope"], "'Nope'"),
    (["--vertex", "nodeX:3", "--target", "0,0,0"], "not a skinned primitive"),
])
def test_weights_drag_refuses_bad_input(tmp_path, capsys, args, words):
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=5, sides=4)
    line = cli_refusal(capsys, ["weights", "drag", src, "--clip", "wave", "--time", "0.5", *args, "--out",
                                tmp_path / "o.glb"])
    assert words in line and not (tmp_path / "o.glb").exists()


def test_weights_drag_refuses_an_asset_without_a_skin(tmp_path, capsys):
    from engine.assets.writer import GltfBuilder

    b = GltfBuilder()
    m = b.add_mesh("m", [dict(positions=np.eye(3, dtype=np.float32), indices=np.array([0, 1, 2]))])
    b.add_scene([b.add_node("n", mesh=m)])
    b.save_glb(tmp_path / "static.glb")
    line = cli_refusal(capsys, ["weights", "drag", tmp_path / "static.glb", "--vertex", "node0_mesh0_prim0:0",
                                "--target", "0,0,0", "--out", tmp_path / "o.glb"])
    assert "no skin" in line


def _poses_file(path, poses, version=1):
    import json

    path.write_text(json.dumps({"version": version, "poses": [
        {"clip": c, "time": t, "target": [float(x) for x in p]} for c, t, p in poses]}))
    return path


def _frame(capsys, asset, time, out):
    from tests.helpers.weights_asset import run_cli

    status, _, err = run_cli(capsys, ["export-frame", asset, "--clip", "wave", "--time", time, "--device", "cpu",
                                      "--out", out])
    assert status == 0, err
    return np.load(out)["node9_mesh0_prim0"]


def test_weights_drag_poses(tmp_path, capsys):
    """``weights drag --poses P.json``: two poses whose targets one set of weights reaches are both met (through
    export-frame, within 1e-5 of the diagonal); unreachable ones give the least-squares compromise (the stacked
    targets' closest point of the stacked hull, checked by SLSQP); one pose equals the --target form byte for
    byte; other vertices keep their places."""
    from engine.authoring.weights import posed_skin_matrices
    from engine.scene import load_asset
    from engine.skinning.weights.io import primitive_weights
    from tests.helpers.weights_asset import run_cli

    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=17, sides=8)
    (p,) = primitive_weights(load_asset(src))
    vtx = 70
    idx = np.flatnonzero(p.dense()[vtx] > 0)
    assert idx.size >= 2
    mats = [posed_skin_matrices(load_asset(src), [p], clip="wave", time=t)[p.key] for t in (0.25, 0.75)]
    q = [hull_points(p.positions[vtx], m, idx) for m in mats]
    want = np.linspace(1.0, 2.0, idx.size)
    want /= want.sum()  # weights unlike the vertex's own: the targets they reach
    targets = [qq.T @ want for qq in q]
    before = [_frame(capsys, src, t, tmp_path / f"b{t}.npz") for t in (0.25, 0.75)]
    diag = float(np.linalg.norm(np.ptp(before[0], axis=0)))
    assert np.linalg.norm(before[0][vtx] - targets[0]) > 1e-3 * diag  # a real move
    key = f"node9_mesh0_prim0:{vtx}"
    f = _poses_file(tmp_path / "p.json", [("wave", 0.25, targets[0]), ("wave", 0.75, targets[1])])
    status, out, err = run_cli(capsys, ["weights", "drag", src, "--vertex", key, "--poses", f, "--out",
                                        tmp_path / "two.glb"])
    assert status == 0 and "over 2 poses" in out, err
    for t, b, target in zip((0.25, 0.75), before, targets):
        after = _frame(capsys, tmp_path / "two.glb", t, tmp_path / f"a{t}.npz")
        assert np.linalg.norm(after[vtx] - target) <= 1e-5 * diag
        others = np.arange(b.shape[0]) != vtx
        np.testing.assert_allclose(after[others], b[others], atol=1e-6)
    # unreachable targets: the compromise
    far = [targets[0] + np.array([0.0, 0.3, 0.0]), targets[1] - np.array([0.2, 0.0, 0.1])]
    f = _poses_file(tmp_path / "far.json", [("wave", 0.25, far[0]), ("wave", 0.75, far[1])])
    status, _, err = run_cli(capsys, ["weights", "drag", src, "--vertex", key, "--poses", f, "--out",
                                      tmp_path / "far.glb"])
    assert status == 0, err
    expect = _closest_on_hull(np.hstack(q), np.concatenate(far))
    got = np.concatenate([_frame(capsys, tmp_path / "far.glb", t, tmp_path / f"f{t}.npz")[vtx] for t in (0.25, 0.75)])
    assert np.linalg.norm(got - expect) <= 1e-4 * diag
    # one pose in the file: exactly the single-pose command
    f = _poses_file(tmp_path / "one.json", [("wave", 0.5, far[0])])
    one = ["weights", "drag", src, "--vertex", key, "--poses", f, "--out", tmp_path / "o1.glb"]
    assert run_cli(capsys, one)[0] == 0
    assert run_cli(capsys, ["weights", "drag", src, "--clip", "wave", "--time", "0.5", "--vertex", key, "--target",
                            ",".join(repr(float(x)) for x in far[0]), "--out", tmp_path / "o2.glb"])[0] == 0
    (a,), (b,) = primitive_weights(load_asset(tmp_path / "o1.glb")), primitive_weights(load_asset(tmp_path / "o2.glb"))
    assert a.weights.tobytes() == b.weights.tobytes() and a.joints.tobytes() == b.joints.tobytes()


@pytest.mark.parametrize("poses, extra, words", [
    ([("wave", 0.5, [0, 0, 0])], ["--target", "0,0,0"], "--target and --poses"),
    ([("wave", 0.5, [0, 0, 0])], ["--time", "0.5"], "--clip/--time with --poses"),
    ([("nope", 0.5, [0, 0, 0]), ("wave", 0.1, [0, 0, 0])], [], "poses[0].clip: no clip 'nope'"),
    ([("wave", 0.5, [0, 0]), ("wave", 0.1, [0, 0, 0])], [], "poses[0].target"),
    ([], [], "poses: must be a list of 1 to 64"),
    (None, [], "version: must be 1"),
    ("missing", [], "--target X,Y,Z (or --poses FILE) is required"),
])
def test_weights_drag_poses_refusals(tmp_path, capsys, poses, extra, words):
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=5, sides=4)
    args = ["weights", "drag", src, "--vertex", "node9_mesh0_prim0:3", *extra, "--out", tmp_path / "o.glb"]
    if poses != "missing":
        f = _poses_file(tmp_path / "p.json", [("wave", 0.5, [0, 0, 0])] if poses is None else poses,
                        version=2 if poses is None else 1)
        args += ["--poses", f]
    line = cli_refusal(capsys, args)
    assert words in line and not (tmp_path / "o.glb").exists(), line
