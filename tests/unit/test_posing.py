"""Line-of-action posing (engine/anim/posing.py, research 7.2): posing the generated cylinder with a straight
baseline and a bent offset bends its elbow by the offset's angle, a straight offset at 90 degrees turns the whole
limb, bone lengths are kept, the placement and the joints' offsets from the baseline are honoured, and the
least-squares fit recovers a rotation."""
from __future__ import annotations

import numpy as np
import pytest

from engine.anim import Pose, global_matrices
from engine.anim.posing import (
    _fit_rotation,
    apply_rotation_deltas,
    common_normal,
    skin_joints,
    solve_line_of_action,
    stroke_rotations,
)
from engine.input.strokes import Stroke
from engine.math import quat
from engine.scene import quiet_load
from engine.session import placement_matrix


@pytest.fixture(scope="module")
def cylinder():
    return quiet_load("cylinder").rig


def _line(a, b, n=40) -> Stroke:
    s = np.linspace(0.0, 1.0, n)[:, None]
    return Stroke.fit(np.asarray(a, float) + s * (np.asarray(b, float) - np.asarray(a, float)))


def _bent(angle_deg: float, leg: float = 0.5, n: int = 30) -> Stroke:
    """Up +Y for ``leg`` metres, then on for ``leg`` metres turned ``angle_deg`` towards +X."""
    a = np.radians(angle_deg)
    s = np.linspace(0.0, leg, n)
    first = np.c_[np.zeros(n), s, np.zeros(n)]
    second = np.c_[np.sin(a) * s[1:], leg + np.cos(a) * s[1:], np.zeros(n - 1)]
    return Stroke.fit(np.vstack([first, second]))


def _positions(rig, pose, placement=None) -> np.ndarray:
    g = global_matrices(rig, pose).astype(np.float64)
    if placement is not None:
        g = placement @ g
    return g[:3, :3, 3]  # root, mid, tip


def _angle(u, v) -> float:
    return float(np.degrees(np.arccos(np.clip(u @ v / np.linalg.norm(u) / np.linalg.norm(v), -1, 1))))


@pytest.mark.parametrize("bend", [45.0, 90.0, 120.0])
def test_bent_offset_bends_the_elbow_by_its_angle(cylinder, bend):
    res = solve_line_of_action(cylinder, Pose.rest(cylinder), _line([0, 0, 0], [0, 1, 0]), _bent(bend), 0.05)
    np.testing.assert_array_equal(res.selected, [0, 1, 2])
    np.testing.assert_allclose(res.t, [0, 0.5, 1], atol=1e-3)
    p = _positions(cylinder, res.pose)
    assert _angle(p[1] - p[0], p[2] - p[1]) == pytest.approx(bend, abs=2.0)
    assert np.linalg.norm(p[1] - p[0]) == pytest.approx(0.5, abs=1e-5)  # bone lengths kept
    assert np.linalg.norm(p[2] - p[1]) == pytest.approx(0.5, abs=1e-5)
    np.testing.assert_allclose(p[0], 0, atol=1e-6)  # the selection's root does not move
    np.testing.assert_allclose(res.deltas[0], [0, 0, 0, 1], atol=1e-6)  # the lower bone stays upright
    bend_axis, bend_angle = quat.to_axis_angle(res.deltas[1].astype(np.float64))
    assert np.degrees(bend_angle) == pytest.approx(bend, abs=2.0) and bend_axis[2] == pytest.approx(-1, abs=1e-3)


def test_straight_offset_at_90_degrees_turns_the_whole_limb(cylinder):
    res = solve_line_of_action(cylinder, Pose.rest(cylinder), _line([0, 0, 0], [0, 1, 0]),
                               _line([0, 0, 0], [1, 0, 0]), 0.05)
    p = _positions(cylinder, res.pose)
    np.testing.assert_allclose(p, [[0, 0, 0], [0.5, 0, 0], [1, 0, 0]], atol=1e-5)
    axis, angle = quat.to_axis_angle(res.deltas[0].astype(np.float64))
    assert np.degrees(angle) == pytest.approx(90, abs=0.5) and axis[2] == pytest.approx(-1, abs=1e-4)
    np.testing.assert_allclose(res.deltas[1:3], [[0, 0, 0, 1]] * 2, atol=1e-5)  # the limb turns as one
    np.testing.assert_allclose(res.rotations, [quat.to_matrix(res.deltas[0].astype(np.float64))] * 3, atol=1e-5)


def test_joints_off_the_baseline_keep_their_offset(cylinder):
    """A baseline drawn 3 cm beside the limb: d_j carries over, rotated with the strokes."""
    shift = np.array([0.03, 0.0, 0.0])
    res = solve_line_of_action(cylinder, Pose.rest(cylinder), _line(shift, shift + [0, 1, 0]),
                               _line(shift, shift + [1, 0, 0]), 0.05)
    np.testing.assert_allclose(res.d, [-shift] * 3, atol=1e-6)
    # R d = (0, +0.03, 0): the limb is turned about the stroke, so it lies 3 cm above the offset's line
    np.testing.assert_allclose(res.targets[2], [1.03, 0.03, 0.0], atol=1e-4)
    p = _positions(cylinder, res.pose)
    assert _angle(p[2] - p[0], np.array([1.0, 0, 0])) < 2.0


def test_placement_is_honoured(cylinder):
    place = placement_matrix((2.0, 0.0, -1.0), yaw=90.0).astype(np.float64)

    def world(p):
        return (place @ np.r_[p, 1.0])[:3]

    base = _line(world([0, 0, 0]), world([0, 1, 0]))
    off = _line(world([0, 0, 0]), world([1, 0, 0]))
    res = solve_line_of_action(cylinder, Pose.rest(cylinder), base, off, 0.05, placement=place)
    ref = solve_line_of_action(cylinder, Pose.rest(cylinder), _line([0, 0, 0], [0, 1, 0]),
                               _line([0, 0, 0], [1, 0, 0]), 0.05)
    np.testing.assert_allclose(np.abs(quat.multiply(res.deltas, quat.conjugate(ref.deltas))[:, 3]), 1, atol=1e-5)
    np.testing.assert_allclose(_positions(cylinder, res.pose, place)[2], world([1, 0, 0]), atol=1e-5)


def test_brush_radius_selects_and_nothing_selected_is_refused(cylinder):
    res = solve_line_of_action(cylinder, Pose.rest(cylinder), _line([0, 0.4, 0], [0, 1, 0]),
                               _line([0, 0.4, 0], [0.6, 1, 0]), 0.05)
    np.testing.assert_array_equal(res.selected, [1, 2])  # the root is 0.4 m away from the baseline
    np.testing.assert_allclose(res.deltas[0], [0, 0, 0, 1])
    with pytest.raises(ValueError, match=r"selects no joint.*closest: 'mid'"):
        solve_line_of_action(cylinder, Pose.rest(cylinder), _line([1, 0.5, 0], [1, 0.6, 0]),
                             _line([1, 0.5, 0], [1, 0.6, 0]), 0.05)
    with pytest.raises(ValueError, match="brush_radius"):
        solve_line_of_action(cylinder, Pose.rest(cylinder), _line([0, 0, 0], [0, 1, 0]),
                             _line([0, 0, 0], [0, 1, 0]), -1.0)
    with pytest.raises(TypeError, match="Strokes"):
        solve_line_of_action(cylinder, Pose.rest(cylinder), np.zeros((2, 3)), _line([0, 0, 0], [0, 1, 0]), 0.1)
    np.testing.assert_array_equal(skin_joints(cylinder), [0, 1, 2])


def test_frames_are_comparable_and_identical_strokes_give_identity():
    base = _line([0, 0, 0], [0, 1, 0])
    r = stroke_rotations(base, base, np.linspace(0, 1, 5))
    np.testing.assert_allclose(r, np.broadcast_to(np.eye(3), r.shape), atol=1e-9)
    bent = _bent(90.0)
    np.testing.assert_allclose(np.abs(common_normal(base, bent)), [0, 0, 1], atol=1e-9)
    assert common_normal(base, _line([0, 2, 0], [0, 3, 0])) is None  # all on one line: no plane
    ts = np.array([0.0, 0.5, 1.0])
    r = stroke_rotations(base, bent, ts)
    np.testing.assert_allclose(np.einsum("kij,kj->ki", r, base.tangent(ts)), bent.tangent(ts), atol=1e-6)
    np.testing.assert_allclose(r[:, 2, 2], 1, atol=1e-9)  # turns within the strokes' plane only
    np.testing.assert_allclose(r[2] @ [0, 1, 0], bent.tangent(1.0), atol=1e-6)


def test_fit_rotation_recovers_a_rotation_and_handles_one_line():
    rng = np.random.default_rng(3)
    q = quat.normalize(rng.normal(size=4))
    rmat = quat.to_matrix(q)
    u = rng.normal(size=(4, 3))
    np.testing.assert_allclose(_fit_rotation(u, u @ rmat.T), rmat, atol=1e-9)
    one = np.array([[0.0, 1, 0], [0, 2, 0]])
    turned = _fit_rotation(one, np.array([[1.0, 0, 0], [2, 0, 0]]))
    np.testing.assert_allclose(turned @ [0, 1, 0], [1, 0, 0], atol=1e-9)
    np.testing.assert_allclose(turned @ [0, 0, 1], [0, 0, 1], atol=1e-9)  # shortest arc: no twist


def test_apply_rotation_deltas(cylinder):
    pose = Pose.rest(cylinder)
    d = np.tile(np.array([0, 0, 0, 1], np.float32), (cylinder.count, 1))
    d[1] = quat.from_axis_angle(np.array([0.0, 0, 1]), np.pi / 2)
    out = apply_rotation_deltas(pose, d)
    np.testing.assert_allclose(out.rotation[1], d[1], atol=1e-6)
    np.testing.assert_array_equal(pose.rotation[1], [0, 0, 0, 1])  # the input is untouched
    with pytest.raises(ValueError, match="rotation deltas must be"):
        apply_rotation_deltas(pose, d[:2])


def test_a_joint_with_several_selected_children_turns_them_together():
    """Baseline from the humanoid's left hand over the shoulders to its right hand, offset the same stroke turned
    30 degrees about the chest: the chain runs through the chest (the two hands' lowest common ancestor), whose
    two selected children (both clavicles) are fitted at once (Kabsch), so the arms and the chest turn as one
    rigid piece about the chest; the neck and head follow the chest, the spine, hips and legs stay."""
    rig = quiet_load("humanoid").rig
    pose = Pose.rest(rig)
    p0 = _all_positions(rig, pose)
    chest = p0[2]
    corners = p0[[8, 6, 10, 12]].copy()  # hand_L, upper_arm_L, upper_arm_R, hand_R
    corners[:, 2] = -0.015  # one plane (the arms' depth)
    pts = np.vstack([a + np.linspace(0, 1, 12, endpoint=False)[:, None] * (b - a)
                     for a, b in zip(corners[:-1], corners[1:])] + [corners[-1:]])
    turn = quat.to_matrix(quat.from_axis_angle(np.array([0.0, 0, 1]), np.radians(30.0)))
    base, off = Stroke.fit(pts), Stroke.fit(chest + (pts - chest) @ turn.T)
    res = solve_line_of_action(rig, pose, base, off, 0.06)
    names = [rig.names[i] for i in res.selected]
    assert names == ["chest", "shoulder_L", "shoulder_R", "upper_arm_L", "upper_arm_R", "forearm_L", "forearm_R",
                     "hand_L", "hand_R"]  # the tree path between the hands, root-outwards (not the neck)
    np.testing.assert_allclose(res.targets, chest + (p0[res.selected] - chest) @ turn.T, atol=1e-5)
    p1 = _all_positions(rig, res.pose)
    upper = list(range(2, 13))  # chest, neck, head, both arms
    np.testing.assert_allclose(p1[upper], chest + (p0[upper] - chest) @ turn.T, atol=1e-5)
    axis, angle = quat.to_axis_angle(res.deltas[2].astype(np.float64))
    assert np.degrees(angle) == pytest.approx(30.0, abs=1e-3) and axis[2] == pytest.approx(1, abs=1e-6)
    rest = [0, 1, *range(13, 21)]
    np.testing.assert_array_equal(p1[rest], p0[rest])
    np.testing.assert_allclose(res.deltas[[0, 1, *range(3, 21)]], [[0, 0, 0, 1]] * 20, atol=1e-5)


def _all_positions(rig, pose) -> np.ndarray:
    return global_matrices(rig, pose)[:, :3, 3].astype(np.float64)
