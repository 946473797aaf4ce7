"""The springs' differential (bending) term, `SpringParams.k_d` (issue 26: never worse than LBS where LBS is right).

F_i = k_d c_i (m_i + R_i delta0_i - x_i): m_i the one-ring mean weighted by 1 / bind edge length^2, delta0_i its
bind offset, R_i the point's frame rotation, c_i its share min(1, (h_i / r_i)^3) (`diff_scales`). Checked: the
share is geometric (fine tubes small, a six-sided tube and points on the bone 1, the same in any unit); the bind
pose stays a fixed point, the term is zero on a rigid motion of the bind shape and its force is the gradient of its
energy; a scaled armature deforms to the same shape;
on RiggedFigure (the Khronos rig whose boxes the springs fold without it) k_d = 10 folds and strains no edge where
LBS folds and strains none; the GPU spring stage's records carry k_d and the term's rest data
(tests/gl/test_spring_differential_gpu.py compares the GPU with this reference)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine.anim.rig import Rig
from engine.assets.gltf import load
from engine.assets.library import source_path
from engine.skinning.config import DeformerConfig
from engine.skinning.instances import skinned_primitives
from engine.skinning.metrics import dihedral_change_share, intersecting_pairs, strain_share
from engine.skinning.springs import SpringDeformer, SpringParams, spring_forces
from engine.skinning.springs.rest import diff_scales, diff_share, ring_means
from tests.conftest import shared_dir
from tests.helpers.scaled_rig import TURNS, posed_globals, scaled_copy

K_D = 10.0


@pytest.fixture(scope="module")
def humanoid():
    asset = load(source_path("humanoid"))
    return asset, skinned_primitives(asset, Rig.from_asset(asset))[0]


def _deformer(sp, **changes) -> SpringDeformer:
    return SpringDeformer(sp.topology(), sp.binding(), sp.bind_joints, sp.parents,
                          SpringParams().replace(k_d=K_D, **changes), joints=sp.primitive.joints,
                          weights=sp.primitive.weights)


def _only_diff(**changes) -> SpringParams:
    return SpringParams().replace(use_s=False, use_l=False, use_t=False, use_b=False, use_r=False, use_e=False,
                                  use_v=False, k_d=K_D, **changes)


def posed_globals_for(sp) -> np.ndarray:
    """Skin joint world matrices of a bent pose of the humanoid (TURNS of tests/helpers/scaled_rig.py)."""
    asset = load(source_path("humanoid"))
    return np.asarray(posed_globals(asset, TURNS)[sp.skin.joints], np.float64)


def test_bind_pose_stays_put_and_rigid_motion_costs_nothing(humanoid):
    _, sp = humanoid
    d = _deformer(sp)
    x, stats = d.solve(sp.bind_joints)
    np.testing.assert_allclose(x, sp.topology().positions, atol=1e-6)
    # every joint turned and moved by one rigid motion: the bind shape moved with it is at rest for the term
    ang = np.radians(70.0)
    m = np.eye(4)
    m[:3, :3] = [[np.cos(ang), 0.0, np.sin(ang)], [0.0, 1.0, 0.0], [-np.sin(ang), 0.0, np.cos(ang)]]
    m[:3, 3] = [0.3, -0.2, 1.1]
    posed = np.einsum("ij,njk->nik", m, np.asarray(sp.bind_joints, np.float64))
    fr = d.frame(posed)
    moved = np.asarray(sp.topology().positions, np.float64) @ m[:3, :3].T + m[:3, 3]
    f, e = spring_forces(moved, fr.attach, fr.bone_ref, d.rest, _only_diff(), diff=fr.diff)
    assert e < 1e-20 and np.abs(f).max() < 1e-9


def test_force_is_the_energys_gradient_descent(humanoid):
    _, sp = humanoid
    d = _deformer(sp)
    fr = d.frame(posed_globals_for(sp))
    rng = np.random.default_rng(3)
    x = np.asarray(sp.topology().positions, np.float64) + rng.normal(0.0, 0.01, (sp.topology().n_control, 3))
    p = _only_diff()
    f, e = spring_forces(x, fr.attach, fr.bone_ref, d.rest, p, diff=fr.diff)
    # the force is k_d times the residual; a small step along it lowers the energy
    share = diff_share(d.rest)[:, None]
    assert share.min() < 0.1 and share.max() == 1.0  # the humanoid has fine and coarse parts
    np.testing.assert_allclose(f, K_D * share * (ring_means(x, d.rest) + fr.diff - x), rtol=1e-12, atol=1e-15)
    _, e2 = spring_forces(x + 1e-3 * f, fr.attach, fr.bone_ref, d.rest, p, diff=fr.diff)
    assert e2 < e


def test_scaled_armature_deforms_to_the_same_shape(humanoid):
    asset, sp = humanoid
    cfg = DeformerConfig(spring=SpringParams().replace(k_d=K_D))
    ref = sp.deform(posed_globals(asset, TURNS), "spring", config=cfg)
    big = scaled_copy(asset, 100.0, "armature")
    out = skinned_primitives(big, Rig.from_asset(big))[0].deform(posed_globals(big, TURNS), "spring", config=cfg)
    diag = float(np.linalg.norm(ref.max(0) - ref.min(0)))
    assert float(np.abs(out - ref).max()) <= 1e-5 * diag


def test_riggedfigure_folds_nothing_lbs_keeps_flat():
    from engine.anim.fk import global_matrices
    from engine.anim.pose import Pose
    from engine.anim.sampling import ClipSampler
    from engine.scene import load_asset

    loaded = load_asset(str(shared_dir("gltf-samples") / "RiggedFigure.glb"))
    rig = Rig.from_asset(loaded.asset)
    sp = loaded.skinned[0]
    topo = sp.topology()
    x0 = np.asarray(topo.positions, np.float64)
    cfg = DeformerConfig(spring=SpringParams().replace(k_d=K_D))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for t in (0.3, 0.5, 0.9):
            g = global_matrices(rig, ClipSampler(rig, loaded.asset.clips[0]).sample(t, Pose.rest(rig)))
            lbs = np.asarray(sp.deform(g, "lbs"), np.float64)[topo.display_of_control]
            x = np.asarray(sp.deform(g, "spring", config=cfg), np.float64)[topo.display_of_control]
            for measure in (lambda y: dihedral_change_share(y, x0, topo.triangles),
                            lambda y: strain_share(y, x0, topo.edges)):
                assert measure(x) <= measure(lbs), t
            # the shoulder boxes touch the torso's side wall at bind: glued there (springs.touch), they meet in no
            # face pair where LBS has none (without the glue 4 at 0.3 s)
            pairs = intersecting_pairs(x, topo.triangles).shape[0]
            assert pairs <= intersecting_pairs(lbs, topo.triangles).shape[0], t


def test_gpu_records_carry_the_differential_term(humanoid):
    """fill_record puts k_d in DeformInstance k3.y (0 when it is 0 or its switch off); spring_arrays gives every
    point its bind offset delta0 and its share (SpringVertex.diff0 xyz, w) and every CSR slot its weight divided by
    its point's sum, whose weighted mean of the bind positions plus delta0 is the point itself."""
    from engine.skinning.gpu import layouts as L
    from engine.skinning.gpu.spring import fill_record, spring_arrays

    _, sp = humanoid
    topo = sp.topology()
    rec = L.DEFORM_INSTANCE.zeros(1)[0]
    fill_record(rec, SpringParams().replace(k_d=K_D), topo)
    assert rec["k3"][1] == K_D
    for p in (SpringParams(k_d=0.0), SpringParams().replace(k_d=K_D, use_d=False)):
        fill_record(rec, p, topo)
        assert rec["k3"][1] == 0.0
    _, vstatic, extra = spring_arrays(topo, sp.binding(), sp.bind_joints)
    sv = np.ascontiguousarray(vstatic).view(L.SPRING_VERTEX.dtype).reshape(-1)
    rest = SpringDeformer(topo, sp.binding(), sp.bind_joints, sp.parents, SpringParams()).rest
    np.testing.assert_allclose(sv["diff0"][:, :3], rest.diff0, atol=1e-6)
    np.testing.assert_allclose(sv["diff0"][:, 3], rest.diff_scale, rtol=1e-6)
    x = np.asarray(topo.positions, np.float64)
    count = np.asarray(topo.adj_count, np.int64)
    rows = np.repeat(np.arange(count.shape[0]), count)  # the CSR slots of each point, in order
    flat = np.asarray(topo.adj_offset, np.int64)[rows] + np.arange(rows.shape[0]) - np.repeat(np.cumsum(count) - count,
                                                                                              count)
    nbr = np.asarray(topo.adj_index, np.int64)[flat]
    w = extra["diff_w"][flat].astype(np.float64)
    total = np.bincount(rows, weights=w, minlength=x.shape[0])
    assert np.all((np.abs(total - 1.0) < 1e-5) | (total == 0.0))
    mean = np.stack([np.bincount(rows, weights=w * x[nbr, a], minlength=x.shape[0]) for a in range(3)], 1)
    diag = float(np.linalg.norm(x.max(0) - x.min(0)))
    has = total > 0.0
    np.testing.assert_allclose(mean[has] + sv["diff0"][has, :3], x[has], atol=1e-5 * diag)


def test_the_share_is_geometric_and_free_of_units():
    """c_i = min(1, (h_i / r_i)^3): a finely sampled tube (issue 13's, h / r 0.225) gets 0.011 everywhere, a
    six-sided one (edges as long as the radius) 1; scaling the mesh and its joints by 100 changes no share; a point
    on its bone (r_i = 0) gets 1."""
    from engine.assets.gen.family import tube_family
    from engine.skinning.family import MemberRig
    from engine.skinning.springs.rest import build_rest
    from tests.helpers.tube_rig import tube

    m = tube_family(1)[0]
    rig = MemberRig(m)
    fine = build_rest(rig.topology, rig.binding, m.bind_joints)
    n = fine.n_vertices
    h = np.bincount(fine.rows, weights=fine.rest_len, minlength=n) / np.bincount(fine.rows, minlength=n)
    np.testing.assert_allclose(fine.diff_scale, np.minimum(1.0, (h / fine.r) ** 3), rtol=1e-12)
    assert 0.010 < np.median(fine.diff_scale) < 0.013
    coarse = tube(rings=8, segments=6)
    c = build_rest(coarse.topology, coarse.binding, coarse.bind_joints)
    assert np.all(c.diff_scale > 0.9) and np.median(c.diff_scale) == 1.0
    big = tube(rings=8, segments=6, length=100.0, radius=12.0)
    np.testing.assert_allclose(build_rest(big.topology, big.binding, big.bind_joints).diff_scale, c.diff_scale,
                               rtol=1e-9)
    on_bone = c.r.copy()
    on_bone[0] = 0.0
    c.r = on_bone
    assert diff_scales(c)[0] == 1.0
