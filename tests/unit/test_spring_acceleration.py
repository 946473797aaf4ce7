"""SpringParams.acceleration = "momentum" (heavy ball on the explicit update, issue 15 item 4) in the numpy
reference: validation, the bind pose stays a fixed point, and on a family tube it reaches the equilibrium of the
plain update (within 1e-3 of the diagonal of its far-converged result) in fewer iterations without new
intersecting face pairs."""
from __future__ import annotations

import numpy as np
import pytest

from engine.assets.gen.family import tube_family, tube_poses
from engine.skinning.family import MemberRig
from engine.skinning.metrics import intersecting_pairs
from engine.skinning.springs import SpringDeformer, SpringParams, integrate


def test_validation_names_the_bad_value():
    with pytest.raises(ValueError, match="acceleration"):
        SpringParams(acceleration="chebyshev").validate()
    with pytest.raises(ValueError, match="momentum"):
        SpringParams(acceleration="momentum", momentum=1.0).validate()
    with pytest.raises(ValueError, match="semi_implicit"):
        SpringParams(acceleration="momentum", integrator="semi_implicit").validate()
    assert SpringParams().acceleration == "none"  # opt-in


def test_heavy_ball_update():
    x, u, f = np.zeros((2, 3)), np.ones((2, 3)), np.full((2, 3), 2.0)
    p = SpringParams(integrator="explicit", acceleration="momentum", momentum=0.5)
    x1, u1 = integrate(x, u, f, p, np.array([0.1, 0.2]))
    np.testing.assert_allclose(u1, [[0.7] * 3, [0.9] * 3])
    np.testing.assert_allclose(x1, u1)
    x2, u2 = integrate(x, u, f, SpringParams(integrator="explicit"), np.array([0.1, 0.2]))
    np.testing.assert_allclose(x2, [[0.2] * 3, [0.4] * 3])
    assert u2 is u


@pytest.fixture(scope="module")
def member():
    return MemberRig(tube_family(1)[0])


def _solve(rig, pose, params):
    m = rig.member
    d = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, params, joints=m.joints,
                       weights=m.weights)
    return d.solve(m.posed_joints(pose))


def test_bind_pose_is_a_fixed_point(member):
    bind = next(p for p in tube_poses() if p.name == "bend0")
    x, stats = _solve(member, bind, SpringParams(integrator="explicit", acceleration="momentum",
                                                             momentum=0.8))
    assert stats.iterations <= 1
    np.testing.assert_allclose(x, member.bind_positions, atol=1e-6)


@pytest.mark.parametrize("name", ["bend90", "twist180"])
def test_momentum_same_equilibrium_fewer_iterations(member, name):
    pose = next(p for p in tube_poses() if p.name == name)
    plain = SpringParams(integrator="explicit", dt=1.0 / 30.0, max_iterations=2000)  # the research's update
    x0, s0 = _solve(member, pose, plain)
    x1, s1 = _solve(member, pose, plain.replace(acceleration="momentum", momentum=0.8))
    far, _ = _solve(member, pose, plain.replace(max_iterations=100_000, displacement_rel=1e-8))
    assert s0.converged and s1.converged
    assert s1.iterations * 2 < s0.iterations, (s0.iterations, s1.iterations)
    diag = float(np.linalg.norm(np.ptp(member.bind_positions, 0)))
    # the plain update stops ~2e-3 x diag short of its equilibrium (the tolerance is on one step); momentum
    # stops closer to the same equilibrium
    err0, err1 = (float(np.linalg.norm(x - far, axis=1).max()) / diag for x in (x0, x1))
    assert err1 < 1e-3 and err1 < err0, (err0, err1)
    tri = member.topology.triangles
    assert len(intersecting_pairs(x1, tri)) <= len(intersecting_pairs(x0, tri))
