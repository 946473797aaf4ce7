"""Posing follows the stroke (engine/anim/posing.py select_chain, engine/authoring/posing.py): the baseline
selects the joint chain between the joints nearest its ends, not every joint in the brush; each selected joint
is still placed by its t_j and d_j; the default posing plane is parallel to the image plane; and the projection
of a world stroke pair lying on that plane poses exactly as the world pair does."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.anim import Pose, global_matrices
from engine.anim.posing import select_chain, select_joints, skin_joints, solve_line_of_action, tree_path
from engine.anim.rig import Rig
from engine.assets.model import Asset, Node, Skin
from engine.authoring.posing import brush_metres, frame_reference, posing_plane, skeleton_root, unproject_stroke
from engine.authoring.view import window_points
from engine.input.strokes import Stroke
from engine.math import quat
from engine.render.camera import Camera

# node indices of the branching rig: a root with three chains of three joints (+X, +Y, -X), 0.3 m bones
ROOT, A1, A2, A3, B1, B2, B3, C1, C2, C3 = range(10)
#: the camera of examples/pose_arm.json, where a new user drew shoulder to hand with the default 60 px brush
ARM_CAMERA = dict(eye=(0.3, 1.3, 2.6), target=(0.3, 1.2, 0.0), fov_y=40.0, aspect=640 / 480)


@pytest.fixture(scope="module")
def branching() -> Rig:
    step = {"a": (0.3, 0, 0), "b": (0, 0.3, 0), "c": (-0.3, 0, 0)}
    nodes = [Node("root", children=[A1, B1, C1])]
    for k, (chain, t) in enumerate(step.items()):
        for i in range(3):
            me = 1 + 3 * k + i
            parent = ROOT if i == 0 else me - 1
            nodes.append(Node(f"{chain}{i + 1}", parent=parent, children=[me + 1] if i < 2 else [],
                              translation=np.asarray(t, np.float32)))
    joints = np.arange(10)
    asset = Asset(None, nodes=nodes, skins=[Skin("skin", joints, np.tile(np.eye(4, dtype=np.float32), (10, 1, 1)))])
    return Rig.from_asset(asset)


def _positions(rig: Rig, pose: Pose) -> np.ndarray:
    return global_matrices(rig, pose)[:, :3, 3].astype(np.float64)


def _line(a, b, n: int = 30) -> Stroke:
    s = np.linspace(0.0, 1.0, n)[:, None]
    return Stroke.fit(np.asarray(a, float) + s * (np.asarray(b, float) - np.asarray(a, float)))


def _chain(rig: Rig, baseline: Stroke, radius: float) -> list[int]:
    sel, _t = select_chain(rig, _positions(rig, Pose.rest(rig)), skin_joints(rig), baseline, radius)
    return sel.tolist()


def test_the_brush_only_decides_which_chain(branching):
    p = _positions(branching, Pose.rest(branching))
    along_a = _line(p[A1], p[A3])
    brush, _t, _d = select_joints(p, skin_joints(branching), along_a, 0.35)
    assert ROOT in brush.tolist()  # the brush reaches the root...
    assert _chain(branching, along_a, 0.35) == [A1, A2, A3]  # ...but the stroke runs from a1 to a3
    assert _chain(branching, _line(p[A3], p[A1]), 0.35) == [A1, A2, A3]  # drawn the other way: root-outwards
    # from one branch's tip to another's: the tree path through their common ancestor, root-outwards
    bent = Stroke.fit(np.vstack([_line(p[A3], p[ROOT]).samples, _line(p[ROOT], p[B3]).samples[1:]]))
    assert _chain(branching, bent, 0.05) == [ROOT, A1, B1, A2, B2, A3, B3]


def test_ties_and_a_one_joint_selection(branching):
    p = _positions(branching, Pose.rest(branching))
    # the start lies as far from the root as from a1: the shallower joint starts the chain
    assert _chain(branching, _line(p[A1] / 2, p[A3]), 0.2) == [ROOT, A1, A2, A3]
    # as far from a1 as from b1 (both one level deep): the lower node index
    assert _chain(branching, _line(p[A1] + p[B1], p[A3]), 0.35) == [A1, A2, A3]
    # a short stroke by a2 alone selects a2; the offset turned 90 degrees turns a2 by 90 degrees, a3 follows
    near_a2 = _line(p[A2] + [-0.05, 0.02, 0], p[A2] + [0.05, 0.02, 0])
    turned = _line(p[A2] + [-0.02, -0.05, 0], p[A2] + [-0.02, 0.05, 0])
    res = solve_line_of_action(branching, Pose.rest(branching), near_a2, turned, 0.05)
    assert res.selected.tolist() == [A2]
    axis, angle = quat.to_axis_angle(res.deltas[A2].astype(np.float64))
    assert np.degrees(angle) == pytest.approx(90.0, abs=1e-3) and axis[2] == pytest.approx(1.0, abs=1e-6)
    others = [j for j in range(10) if j != A2]
    np.testing.assert_allclose(res.deltas[others], [[0, 0, 0, 1]] * 9, atol=0)
    np.testing.assert_allclose(_positions(branching, res.pose)[A3], p[A2] + [0, 0.3, 0], atol=1e-6)


def test_each_selected_joint_is_placed_by_t_and_d(branching):
    """Baseline 2 cm beside chain B, offset that baseline turned 60 degrees about b1: t_j and d_j are the
    research's (closest baseline point, offset from it), the targets o(t_j) + R_j d_j are b's joints turned the
    same way, and the posed joints reach them."""
    rest = Pose.rest(branching)
    p = _positions(branching, rest)
    beside = np.array([0.02, 0.0, 0.0])
    base = _line(p[B1] + beside, p[B3] + beside)
    turn = quat.to_matrix(quat.from_axis_angle(np.array([0.0, 0, 1]), np.radians(60.0)))
    off = Stroke.fit(p[B1] + (base.samples - p[B1]) @ turn.T)
    res = solve_line_of_action(branching, rest, base, off, 0.05)
    assert res.selected.tolist() == [B1, B2, B3]
    np.testing.assert_allclose(res.t, [0.0, 0.5, 1.0], atol=1e-3)
    np.testing.assert_allclose(res.d, p[res.selected] - base.point(res.t), atol=1e-12)
    np.testing.assert_allclose(res.d, [-beside] * 3, atol=1e-4)
    want = p[B1] + (p[res.selected] - p[B1]) @ turn.T
    np.testing.assert_allclose(res.targets, want, atol=1e-4)
    np.testing.assert_allclose(_positions(branching, res.pose)[res.selected], res.targets, atol=1e-5)
    untouched = [j for j in range(10) if j not in (B1, B2, B3)]
    np.testing.assert_array_equal(_positions(branching, res.pose)[untouched], p[untouched])


def test_no_joint_in_the_brush_and_separate_trees_are_refused(branching):
    with pytest.raises(ValueError, match=r"selects no joint.*closest: 'a3' at 0.1 m"):
        solve_line_of_action(branching, Pose.rest(branching), _line([1.0, 0, 0], [1.2, 0, 0]),
                             _line([1.0, 0, 0], [1.2, 0.1, 0]), 0.05)
    assert tree_path(np.array([-1, 0, 1, 0]), 2, 3).tolist() == [2, 1, 0, 3]
    assert tree_path(np.array([-1, 0, 1, 0]), 1, 1).tolist() == [1]
    with pytest.raises(ValueError, match="two separate trees"):
        tree_path(np.array([-1, 0, -1]), 1, 2)


def _humanoid_positions():
    with Session(device="cpu", render=False) as s:
        ch = s.spawn("humanoid", clip=None)
        return ch.loaded.rig, ch.joints()[:, :3, 3].astype(np.float64), skeleton_root(ch)


def test_shoulder_to_hand_with_the_default_brush_selects_the_arm():
    """The new user's stroke: shoulder to hand on screen, the default 60 px brush (about 0.24 m at the root's
    depth), a raised offset. The brush also covers the neck, the head and both clavicles; the chain is the arm's,
    so the head and the other arm stay where they were."""
    rig, p, root = _humanoid_positions()
    cam = Camera(**ARM_CAMERA)
    plane = posing_plane(root, cam)
    radius = brush_metres(60.0, cam, 480, plane)
    names = rig.names

    def window(a, b) -> Stroke:
        px = window_points(cam, 640, 480, p[a] + np.linspace(0, 1, 15)[:, None] * (p[b] - p[a]))
        return unproject_stroke(Stroke.fit(px, window_height=480), cam, 640, 480, plane.pyrr)

    for first, arm in (("upper_arm_L", ["upper_arm_L", "forearm_L", "hand_L"]),
                       ("shoulder_L", ["shoulder_L", "upper_arm_L", "forearm_L", "hand_L"])):
        base = window(rig.node_index(first), rig.node_index("hand_L"))
        brush, _t, _d = select_joints(p, skin_joints(rig), base, radius)
        assert {"neck", "shoulder_R"} <= {names[j] for j in brush}  # the old selection
        s0 = p[rig.node_index(first)]
        raised = Stroke.fit(s0 + np.linspace(0, 1, 15)[:, None] * np.array([0.25, 0.35, 0.0]))
        with Session(device="cpu", render=False) as s:
            ch = s.spawn("humanoid", clip=None)
            res = ch.apply_line_of_action(base, raised, brush_radius=radius,
                                          reference=frame_reference(base, raised, plane))
            assert [names[j] for j in res.selected] == arm
            moved = ch.joints()[:, :3, 3].astype(np.float64)
        stay = [rig.node_index(n) for n in ("hips", "chest", "neck", "head", "shoulder_R", "hand_R")]
        np.testing.assert_allclose(moved[stay], p[stay], atol=1e-6)
        assert moved[rig.node_index("hand_L"), 1] > p[rig.node_index("hand_L"), 1] + 0.3  # the hand went up


def test_a_window_pair_poses_like_the_world_pair_it_projects():
    """A world pair on the default posing plane (of a camera looking at the body from a little above and aside,
    so the root is off the view's axis) and its projection in the window: the same four-joint arm, the same
    vertices -- the window pair through engine.authoring, the world pair through Character.apply_line_of_action
    alone."""
    rig, p, root = _humanoid_positions()
    w, h = 800, 600
    cam = Camera(eye=(0.9, 1.5, 2.5), target=(0.3, 1.2, 0.0), fov_y=35.0, aspect=w / h)
    plane = posing_plane(root, cam)
    arm = [rig.node_index(n) for n in ("shoulder_L", "upper_arm_L", "forearm_L", "hand_L")]
    on_plane = p[arm] - np.outer((p[arm] - plane.point) @ plane.normal, plane.normal)
    base = np.vstack([a + np.linspace(0, 1, 10, endpoint=False)[:, None] * (b - a)
                      for a, b in zip(on_plane[:-1], on_plane[1:])] + [on_plane[-1:]])
    arc = np.radians(np.linspace(0.0, 120.0, 25))
    off = on_plane[0] + 0.55 * (np.outer(np.sin(arc), plane.right) + np.outer(1 - np.cos(arc), plane.up))
    radius_m = 0.15
    metres_per_px = brush_metres(1.0, cam, h, plane)

    with Session(device="cpu", render=False) as s:
        ch = s.spawn("humanoid", clip=None)
        world = ch.apply_line_of_action(base, off, brush_radius=radius_m)
        world_verts = {k: v.copy() for k, v in ch.vertices().items()}
        ch.clear_pose()
        b2, o2 = (Stroke.fit(window_points(cam, w, h, pts), window_height=h) for pts in (base, off))
        b3, o3 = (unproject_stroke(st, cam, w, h, plane.pyrr) for st in (b2, o2))
        np.testing.assert_allclose(b3.knots, Stroke.fit(base).knots, atol=1e-9)  # the world stroke back
        win = ch.apply_line_of_action(b3, o3, brush_radius=brush_metres(radius_m / metres_per_px, cam, h, plane),
                                      reference=frame_reference(b3, o3, plane))
        win_verts = ch.vertices()
    assert [rig.names[j] for j in world.selected] == ["shoulder_L", "upper_arm_L", "forearm_L", "hand_L"]
    np.testing.assert_array_equal(win.selected, world.selected)
    np.testing.assert_allclose(win.targets, world.targets, atol=1e-6)
    for k in world_verts:
        np.testing.assert_allclose(win_verts[k], world_verts[k], atol=1e-5)
    assert not np.allclose(world.targets, p[arm], atol=0.1)  # it did pose


def test_unprojection_reduces_in_metres_and_keeps_a_dragged_strokes_knots():
    """Window samples are reduced after unprojection (0.01 m, as world strokes are); a stroke fitted without
    reduction (the editor's stroke after a knot drag: its samples are its knots) keeps every knot."""
    cam = Camera(**ARM_CAMERA)
    plane = posing_plane(np.array([0.0, 0.97, 0.0]), cam)
    wobbly = np.c_[np.linspace(200, 400, 41), 240 + 1.5 * np.sin(np.linspace(0, 6 * np.pi, 41))]  # < 1 cm
    drawn = unproject_stroke(Stroke.fit(wobbly, window_height=480), cam, 640, 480, plane.pyrr)
    assert len(drawn.knots) == 2 and drawn.epsilon == pytest.approx(0.01)
    knots = np.array([[200.0, 240.0], [300.0, 241.0], [400.0, 240.0]])
    dragged = unproject_stroke(Stroke.fit(knots, epsilon=0.0), cam, 640, 480, plane.pyrr)
    assert len(dragged.knots) == 3
    np.testing.assert_allclose((dragged.knots - plane.point) @ plane.normal, 0, atol=1e-9)
