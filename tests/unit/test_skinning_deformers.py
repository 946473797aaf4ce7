"""Reference deformers: LBS, DQS, rigid attachment skinning and IRS (eqs. 14-18), with hand-worked cases."""
from __future__ import annotations

import numpy as np
import pytest

from engine.math import quat as Q
from engine.skinning.binding import bind
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.skinning import (
    dqs,
    dqs_normals,
    irs,
    lbs,
    lbs_normals,
    rigid,
    skin_control_points,
)


def rot(axis, ang) -> np.ndarray:
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(ang) * k + (1 - np.cos(ang)) * k @ k


def mat(t=(0, 0, 0), axis=(0, 1, 0), ang=0.0, scale=(1, 1, 1)) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = rot(axis, ang) @ np.diag(scale)
    m[:3, 3] = t
    return m


def tube(rings=41, segs=24, length=2.0, radius=0.2):
    th = 2 * np.pi * np.arange(segs) / segs
    y = np.linspace(0.0, length, rings)
    pos = np.stack(np.broadcast_arrays(radius * np.cos(th)[None], y[:, None], radius * np.sin(th)[None]),
                   -1).reshape(-1, 3)
    i, k = np.meshgrid(np.arange(rings - 1), np.arange(segs), indexing="ij")
    a, b = i * segs + k, i * segs + (k + 1) % segs
    tris = np.concatenate([np.stack([a, a + segs, b], -1).reshape(-1, 3),
                           np.stack([b, a + segs, b + segs], -1).reshape(-1, 3)])
    return pos.astype(np.float32), tris


@pytest.fixture(scope="module")
def chain():
    """Straight tube y in [0, 2], radius 0.2, joints at y = 0, 1, 1.9 (leaf), planar binding, and LBS
    weights blending joints 0 and 1 linearly over y in [0.7, 1.3]."""
    pos, tris = tube()
    topo = prepare_mesh(pos, tris)
    bj = np.stack([mat((0, 0, 0)), mat((0, 1, 0)), mat((0, 1.9, 0))]).astype(np.float32)
    parents = np.array([-1, 0, 1])
    binding = bind(topo, bj, parents, method="planar", smooth_passes=3)
    y = topo.positions[:, 1]
    w1 = np.clip((y - 0.7) / 0.6, 0, 1)
    joints = np.tile([0, 1, 2, 0], (y.shape[0], 1))
    weights = np.stack([1 - w1, w1, 0 * y, 0 * y], 1).astype(np.float32)
    return topo, bj, parents, binding, joints, weights


def pose(bj, local_at_1: np.ndarray) -> np.ndarray:
    """Rotate/move joint 1 by `local_at_1` (in its bind frame); its child follows rigidly."""
    posed = bj.astype(np.float64).copy()
    posed[1] = bj[1] @ local_at_1
    posed[2] = posed[1] @ np.linalg.inv(bj[1]) @ bj[2]
    return posed


def skin_of(bj, posed):
    return (posed @ np.linalg.inv(bj.astype(np.float64))).astype(np.float32)


def radial(p):
    return np.linalg.norm(np.asarray(p, np.float64)[:, [0, 2]], axis=1)


# ---------------------------------------------------------------------------------------------- LBS


def test_lbs_by_hand_and_identity():
    v = np.array([[1.0, 0.0, 0.0]], np.float32)
    m = np.stack([mat((0, 2, 0)), mat(axis=(0, 0, 1), ang=np.pi / 2)]).astype(np.float32)
    j = np.array([[0, 1, 0, 0]])
    w = np.array([[0.25, 0.75, 0, 0]], np.float32)
    # 0.25 * (1, 2, 0) + 0.75 * (0, 1, 0)
    np.testing.assert_allclose(lbs(v, j, w, m), [[0.25, 1.25, 0.0]], atol=1e-6)
    n = lbs_normals(np.array([[1.0, 0, 0]], np.float32), np.array([[1, 0, 0, 0]]),
                    np.array([[1.0, 0, 0, 0]], np.float32), m)
    np.testing.assert_allclose(n, [[0, 1, 0]], atol=1e-6)
    # non-uniform scale: a normal transforms by the inverse transpose
    ms = mat(scale=(2, 1, 1))[None].astype(np.float32)
    n2 = lbs_normals(np.array([[1, 1, 0]], np.float32) / np.sqrt(2), np.zeros((1, 4), int),
                     np.array([[1.0, 0, 0, 0]], np.float32), ms)
    np.testing.assert_allclose(n2, [[0.5, 1, 0] / np.linalg.norm([0.5, 1, 0])], atol=1e-6)
    with pytest.raises(ValueError, match="joint indices"):
        lbs(v, np.array([[0, 5, 0, 0]]), w, m)


def test_lbs_collapses_under_180_twist_dqs_does_not(chain):
    topo, bj, _, _, joints, weights = chain
    posed = pose(bj, mat(axis=(0, 1, 0), ang=np.pi))
    skin = skin_of(bj, posed)
    at_joint = np.abs(topo.positions[:, 1] - 1.0) < 1e-6
    r_lbs = radial(lbs(topo.positions, joints, weights, skin))
    r_dqs = radial(dqs(topo.positions, joints, weights, skin))
    assert r_lbs[at_joint].max() < 1e-5  # candy wrapper: the half-way ring shrinks to the axis
    np.testing.assert_allclose(r_dqs, 0.2, atol=1e-5)


# ---------------------------------------------------------------------------------------------- DQS


def test_dqs_single_joint_is_the_rigid_transform():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(20, 3)).astype(np.float32)
    m = mat((1, -2, 0.5), axis=(1, 2, 3), ang=2.5)[None].astype(np.float32)
    j = np.zeros((20, 4), int)
    w = np.tile([1.0, 0, 0, 0], (20, 1)).astype(np.float32)
    expect = v @ m[0, :3, :3].T + m[0, :3, 3]
    np.testing.assert_allclose(dqs(v, j, w, m), expect, atol=1e-5)
    np.testing.assert_allclose(dqs_normals(v / np.linalg.norm(v, axis=1, keepdims=True), j, w, m),
                               (v @ m[0, :3, :3].T) / np.linalg.norm(v, axis=1, keepdims=True), atol=1e-5)


def test_dqs_antipodal_quaternions_take_the_short_arc():
    # joints at +170 and -170 degrees about z: their canonical quaternions are antipodal-ish (dot < 0);
    # with the hemisphere flip a 50/50 blend is the 180 degree rotation (the short way between them)
    m = np.stack([mat(axis=(0, 0, 1), ang=np.radians(170)),
                  mat(axis=(0, 0, 1), ang=np.radians(-170))]).astype(np.float32)
    q = Q.from_matrix(m[:, :3, :3])
    assert np.dot(q[0], q[1]) < 0
    v = np.array([[1.0, 0, 0], [0, 1.0, 0.5]], np.float32)
    j = np.tile([0, 1, 0, 0], (2, 1))
    w = np.tile([0.5, 0.5, 0, 0], (2, 1)).astype(np.float32)
    expect = v @ rot((0, 0, 1), np.pi).T
    np.testing.assert_allclose(dqs(v, j, w, m), expect, atol=1e-5)
    # the same as blending the non-flipped representation: +170 and +190 degrees
    m190 = np.stack([m[0], mat(axis=(0, 0, 1), ang=np.radians(190)).astype(np.float32)])
    np.testing.assert_allclose(dqs(v, j, w, m190), expect, atol=1e-5)
    # the pivot is the largest-weight joint; unequal weights give the weighted angle on the short arc
    w2 = np.tile([0.75, 0.25, 0, 0], (2, 1)).astype(np.float32)
    out = dqs(v[:1], j[:1], w2[:1], m)[0]
    ang = np.degrees(np.arctan2(out[1], out[0])) % 360
    assert 170 < ang < 180


def test_dqs_stretch_is_blended_linearly():
    rng = np.random.default_rng(4)
    v = rng.normal(size=(10, 3)).astype(np.float32)
    # same uniform scale on both joints, different rotations: stretch then blended rotation
    s = np.stack([mat((0, 1, 0), axis=(0, 0, 1), ang=0.2, scale=(2, 2, 2)),
                  mat((0, 1, 0), axis=(0, 0, 1), ang=0.6, scale=(2, 2, 2))]).astype(np.float32)
    j = np.tile([0, 1, 0, 0], (10, 1))
    w = np.tile([0.5, 0.5, 0, 0], (10, 1)).astype(np.float32)
    expect = 2.0 * v @ rot((0, 0, 1), 0.4).T + [0, 1, 0]
    np.testing.assert_allclose(dqs(v, j, w, s), expect, atol=1e-5)
    # a single non-uniformly scaled joint reproduces its matrix exactly
    m = mat((0.3, 0, 0), axis=(1, 0, 0), ang=0.7, scale=(1, 3, 0.5))[None].astype(np.float32)
    w1 = np.tile([1.0, 0, 0, 0], (10, 1)).astype(np.float32)
    np.testing.assert_allclose(dqs(v, np.zeros((10, 4), int), w1, m), v @ m[0, :3, :3].T + m[0, :3, 3], atol=1e-5)


# ---------------------------------------------------------------------------------------------- rigid


def test_rigid_reproduces_a_pure_joint_rotation(chain):
    topo, bj, parents, binding, _, _ = chain
    m = mat((0.3, -0.2, 0.1), axis=(1, 1, 0), ang=1.1)
    posed = m @ bj.astype(np.float64)  # the whole skeleton moves rigidly
    out = rigid(binding, bj, posed)
    np.testing.assert_allclose(out, topo.positions @ m[:3, :3].T + m[:3, 3], atol=1e-5)
    # and so does IRS (no joint bends), with and without length correction
    np.testing.assert_allclose(irs(binding, bj, posed, parents), out, atol=1e-5)
    np.testing.assert_allclose(irs(binding, bj, posed, parents, length_correction=True), out, atol=1e-5)


def test_rigid_stretches_with_bone_length(chain):
    topo, bj, _, binding, _, _ = chain
    posed = bj.astype(np.float64).copy()
    posed[1:, 1, 3] += 0.5  # bone 0 grows from 1.0 to 1.5, the rest moves up with it
    out = rigid(binding, bj, posed)
    on0 = binding.bones.child_joint[binding.bone] == 1
    expect = topo.positions[on0] + np.outer(binding.t[on0] * 0.5, [0, 1, 0])
    np.testing.assert_allclose(out[on0], expect, atol=1e-5)
    np.testing.assert_allclose(out[~on0], topo.positions[~on0] + [0, 0.5, 0], atol=1e-5)


# ---------------------------------------------------------------------------------------------- IRS


def ring_angles(out, bind_pos):
    """Rotation angle about +Y of every point relative to bind, in degrees within (-180, 180]."""
    a0 = np.arctan2(bind_pos[:, 2], bind_pos[:, 0])
    a1 = np.arctan2(np.asarray(out, np.float64)[:, 2], np.asarray(out, np.float64)[:, 0])
    return np.degrees(np.angle(np.exp(1j * (a1 - a0))))


def test_irs_twist_keeps_radius_and_spreads_along_the_bone(chain):
    topo, bj, parents, binding, _, _ = chain
    posed = pose(bj, mat(axis=(0, 1, 0), ang=np.pi))
    out = irs(binding, bj, posed, parents)
    np.testing.assert_allclose(radial(out), 0.2, atol=1e-5)
    y = topo.positions[:, 1]
    ang = np.abs(ring_angles(out, topo.positions))
    # eq. 14-16 with p_i = c_i = 0.5: bone 0 (y in [0,1]) turns by c_w * 90 for t > 0.5, bone 1
    # (y in [1, 1.9]) by 180 - p_w * 90 for t < 0.5 (|angle|: the sign of the half turn is a choice)
    for yy, expect in [(0.25, 0.0), (0.5, 0.0), (0.75, 45.0), (1.0, 90.0), (1.15, 120.0), (1.3, 150.0), (1.45, 180.0)]:
        ring = np.abs(y - yy) < 1e-6
        assert ring.sum() == 24
        np.testing.assert_allclose(ang[ring], expect, atol=1e-3)
    # monotone along the tube
    ys = np.unique(np.round(y, 6))
    means = np.array([ang[np.abs(y - v) < 1e-6].mean() for v in ys])
    assert np.all(np.diff(means) >= -1e-6)
    # rigid keeps the radius too but jumps by 180 degrees at the joint
    r_ang = np.abs(ring_angles(rigid(binding, bj, posed), topo.positions))
    assert set(np.round(r_ang).astype(int)) == {0, 180}


def bend_errors(out, topo):
    e = topo.edges
    l0 = np.linalg.norm((topo.positions[e[:, 0]] - topo.positions[e[:, 1]]).astype(np.float64), axis=1)
    l1 = np.linalg.norm((out[e[:, 0]] - out[e[:, 1]]).astype(np.float64), axis=1)
    return np.abs(l1 / l0 - 1).max()


def test_irs_bend_is_continuous_and_length_correction_keeps_distance(chain):
    topo, bj, parents, binding, _, _ = chain
    posed = pose(bj, mat(axis=(0, 0, 1), ang=np.radians(90)))
    r = rigid(binding, bj, posed)
    s = irs(binding, bj, posed, parents)
    # rigid tears the outside of the bend apart at the joint; IRS rotates the scale vectors smoothly
    assert bend_errors(r, topo) > 3 * bend_errors(s, topo)
    # IRS moves points near the joint, leaves the middle of the bones rigid
    y = topo.positions[:, 1]
    mid = (np.abs(y - 0.25) < 0.01) | (np.abs(y - 1.55) < 0.06)
    np.testing.assert_allclose(s[mid], r[mid], atol=1e-5)
    assert np.abs(s - r).max() > 0.05
    # length correction brings points back towards their bind distance from the (posed) skeleton, and
    # never moves a point further from it
    from engine.skinning.metrics import skeleton_distance

    lc = irs(binding, bj, posed, parents, length_correction=True)
    err_lc = np.abs(skeleton_distance(lc, binding.bones, posed) - skeleton_distance(topo.positions, binding.bones, bj))
    err_no = np.abs(skeleton_distance(s, binding.bones, posed) - skeleton_distance(topo.positions, binding.bones, bj))
    assert err_no.max() > 0.01
    assert err_lc.mean() < 0.2 * err_no.mean()
    assert np.all(err_lc <= err_no + 1e-6)
    assert (err_lc < 1e-4).mean() > 0.95
    # a sharp bend: pushing a point off one bone would push it into the other; such points are left alone
    sharp = pose(bj, mat(axis=(0, 0, 1), ang=np.radians(135)))
    d0 = skeleton_distance(topo.positions, binding.bones, bj)
    e_no = np.abs(skeleton_distance(irs(binding, bj, sharp, parents), binding.bones, sharp) - d0)
    e_lc = np.abs(skeleton_distance(irs(binding, bj, sharp, parents, length_correction=True), binding.bones, sharp)
                  - d0)
    assert np.all(e_lc <= e_no + 1e-6) and e_lc.mean() < e_no.mean()


def test_irs_overlap_blend_nlerp_vs_matrix(chain):
    topo, bj, parents, binding, _, _ = chain
    posed = pose(bj, mat(axis=(0, 1, 0), ang=np.radians(120)))
    inf = (np.full(3, 0.9), np.full(3, 0.1))  # ranges overlap over most of each bone
    nl = irs(binding, bj, posed, parents, influence=inf)
    mx = irs(binding, bj, posed, parents, influence=inf, blend="matrix")
    np.testing.assert_allclose(radial(nl), 0.2, atol=1e-5)  # quaternion blend stays a rotation
    assert radial(mx).min() < 0.2 - 1e-3  # eq. 17 literally: a blend of matrices shortens s
    # with zero influence IRS is rigid skinning
    zero = irs(binding, bj, posed, parents, influence=(0.0, 1.0))
    np.testing.assert_allclose(zero, rigid(binding, bj, posed), atol=1e-6)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        irs(binding, bj, posed, parents, influence=(1.5, 0.5))
    with pytest.raises(ValueError, match="blend"):
        irs(binding, bj, posed, parents, blend="slerp")


def test_irs_coincident_joints_act_as_one_location():
    pos, tris = tube(rings=21, segs=12)
    topo = prepare_mesh(pos, tris)
    merged = np.stack([mat((0, 0, 0)), mat((0, 1, 0)), mat((0, 1.9, 0))]).astype(np.float32)
    split = np.stack([mat((0, 0, 0)), mat((0, 1, 0)), mat((0, 1, 0)), mat((0, 1.9, 0))]).astype(np.float32)
    bm = bind(topo, merged, np.array([-1, 0, 1]), smooth_passes=0)
    bs = bind(topo, split, np.array([-1, 0, 1, 2]), smooth_passes=0)
    assert bs.bones.count == bm.bones.count == 3  # the zero-length link gets no bone
    pm = merged.astype(np.float64).copy()
    pm[1] = merged[1] @ mat(axis=(0, 0, 1), ang=1.0)
    pm[2] = pm[1] @ np.linalg.inv(merged[1]) @ merged[2]
    # the bend is split between the two coincident joints: 0.4 at the first, 0.6 more at the second
    first = split[1] @ mat(axis=(0, 0, 1), ang=0.4)
    ps = np.stack([split[0], first, first @ np.linalg.inv(split[1]) @ split[2] @ mat(axis=(0, 0, 1), ang=0.6), pm[2]])
    np.testing.assert_allclose(ps[2], pm[1], atol=1e-6)
    np.testing.assert_allclose(irs(bs, split, ps, np.array([-1, 0, 1, 2])), irs(bm, merged, pm, np.array([-1, 0, 1])),
                               atol=1e-5)


# ---------------------------------------------------------------------------------------------- all


def test_every_deformer_is_exact_at_bind(chain):
    topo, bj, parents, binding, joints, weights = chain
    ident = np.tile(np.eye(4, dtype=np.float32), (3, 1, 1))
    for out in (
        lbs(topo.positions, joints, weights, ident),
        dqs(topo.positions, joints, weights, ident),
        rigid(binding, bj, bj),
        irs(binding, bj, bj, parents),
        irs(binding, bj, bj, parents, length_correction=True),
        irs(binding, bj, bj, parents, influence=(0.9, 0.1), blend="matrix"),
    ):
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, topo.positions, atol=1e-6)


def test_dispatcher(chain):
    topo, bj, parents, binding, joints, weights = chain
    posed = pose(bj, mat(axis=(0, 0, 1), ang=0.7))
    skin = skin_of(bj, posed)
    np.testing.assert_allclose(
        skin_control_points("lbs", topo, bj, posed, joints=joints, weights=weights),
        lbs(topo.positions, joints, weights, skin), atol=1e-5)
    np.testing.assert_allclose(
        skin_control_points("dqs", topo, bj, posed, joints=joints, weights=weights, inverse_bind=np.linalg.inv(bj)),
        dqs(topo.positions, joints, weights, skin), atol=1e-5)
    np.testing.assert_array_equal(skin_control_points("rigid", topo, bj, posed, binding=binding),
                                  rigid(binding, bj, posed))
    np.testing.assert_array_equal(
        skin_control_points("irs", topo, bj, posed, binding=binding, parents=parents, length_correction=True),
        irs(binding, bj, posed, parents, length_correction=True))
    with pytest.raises(ValueError, match="method"):
        skin_control_points("spline", topo, bj, posed)
    with pytest.raises(ValueError, match="binding"):
        skin_control_points("irs", topo, bj, posed, parents=parents)


def test_dispatcher_uses_representative_display_weights():
    pos, tris = tube(rings=5, segs=6)
    disp = np.concatenate([pos, pos[:6]])  # seam copies of ring 0 carry different (wrong) weights
    topo = prepare_mesh(disp, tris)
    bj = np.stack([mat((0, 0, 0)), mat((0, 1, 0))]).astype(np.float32)
    posed = np.stack([mat((0, 0, 0)), mat((1, 1, 0))])
    joints = np.zeros((disp.shape[0], 4), int)
    joints[-6:, 0] = 1
    weights = np.tile([1.0, 0, 0, 0], (disp.shape[0], 1)).astype(np.float32)
    out = skin_control_points("lbs", topo, bj, posed, joints=joints, weights=weights)
    np.testing.assert_allclose(out, topo.positions, atol=1e-6)  # every representative is bound to joint 0
