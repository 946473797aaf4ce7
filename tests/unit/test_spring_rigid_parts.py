"""Issue 26, item 2: rigid where the rig says rigid. A generated arm (tests/helpers/rigid_parts.py) with a thin
panel and a ball joint bound to one joint each, both straddling the elbow's divider (the attachment binding
splits them between the bones), and a sleeve over the blended skin: the rigid parts stay within 1e-4 of their
joint's rigid motion (without the skin weights the springs dent them), the sleeve keeps its offset from the skin,
and the volume term gives the sleeve no region of its own bone (one shell per region)."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning.binding import bind
from engine.skinning.meshprep import copy_to_display, prepare_mesh
from engine.skinning.springs import SpringDeformer, SpringParams, rigid_points
from tests.helpers.rigid_parts import rigid_parts
from tests.helpers.tube_rig import _rot


@pytest.fixture(scope="module")
def arm():
    p = rigid_parts()
    topo = prepare_mesh(p.positions, p.triangles)
    assert topo.n_control == topo.n_display  # nothing welded: the parts stay separate shells
    binding = bind(topo, p.bind_joints.astype(np.float32), p.parents)
    posed = p.bind_joints.copy()
    posed[1, :3, :3] = _rot([0, 0, 1], np.radians(110))
    posed[2] = posed[1] @ np.linalg.inv(p.bind_joints[1]) @ p.bind_joints[2]
    return p, topo, binding, posed


def _rigid_motion(p, posed):
    out = np.zeros_like(p.positions, dtype=np.float64)
    for j in (0, 1):
        m = p.rigid_joint == j
        out[m] = (p.positions[m] - p.bind_joints[j, :3, 3]) @ posed[j, :3, :3].T + posed[j, :3, 3]
    return out


def test_rigid_points_are_the_single_joint_shells(arm):
    p, topo, binding, _ = arm
    bone, offset = rigid_points(topo, binding, p.bind_joints, p.joints, p.weights)
    held = bone >= 0
    np.testing.assert_array_equal(held, p.rigid_joint >= 0)
    np.testing.assert_array_equal(binding.bones.parent_joint[bone[held]], p.rigid_joint[held])
    # both rigid parts straddle the elbow: the attachment binding alone splits them between the two bones
    for piece in (1, 2):
        assert np.unique(binding.bone[p.piece == piece]).size > 1


def test_rigid_parts_follow_their_joint_and_the_sleeve_keeps_its_offset(arm):
    p, topo, binding, posed = arm
    diag = float(np.linalg.norm(p.positions.max(0) - p.positions.min(0)))
    target = _rigid_motion(p, posed)
    rigid = p.rigid_joint >= 0
    d = SpringDeformer(topo, binding, p.bind_joints, p.parents, SpringParams(), joints=p.joints, weights=p.weights)
    x = copy_to_display(topo, d.solve(posed)[0]).astype(np.float64)
    assert np.abs(x[rigid] - target[rigid]).max() <= 1e-4 * diag
    # without the weights nothing says rigid: the springs bend the parts with the elbow
    plain = SpringDeformer(topo, binding, p.bind_joints, p.parents, SpringParams())
    y = copy_to_display(topo, plain.solve(posed)[0]).astype(np.float64)
    assert np.abs(y[rigid] - target[rigid]).max() > 1e-2 * diag
    # the sleeve keeps its offset from the skin (0.045 at bind) and stays outside it
    skin, sleeve = p.piece == 0, p.piece == 3
    near = np.argmin(((p.positions[sleeve][:, None] - p.positions[skin][None]) ** 2).sum(-1), 1)
    gap0 = np.linalg.norm(p.positions[sleeve] - p.positions[skin][near], axis=1)
    gap = np.linalg.norm(x[sleeve] - x[skin][near], axis=1)
    assert np.abs(gap - gap0).max() <= 0.1 * gap0.max()
    # one shell per volume region: the skin's
    assert np.all(d.rest.vol_region[sleeve] < 0) and np.any(d.rest.vol_region[skin] >= 0)
