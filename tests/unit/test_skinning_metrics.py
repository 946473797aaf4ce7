"""Quality metrics: volume, collapse, edge distortion, normal smoothness and the combined report; the fold and
quality metrics of issue 13 (intersecting triangle pairs, crease, dihedral-change and strain shares, roughness,
ring twist profile, radius near a joint, deformation_metrics) on constructed cases with known answers."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning.binding import bind
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.metrics import (
    collapse,
    edge_distortion,
    interior_edge_faces,
    normal_smoothness,
    quality_report,
    skeleton_distance,
    volume,
    volume_ratio,
)
from engine.skinning.skinning import dqs, lbs, rigid
from engine.skinning.types import Bones


def cube():
    pos = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])
    return pos, tris


def capped_tube(rings=21, segs=16, length=2.0, radius=0.2):
    th = 2 * np.pi * np.arange(segs) / segs
    y = np.linspace(0.0, length, rings)
    pos = np.stack(np.broadcast_arrays(radius * np.cos(th)[None], y[:, None], radius * np.sin(th)[None]),
                   -1).reshape(-1, 3)
    i, k = np.meshgrid(np.arange(rings - 1), np.arange(segs), indexing="ij")
    a, b = i * segs + k, i * segs + (k + 1) % segs
    tris = [np.stack([a, a + segs, b], -1).reshape(-1, 3), np.stack([b, a + segs, b + segs], -1).reshape(-1, 3)]
    n = pos.shape[0]
    pos = np.vstack([pos, [[0, 0, 0], [0, length, 0]]])
    kk = np.arange(segs)
    top = (rings - 1) * segs
    tris += [np.stack([np.full(segs, n), kk, (kk + 1) % segs], -1),
             np.stack([np.full(segs, n + 1), top + (kk + 1) % segs, top + kk], -1)]
    return pos.astype(np.float32), np.concatenate(tris)


def twist(ang):
    """Joints at y = 0, 1, 1.9; joint 1 (and its child) twisted about +Y by ang."""
    bj = np.stack([np.eye(4)] * 3)
    bj[1, 1, 3], bj[2, 1, 3] = 1.0, 1.9
    r = np.eye(4)
    c, s = np.cos(ang), np.sin(ang)
    r[[0, 0, 2, 2], [0, 2, 0, 2]] = [c, s, -s, c]
    posed = bj.copy()
    posed[1] = bj[1] @ r
    posed[2] = posed[1] @ np.linalg.inv(bj[1]) @ bj[2]
    return bj.astype(np.float32), posed


def test_volume_by_hand():
    pos, tris = cube()
    assert volume(pos, tris) == pytest.approx(1.0)
    assert volume(pos, tris[:, ::-1]) == pytest.approx(-1.0)  # inward faces: negative
    assert volume(pos + [5, -3, 2], tris) == pytest.approx(1.0)  # translation invariant
    assert volume_ratio(pos * [2, 3, 1], pos, tris) == pytest.approx(6.0)
    tet = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    assert volume(tet, np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])) == pytest.approx(1 / 6)
    # capped 16-gon prism: (n/2) r^2 sin(2 pi / n) * h
    tp, tt = capped_tube()
    assert volume(tp, tt) == pytest.approx(8 * 0.04 * np.sin(2 * np.pi / 16) * 2.0, rel=1e-5)
    with pytest.raises(ValueError, match="closed mesh"):
        volume_ratio(pos, pos, tris[:1])


def test_edge_distortion_and_interior_edges_by_hand():
    pos, tris = cube()
    e = np.array([[0, 1], [0, 2], [0, 4]])
    d = edge_distortion(pos * [1.5, 1.0, 1.0], pos, e)
    assert d["edge_distortion_max"] == pytest.approx(0.5)
    assert d["edge_distortion_mean"] == pytest.approx(0.5 / 3)
    pairs = interior_edge_faces(tris)
    assert pairs.shape == (18, 2)  # closed cube: 18 edges, each shared by 2 faces
    fold = interior_edge_faces(np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6]]))
    np.testing.assert_array_equal(fold, [[0, 1]])


def test_normal_smoothness_fold_by_hand():
    # two triangles sharing edge (0,1) on the x axis, folded by 90 degrees
    flat = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 0], [0.5, -1, 0]], float)
    folded = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 0], [0.5, 0, 1]], float)
    tris = np.array([[0, 1, 2], [1, 0, 3]])
    r = normal_smoothness(folded, flat, tris, center=[0.5, 0, 0], radius=2.0)
    assert r["normal_angle_bind"] == pytest.approx(0.0, abs=1e-7)
    assert r["normal_angle"] == pytest.approx(np.pi / 2)
    assert r["normal_angle_increase"] == pytest.approx(np.pi / 2)
    assert r["normal_pairs"] == 1
    far = normal_smoothness(folded, flat, tris, center=[10, 0, 0], radius=1.0)
    assert far["normal_pairs"] == 0 and far["normal_angle"] == 0.0


def test_collapse_lbs_vs_dqs_and_report():
    pos, tris = capped_tube()
    topo = prepare_mesh(pos, tris)
    bj, posed = twist(np.pi)
    binding = bind(topo, bj, np.array([-1, 0, 1]), smooth_passes=0)
    y = topo.positions[:, 1]
    w1 = np.clip((y - 0.7) / 0.6, 0, 1)
    joints = np.tile([0, 1, 0, 0], (y.shape[0], 1))
    weights = np.stack([1 - w1, w1, 0 * y, 0 * y], 1).astype(np.float32)
    skin = (posed @ np.linalg.inv(bj.astype(np.float64))).astype(np.float32)
    out_lbs = lbs(topo.positions, joints, weights, skin)
    out_dqs = dqs(topo.positions, joints, weights, skin)
    c_lbs = collapse(out_lbs, topo.positions, binding.bones, bj, posed)
    c_dqs = collapse(out_dqs, topo.positions, binding.bones, bj, posed)
    assert c_lbs["collapse_min"] < 0.01
    assert c_dqs["collapse_min"] > 0.99 and c_dqs["collapse_p5"] > 0.99
    rep_l = quality_report(out_lbs, topo.positions, topo.triangles, bones=binding.bones, bind_joints=bj,
                           posed_joints=posed, joint=1)
    rep_d = quality_report(out_dqs, topo.positions, topo.triangles, bones=binding.bones, bind_joints=bj,
                           posed_joints=posed, joint=1)
    assert rep_l["volume_ratio"] < 0.8 < 0.95 < rep_d["volume_ratio"] < 1.0  # twisted facets lose a little
    assert rep_l["edge_distortion_max"] > rep_d["edge_distortion_max"]
    for key in ("volume_bind", "volume", "collapse_min", "collapse_p5", "edge_distortion_mean", "normal_angle",
                "normal_pairs"):
        assert key in rep_l
    # at bind every measure is neutral
    rep0 = quality_report(rigid(binding, bj, bj), topo.positions, topo.triangles, bones=binding.bones, bind_joints=bj,
                          posed_joints=bj, joint=1)
    assert rep0["volume_ratio"] == pytest.approx(1.0, abs=1e-5)
    assert rep0["collapse_min"] == pytest.approx(1.0, abs=1e-4)
    assert rep0["edge_distortion_max"] < 1e-5 and abs(rep0["normal_angle_increase"]) < 1e-5


def test_normal_smoothness_rigid_crease_vs_irs():
    from engine.skinning.skinning import irs

    pos, tris = capped_tube(rings=41, segs=24)
    topo = prepare_mesh(pos, tris)
    bj, _ = twist(0.0)
    parents = np.array([-1, 0, 1])
    binding = bind(topo, bj, parents, smooth_passes=3)
    r = np.eye(4)
    r[:2, :2] = [[0, -1], [1, 0]]  # 90 degree bend about z at joint 1
    posed = bj.astype(np.float64).copy()
    posed[1] = bj[1] @ r
    posed[2] = posed[1] @ np.linalg.inv(bj[1]) @ bj[2]
    kw = dict(bones=binding.bones, bind_joints=bj, posed_joints=posed, joint=1)
    rep_r = quality_report(rigid(binding, bj, posed), topo.positions, topo.triangles, **kw)
    rep_i = quality_report(irs(binding, bj, posed, parents), topo.positions, topo.triangles, **kw)
    assert rep_r["normal_angle_increase"] > 1.5 * rep_i["normal_angle_increase"] > 0
    assert rep_r["edge_distortion_max"] > rep_i["edge_distortion_max"]


def test_skeleton_distance_and_argument_checks():
    bones = Bones(np.array([0], np.int32), np.array([-1], np.int32), np.array([[0, 2, 0]], np.float32))
    joints = np.eye(4, dtype=np.float32)[None]
    d = skeleton_distance(np.array([[3, 1, 0], [0, 5, 0], [0, -1, 0]]), bones, joints)
    np.testing.assert_allclose(d, [3, 3, 1])
    pos, tris = cube()
    with pytest.raises(ValueError, match="bind_positions"):
        quality_report(pos[:4], pos, tris)
    with pytest.raises(ValueError, match="radius"):
        normal_smoothness(pos, pos, tris, center=[0, 0, 0], radius=0.0)
    with pytest.raises(ValueError, match="joint"):
        quality_report(pos, pos, tris, joint=0)


# ----------------------------------------------------------------------------------------------------------
# fold and quality metrics (issue 13) on constructed cases


def _twisted_tube(total_deg: float, rings: int = 11, segments: int = 12):
    from engine.assets.gen.family import tube_grid

    pos, tri = tube_grid(0.5, 4.0, rings, segments)
    ring = np.repeat(np.arange(rings), segments)
    ang = np.radians(total_deg) * ring / (rings - 1)
    c, s = np.cos(ang), np.sin(ang)
    out = pos.copy()
    out[:, 1], out[:, 2] = c * pos[:, 1] - s * pos[:, 2], s * pos[:, 1] + c * pos[:, 2]
    return pos, out, tri, ring


def test_intersecting_pairs_exact_cases():
    from engine.skinning.metrics import intersecting_pairs

    # two triangles piercing each other (a cross), two apart, and two sharing a vertex (excluded)
    cross = np.array([[-1, -1, 0], [1, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0.2, 1], [0, -0.5, 0.5]], float)
    assert intersecting_pairs(cross, [[0, 1, 2], [3, 4, 5]]).tolist() == [[0, 1]]
    apart = cross + np.array([[0, 0, 0]] * 3 + [[0, 0, 5]] * 3)
    assert intersecting_pairs(apart, [[0, 1, 2], [3, 4, 5]]).shape == (0, 2)
    shared = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, -1], [0.2, 0.2, 1]], float)
    assert intersecting_pairs(shared, [[0, 1, 2], [0, 3, 4]]).shape == (0, 2)  # shares vertex 0
    # touching at an edge only (no proper crossing) is not an intersection
    touch = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, 0], [0.2, 0.2, 1], [0.4, 0.0, 1]], float)
    assert intersecting_pairs(touch, [[0, 1, 2], [3, 4, 5]]).shape == (0, 2)


def test_intersecting_pairs_on_a_tube():
    from engine.assets.gen.family import tube_grid
    from engine.skinning.metrics import intersecting_pairs

    pos, tri = tube_grid(0.5, 4.0, 41, 32)  # issue 13's tube: 1312 points
    assert intersecting_pairs(pos, tri).shape == (0, 2)
    # push one ring through the opposite wall: each of its pierced faces is reported
    dent = pos.copy()
    k = 20 * 32  # ring 20, the point at angle 0 (+y)
    dent[k, 1] = -0.8
    pairs = intersecting_pairs(dent, tri)
    assert pairs.shape[0] > 0
    moved = np.nonzero((tri == k).any(1))[0]
    assert np.all(np.isin(pairs, moved).any(1))  # every pair involves a face of the moved point


def test_crease_dihedral_change_and_strain_shares():
    from engine.skinning.metrics import dihedral_change_share, max_crease, mesh_edges, strain_share

    flat = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    tri = [[0, 1, 2], [0, 2, 3]]
    assert max_crease(flat, tri) == pytest.approx(0.0, abs=1e-9)
    folded = flat.copy()
    folded[3] = [0.5, 0.5, np.sqrt(0.5)]  # the second face turned 90 deg about the diagonal
    assert max_crease(folded, tri) == pytest.approx(90.0, abs=1e-6)
    assert dihedral_change_share(folded, flat, tri) == 1.0  # the one interior edge changed by 90 > 45
    assert dihedral_change_share(folded, flat, tri, threshold_deg=100.0) == 0.0
    edges = mesh_edges(tri)  # 5 edges
    stretched = flat.copy()
    stretched[1, 0] = 1.4  # edges 0-1 (+40 %) and 1-2 (sqrt(1.16) = +7.7 %) change
    assert strain_share(stretched, flat, edges) == pytest.approx(1 / 5)
    assert strain_share(stretched, flat, edges, threshold=0.05) == pytest.approx(2 / 5)


def test_roughness_is_zero_for_rigid_motion_and_sees_a_bump():
    from engine.assets.gen.family import tube_grid
    from engine.skinning.metrics import mesh_edges, roughness

    pos, tri = tube_grid(0.5, 2.0, 9, 12)
    edges = mesh_edges(tri)
    c, s = np.cos(0.7), np.sin(0.7)
    moved = pos @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]).T + [1.0, 2.0, 3.0]
    assert roughness(moved, pos, edges)["roughness"] == pytest.approx(0.0, abs=1e-12)
    bump = pos.copy()
    bump[4 * 12, 1] += 0.1  # one point of ring 4 pushed out
    r = roughness(bump, pos, edges)
    assert r["roughness_max"] > 0.3 and 0.0 < r["roughness"] < r["roughness_max"]
    rim = np.repeat(np.arange(9), 12) == 0
    assert roughness(bump, pos, edges, rim)["roughness"] == 0.0  # the rim is untouched


def test_ring_twist_profile_of_a_linear_twist():
    from engine.skinning.metrics import ring_twist

    bind, twisted, _, ring = _twisted_tube(90.0)
    tw = ring_twist(twisted, bind, ring)
    np.testing.assert_allclose(tw["twist_steps"], 9.0, atol=1e-6)  # 90 deg over 10 steps
    assert tw["twist_total"] == pytest.approx(90.0, abs=1e-6)
    assert tw["twist_step_max"] == pytest.approx(9.0, abs=1e-6)
    np.testing.assert_allclose(tw["twist_profile"], np.linspace(0, 90, 11), atol=1e-6)
    # a rigid turn of the whole tube is no twist
    assert ring_twist(_twisted_tube(0.0)[1] @ np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]]).T, bind,
                      ring)["twist_step_max"] == pytest.approx(0.0, abs=1e-6)


def test_radius_near_joint_sees_thinning_only_near_the_joint():
    from engine.skinning.metrics import radius_near_joint
    from engine.skinning.types import Bones

    bind, _, _, ring = _twisted_tube(0.0)
    joints = np.tile(np.eye(4), (2, 1, 1))
    joints[1, 0, 3] = 2.0
    bones = Bones(np.array([0, 1], np.int32), np.array([1, -1], np.int32), np.array([[0, 0, 0], [2, 0, 0]], np.float32))
    thin = bind.copy()
    near = np.abs(bind[:, 0] - 2.0) < 0.3
    thin[near, 1:] *= 0.6
    assert radius_near_joint(thin, bind, bones, joints, joints, 1, 0.8) == pytest.approx(0.6, abs=1e-3)
    far = bind.copy()
    far[bind[:, 0] < 0.5, 1:] *= 0.5  # thinning away from the joint is not seen
    assert radius_near_joint(far, bind, bones, joints, joints, 1, 0.8) == pytest.approx(1.0, abs=1e-3)


def test_deformation_metrics_collects_one_primitive():
    from engine.skinning.metrics import deformation_metrics

    bind, twisted, tri, ring = _twisted_tube(60.0)
    out = deformation_metrics(twisted, bind, tri, rings=ring, boundary=ring == 0)
    assert out["intersecting_pairs"] == 0 and out["twist_total"] == pytest.approx(60.0, abs=1e-6)
    for key in ("crease_max", "dihedral_change_45", "strain_30", "volume_ratio", "roughness", "roughness_max",
                "roughness_rim", "twist_step_max"):
        assert key in out
    assert 0.0 < out["roughness_rim"] < 0.1  # the first ring's neighbours turn 6 deg: a slight shear, no wrinkle
    assert deformation_metrics(bind, bind, tri, boundary=ring == 0)["roughness_rim"] == 0.0
    with pytest.raises(ValueError, match="differ"):
        deformation_metrics(twisted[:-1], bind, tri)
