"""Surface edits as data (engine/skinning/edits.py) and their F_e terms in the spring deformer: encoding
relative to the attachment (edits follow the skeleton), keyed weights, overlapping edits summing, dict/JSON
round trips and validation."""
from __future__ import annotations

import json

import numpy as np
import pytest

from engine.skinning.edits import EditStack, EditTerms, SurfaceEdit, decode_targets, encode_targets
from tests.unit.test_skinning_springs import Tube, rot


@pytest.fixture(scope="module")
def tube() -> Tube:
    return Tube()


def test_encode_decode_round_trip():
    rng = np.random.default_rng(0)
    attach = rng.standard_normal((5, 3))
    r = np.stack([rot(rng.standard_normal(3), a) for a in (10, 50, 90, 170, 200)])
    tgt = rng.standard_normal((5, 3))
    local = encode_targets(tgt, attach, r)
    np.testing.assert_allclose(np.linalg.norm(local, axis=1), np.linalg.norm(tgt - attach, axis=1))  # length kept
    np.testing.assert_allclose(decode_targets(local, attach, r), tgt, atol=1e-12)


def test_keyed_weight_is_piecewise_linear_and_held_outside():
    e = SurfaceEdit([0], [[0, 1, 0]], keys=[[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]])
    assert e.weight(-1.0) == 0.0
    assert e.weight(0.5) == pytest.approx(0.5)
    assert e.weight(1.5) == pytest.approx(0.75)
    assert e.weight(9.0) == pytest.approx(0.5)
    assert SurfaceEdit([0], [[0, 1, 0]]).weight(3.0) == 1.0  # no keys: always on


def test_overlapping_edits_sum():
    v = 6
    attach = np.zeros((v, 3))
    r = np.broadcast_to(np.eye(3), (v, 3, 3))
    a = SurfaceEdit([1, 2], [[0, 1, 0], [0, 2, 0]], stiffness=2.0)
    b = SurfaceEdit([2, 3], [[1, 0, 0], [0, 0, 1]], stiffness=3.0, keys=[[0, 0], [1, 1]])
    x = np.random.default_rng(1).standard_normal((v, 3))
    terms = EditStack([a, b]).terms(v, attach, r, time=0.5)
    expect = np.zeros((v, 3))
    expect[[1, 2]] += 2.0 * (np.array([[0, 1, 0], [0, 2, 0]]) - x[[1, 2]])
    expect[[2, 3]] += 3.0 * 0.5 * (np.array([[1, 0, 0], [0, 0, 1]]) - x[[2, 3]])
    np.testing.assert_allclose(terms.force(x), expect, atol=1e-12)
    assert terms.active.tolist() == [False, True, True, True, False, False]
    e_sum = 0.5 * (2.0 * np.sum((np.array([[0, 1, 0], [0, 2, 0]]) - x[[1, 2]]) ** 2)
                   + 1.5 * np.sum((np.array([[1, 0, 0], [0, 0, 1]]) - x[[2, 3]]) ** 2))
    assert terms.energy(x) == pytest.approx(e_sum)
    # weight 0 at t = 0: only edit a is active
    assert EditStack([a, b]).terms(v, attach, r, time=0.0).active.tolist() == [False, True, True, False, False, False]


def test_serialisation_round_trip_through_json():
    e = SurfaceEdit([4, 7], [[0.1, 0.2, 0.3], [0, 0, 1]], passive=[5, 6], static=[8], stiffness=2.5,
                    keys=[[0, 0], [0.5, 1]], name="breath")
    stack = EditStack([e, SurfaceEdit([1], [[1, 1, 1]])])
    back = EditStack.from_dict(json.loads(json.dumps(stack.to_dict())))
    assert len(back) == 2
    b = back.edits[0]
    assert b.name == "breath" and b.stiffness == 2.5
    assert b.kinematic.tolist() == [4, 7] and b.passive.tolist() == [5, 6] and b.static.tolist() == [8]
    np.testing.assert_allclose(b.target_local, e.target_local)
    np.testing.assert_allclose(b.keys, e.keys)


def test_validation_messages():
    with pytest.raises(ValueError, match="kinematic and passive sets share vertices"):
        SurfaceEdit([1, 2], [[0, 0, 1], [0, 0, 1]], passive=[2, 3])
    with pytest.raises(ValueError, match=r"target_local has shape \(1, 3\); valid: \(2, 3\)"):
        SurfaceEdit([1, 2], [[0, 0, 1]])
    with pytest.raises(ValueError, match="stiffness = -1"):
        SurfaceEdit([1], [[0, 0, 1]], stiffness=-1)
    with pytest.raises(ValueError, match="not strictly increasing"):
        SurfaceEdit([1], [[0, 0, 1]], keys=[[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="unknown surface edit keys"):
        SurfaceEdit.from_dict({"kinematic": [1], "target_local": [[0, 0, 1]], "colour": 3})
    with pytest.raises(ValueError, match=r"kinematic index 9 out of range; valid: 0..4"):
        EditStack([SurfaceEdit([9], [[0, 0, 1]])]).terms(5, np.zeros((5, 3)), np.broadcast_to(np.eye(3), (5, 3, 3)))


def _bump(tube: Tube, d, ring: int = 28, amount: float = 0.15) -> SurfaceEdit:
    """An edit made at bind: four vertices of one ring pushed outwards."""
    fr = d.frame(tube.joints)
    kin = np.nonzero(tube.ring == ring)[0][:4]
    out = tube.x0[kin] - fr.attach[kin]
    target = tube.x0[kin] + amount * out / np.linalg.norm(out, axis=1, keepdims=True)
    passive = np.nonzero(abs(tube.ring - ring) <= 3)[0]
    return SurfaceEdit.from_world(kin, target, fr.attach, fr.rot, passive=np.setdiff1d(passive, kin),
                                  stiffness=8.0, name="bump")


def test_spring_edit_moves_handles_and_neighbours(tube):
    d = tube.deformer(max_iterations=2000)
    edit = _bump(tube, d)
    x, st = d.solve(tube.joints, edits=EditStack([edit]))
    assert st.converged
    kin = edit.kinematic
    fr = d.frame(tube.joints)
    target = edit.targets(fr.attach, fr.rot)
    moved = np.linalg.norm(x - tube.x0, axis=1)
    # the handles go most of the way; their neighbours follow partly; far vertices stay
    assert np.all(np.linalg.norm(x[kin] - tube.x0[kin], axis=1) > 0.5 * 0.15)
    assert np.linalg.norm(x[kin] - target, axis=1).max() < 0.5 * 0.15
    ring_dist = np.abs(tube.ring - 28)
    assert moved[(ring_dist == 1)].max() > 0.01
    assert moved[ring_dist >= 10].max() < 1e-3


def test_edit_made_at_bind_follows_a_rotated_bone(tube):
    d = tube.deformer(max_iterations=2000)
    stack = EditStack([_bump(tube, d)])
    bump_bind = d.solve(tube.joints, edits=stack)[0] - tube.x0
    posed = tube.pose([0, 0, 1], 90)
    bump_pose = d.solve(posed, edits=stack)[0] - d.solve(posed)[0]
    # the bump (edited minus unedited result) turns with bone 1 instead of staying put in world space
    r = rot([0, 0, 1], 90)
    region = tube.ring >= 22
    np.testing.assert_allclose(bump_pose[region], bump_bind[region] @ r.T, atol=0.05 * np.abs(bump_bind).max())
    kin = stack.edits[0].kinematic
    assert np.linalg.norm(bump_pose[kin], axis=1).min() > 0.07
    assert np.abs(bump_pose[kin] - bump_bind[kin]).max() > 0.07  # an unrotated (world-space) bump would fail


def test_keyed_edit_animates_the_bump(tube):
    d = tube.deformer(max_iterations=2000)
    edit = _bump(tube, d)
    edit.keys = np.array([[0.0, 0.0], [1.0, 1.0]])
    stack = EditStack([edit])
    kin = edit.kinematic
    heights = [np.linalg.norm(d.solve(tube.joints, edits=stack, time=t)[0][kin] - tube.x0[kin], axis=1).mean()
               for t in (0.0, 0.5, 1.0)]
    assert heights[0] < 1e-6 < heights[1] < heights[2]
    terms = stack.terms(len(tube.x0), tube.x0 * 0, np.broadcast_to(np.eye(3), (len(tube.x0), 3, 3)), 0.25)
    assert isinstance(terms, EditTerms) and terms.stiffness[kin] == pytest.approx(8.0 * 0.25)
