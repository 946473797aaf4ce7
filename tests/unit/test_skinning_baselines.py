"""Baselines the research compares the spring deformer with: Laplacian surface editing, ARAP (positions and
scale vectors, eqs. 19-20) and radial deformations (eq. 24) with their easing profiles."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning.arap import ArapSolver, ScaleArap
from engine.skinning.laplacian import LaplacianEditor, edge_weights, fit_rotations, kabsch, laplacian_matrix
from engine.skinning.radial import encode, length_multiplier, profile, radial_deform
from engine.skinning.skinning import rigid
from tests.unit.test_skinning_springs import Tube, rot


@pytest.fixture(scope="module")
def tube() -> Tube:
    return Tube()


def rigid_motion(x: np.ndarray) -> np.ndarray:
    return x @ rot([1, 2, 0.5], 80).T + np.array([0.3, -0.2, 1.0])


# ----------------------------------------------------------------------------------------------------------
# sparse pieces


def test_cotangent_weights_of_a_right_triangle_pair():
    # unit square split along (0, 2): the diagonal is opposite two right angles (cot 90 = 0); each side is
    # opposite a 45 degree angle: w = cot(45) / 2
    x = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    edges, w = edge_weights(x, np.array([[0, 1, 2], [0, 2, 3]]), "cotangent")
    got = dict(zip(map(tuple, edges.tolist()), w))
    assert got[(0, 2)] == pytest.approx(0.0, abs=1e-12)
    for e in ((0, 1), (1, 2), (2, 3), (0, 3)):
        assert got[e] == pytest.approx(0.5)
    L = laplacian_matrix(4, edges, w).toarray()
    np.testing.assert_allclose(L.sum(1), 0.0, atol=1e-12)
    np.testing.assert_allclose(L, L.T)
    with pytest.raises(ValueError, match="weights = 'mean'"):
        edge_weights(x, np.array([[0, 1, 2]]), "mean")


def test_rotation_fits(tube):
    r = rot([0.3, -1, 2], 123)
    edges, w = edge_weights(tube.x0, tube.topo.triangles, "cotangent")
    fits = fit_rotations(tube.x0, tube.x0 @ r.T, edges, w)
    np.testing.assert_allclose(fits, np.broadcast_to(r, fits.shape), atol=1e-9)
    np.testing.assert_allclose(kabsch(tube.x0, tube.x0 @ r.T + 5.0), r, atol=1e-12)


# ----------------------------------------------------------------------------------------------------------
# Laplacian surface editing


def roi(tube: Tube):
    kin = np.nonzero(tube.ring == 30)[0]
    static = np.nonzero(tube.ring <= 2)[0]
    passive = np.nonzero((tube.ring > 2) & (tube.ring < 30))[0]
    return kin, passive, static


@pytest.mark.parametrize("weights", ["cotangent", "uniform"])
def test_laplacian_reproduces_a_rigid_motion(tube, weights):
    kin, passive, static = roi(tube)
    moved = rigid_motion(tube.x0)
    ed = LaplacianEditor(tube.x0, tube.topo.triangles, kinematic=kin[::-1], passive=passive, static=static,
                         weights=weights)
    x = ed.solve(moved[kin[::-1]], base=moved)
    np.testing.assert_allclose(x, moved, atol=1e-9)


def test_laplacian_edit_is_local_and_smooth(tube):
    kin = np.nonzero(tube.ring == 16)[0][:3]
    near = np.nonzero((tube.ring >= 12) & (tube.ring <= 20))[0]
    passive = np.setdiff1d(near, kin)
    static = np.nonzero((tube.ring == 11) | (tube.ring == 21))[0]
    ed = LaplacianEditor(tube.x0, tube.topo.triangles, kinematic=kin, passive=passive, static=static,
                         rotation_iterations=0)
    push = tube.x0[kin] * [1, 1.3, 1.3]  # pull three handles outwards
    x = ed.solve(push)
    np.testing.assert_allclose(x[kin], push)
    np.testing.assert_allclose(x[static], tube.x0[static])
    outside = np.setdiff1d(np.arange(len(x)), np.concatenate([kin, passive]))
    np.testing.assert_allclose(x[outside], tube.x0[outside])
    moved = np.linalg.norm(x - tube.x0, axis=1)
    assert moved[passive].max() > 0.01 and moved[passive].max() < moved[kin].max()


def test_laplacian_rejects_bad_sets(tube):
    kin, passive, static = roi(tube)
    with pytest.raises(ValueError, match="disjoint"):
        LaplacianEditor(tube.x0, tube.topo.triangles, kinematic=kin, passive=np.concatenate([passive, kin[:1]]),
                        static=static)
    with pytest.raises(ValueError, match="out of range"):
        LaplacianEditor(tube.x0, tube.topo.triangles, kinematic=[10**6], passive=passive)
    with pytest.raises(ValueError, match="rotation_iterations"):
        LaplacianEditor(tube.x0, tube.topo.triangles, kinematic=kin, passive=passive, rotation_iterations=-1)


# ----------------------------------------------------------------------------------------------------------
# ARAP


@pytest.mark.parametrize("weights", ["cotangent", "uniform"])
def test_arap_reproduces_a_rigid_motion(tube, weights):
    kin, _, static = roi(tube)
    con = np.concatenate([kin, static])
    moved = rigid_motion(tube.x0)
    x, r = ArapSolver(tube.x0, tube.topo.triangles, constrained=con, weights=weights).solve(moved[con], iterations=3)
    np.testing.assert_allclose(x, moved, atol=1e-9)
    np.testing.assert_allclose(r, np.broadcast_to(rot([1, 2, 0.5], 80), r.shape), atol=1e-9)


def test_arap_iterations_lower_the_energy(tube):
    kin, _, static = roi(tube)
    con = np.concatenate([kin, static])
    target = tube.x0.copy()
    target[kin] = rigid_motion(tube.x0[kin])  # the far end turned, the root held: a bent tube
    solver = ArapSolver(tube.x0, tube.topo.triangles, constrained=con)

    def energy(x):
        r = fit_rotations(tube.x0, x, solver.edges, solver.w)
        i, j = solver.edges[:, 0], solver.edges[:, 1]
        d = (x[i] - x[j]) - 0.5 * np.einsum("eab,eb->ea", r[i] + r[j], tube.x0[i] - tube.x0[j])
        return float(solver.w @ np.einsum("ij,ij->i", d, d))

    e = [energy(solver.solve(target[con], iterations=k, rotations=np.broadcast_to(np.eye(3), (len(target), 3, 3)))[0])
         for k in (0, 1, 4)]
    assert e[2] < e[1] < e[0]
    with pytest.raises(ValueError, match="needs constrained vertices or anchor_weight"):
        ArapSolver(tube.x0, tube.topo.triangles)


def test_scale_vector_arap(tube):
    sa = ScaleArap(tube.topo, tube.binding, tube.joints)
    # bind pose and whole-skeleton rigid motions are reproduced exactly
    np.testing.assert_allclose(sa.solve(tube.joints, iterations=1), tube.x0, atol=1e-6)
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = rot([1, 2, 0.5], 80), [0.3, -0.2, 1.0]
    np.testing.assert_allclose(sa.solve(m @ tube.joints.astype(float), iterations=2), rigid_motion(tube.x0),
                               atol=1e-5)
    # a bend: far from the joint it stays rigid, at the joint it smooths the rigid discontinuity
    posed = tube.pose([0, 0, 1], 90)
    x = sa.solve(posed)
    xr = rigid(tube.binding, tube.joints, posed).astype(np.float64)
    far = (tube.ring <= 4) | (tube.ring >= 28)
    assert np.abs(x[far] - xr[far]).max() < 0.02
    edges = tube.topo.edges
    stretch = lambda y: np.linalg.norm(y[edges[:, 0]] - y[edges[:, 1]], axis=1).max()  # noqa: E731
    assert stretch(x) < stretch(xr)


# ----------------------------------------------------------------------------------------------------------
# radial deformations


def test_profile_endpoint_values():
    t = np.array([0.0, 0.5, 1.0])
    np.testing.assert_allclose(profile("linear", t), [0, 0.5, 1])
    np.testing.assert_allclose(profile("cubicIn", t), [0, 0.125, 1])
    np.testing.assert_allclose(profile("quarticOut", t), [0, 0.9375, 1])
    np.testing.assert_allclose(profile("bulge", t), [1.0, 1.25, 1.0])  # -(0.5 - t)^2 + 1.25
    np.testing.assert_allclose(length_multiplier("bulge", t, 1.0), [1.0, 1.25, 1.0])
    np.testing.assert_allclose(length_multiplier("linear", t, 0.5), [1.0, 1.25, 1.5])
    np.testing.assert_allclose(length_multiplier("quarticOut", t, 0.0), 1.0)
    with pytest.raises(ValueError, match="profile = 'sine'"):
        profile("sine", t)


def test_radial_encoding_and_rigid_case(tube):
    enc = encode(tube.binding, tube.joints)
    np.testing.assert_allclose(enc.directions() * enc.length[:, None], tube.binding.scale, atol=1e-6)
    np.testing.assert_allclose(radial_deform(tube.binding, tube.joints, tube.joints), tube.x0, atol=1e-6)
    posed = tube.pose([0, 0, 1], 60)
    np.testing.assert_allclose(radial_deform(tube.binding, tube.joints, posed, encoding=enc),
                               rigid(tube.binding, tube.joints, posed), atol=1e-5)


def test_radial_bulge_scales_scale_vectors_along_the_bone(tube):
    posed = tube.pose([0, 0, 1], 60)
    base = radial_deform(tube.binding, tube.joints, posed)
    x = radial_deform(tube.binding, tube.joints, posed, profile_name="bulge", bones=[1])
    s0 = np.linalg.norm(tube.binding.scale, axis=1)
    p = posed[1, :3, 3].astype(np.float64)
    d = posed[1, :3, 0].astype(np.float64)  # bone 1 runs along the joint's rotated x axis
    on1 = tube.binding.bone == 1
    t = tube.binding.t.astype(np.float64)
    a = p + t[:, None] * 2.0 * d
    ratio = np.linalg.norm(x[on1] - a[on1], axis=1) / s0[on1]  # |s'| / |s| per vertex
    np.testing.assert_allclose(ratio, -(0.5 - t[on1]) ** 2 + 1.25, rtol=1e-5)
    np.testing.assert_allclose(x[~on1], base[~on1])  # other bones untouched
