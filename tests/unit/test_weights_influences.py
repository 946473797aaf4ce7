"""More than four influences per vertex: every JOINTS_n/WEIGHTS_n set is read, skinned (numpy LBS/DQS against an
explicit 8-term reference), written back, and exported; `inspect` reports the slots."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from engine.assets.gltf import load
from engine.scene import load_asset
from engine.skinning.skinning import dqs, lbs
from engine.skinning.weights.io import primitive_weights, save_weights
from tests.conftest import ROOT
from tests.helpers.weights_asset import JOINT_NAMES, tube_asset, tube_mesh, tube_weights


@pytest.fixture(scope="module")
def tube8(tmp_path_factory):
    return tube_asset(tmp_path_factory.mktemp("w8") / "tube8.glb", influences=8)


def _random_skin_mats(rng, n):
    m = np.tile(np.eye(4), (n, 1, 1))
    for i in range(n):
        a = rng.normal(size=3)
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        m[i, :3, :3] = q * np.sign(np.linalg.det(q))
        m[i, :3, 3] = a
    return m.astype(np.float32)


def test_loader_keeps_all_eight_influences_sorted(tube8):
    prim = load(tube8).meshes[0].primitives[0]
    pos, _ = tube_mesh()
    j, w = tube_weights(pos, 8)
    assert prim.joints.shape == (pos.shape[0], 8) and prim.weights.shape == (pos.shape[0], 8)
    assert (prim.weights > 0).sum(axis=1).min() == 8
    assert np.all(np.diff(prim.weights, axis=1) <= 0)  # sorted, largest first
    dense_in = np.zeros((pos.shape[0], len(JOINT_NAMES)))
    np.put_along_axis(dense_in, j.astype(np.int64), w, axis=1)
    dense_out = np.zeros_like(dense_in)
    np.put_along_axis(dense_out, prim.joints.astype(np.int64), prim.weights, axis=1)
    np.testing.assert_allclose(dense_out, dense_in, atol=1e-7)


def test_lbs_and_dqs_use_every_influence():
    rng = np.random.default_rng(5)
    v, k, nj = 50, 8, 11
    pos = rng.normal(size=(v, 3)).astype(np.float32)
    joints = np.stack([rng.permutation(nj)[:k] for _ in range(v)])
    w = rng.random((v, k)).astype(np.float32)
    w /= w.sum(axis=1, keepdims=True)
    mats = _random_skin_mats(rng, nj)
    ref = np.zeros((v, 3))
    for i in range(v):  # the definition, term by term over all 8 influences
        for s in range(k):
            ref[i] += w[i, s] * (mats[joints[i, s]].astype(np.float64) @ np.append(pos[i], 1.0))[:3]
    np.testing.assert_allclose(lbs(pos, joints, w, mats), ref, atol=2e-5)
    four = lbs(pos, joints[:, :4], w[:, :4] / w[:, :4].sum(1, keepdims=True), mats)
    assert np.abs(four - ref).max() > 1e-2  # the extra influences matter
    # DQS of rigid matrices with 8 slots equals DQS of the same influences split over two 4-slot calls' blend:
    # check it against a per-vertex blend of dual quaternions written out here
    out = dqs(pos, joints, w, mats)
    from engine.math import quat as Q
    qr = Q.from_matrix(mats[:, :3, :3].astype(np.float64))
    for i in range(0, v, 7):
        q = qr[joints[i]]
        piv = q[np.argmax(w[i])]
        sw = np.where(q @ piv < 0, -w[i], w[i])
        r = (sw[:, None] * q).sum(0)
        t = np.concatenate([mats[joints[i], :3, 3], np.zeros((k, 1))], 1)
        d = (sw[:, None] * (0.5 * Q.multiply(t, q))).sum(0)
        n = np.linalg.norm(r)
        r, d = r / n, d / n
        trans = 2 * (r[3] * d[:3] - d[3] * r[:3] + np.cross(r[:3], d[:3]))
        np.testing.assert_allclose(out[i], Q.rotate(r[None], pos[i][None].astype(np.float64))[0] + trans, atol=2e-5)


def test_writer_round_trips_eight_influences(tube8, tmp_path):
    loaded = load_asset(tube8)
    (p,) = primitive_weights(loaded)
    assert p.slots == 8
    out = save_weights(tube8, tmp_path / "copy.glb", {(p.key.mesh, p.key.primitive): (p.joints, p.weights, 9)})
    import json

    from engine.assets.glb import parse_glb
    doc = json.loads(parse_glb(out.read_bytes()).json)
    attrs = doc["meshes"][0]["primitives"][0]["attributes"]
    assert {"JOINTS_0", "JOINTS_1", "WEIGHTS_0", "WEIGHTS_1"} <= set(attrs)
    assert doc["accessors"][attrs["WEIGHTS_1"]]["componentType"] == 5126
    (q,) = primitive_weights(load_asset(out))
    np.testing.assert_array_equal(q.weights, p.weights)  # float32 written as is
    np.testing.assert_array_equal(q.joints, p.joints)


def test_export_and_inspect_report_eight_slots(tube8, tmp_path):
    out = tmp_path / "w.npz"
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "weights", "export", str(tube8), "--out", str(out)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = np.load(out)
    j, w = d["node9_mesh0_prim0_joints"], d["node9_mesh0_prim0_weights"]
    assert j.dtype == np.uint16 and w.dtype == np.float32 and j.shape == w.shape == (540, 8)
    assert np.all(np.diff(w, axis=1) <= 0) and np.all(w >= 0)
    np.testing.assert_allclose(w.astype(np.float64).sum(axis=1), 1, atol=1e-6)
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "inspect", str(tube8)], capture_output=True,
                       text=True)
    assert "8 influence slots (2 JOINTS/WEIGHTS sets), at most 8 used" in r.stdout


def test_export_frame_cpu_skins_all_eight(tube8, tmp_path):
    """export-frame (numpy LBS) of the 8-influence tube equals the 8-term reference of the same pose."""
    from engine import Session

    loaded = load_asset(tube8)
    (p,) = primitive_weights(loaded)
    with Session(device="cpu", render=False, deformer="lbs", strict=True) as s:
        ch = s.spawn(loaded, clip="wave", time=0.5, speed=0.0, mode="clamp")
        got = ch.vertices()[p.key]
        world = ch.joints()
    mats = world[p.joint_nodes].astype(np.float64) @ p.inverse_bind.astype(np.float64)
    ref = np.einsum("vk,vkij,vj->vi", p.weights.astype(np.float64), mats[p.joints],
                    np.concatenate([p.positions, np.ones((540, 1))], 1))[:, :3]
    np.testing.assert_allclose(got, ref, atol=1e-5)
