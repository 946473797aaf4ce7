"""Sheets touching at bind (springs.touch, issue 26): a point lying on a face it is not a corner of is glued to it.

Checked on a generated torso and arm whose boxes touch at bind (tests/helpers/touching_boxes.py, the arm's end face
or open rim on the torso's side face, a hundredth of an edge off it): exactly the arm's end points are glued, in any
unit and nothing when the boxes are apart; a glued point keeps its place relative to its face (on a rigid motion
exactly); the bind pose stays a fixed point; turned 30-60 deg towards the torso the springs cross no face pair
where LBS crosses none, and without the glue they do. Khronos' RiggedFigure, whose shoulder boxes touch its torso's
side wall: tests/unit/test_spring_differential.py."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.skinning.binding import bind
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.metrics import intersecting_pairs
from engine.skinning.skinning import lbs
from engine.skinning.springs import SpringDeformer
from engine.skinning.springs.touch import face_frames, glue, touch_targets
from tests.helpers.touching_boxes import GAP, Boxes, touching_boxes


def _deformer(boxes: Boxes) -> SpringDeformer:
    topo = prepare_mesh(boxes.positions, boxes.triangles)
    binding = bind(topo, boxes.bind_joints.astype(np.float32), boxes.parents)
    return SpringDeformer(topo, binding, boxes.bind_joints, boxes.parents, joints=boxes.joints,
                          weights=boxes.weights)


def _moved(boxes: Boxes, scale: float = 1.0, shift: float = 0.0) -> Boxes:
    """The boxes scaled about the origin (joints too), the arm shifted by `shift` (before scaling) along x."""
    x = np.asarray(boxes.positions, np.float64)
    arm = x[:, 0] > 0.5
    x[arm, 0] += shift
    bind_joints = np.array(boxes.bind_joints, np.float64)
    bind_joints[:, :3, 3] *= scale
    return replace(boxes, positions=(x * scale).astype(np.float32), bind_joints=bind_joints)


@pytest.mark.parametrize("open_end", [False, True])
def test_the_arms_end_points_and_only_they_are_glued_in_any_unit(open_end):
    boxes = touching_boxes(open_end)
    glued = _deformer(boxes).rest.glued
    assert glued is not None and np.array_equal(glued, boxes.arm_end)
    assert int(glued.sum()) == (8 if open_end else 9)
    # units: the same boxes 100x and 0.01x glue the same points; moved 0.2 apart (an edge) they glue none
    for scale in (100.0, 0.01):
        assert np.array_equal(_deformer(_moved(boxes, scale)).rest.glued, boxes.arm_end)
    assert _deformer(_moved(boxes, 1.0, 0.2)).rest.glued is None


def test_glued_points_follow_their_face_exactly_on_a_rigid_motion():
    boxes = touching_boxes()
    rest = _deformer(boxes).rest
    g = rest.glued
    assert g is not None
    x0 = np.asarray(boxes.positions, np.float64)
    a = np.radians(50.0)
    r = np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])
    moved = x0 @ r.T + [0.3, -1.2, 0.7]
    scrambled = moved.copy()
    scrambled[g] += 0.5  # wherever the glued points are, glue puts them back on their faces
    out = glue(scrambled, rest.touch_corners, rest.touch_bary, rest.touch_local)
    np.testing.assert_allclose(out, moved, atol=1e-12)
    # the target is the face's barycentric point plus the bind offset in the face's frame: the signed distance
    # from the face's plane at bind (GAP) is kept
    c = rest.touch_corners[g]
    frame = face_frames(moved[c[:, 0]], moved[c[:, 1]], moved[c[:, 2]])
    target = touch_targets(moved, c, rest.touch_bary[g], rest.touch_local[g])
    height = np.einsum("pj,pj->p", target - moved[c[:, 0]], frame[:, 2])
    np.testing.assert_allclose(np.abs(height), GAP, atol=1e-7)  # GAP in float32 positions


def test_bind_pose_stays_a_fixed_point():
    boxes = touching_boxes()
    x, _ = _deformer(boxes).solve(boxes.bind_joints)
    np.testing.assert_allclose(x, boxes.positions, atol=1e-6)


@pytest.mark.parametrize("open_end", [False, True])
@pytest.mark.parametrize("down", [30.0, 45.0, 60.0])
def test_touching_boxes_cross_nowhere_lbs_does_not(open_end, down, monkeypatch):
    boxes = touching_boxes(open_end)
    posed = boxes.posed(down)
    skin = (posed @ np.linalg.inv(boxes.bind_joints)).astype(np.float32)
    x_lbs = np.asarray(lbs(boxes.positions, boxes.joints, boxes.weights, skin), np.float64)
    assert intersecting_pairs(x_lbs, boxes.triangles).shape[0] == 0
    d = _deformer(boxes)
    x, _ = d.solve(posed)
    assert intersecting_pairs(np.asarray(x, np.float64), boxes.triangles).shape[0] == 0
    # the glued points sit on their faces in the result (placed from the previous iterate: within a few of the
    # last step's displacement, below the displacement threshold at convergence)
    g = d.rest.glued
    assert g is not None
    x64 = np.asarray(x, np.float64)
    on_face = touch_targets(x64, d.rest.touch_corners[g], d.rest.touch_bary[g], d.rest.touch_local[g])
    np.testing.assert_allclose(x64[g], on_face, atol=4.0 * d.displacement_threshold)
    # without the glue the springs move the arm's end off the torso's side and the sheets cross
    monkeypatch.setattr("engine.skinning.springs.touch.TOUCH", 0.0)
    free = _deformer(boxes)
    assert free.rest.glued is None
    assert intersecting_pairs(np.asarray(free.solve(posed)[0], np.float64), boxes.triangles).shape[0] > 0
