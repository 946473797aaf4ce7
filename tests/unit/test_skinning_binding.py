"""Attachment binding: bones from a skeleton, projection (eq. 12), planar dividers (eq. 13), weights, smoothing."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning.binding import (
    bind,
    bind_from_weights,
    bind_planar,
    bind_project,
    binding_quality,
    make_binding,
    make_bones,
    nearest_bone,
    segment_projection,
    smooth_binding,
)
from engine.skinning.binding.smooth import _reproject, _skeleton_tree, _tree_coords
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.types import Bones, bone_endpoints


def rot(axis, ang) -> np.ndarray:
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(ang) * k + (1 - np.cos(ang)) * k @ k


def joint(t, axis=(0, 0, 1), ang=0.0) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = rot(axis, ang)
    m[:3, 3] = t
    return m


def tube(rings, segs, length, radius):
    th = 2 * np.pi * np.arange(segs) / segs
    y = np.linspace(0.0, length, rings)
    pos = np.stack(np.broadcast_arrays(radius * np.cos(th)[None], y[:, None], radius * np.sin(th)[None]),
                   -1).reshape(-1, 3)
    i, k = np.meshgrid(np.arange(rings - 1), np.arange(segs), indexing="ij")
    a, b = i * segs + k, i * segs + (k + 1) % segs
    tris = np.concatenate([np.stack([a, a + segs, b], -1).reshape(-1, 3),
                           np.stack([b, a + segs, b + segs], -1).reshape(-1, 3)])
    return pos, tris


def bent_tube(phi=np.pi / 2, rings=41, segs=24, length=2.0, radius=0.2, y0=0.8, arc=0.6):
    """A tube along +Y bent towards +X by phi over an arc starting at y0; returns the mesh and a three-joint
    chain whose bones follow the straight parts (elbow at the tangents' intersection)."""
    pos, tris = tube(rings, segs, length, radius)
    r_bend = arc / phi
    s = pos[:, 1] - y0
    alpha = np.clip(s / arc, 0, 1) * phi
    rr = r_bend - pos[:, 0]
    extra = np.maximum(s - arc, 0)
    bx = r_bend - rr * np.cos(alpha) + extra * np.sin(phi)
    by = y0 + rr * np.sin(alpha) + extra * np.cos(phi)
    out = pos.copy()
    out[s > 0, 0], out[s > 0, 1] = bx[s > 0], by[s > 0]
    elbow = np.array([0.0, y0 + r_bend * np.tan(phi / 2), 0.0])
    d2 = np.array([np.sin(phi), np.cos(phi), 0.0])
    rest = length - y0 - arc + r_bend * np.tan(phi / 2)
    joints = np.stack([joint((0, 0, 0)), joint(elbow, ang=-phi), joint(elbow + d2 * (rest - 0.2), ang=-phi)])
    return out.astype(np.float32), tris, joints.astype(np.float32), np.array([-1, 0, 1])


def test_segment_projection_eq12_by_hand():
    p = np.array([[0, 0, 0]], np.float32)
    c = np.array([[0, 2, 0]], np.float32)
    pts = np.array([[1, 0.5, 0], [0, 3, 1], [0, -1, 0], [2, 1, 0]], np.float32)
    t, d2 = segment_projection(pts, p, c)
    np.testing.assert_allclose(t[:, 0], [0.25, 1.0, 0.0, 0.5])
    np.testing.assert_allclose(d2[:, 0], [1.0, 2.0, 1.0, 4.0])
    # closest of several bones, with t on that bone
    p2 = np.array([[0, 0, 0], [5, 0, 0]], np.float32)
    c2 = np.array([[0, 2, 0], [5, 2, 0]], np.float32)
    bone, tt, dist = nearest_bone(np.array([[4, 1, 0], [1, 1.5, 0]], np.float32), p2, c2)
    np.testing.assert_array_equal(bone, [1, 0])
    np.testing.assert_allclose(tt, [0.5, 0.75])
    np.testing.assert_allclose(dist, [1.0, 1.0])


def test_make_bones_chain_tip_and_branches():
    # 0 root -> 1 -> 2 (leaf); 1 -> 3 (leaf, branch); 4 sits on 3 (zero-length, leaf)
    pos = np.array([[0, 0, 0], [0, 1, 0], [0, 2, 0], [1, 1, 0], [1, 1, 0]], float)
    bj = np.stack([joint(p) for p in pos]).astype(np.float32)
    parents = np.array([-1, 0, 1, 1, 3])
    mesh = np.array([[0, 2.5, 0], [0.1, 2.2, 0], [1.3, 1.0, 0], [0, -0.5, 0]], np.float32)
    bones = make_bones(bj, parents, mesh)
    pairs = list(zip(bones.parent_joint.tolist(), bones.child_joint.tolist()))
    assert pairs[:3] == [(0, 1), (1, 2), (1, 3)]  # one bone per child, (3, 4) skipped: zero length
    assert sorted(pairs[3:]) == [(2, -1), (4, -1)]  # tips on the leaves only
    p, c = bone_endpoints(bones, bj)
    tips = {int(j): c[i] for i, j in enumerate(bones.parent_joint) if bones.child_joint[i] < 0}
    with pytest.raises(ValueError, match="cycle"):
        make_bones(bj, np.array([-1, 2, 1, 1, 3]), mesh)
    with pytest.raises(ValueError, match=r"parents\[2\] = 7"):
        make_bones(bj, np.array([-1, 0, 7, 1, 3]), mesh)
    # leaf 2 points along its parent offset (+Y) as far as the mesh extends past it (to y = 2.5)
    np.testing.assert_allclose(tips[2], [0, 2.5, 0], atol=1e-6)
    # leaf 4 is coincident with 3: direction from the nearest ancestor at another position (1 -> 4 = +X),
    # length = how far the mesh goes past it along +X (x = 1.3)
    np.testing.assert_allclose(tips[4], [1.3, 1, 0], atol=1e-6)


def test_tip_follows_the_leaf_joint_rotation():
    bj = np.stack([joint((0, 0, 0)), joint((0, 1, 0), ang=0.3)]).astype(np.float32)
    bones = make_bones(bj, np.array([-1, 0]), np.array([[0, 1.5, 0]], np.float32))
    posed = bj.copy()
    posed[1, :3, :3] = rot((0, 0, 1), 0.3 + np.pi / 2)
    _, c = bone_endpoints(bones, posed)
    np.testing.assert_allclose(c[1], [-0.5, 1.0, 0.0], atol=1e-6)  # tip (0, 0.5) rotated by 90 deg about z


def test_bind_project_picks_closest_bone_and_far_points():
    bj = np.stack([joint((0, 0, 0)), joint((0, 1, 0)), joint((1, 1, 0))]).astype(np.float32)
    parents = np.array([-1, 0, 1])
    pts = np.array([[0.1, 0.5, 0], [0.5, 1.2, 0], [100, 50, 0]], np.float32)
    bones = make_bones(bj, parents, pts[:2])
    bone, t = bind_project(pts, bones, bj)
    assert list(zip(bones.parent_joint[bone].tolist(), bones.child_joint[bone].tolist()))[:2] == [(0, 1), (1, 2)]
    np.testing.assert_allclose(t[:2], [0.5, 0.5], atol=1e-6)
    # a point far from every bone is still bound, to the nearest bone (the tip bone along +X)
    p, c = bone_endpoints(bones, bj)
    d = [np.linalg.norm(pts[2] - (p[b] + np.clip(np.dot(pts[2] - p[b], c[b] - p[b]) / np.dot(c[b] - p[b], c[b] - p[b]),
                                                 0, 1) * (c[b] - p[b])))
         for b in range(bones.count)]
    assert bone[2] == int(np.argmin(d))


def _l_skeleton():
    bj = np.stack([joint((0, 0, 0)), joint((0, 1, 0)), joint((1, 1, 0))]).astype(np.float32)
    return bj, np.array([-1, 0, 1])


def test_planar_splits_at_the_bisector_plane():
    bj, parents = _l_skeleton()
    rng = np.random.default_rng(0)
    pts = (rng.uniform(-0.4, 0.4, (400, 3)) + [0, 1, 0]).astype(np.float32)
    bones = make_bones(bj, parents, pts)
    bone, t = bind_planar(pts, bones, bj, parents)
    # bisector of the bones (0,-1,0) and (1,0,0) leaving the elbow: normal (-1,-1,0)/sqrt2
    side0 = (pts[:, 0] + (pts[:, 1] - 1)) < 0
    np.testing.assert_array_equal(bone == 0, side0)
    np.testing.assert_array_equal(bone == 1, ~side0)
    # eq. 13 by hand for (0.2, 0.7): d_p = 0.7 (perpendicular plane at the root), d_c = 0.1/sqrt2
    b1, t1 = bind_planar(np.array([[0.2, 0.7, 0.0]], np.float32), bones, bj, parents)
    assert b1[0] == 0
    np.testing.assert_allclose(t1[0], 0.7 / (0.7 + 0.1 / np.sqrt(2)), rtol=1e-5)
    # attachments of points just either side of the plane meet at the elbow (no gap)
    a = make_binding(pts, bones, bone, t, bj).attach
    near = np.abs(pts[:, 0] + pts[:, 1] - 1) < 0.02
    np.testing.assert_allclose(a[near], np.tile([0, 1, 0], (near.sum(), 1)), atol=0.03)


def test_planar_override_normal_and_multiple_children():
    bj, parents = _l_skeleton()
    pts = np.array([[0.1, 0.95, 0], [0.1, 1.05, 0]], np.float32)
    bones = make_bones(bj, parents, pts)
    b_auto, _ = bind_planar(pts, bones, bj, parents)
    assert b_auto.tolist() == [1, 1]  # both on the +X side of the 45 degree bisector
    b_ov, _ = bind_planar(pts, bones, bj, parents, plane_normals={1: (0, 1, 0)})  # horizontal divider
    assert b_ov.tolist() == [0, 1]
    with pytest.raises(ValueError, match="plane_normals"):
        bind_planar(pts, bones, bj, parents, plane_normals=np.zeros((2, 3)))
    # pelvis-like hub with two children: the sibling divider is the plane x = 0
    hub = np.stack([joint((0, 0, 0)), joint((0, 1, 0)), joint((-1, 2, 0)), joint((1, 2, 0))]).astype(np.float32)
    par = np.array([-1, 0, 1, 1])
    q = np.array([[-0.05, 1.6, 0], [0.05, 1.6, 0], [-0.3, 1.3, 0.1], [0.3, 1.3, -0.1], [0.0, 0.6, 0.2]], np.float32)
    hb = make_bones(hub, par, q)
    b, t = bind_planar(q, hb, hub, par)
    pairs = [(int(hb.parent_joint[k]), int(hb.child_joint[k])) for k in b]
    assert pairs == [(1, 2), (1, 3), (1, 2), (1, 3), (0, 1)]


def test_bind_from_weights_uses_largest_weight_joint():
    bj, parents = _l_skeleton()
    pts = np.array([[0.1, 0.9, 0.0], [0.1, 0.9, 0.0]], np.float32)
    bones = make_bones(bj, parents, pts)
    joints = np.array([[0, 1, 0, 0], [2, 1, 0, 0]])
    weights = np.array([[0.9, 0.1, 0, 0], [0.7, 0.3, 0, 0]], np.float32)
    bone, t = bind_from_weights(pts, joints, weights, bones, bj)
    # joint 0 only touches bone (0,1); joint 2 touches (1,2) and its tip bone: (1,2) is closer
    assert (bones.parent_joint[bone[0]], bones.child_joint[bone[0]]) == (0, 1)
    assert (bones.parent_joint[bone[1]], bones.child_joint[bone[1]]) == (1, 2)
    np.testing.assert_allclose(t, [0.9, 0.1], atol=1e-6)


def test_bent_tube_gaps_closed_by_planar_and_smoothing():
    pos, tris, bj, parents = bent_tube()
    topo = prepare_mesh(pos, tris)
    proj = bind(topo, bj, parents, method="project", smooth_passes=0)
    assert proj.quality["gaps"] > 0  # inner side of the bend: neighbours attach far apart
    proj_s = bind(topo, bj, parents, method="project", smooth_passes=6)
    assert proj_s.quality["gap_max"] < 0.6 * proj.quality["gap_max"]
    planar = bind(topo, bj, parents, method="planar", smooth_passes=6)
    assert planar.quality["gaps"] == 0
    assert planar.quality["gap_max"] < 2.5
    assert planar.quality["gaps_before_smoothing"] == 0
    # binding consistency: a + s = v, attachments on their bone
    np.testing.assert_allclose(planar.attach + planar.scale, topo.positions, atol=1e-6)
    p, c = bone_endpoints(planar.bones, bj)
    on_bone = p[planar.bone] + planar.t[:, None] * (c[planar.bone] - p[planar.bone])
    np.testing.assert_allclose(planar.attach, on_bone, atol=1e-6)
    assert planar.t.min() >= 0 and planar.t.max() <= 1


def test_smoothing_keeps_a_straight_tube_and_validates_passes():
    pos, tris = tube(11, 12, 2.0, 0.2)
    topo = prepare_mesh(pos.astype(np.float32), tris)
    bj = np.stack([joint((0, 0, 0)), joint((0, 1, 0)), joint((0, 1.9, 0))]).astype(np.float32)
    parents = np.array([-1, 0, 1])
    b0 = bind(topo, bj, parents, method="planar", smooth_passes=0)
    b1 = smooth_binding(b0, topo, bj, passes=3)
    interior = (topo.positions[:, 1] > 0.5) & (topo.positions[:, 1] < 1.5)  # 3 passes reach 3 rings in
    np.testing.assert_allclose(b1.attach[interior], b0.attach[interior], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(b1.scale[interior], axis=1), 0.2, atol=1e-5)
    with pytest.raises(ValueError, match=r"\[0, 9\]"):
        smooth_binding(b0, topo, bj, passes=10)


def test_binding_quality_by_hand():
    pos = np.array([[0, 0, 0], [0.1, 0, 0], [0.1, 0.1, 0]], np.float32)
    topo = prepare_mesh(pos, np.array([[0, 1, 2]]))
    bones = Bones(np.array([0], np.int32), np.array([-1], np.int32), np.array([[0, 1, 0]], np.float32))
    bj = np.eye(4, dtype=np.float32)[None]
    b = make_binding(pos, bones, np.zeros(3, np.int32), np.array([0.0, 0.5, 0.0], np.float32), bj)
    q = binding_quality(b, topo, gap_threshold=3.0)
    # edges (0,1): |a|=0.5 over 0.1 -> 5; (0,2): 0 over 0.1*sqrt2; (1,2): 0.5 over 0.1 -> 5
    np.testing.assert_allclose([q["gap_max"], q["gap_mean"]], [5.0, 10.0 / 3], rtol=1e-5)
    assert q["gaps"] == 2 and q["t_at_0"] == 2


def test_bind_weights_method_with_display_weights():
    pos, tris = tube(9, 8, 2.0, 0.2)
    pos = np.concatenate([pos, pos[:8]]).astype(np.float32)  # duplicate ring 0 as seam copies
    topo = prepare_mesh(pos, tris)
    assert topo.n_display == topo.n_control + 8
    bj = np.stack([joint((0, 0, 0)), joint((0, 1, 0))]).astype(np.float32)
    y = pos[:, 1]
    joints = np.stack([(y > 1.0).astype(int), np.zeros_like(y, int), np.zeros_like(y, int), np.zeros_like(y, int)], 1)
    weights = np.tile([1.0, 0, 0, 0], (pos.shape[0], 1)).astype(np.float32)
    b = bind(topo, bj, np.array([-1, 0]), method="weights", joints=joints, weights=weights, smooth_passes=0)
    upper = topo.positions[:, 1] > 1.0
    assert np.all(b.bones.parent_joint[b.bone[upper]] == 1)
    assert np.all(b.bones.child_joint[b.bone[~upper]] == 1)
    with pytest.raises(ValueError, match="method"):
        bind(topo, bj, np.array([-1, 0]), method="nearest")
    with pytest.raises(ValueError, match="joints and weights"):
        bind(topo, bj, np.array([-1, 0]), method="weights")


# ----------------------------------------------------------------------------------------------------------
# smoothing space: tree coordinates of the skeleton and reprojection onto it


def _fork():
    """0 -> 1 up the y axis; 1 forks into 2 (up-left) and 3 (up-right); 3 -> 4 continues straight on."""
    pos = np.array([[0, 0, 0], [0, 1, 0], [-1, 2, 0], [1, 2, 0], [2, 3, 0]], float)
    bj = np.stack([joint(p) for p in pos]).astype(np.float32)
    parents = np.array([-1, 0, 1, 1, 3])
    bones = make_bones(bj, parents, pos.astype(np.float32))
    pairs = list(zip(bones.parent_joint.tolist(), bones.child_joint.tolist()))
    return bj, parents, bones, {pr: k for k, pr in enumerate(pairs)}


def test_tree_coordinates_reproject_exactly_and_average_along_the_skeleton():
    bj, parents, bones, k = _fork()
    tree = _skeleton_tree(bones, bj, parents, 1e-9, merge_gap=1e-9)  # no trunks
    assert tree.length.shape[0] == bones.count
    rng = np.random.default_rng(1)
    bone = rng.integers(0, bones.count, 200).astype(np.int32)
    t = rng.uniform(0, 1, 200)
    z = _tree_coords(tree, bone, t)
    b2, t2 = _reproject(tree, z)
    p, c = bone_endpoints(bones, bj)
    a1 = p[bone] + t[:, None] * (c[bone] - p[bone])
    a2 = p[b2] + t2[:, None] * (c[b2] - p[b2])
    np.testing.assert_allclose(a2, a1, atol=1e-5)  # exact inverse (up to where bones meet)
    s2 = np.sqrt(2.0)
    # two points on sibling branches, 0.9 and 0.3 of the way: their mean lies on the tree path between them,
    # (0.9 - 0.3) * sqrt2 / 2 down the longer branch (the research's gaps close towards the shared joint)
    z2 = _tree_coords(tree, np.array([k[(1, 2)], k[(1, 3)]]), np.array([0.9, 0.3]))
    bm, tm = _reproject(tree, z2.mean(axis=0, keepdims=True))
    assert bm[0] == k[(1, 2)]
    np.testing.assert_allclose(tm[0], 0.3, atol=1e-6)
    # balanced siblings meet at the fork, not on either branch's far side
    bm, tm = _reproject(tree, _tree_coords(tree, np.array([k[(1, 2)], k[(1, 3)]]), np.array([0.5, 0.5])).mean(0)[None])
    np.testing.assert_allclose((p[bm] + tm[:, None] * (c[bm] - p[bm]))[0], [0, 1, 0], atol=1e-6)
    # along a chain the mean is the mean arc length from the root: (0, 1) at 0.5 and (3, 4) at 0.5 lie at
    # arcs 0.5 and 1 + sqrt2 + sqrt2 / 2, mean 0.75 + 0.75 sqrt2, i.e. 0.75 sqrt2 - 0.25 into (1, 3)
    z3 = _tree_coords(tree, np.array([k[(0, 1)], k[(3, 4)]]), np.array([0.5, 0.5]))
    bm, tm = _reproject(tree, z3.mean(axis=0, keepdims=True))
    assert bm[0] == k[(1, 3)]
    np.testing.assert_allclose(tm[0], (0.75 * s2 - 0.25) / s2, atol=1e-6)
    # continuity: interpolating the coordinates between the far ends of the two branches moves the
    # reprojected point in small steps, through the fork
    za = _tree_coords(tree, np.array([k[(1, 2)]]), np.array([1.0]))
    zb = _tree_coords(tree, np.array([k[(3, 4)]]), np.array([1.0]))
    w = np.linspace(0, 1, 401)[:, None]
    bi, ti = _reproject(tree, (1 - w) * za + w * zb)
    path = p[bi] + ti[:, None] * (c[bi] - p[bi])
    assert np.linalg.norm(np.diff(path, axis=0), axis=1).max() < 4 * (2 * s2 + s2) / 400
    assert np.linalg.norm(path - [0, 1, 0], axis=1).min() < 1e-2


def test_near_parallel_siblings_share_a_trunk():
    # joint 1 has three children: two 10 degrees apart, one at 90 degrees
    ang = np.radians([-5.0, 5.0])
    dirs = np.stack([np.sin(ang), np.cos(ang), np.zeros(2)], 1)
    pos = np.concatenate([[[0, 0, 0], [0, 1, 0]], [0, 1, 0] + dirs, [[1, 1, 0]]])
    bj = np.stack([joint(q) for q in pos]).astype(np.float32)
    parents = np.array([-1, 0, 1, 1, 1])
    bones = make_bones(bj, parents, pos.astype(np.float32))
    k = {pr: i for i, pr in enumerate(zip(bones.parent_joint.tolist(), bones.child_joint.tolist()))}
    gap = 0.05
    tree = _skeleton_tree(bones, bj, parents, 1e-9, merge_gap=gap)
    a, b, side = k[(1, 2)], k[(1, 3)], k[(1, 4)]
    assert tree.trunk[a] >= 0 and tree.trunk[a] == tree.trunk[b] and tree.trunk[side] < 0
    reach = gap / (2 * np.sin(np.radians(5.0)))  # where the two are gap apart
    np.testing.assert_allclose(tree.offset[[a, b]], reach, rtol=1e-5)
    # within the trunk the two are one stretch: points at equal arc on either have equal coordinates ...
    za, zb = _tree_coords(tree, np.array([a, b]), np.array([0.2, 0.2]))
    np.testing.assert_allclose(za, zb)
    # ... and reprojection keeps a point on the sibling it was on
    bb, tt = _reproject(tree, za[None], prev=np.array([b], np.int32))
    assert bb[0] == b and tt[0] == pytest.approx(0.2)
    bb, tt = _reproject(tree, za[None], prev=np.array([a], np.int32))
    assert bb[0] == a
    # beyond the trunk they are apart again
    za, zb = _tree_coords(tree, np.array([a, b]), np.array([1.0, 1.0]))
    assert np.abs(za - zb).sum() == pytest.approx(2 * (1 - reach), rel=1e-5)


def test_smoothing_leaves_a_gap_free_binding_alone_and_validates():
    pos, tris, bj, parents = bent_tube()
    topo = prepare_mesh(pos, tris)
    planar = bind(topo, bj, parents, method="planar", smooth_passes=0)
    assert planar.quality["gaps"] == 0
    again = smooth_binding(planar, topo, bj, passes=6, parents=parents)
    assert again.quality["smooth_passes_used"] == 0
    np.testing.assert_array_equal(again.bone, planar.bone)
    np.testing.assert_array_equal(again.t, planar.t)
    # a projected binding has gaps on the inside of the bend; smoothing closes them, strength scales it
    proj = bind(topo, bj, parents, method="project", smooth_passes=0)
    full = smooth_binding(proj, topo, bj, passes=6, parents=parents)
    half = smooth_binding(proj, topo, bj, passes=1, parents=parents, strength=0.5)
    one = smooth_binding(proj, topo, bj, passes=1, parents=parents)
    q = {n: binding_quality(b, topo) for n, b in (("proj", proj), ("full", full), ("half", half), ("one", one))}
    assert q["full"]["gaps"] == 0 and 1 <= full.quality["smooth_passes_used"] <= 6
    assert q["one"]["gap_max"] < q["half"]["gap_max"] < q["proj"]["gap_max"]
    with pytest.raises(ValueError, match="gap_threshold"):
        smooth_binding(proj, topo, bj, gap_threshold=0.0)
    with pytest.raises(ValueError, match="strength"):
        smooth_binding(proj, topo, bj, strength=1.5)
    with pytest.raises(ValueError, match=r"parents\[1\]"):
        smooth_binding(proj, topo, bj, parents=np.array([-1, 5, 1]))


# ----------------------------------------------------------------------------------------------------------
# binding with the skin weights (issue 26): a point sits only on a bone its weights move it with


def _child_weighted_tube():
    """A straight tube along +Y over a chain 0 (y=0) -> 1 (y=1) -> 2 (y=2) whose points from y = 0.5 up to the
    joint at y = 1 are weighted 100 % to the child joint 1 (the Fox's front legs: skin weighted to the forearm
    above the elbow) and lie nearer the parent bone 0 -> 1 than any bone of joint 1."""
    pos, tris = tube(41, 12, 2.0, 0.2)
    topo = prepare_mesh(pos.astype(np.float32), tris.astype(np.uint32))
    bj = np.stack([joint([0, 0, 0]), joint([0, 1, 0]), joint([0, 2, 0])]).astype(np.float32)
    parents = np.array([-1, 0, 1])
    y = pos[:, 1]
    jn = np.zeros((pos.shape[0], 4), np.int64)
    w = np.zeros((pos.shape[0], 4), np.float32)
    jn[:, 0] = np.where(y < 0.5, 0, np.where(y < 1.5, 1, 2))
    w[:, 0] = 1.0
    return topo, bj, parents, jn, w, (y >= 0.5) & (y < 1.0)


@pytest.mark.parametrize("method", ["planar", "project"])
def test_points_weighted_to_a_child_joint_bind_to_its_bones_and_smoothing_keeps_them(method):
    topo, bj, parents, jn, w, child = _child_weighted_tube()
    pj = lambda b: b.bones.parent_joint[b.bone]  # noqa: E731 - the joint that carries each point
    by_position = bind(topo, bj, parents, method=method, smooth_passes=0)
    assert np.all(pj(by_position)[child] == 0)  # by position they sit on the parent bone 0 -> 1
    for passes in (0, 6):
        b = bind(topo, bj, parents, method=method, joints=jn, weights=w, smooth_passes=passes)
        carrier = pj(b)
        assert np.all(carrier == jn[:, 0]), passes  # every point on a bone of its weighted joint
        np.testing.assert_allclose(b.attach + b.scale, topo.positions, atol=1e-6)
        assert b.quality["gaps"] <= b.quality["gaps_before_smoothing"]
    # smoothing alone, given the same support, never moves a point onto a bone its joint does not carry
    from engine.skinning.binding import per_control
    from engine.skinning.binding.project import weight_support

    raw = bind(topo, bj, parents, method=method, joints=jn, weights=w, smooth_passes=0)
    allowed = weight_support(per_control(topo, jn), per_control(topo, w), raw.bones)
    sm = smooth_binding(raw, topo, bj, parents=parents, passes=6, allowed=allowed)
    assert np.all(pj(sm) == jn[:, 0])
    free = smooth_binding(raw, topo, bj, parents=parents, passes=6)  # unrestricted: the jump at y = 0.5 drags them
    assert np.any(pj(free) != jn[:, 0])


def test_weight_support_shares():
    bones = Bones(parent_joint=np.array([0, 1, 2], np.int32), child_joint=np.array([1, 2, -1], np.int32),
                  tip_local=np.zeros((3, 3), np.float32))
    from engine.skinning.binding.project import weight_support

    jn = np.array([[1, 0, 2, 0], [0, 1, 2, 0], [0, 1, 2, 0], [5, 6, 0, 0]])
    w = np.array([[1, 0, 0, 0], [0.5, 0.3, 0.2, 0], [0.2, 0.2, 0.2, 0.4], [1, 0, 0, 0]], np.float32)
    a = weight_support(jn, w, bones)
    assert a[0].tolist() == [False, True, False]  # 100 % joint 1: only its own bone
    assert a[1].tolist() == [True, True, False]  # joint 2 holds 0.2 < 0.25
    assert a[2].tolist() == [True, False, False]  # joint 0: 0.2 + 0.4 (listed twice); 1 and 2 hold 0.2
    assert a[3].tolist() == [True, True, True]  # joints 5, 6 carry no bone: any
    with pytest.raises(ValueError, match="min_share"):
        weight_support(jn, w, bones, 0.0)
