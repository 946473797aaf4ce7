"""ClipSampler edge cases against hand computations on small Assets built in code."""
from __future__ import annotations

import numpy as np
import pytest

from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.anim.sampling import ClipSampler
from engine.assets.model import Asset, Channel, Clip, Node
from engine.math import quat

F = np.float32


def _rig_and_clip(channels: list[Channel], n_nodes: int = 3, matrix_node: int | None = None) -> tuple[Rig, Clip]:
    nodes = [Node(name=f"n{i}") for i in range(n_nodes)]
    if matrix_node is not None:
        nodes[matrix_node].matrix = np.eye(4, dtype=F)
    rig = Rig.from_asset(Asset(path=None, nodes=nodes))
    return rig, Clip("clip", channels)


def _sample(rig: Rig, clip: Clip, t: float) -> Pose:
    return ClipSampler(rig, clip).sample(t, Pose.rest(rig))


def test_linear_translation_inside_before_and_after():
    times = np.array([1.0, 2.0, 4.0], F)
    vals = np.array([[0, 0, 0], [1, 2, 3], [3, 2, -1]], F)
    rig, clip = _rig_and_clip([Channel(1, "translation", "LINEAR", times, vals)])
    s = ClipSampler(rig, clip)
    pose = Pose.rest(rig)
    for t, want in [(0.0, vals[0]), (-5.0, vals[0]), (1.0, vals[0]), (1.5, [0.5, 1, 1.5]), (2.0, vals[1]),
                    (3.0, [2, 2, 1]), (3.5, [2.5, 2, 0]), (4.0, vals[2]), (9.0, vals[2])]:
        s.sample(t, pose)
        np.testing.assert_allclose(pose.translation[1], want, atol=1e-6, err_msg=f"t={t}")
    # other nodes and other paths untouched (rest)
    np.testing.assert_array_equal(pose.translation[[0, 2]], 0)
    np.testing.assert_array_equal(pose.rotation, np.tile([0, 0, 0, 1], (3, 1)))
    assert s.start == 1.0 and s.end == 4.0 and s.duration == 4.0


def test_step_holds_until_next_key():
    times = np.array([0.0, 1.0, 3.0], F)
    vals = np.array([[1, 1, 1], [2, 2, 2], [5, 5, 5]], F)
    rig, clip = _rig_and_clip([Channel(0, "scale", "STEP", times, vals)])
    for t, want in [(-1, 1), (0, 1), (0.999, 1), (1.0, 2), (2.9, 2), (3.0, 5), (7.0, 5)]:
        np.testing.assert_allclose(_sample(rig, clip, t).scale[0], [want] * 3, err_msg=f"t={t}")
    rot = quat.from_axis_angle(np.array([[0, 0, 1.0]] * 3), np.array([0.0, 1.0, 2.0])).astype(F)
    rig, clip = _rig_and_clip([Channel(0, "rotation", "STEP", times, rot)])
    np.testing.assert_allclose(_sample(rig, clip, 2.5).rotation[0], rot[1], atol=1e-7)


def test_linear_rotation_takes_the_short_arc_for_antipodal_keys():
    axis = np.array([0.0, 1.0, 0.0])
    q0 = quat.from_axis_angle(axis, np.radians(20))
    q1 = -quat.from_axis_angle(axis, np.radians(40))  # same rotation as +q1, stored on the far hemisphere
    rig, clip = _rig_and_clip([Channel(2, "rotation", "LINEAR", np.array([0, 1], F), np.stack([q0, q1]).astype(F))])
    r = _sample(rig, clip, 0.5).rotation[2]
    # short arc: 30 degrees about +y; the long way round would pass through ~ -150 degrees
    assert quat.angle_between(r, quat.from_axis_angle(axis, np.radians(30))) < 1e-5
    np.testing.assert_allclose(np.linalg.norm(r), 1, atol=1e-6)
    r1 = _sample(rig, clip, 0.25).rotation[2]
    assert quat.angle_between(r1, quat.from_axis_angle(axis, np.radians(25))) < 1e-5


def test_single_keyframe_channels_are_constant():
    rot = quat.from_axis_angle(np.array([1.0, 0, 0]), 0.5)[None].astype(F)
    chans = [Channel(0, "rotation", "LINEAR", np.array([0.5], F), rot),
             Channel(1, "translation", "STEP", np.array([2.0], F), np.array([[1, 2, 3]], F)),
             Channel(2, "scale", "CUBICSPLINE", np.array([1.0], F), np.array([[[9, 9, 9], [2, 3, 4], [7, 7, 7]]], F))]
    rig, clip = _rig_and_clip(chans)
    for t in (-1.0, 0.0, 0.5, 1.0, 2.0, 10.0):
        p = _sample(rig, clip, t)
        np.testing.assert_allclose(p.rotation[0], rot[0], atol=1e-7)
        np.testing.assert_allclose(p.translation[1], [1, 2, 3])
        np.testing.assert_allclose(p.scale[2], [2, 3, 4])


def _hermite(p0, m0, p1, m1, u):
    return ((2 * u**3 - 3 * u**2 + 1) * p0 + (u**3 - 2 * u**2 + u) * m0 + (-2 * u**3 + 3 * u**2) * p1
            + (u**3 - u**2) * m1)


def test_cubicspline_scales_tangents_by_the_key_interval():
    times = np.array([0.0, 2.0, 2.5], F)  # intervals 2.0 and 0.5: scaling matters
    # (in-tangent, value, out-tangent) per key
    vals = np.array([[[0, 0, 0], [0, 0, 0], [1, 0, -1]],
                     [[3, 1, 0], [4, 1, 2], [-2, 0, 1]],
                     [[1, 1, 1], [5, 0, 2], [0, 0, 0]]], F)
    rig, clip = _rig_and_clip([Channel(1, "translation", "CUBICSPLINE", times, vals)])
    s = ClipSampler(rig, clip)
    pose = Pose.rest(rig)
    for t in (0.5, 1.0, 1.7, 2.1, 2.4):
        k = 0 if t < 2 else 1
        dt = times[k + 1] - times[k]
        u = (t - times[k]) / dt
        want = _hermite(vals[k, 1], dt * vals[k, 2], vals[k + 1, 1], dt * vals[k + 1, 0], u)
        got = s.sample(t, pose).translation[1]
        np.testing.assert_allclose(got, want, atol=1e-5, err_msg=f"t={t}")
        unscaled = _hermite(vals[k, 1], vals[k, 2], vals[k + 1, 1], vals[k + 1, 0], u)
        assert np.abs(got - unscaled).max() > 1e-2  # the test would catch a missing dt factor
    # keys, before and after
    for t, want in [(0.0, vals[0, 1]), (2.0, vals[1, 1]), (2.5, vals[2, 1]), (-1, vals[0, 1]), (4, vals[2, 1])]:
        np.testing.assert_allclose(s.sample(t, pose).translation[1], want, atol=1e-6)


def test_cubicspline_rotation_is_normalised():
    q0 = quat.from_axis_angle(np.array([0, 0, 1.0]), 0.0)
    q1 = quat.from_axis_angle(np.array([0, 0, 1.0]), 1.5)
    tan = np.array([0.3, -0.2, 0.5, 0.1])
    vals = np.stack([np.stack([tan, q0, tan]), np.stack([-tan, q1, tan])]).astype(F)
    rig, clip = _rig_and_clip([Channel(0, "rotation", "CUBICSPLINE", np.array([0, 1.5], F), vals)])
    r = _sample(rig, clip, 0.6).rotation[0]
    raw = _hermite(q0, 1.5 * tan, q1, 1.5 * -tan, 0.4)
    np.testing.assert_allclose(r, raw / np.linalg.norm(raw), atol=1e-6)


def test_channels_with_different_time_ranges_in_one_clip():
    chans = [Channel(0, "translation", "LINEAR", np.array([0, 1], F), np.array([[0, 0, 0], [1, 0, 0]], F)),
             Channel(1, "translation", "LINEAR", np.array([0.5, 2, 3], F),
                     np.array([[0, 5, 0], [0, 8, 0], [0, 0, 0]], F)),
             Channel(2, "translation", "LINEAR", np.array([2.5, 2.75], F), np.array([[0, 0, 1], [0, 0, 3]], F))]
    rig, clip = _rig_and_clip(chans)
    s = ClipSampler(rig, clip)
    assert len(s.groups) == 1  # one group, one shared key lookup
    cases = {0.25: ([0.25, 0, 0], [0, 5, 0], [0, 0, 1]),
             1.25: ([1, 0, 0], [0, 6.5, 0], [0, 0, 1]),
             2.625: ([1, 0, 0], [0, 3, 0], [0, 0, 2]),
             5.0: ([1, 0, 0], [0, 0, 0], [0, 0, 3])}
    pose = Pose.rest(rig)
    for t, want in cases.items():
        np.testing.assert_allclose(s.sample(t, pose).translation, want, atol=1e-6, err_msg=f"t={t}")
    assert s.start == 0.0 and s.end == 3.0


def test_batched_sampling_matches_single_and_mixed_groups():
    rot = quat.from_axis_angle(np.random.normal(size=(4, 3)), np.random.uniform(-3, 3, 4)).astype(F)
    chans = [Channel(0, "rotation", "LINEAR", np.array([0, 0.3, 0.9, 1.2], F), rot),
             Channel(1, "translation", "STEP", np.array([0, 0.5], F), np.random.normal(size=(2, 3)).astype(F)),
             Channel(2, "scale", "CUBICSPLINE", np.array([0, 1], F), np.random.normal(size=(2, 3, 3)).astype(F))]
    rig, clip = _rig_and_clip(chans)
    s = ClipSampler(rig, clip)
    times = np.array([-0.1, 0.0, 0.2, 0.61, 1.1, 3.0])
    n = rig.count
    T = np.zeros((6, n, 3), F)
    R = np.tile(np.array([0, 0, 0, 1], F), (6, n, 1))
    S = np.ones((6, n, 3), F)
    s.sample_batch(times, T, R, S)
    for i, t in enumerate(times):
        p = s.sample(float(t), Pose.rest(rig))
        np.testing.assert_array_equal(T[i], p.translation)
        np.testing.assert_array_equal(R[i], p.rotation)
        np.testing.assert_array_equal(S[i], p.scale)
    with pytest.raises(ValueError, match="output must be"):
        s.sample_batch(times, T[:2], R[:2], S[:2])
    with pytest.raises(ValueError, match="finite"):
        s.sample_batch(np.array([np.nan]), T[:1], R[:1], S[:1])


def test_bad_channels_raise_with_the_bad_value():
    ok_t = np.array([0, 1], F)
    cases = [
        (Channel(0, "color", "LINEAR", ok_t, np.zeros((2, 3), F)), "'color'"),
        (Channel(0, "translation", "SMOOTH", ok_t, np.zeros((2, 3), F)), "'SMOOTH'"),
        (Channel(7, "translation", "LINEAR", ok_t, np.zeros((2, 3), F)), "node = 7"),
        (Channel(0, "rotation", "LINEAR", ok_t, np.zeros((2, 3), F)), r"\(2, 4\)"),
        (Channel(0, "scale", "CUBICSPLINE", ok_t, np.zeros((2, 3), F)), r"\(2, 3, 3\)"),
        (Channel(0, "scale", "LINEAR", np.array([1, 1], F), np.zeros((2, 3), F)), "strictly increasing"),
        (Channel(0, "scale", "LINEAR", np.zeros(0, F), np.zeros((0, 3), F)), "non-empty"),
    ]
    for ch, msg in cases:
        rig, clip = _rig_and_clip([ch])
        with pytest.raises(ValueError, match=msg):
            ClipSampler(rig, clip)


def test_weights_sampled_apart_and_matrix_node_channels_reported():
    chans = [Channel(0, "weights", "LINEAR", np.array([0, 1], F), np.array([[0, 1], [1, 0]], F)),
             Channel(1, "translation", "LINEAR", np.array([0, 1], F), np.ones((2, 3), F))]
    rig, clip = _rig_and_clip(chans, matrix_node=1)
    s = ClipSampler(rig, clip)
    assert len(s.skipped) == 1 and "matrix" in s.skipped[0]
    np.testing.assert_allclose(s.sample_weights(0.25)[0], [0.25, 0.75])
    assert s.channel_count == 1
    assert s.animated[0, 1] and not s.animated[:, 0].any()


def test_precomputed_slerp_matches_quat_slerp_on_random_keys():
    """The sampler precomputes per-segment slerp constants; it must agree with quat.slerp, including
    nearly equal keys (nlerp branch) and keys stored on opposite hemispheres."""
    k = 12
    keys = quat.normalize(np.random.normal(size=(k, 4)))
    keys[4] = quat.multiply(quat.from_axis_angle(np.array([0, 1.0, 0]), 1e-3), keys[3])  # nearly equal
    keys[7] = -keys[6] * 0.999 + 0.001  # antipodal-ish copy
    keys[9] = -keys[8]  # the same rotation, flipped sign
    keys = quat.normalize(keys).astype(F)
    times = np.cumsum(np.random.uniform(0.1, 0.5, k)).astype(F)
    rig, clip = _rig_and_clip([Channel(0, "rotation", "LINEAR", times, keys)])
    s = ClipSampler(rig, clip)
    ts = np.random.uniform(times[0], times[-1], 200)
    n = rig.count
    R = np.tile(np.array([0, 0, 0, 1], F), (ts.size, n, 1))
    s.sample_batch(ts, np.zeros((ts.size, n, 3), F), R, np.ones((ts.size, n, 3), F))
    seg = np.searchsorted(times, ts, side="right") - 1
    u = (ts - times[seg]) / (times[seg + 1] - times[seg])
    want = quat.slerp(keys[seg].astype(np.float64), keys[seg + 1].astype(np.float64), u)
    sign = np.sign(np.sum(R[:, 0] * want, axis=1))[:, None]  # q and -q are the same rotation
    np.testing.assert_allclose(R[:, 0], sign * want, atol=2e-6)
