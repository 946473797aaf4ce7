"""Surface edits honour their region of interest in the numpy spring reference (issue 12 item 3): the static
ring is held, only the kinematic and passive vertices move with the edit; profiles along the stroke (bulge
with the easings of eq. 24, travelling sine, offset stroke); keyed weights; the edit file round trip."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from engine.input.strokes import Stroke
from engine.skinning import roi
from engine.skinning.edits import (
    EASINGS,
    EditStack,
    Profile,
    SurfaceEdit,
    edit_pose,
    offset_targets,
)
from engine.skinning.springs import SpringDeformer, SpringParams
from tests.helpers.tube_rig import pose, tube

PARAMS = SpringParams(convergence="iterations", max_iterations=150, k_e=4.0)


@pytest.fixture(scope="module")
def rig():
    return tube(rings=17, segments=16)


def _solver(rig, params=PARAMS):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, params)


def _stroke_region(rig, rings=2):
    """A stroke across the tube's front at mid-height, three faces long; its region."""
    topo = rig.topology
    x = np.asarray(topo.positions, np.float64)
    tri = np.asarray(topo.triangles)
    c = x[tri].mean(1)
    front = np.flatnonzero((c[:, 0] > 0.09) & (np.abs(c[:, 1] - 0.5) < 0.05))
    order = front[np.argsort(np.arctan2(c[front, 2], c[front, 0]))]
    faces = order[len(order) // 2 - 1: len(order) // 2 + 2]
    bary = np.full((len(faces), 3), 1 / 3)
    return faces, bary, roi.region_of_interest(topo, faces, bary, rings=rings)


def _bulge(rig, region, faces, bary, posed, height=0.05, **kw):
    d = _solver(rig)
    fr = d.frame(posed)
    rest = d.rigid(fr)
    pts = roi.surface_positions(rest, rig.topology.triangles, faces, bary)
    stroke = Stroke.fit(pts if len(pts) > 1 else np.vstack([pts, pts + 1e-3]), epsilon=0.0)
    kin = region.kinematic
    t = np.array([stroke.closest(p)[0] for p in rest[kin]])
    normal = np.cross(*(np.diff(rest[rig.topology.triangles[faces[len(faces) // 2]]], axis=0)))
    edit = SurfaceEdit.from_profile(kin, rest[kin], t, Profile("bulge", height, **kw), fr.attach, fr.rot,
                                    normal=normal, passive=region.passive, static=region.static, stiffness=20.0)
    return d, fr, edit


@pytest.mark.parametrize("bend", [0.0, 0.5])
def test_static_held_outside_untouched(rig, bend):
    faces, bary, region = _stroke_region(rig)
    _, posed = pose(rig, bend=bend)
    d, fr, edit = _bulge(rig, region, faces, bary, posed)
    x0 = d.rigid(fr)
    moved, _ = d.solve(posed, edits=EditStack([edit]))
    d0, _, flat = _bulge(rig, region, faces, bary, posed, height=0.0)
    still, _ = d0.solve(posed, edits=EditStack([flat]))
    inside = np.zeros(rig.topology.n_control, bool)
    inside[np.concatenate([region.kinematic, region.passive, region.static])] = True
    # the static ring stays exactly where the initial skinning put it
    np.testing.assert_array_equal(moved[region.static], x0[region.static].astype(np.float32))
    # outside the region the result does not depend on the edit's height at all
    np.testing.assert_array_equal(moved[~inside], still[~inside])
    # the kinematic vertices reach their targets (within the springs' pull on them)
    tgt = edit.targets(fr.attach, fr.rot)
    lift = np.linalg.norm(tgt - x0[region.kinematic], axis=1)
    err = np.linalg.norm(moved[region.kinematic] - tgt, axis=1)
    assert lift.max() > 0.04 and err.max() < 0.2 * lift.max()
    # the passive vertices follow, less than the handles
    dp = np.linalg.norm(moved[region.passive] - still[region.passive], axis=1)
    assert 0.0 < dp.max() < lift.max()


def test_without_static_set_the_edit_spreads(rig):
    faces, bary, region = _stroke_region(rig)
    _, posed = pose(rig, bend=0.3)
    d, fr, edit = _bulge(rig, region, faces, bary, posed)
    free = SurfaceEdit(edit.kinematic, edit.target_local, stiffness=edit.stiffness, profile=edit.profile,
                       param=edit.param, direction_local=edit.direction_local)
    d0, _, flat = _bulge(rig, region, faces, bary, posed, height=0.0)
    still, _ = d0.solve(posed, edits=EditStack([flat]))
    spread, _ = d.solve(posed, edits=EditStack([free]))
    assert np.abs(spread[region.static] - still[region.static]).max() > 1e-4


def test_overlap_frees_a_static_vertex(rig):
    """A vertex static in one edit but passive in another is not held."""
    faces, bary, region = _stroke_region(rig, rings=1)
    wide = roi.region_of_interest(rig.topology, faces, bary, rings=3)
    a = SurfaceEdit(region.kinematic, np.zeros((region.kinematic.size, 3)), passive=region.passive,
                    static=region.static)
    b = SurfaceEdit(wide.kinematic, np.zeros((wide.kinematic.size, 3)), passive=wide.passive, static=wide.static)
    n = rig.topology.n_control
    assert set(np.flatnonzero(EditStack([a]).held(n))) == set(region.static.tolist())
    assert set(np.flatnonzero(EditStack([a, b]).held(n))) == set(wide.static.tolist())
    assert not EditStack([SurfaceEdit(a.kinematic, a.target_local, static=a.static, stiffness=0.0)]).held(n).any()


def test_profiles_along_the_stroke():
    t = np.linspace(0.0, 1.0, 11)
    bulge = Profile("bulge", 0.1).amount(t)
    np.testing.assert_allclose(bulge, 0.1 * (1 - (2 * t - 1) ** 2), atol=1e-12)  # the research's parabola
    assert bulge[0] == 0 and bulge[-1] == 0 and bulge[5] == pytest.approx(0.1)
    for name, f in EASINGS.items():
        u = np.linspace(0, 1, 9)
        v = f(u)
        assert v[0] == pytest.approx(0.0, abs=1e-12) and v[-1] == pytest.approx(1.0), name
        assert np.all(np.diff(v) >= -1e-12), name  # monotone rise
    ramp = Profile("bulge", 0.2, ease="cubicIn", ramp=True).amount(t)
    np.testing.assert_allclose(ramp, 0.2 * t ** 3, atol=1e-12)
    wave = Profile("sine", 0.05, waves=2.0, speed=0.5)
    np.testing.assert_allclose(wave.amount(t, time=0.0), 0.05 * np.sin(4 * np.pi * t), atol=1e-12)
    # travelling: the shape at time tau is the shape at 0 shifted by speed * tau / waves along the stroke
    np.testing.assert_allclose(wave.amount(np.array([0.35]), time=0.3),
                               wave.amount(np.array([0.35 - 0.5 * 0.3 / 2.0]), time=0.0), atol=1e-12)


def test_sine_edit_moves_with_clip_time(rig):
    faces, bary, region = _stroke_region(rig)
    _, posed = pose(rig, bend=0.0)
    d, fr, edit = _bulge(rig, region, faces, bary, posed)
    wave = SurfaceEdit(edit.kinematic, edit.target_local, profile=Profile("sine", 0.03, waves=1.0, speed=1.0),
                       param=edit.param, direction_local=edit.direction_local)
    a = wave.targets(fr.attach, fr.rot, time=0.0)
    b = wave.targets(fr.attach, fr.rot, time=0.25)
    assert np.abs(a - b).max() > 0.01
    np.testing.assert_allclose(wave.targets(fr.attach, fr.rot, time=1.0), a, atol=1e-12)  # one period


def test_keyed_weight_zero_and_one_at_keys(rig):
    faces, bary, region = _stroke_region(rig)
    _, posed = pose(rig, bend=0.2)
    d, fr, edit = _bulge(rig, region, faces, bary, posed)
    keyed = SurfaceEdit.from_dict({**edit.to_dict(), "keys": [[0.0, 0.0], [1.0, 1.0]]})
    assert keyed.weight(0.0) == 0.0 and keyed.weight(1.0) == 1.0 and keyed.weight(0.5) == 0.5
    off, _ = d.solve(posed, edits=EditStack([keyed]), time=0.0)
    on, _ = d.solve(posed, edits=EditStack([keyed]), time=1.0)
    full, _ = d.solve(posed, edits=EditStack([edit]))
    d0, _, flat = _bulge(rig, region, faces, bary, posed, height=0.0)
    np.testing.assert_allclose(on, full, atol=1e-7)
    # weight 0: no pull on the handles, the boundary still held (no jump when the weight comes back)
    x0 = d.rigid(fr)
    np.testing.assert_array_equal(off[region.static], x0[region.static].astype(np.float32))
    assert np.abs(off[region.kinematic] - full[region.kinematic]).max() > 0.02


def test_offset_targets_follow_the_offset_stroke():
    base = Stroke.fit(np.array([[0.0, 0, 0], [0.5, 0, 0], [1.0, 0, 0]]), epsilon=0.0)
    # the same stroke lifted by 0.1 along +Y: every point moves by the lift
    lifted = Stroke.fit(np.array([[0.0, 0.1, 0], [0.5, 0.1, 0], [1.0, 0.1, 0]]), epsilon=0.0)
    pts = np.array([[0.2, 0.01, 0.03], [0.7, -0.02, 0.0]])
    t = np.array([base.closest(p)[0] for p in pts])
    np.testing.assert_allclose(offset_targets(pts, t, base, lifted, reference=[0, 0, 1]),
                               pts + [0, 0.1, 0], atol=1e-6)
    # an offset turned by 90 degrees about Z at its start turns the offsets with it
    turned = Stroke.fit(np.array([[0.0, 0, 0], [0.0, 0.5, 0], [0.0, 1.0, 0]]), epsilon=0.0)
    out = offset_targets(pts[:1], t[:1], base, turned, reference=[0, 0, 1])
    np.testing.assert_allclose(out[0], [-0.01, 0.2, 0.03], atol=1e-6)


def test_edit_round_trip_and_refusals(rig):
    faces, bary, region = _stroke_region(rig)
    _, posed = pose(rig, bend=0.4)
    _, fr, edit = _bulge(rig, region, faces, bary, posed, ease="sineInOut", direction="radial")
    back = SurfaceEdit.from_dict(json.loads(json.dumps(edit.to_dict())))
    np.testing.assert_array_equal(back.static, edit.static)
    np.testing.assert_allclose(back.targets(fr.attach, fr.rot), edit.targets(fr.attach, fr.rot), atol=0)
    assert back.profile == edit.profile
    with pytest.raises(ValueError, match="unknown profile type"):
        Profile.from_dict({"type": "spike", "height": 0.1})
    with pytest.raises(ValueError, match="finite"):
        Profile.from_dict({"type": "bulge", "height": float("inf")})
    with pytest.raises(ValueError, match="needs a height"):
        Profile.from_dict({"type": "sine"})
    with pytest.raises(ValueError, match="unknown key"):
        Profile.from_dict({"type": "bulge", "height": 0.1, "width": 2})
    with pytest.raises(ValueError, match="easing"):
        Profile.from_dict({"type": "bulge", "height": 0.1, "ease": "bounce"})
    with pytest.raises(ValueError, match="param"):
        SurfaceEdit(edit.kinematic, edit.target_local, profile=edit.profile, param=edit.param[:-1],
                    direction_local=edit.direction_local)


def test_edit_pose_matches_the_spring_frame(rig):
    _, posed = pose(rig, bend=0.7, twist=0.4)
    d = _solver(rig)
    fr = d.frame(posed)
    attach, rot = edit_pose(rig.binding, rig.bind_joints, posed)
    np.testing.assert_allclose(attach, fr.attach, atol=1e-6)
    np.testing.assert_allclose(rot, fr.rot, atol=1e-12)
    some = np.array([3, 40, 7])
    a2, r2 = edit_pose(rig.binding, rig.bind_joints, posed, index=some)
    np.testing.assert_array_equal(a2[some], attach[some])
    np.testing.assert_array_equal(r2[some], rot[some])
    assert not a2[np.setdiff1d(np.arange(len(a2)), some)].any()
