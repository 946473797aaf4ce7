"""engine.math.quat and engine.math.transform (TRS compose/decompose) against closed forms (Rodrigues) and pyrr."""
from __future__ import annotations

import numpy as np
import pyrr
import pytest

from engine.math import quat
from engine.math.transform import compose_trs, decompose


def _rand_quats(n: int) -> np.ndarray:
    q = np.random.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _rodrigues(axis: np.ndarray, angle: float) -> np.ndarray:
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * kx + (1 - np.cos(angle)) * kx @ kx


def test_to_matrix_matches_rodrigues_and_pyrr():
    for axis, angle in [((1, 0, 0), 0.3), ((0, 1, 0), -2.0), ((1, 2, 3), 3.1), ((0, 0, 1), np.pi)]:
        axis = np.array(axis, float)
        q = quat.from_axis_angle(axis, angle)
        np.testing.assert_allclose(quat.to_matrix(q), _rodrigues(axis, angle), atol=1e-12)
    q = _rand_quats(16)
    v = np.random.normal(size=(16, 3))
    ref = np.stack([pyrr.quaternion.apply_to_vector(x, y) for x, y in zip(q, v)])
    np.testing.assert_allclose(np.einsum("nij,nj->ni", quat.to_matrix(q), v), ref, atol=1e-12)


def test_multiply_composes_like_matrices_and_rotate():
    a, b = _rand_quats(32), _rand_quats(32)
    np.testing.assert_allclose(quat.to_matrix(quat.multiply(a, b)),
                               quat.to_matrix(a) @ quat.to_matrix(b), atol=1e-12)
    v = np.random.normal(size=(32, 3))
    np.testing.assert_allclose(quat.rotate(a, v), np.einsum("nij,nj->ni", quat.to_matrix(a), v), atol=1e-12)
    ident = quat.multiply(a, quat.conjugate(a))
    np.testing.assert_allclose(quat.canonical(ident), np.tile([0, 0, 0, 1.0], (32, 1)), atol=1e-12)
    np.testing.assert_allclose(quat.inverse(2 * a), quat.conjugate(a) / 2, atol=1e-12)


def test_from_matrix_roundtrip_including_half_turns():
    q = _rand_quats(64)
    half_turns = quat.from_axis_angle(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, -1, 1.0]]), np.pi)
    q = np.concatenate([q, half_turns, quat.identity((1,), np.float64)])
    back = quat.from_matrix(quat.to_matrix(q))
    assert np.all(back[:, 3] >= 0)
    np.testing.assert_allclose(np.abs(np.sum(back * q, axis=1)), 1, atol=1e-12)  # same rotation (q or -q)
    np.testing.assert_allclose(quat.to_matrix(back), quat.to_matrix(q), atol=1e-9)
    m4 = np.tile(np.eye(4), (64, 1, 1))
    m4[:, :3, :3] = quat.to_matrix(q[:64])
    np.testing.assert_allclose(quat.from_matrix(m4), quat.canonical(q[:64]), atol=1e-9)
    with pytest.raises(ValueError, match="shape"):
        quat.from_matrix(np.eye(2))


def test_normalize_zero_is_identity_and_axis_checks():
    out = quat.normalize(np.array([[0, 0, 0, 0], [0, 0, 0, 2.0]]))
    np.testing.assert_array_equal(out, [[0, 0, 0, 1], [0, 0, 0, 1]])
    with pytest.raises(ValueError, match="axis"):
        quat.from_axis_angle(np.zeros(3), 1.0)


def test_slerp_endpoints_constant_speed_and_short_arc():
    a, b = _rand_quats(20), _rand_quats(20)
    b = np.where(np.sum(a * b, 1, keepdims=True) < 0, -b, b)  # same hemisphere for the endpoint check
    np.testing.assert_allclose(quat.slerp(a, b, 0.0), a, atol=1e-12)
    np.testing.assert_allclose(quat.slerp(a, b, 1.0), b, atol=1e-12)
    total = quat.angle_between(a, b)
    for t in (0.25, 0.5, 0.8):
        mid = quat.slerp(a, b, t)
        np.testing.assert_allclose(np.linalg.norm(mid, axis=1), 1, atol=1e-12)
        np.testing.assert_allclose(quat.angle_between(a, mid), t * total, atol=1e-9)
        np.testing.assert_allclose(quat.angle_between(mid, b), (1 - t) * total, atol=1e-9)
    # antipodal representation of a nearby rotation: the short arc (10 degrees), not ~350 degrees
    q0 = quat.from_axis_angle(np.array([0, 1.0, 0]), 0.0)
    q1 = -quat.from_axis_angle(np.array([0, 1.0, 0]), np.radians(10))
    mid = quat.slerp(q0, q1, 0.5)
    assert quat.angle_between(q0, mid) == pytest.approx(np.radians(5), abs=1e-9)
    # float32 stays float32; per-element t
    out = quat.slerp(a.astype(np.float32), b.astype(np.float32), np.linspace(0, 1, 20))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out[-1], b[-1], atol=1e-6)


def test_slerp_tiny_angle_uses_nlerp_and_stays_accurate():
    a = quat.from_axis_angle(np.array([1.0, 2, 3]), 0.7)
    for eps in (1e-3, 1e-5, 0.0):
        b = quat.multiply(quat.from_axis_angle(np.array([0, 0, 1.0]), eps), a)
        mid = quat.slerp(a, b, 0.5)
        assert np.all(np.isfinite(mid))
        assert quat.angle_between(a, mid) == pytest.approx(eps / 2, abs=1e-7)


def test_compose_and_decompose_roundtrip_with_mirror():
    t = np.random.normal(size=(10, 3))
    r = _rand_quats(10)
    s = np.random.uniform(0.5, 2, size=(10, 3))
    s[3, 0] *= -1  # a mirrored node
    m = compose_trs(t, r, s)
    assert m.dtype == np.float32
    expected = np.tile(np.eye(4), (10, 1, 1))
    expected[:, :3, :3] = quat.to_matrix(r) @ (np.eye(3) * s[:, None, :])
    expected[:, :3, 3] = t
    np.testing.assert_allclose(m, expected, atol=1e-6)
    t2, r2, s2 = decompose(m)
    np.testing.assert_allclose(compose_trs(t2, r2, s2), m, atol=1e-5)
    np.testing.assert_allclose(t2, t, atol=1e-6)
    np.testing.assert_allclose(np.abs(s2), np.abs(s), atol=1e-5)


def test_compose_trs_float64_and_shapes():
    t, r, s = np.random.normal(size=(4, 3)), _rand_quats(4), np.random.uniform(0.5, 2, size=(4, 3))
    m64 = compose_trs(t, r, s, dtype=np.float64)
    assert m64.dtype == np.float64
    expected = np.tile(np.eye(4), (4, 1, 1))
    expected[:, :3, :3] = quat.to_matrix(r) * s[:, None, :]
    expected[:, :3, 3] = t
    np.testing.assert_allclose(m64, expected, atol=1e-14)
    with pytest.raises(ValueError, match="compose_trs expects"):
        compose_trs(t, r[:, :3], s)
    with pytest.raises(TypeError, match="floating dtype"):
        compose_trs(t, r, s, dtype=np.int32)


def test_between_maps_a_onto_b_including_opposite():
    for a, b in [((0, 1, 0), (1, 0, 0)), ((1, 2, 3), (-2, 0.5, 1)), ((0, 1, 0), (0, -1, 0)), ((1, 0, 0), (-3, 0, 0))]:
        q = quat.between(a, b)
        assert q.shape == (4,) and np.linalg.norm(q) == pytest.approx(1.0)
        b_unit = np.asarray(b, float) / np.linalg.norm(b)
        np.testing.assert_allclose(quat.rotate(q, np.asarray(a, float) / np.linalg.norm(a)), b_unit, atol=1e-12)
    with pytest.raises(ValueError, match="non-zero"):
        quat.between((0, 0, 0), (1, 0, 0))


def test_continuous_keeps_rotations_and_removes_hemisphere_jumps():
    q = _rand_quats(12)
    flipped = q * np.where(np.random.uniform(size=12) < 0.5, -1.0, 1.0)[:, None]
    before = flipped.copy()
    c = quat.continuous(flipped)
    np.testing.assert_array_equal(flipped, before)  # a copy: the input is left alone
    assert np.all(np.einsum("ki,ki->k", c[1:], c[:-1]) >= 0)
    np.testing.assert_allclose(np.abs(np.einsum("ki,ki->k", c, q)), 1.0, atol=1e-12)  # same rotations



def test_to_axis_angle_inverts_from_axis_angle():
    axis = np.random.normal(size=(8, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angle = np.random.uniform(0.01, np.pi - 0.01, size=8)
    a2, ang2 = quat.to_axis_angle(-quat.from_axis_angle(axis, angle))  # -q: the same rotation
    np.testing.assert_allclose(a2, axis, atol=1e-12)
    np.testing.assert_allclose(ang2, angle, atol=1e-12)
    a0, ang0 = quat.to_axis_angle(quat.identity((2,), np.float64))
    np.testing.assert_array_equal(a0, [[1, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(ang0, [0, 0])
