"""Spring deformer (engine/skinning/springs/): each force on hand-worked 2-4 point cases, energy gradient,
fixed point at bind, integrators, convergence schemes, stability range and divergence handling, per-vertex
step limiting (a fan with a 128-valent pole where the plain update diverges), and the research's headline
behaviour on a two-bone tube (twist without collapse, bend volume vs LBS, initialisations reaching the same
equilibrium).

The helpers at the top (tube, fan, tiny configurations) are shared with test_skinning_baselines / _edits and
tests/gl/test_deform_spring.py.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from engine.assets.gen.family import tube_grid
from engine.skinning.binding import bind
from engine.skinning.edits import EditStack, SurfaceEdit
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.metrics import volume
from engine.skinning.skinning import dqs, lbs
from engine.skinning.springs import (
    DIFF_LAMBDA,
    LAMBDA_COLUMNS,
    STEP_SAFETY,
    VOLUME_LAMBDA,
    SpringDeformer,
    SpringParams,
    blend_rotations,
    csr_slots,
    lambda_per_vertex,
    step_sizes,
)
from engine.skinning.types import Binding, Bones, MeshTopology

# ----------------------------------------------------------------------------------------------------------
# helpers


def rot(axis, deg: float) -> np.ndarray:
    a = np.asarray(axis, np.float64)
    a = a / np.linalg.norm(a)
    th = math.radians(deg)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(th) * k + (1 - math.cos(th)) * k @ k


def topology_from_edges(positions: np.ndarray, edges: list[tuple[int, int]]) -> MeshTopology:
    """A MeshTopology for a few points joined by edges (no triangles): what the spring forces need."""
    pos = np.asarray(positions, np.float32)
    v = pos.shape[0]
    e = np.array(sorted(tuple(sorted(x)) for x in edges), np.int32).reshape(-1, 2)
    both = np.concatenate([e, e[:, ::-1]])
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    count = np.bincount(both[:, 0], minlength=v).astype(np.int32)
    z = np.zeros(v, np.int32)
    return MeshTopology(np.arange(v, dtype=np.int32), np.arange(v, dtype=np.int32), pos,
                        np.zeros((0, 3), np.int32), np.zeros((0, 3), np.int32),
                        (np.cumsum(count) - count).astype(np.int32), count, both[:, 1].astype(np.int32), e,
                        z, z, np.zeros(0, np.int32))


def bar_setup(points, edges, params: SpringParams):
    """One joint at the origin, one tip bone along +x of length 1; points attached by projection."""
    pts = np.asarray(points, np.float64)
    topo = topology_from_edges(pts, edges)
    joints = np.eye(4, dtype=np.float32)[None]
    bones = Bones(np.array([0], np.int32), np.array([-1], np.int32), np.array([[1, 0, 0]], np.float32))
    t = np.clip(pts[:, 0], 0.0, 1.0)
    attach = np.stack([t, np.zeros_like(t), np.zeros_like(t)], 1)
    binding = Binding(bones, np.zeros(len(pts), np.int32), t.astype(np.float32), attach.astype(np.float32),
                      (pts - attach).astype(np.float32))
    d = SpringDeformer(topo, binding, joints, np.array([-1]), params)
    return d, d.frame(joints)


RESEARCH = dict(integrator="explicit", dt=1.0 / 30.0)
"""The research's update (eq. 23, dt = 1/30): what the step, stability and convergence tests below exercise; the
defaults (damped semi-implicit steps) are measured on the tube family (tests/unit/test_springs_family.py)."""


def research(**kw) -> SpringParams:
    """SpringParams with the research's explicit update unless kw say otherwise."""
    return SpringParams(**{**RESEARCH, **kw})


def only(force: str, **kw) -> SpringParams:
    """Params (research update) with a single force switched on."""
    return research(**{f"use_{x}": x == force for x in "sltbrevd"}, **kw)


N_AROUND, N_RINGS, RADIUS, LENGTH = 16, 33, 0.5, 4.0


class Tube:
    """Open two-bone tube along +x (joint 0 at x=0, joint 1 at x=2, tip bone to x=4) through the project's
    meshprep and binding (direct projection, no smoothing), with smooth LBS weights over one diameter."""

    def __init__(self, n_around: int = N_AROUND, n_rings: int = N_RINGS, radius: float = RADIUS,
                 length: float = LENGTH) -> None:
        pos, tri = tube_grid(radius, length, n_rings, n_around)
        self.topo = prepare_mesh(pos.astype(np.float32), tri.astype(np.int32))
        self.joints = np.tile(np.eye(4, dtype=np.float32), (2, 1, 1))
        self.joints[1, 0, 3] = length / 2
        self.parents = np.array([-1, 0], np.int32)
        bones = Bones(np.array([0, 1], np.int32), np.array([1, -1], np.int32),
                      np.array([[0, 0, 0], [length / 2, 0, 0]], np.float32))
        self.binding = bind(self.topo, self.joints, self.parents, method="project", smooth_passes=0, bones=bones)
        self.x0 = self.topo.positions.astype(np.float64)
        self.radius, self.length, self.n_rings = radius, length, n_rings
        self.ring = np.rint(self.x0[:, 0] / (length / (n_rings - 1))).astype(int)
        w1 = np.clip((self.x0[:, 0] - (length / 2 - radius)) / (2 * radius), 0.0, 1.0)
        self.weights = np.zeros((len(pos), 4), np.float32)
        self.weights[:, 0], self.weights[:, 1] = 1 - w1, w1
        self.joint_ids = np.zeros((len(pos), 4), np.uint16)
        self.joint_ids[:, 1] = 1
        # caps (test-only) so the open tube encloses a volume: fans to two extra centre points
        caps = []
        for ring, centre, out in ((0, len(pos), -1.0), (n_rings - 1, len(pos) + 1, 1.0)):
            ids = np.nonzero(self.ring == ring)[0]
            ids = ids[np.argsort(np.arctan2(self.x0[ids, 2], self.x0[ids, 1]))]
            fan = np.stack([np.full(len(ids), centre), ids, np.roll(ids, -1)], 1)
            ctr = self.x0[ids].mean(0)
            nrm = np.cross(self.x0[fan[0, 1]] - ctr, self.x0[fan[0, 2]] - ctr)
            caps.append(fan if nrm[0] * out > 0 else fan[:, [0, 2, 1]])
        self.closed = np.concatenate([self.topo.triangles, *caps])
        self.bind_volume = self.volume(self.x0)

    def pose(self, axis, deg: float) -> np.ndarray:
        posed = self.joints.copy()
        posed[1, :3, :3] = rot(axis, deg)
        return posed

    def volume(self, x: np.ndarray) -> float:
        x = np.asarray(x, np.float64)
        ends = [x[self.ring == 0].mean(0), x[self.ring == self.n_rings - 1].mean(0)]
        return volume(np.concatenate([x, ends]), self.closed)

    def radial(self, x: np.ndarray) -> np.ndarray:
        """Distance of every point from the x axis (the skeleton, which stays on it for twists)."""
        return np.linalg.norm(np.asarray(x, np.float64)[:, 1:], axis=1)

    def blend(self, method: str, posed: np.ndarray) -> np.ndarray:
        skin = (posed.astype(np.float64) @ np.linalg.inv(self.joints.astype(np.float64))).astype(np.float32)
        fn = lbs if method == "lbs" else dqs
        return fn(self.topo.positions, self.joint_ids, self.weights, skin).astype(np.float64)

    def deformer(self, params: SpringParams | None = None, **kw) -> SpringDeformer:
        return SpringDeformer(self.topo, self.binding, self.joints, self.parents, params or research(**kw),
                              joints=self.joint_ids, weights=self.weights)


@pytest.fixture(scope="module")
def tube() -> Tube:
    return Tube()


def fan_rig(segments: int = 128, rings: int = 3, radius: float = 0.3, height: float = 0.2, length: float = 1.0,
            n_joints: int = 3):
    """A flat disc of `rings` rings around one pole vertex of valence `segments`, in the plane x = height beside
    a joint chain along +Y (joints at y = 0 .. length, the pole level with the middle one), bound through the
    LBS weights (linear between neighbouring joints) as tests.helpers.tube_rig.tube does. Returns a
    gpu_synthetic.Rig (usable with its `pose`). The pole's Jacobian eigenvalue grows ~0.63 x its valence."""
    from tests.helpers.tube_rig import Rig

    rad = radius * np.arange(1, rings + 1) / rings
    ang = 2 * np.pi * np.arange(segments) / segments
    rr, aa = np.meshgrid(rad, ang, indexing="ij")
    ring_pos = np.stack([np.full(rr.shape, height), length / 2 + rr * np.cos(aa), rr * np.sin(aa)], -1)
    pole = rings * segments
    pos = np.concatenate([ring_pos.reshape(-1, 3), [[height, length / 2, 0.0]]]).astype(np.float32)
    s = np.arange(segments)
    tris = [np.stack([np.full(segments, pole), s, (s + 1) % segments], 1)]
    for r in range(rings - 1):
        a, b = r * segments + s, r * segments + (s + 1) % segments
        tris += [np.stack([a, a + segments, b], 1), np.stack([b, a + segments, b + segments], 1)]
    topo = prepare_mesh(pos, np.concatenate(tris).astype(np.int32))
    bind_joints = np.tile(np.eye(4), (n_joints, 1, 1))
    bind_joints[:, 1, 3] = np.linspace(0.0, length, n_joints)
    parents = np.arange(-1, n_joints - 1).astype(np.int32)
    u = np.clip(pos[:, 1] / length, 0.0, 1.0) * (n_joints - 1)
    seg = np.clip(u.astype(int), 0, n_joints - 2)
    joints = np.zeros((len(pos), 4), np.uint16)
    weights = np.zeros((len(pos), 4), np.float32)
    joints[:, 0], joints[:, 1] = seg, seg + 1
    weights[:, 0], weights[:, 1] = 1 - (u - seg), u - seg
    binding = bind(topo, bind_joints, parents, method="weights", joints=joints, weights=weights)
    return Rig(topo, binding, pos, joints, weights, np.linalg.inv(bind_joints).astype(np.float32), bind_joints,
               parents)


@pytest.fixture(scope="module")
def fan():
    return fan_rig()


def fan_deformer(rig, params: SpringParams) -> SpringDeformer:
    """The fan's deformer with joint blending off: the step-limiting tests measure stability from the research's
    plain rigid start (the blended start is much closer to equilibrium, so the plain update need not diverge)."""
    return SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, params.replace(joint_blend=False))


# ----------------------------------------------------------------------------------------------------------
# parameters


def test_params_validate_names_parameter_and_range():
    assert SpringParams().validate() == SpringParams()
    with pytest.raises(ValueError, match=r"dt = -0\.1.*\(0, 10\]"):
        SpringParams(dt=-0.1).validate()
    with pytest.raises(ValueError, match=r"integrator = 'rk4'.*explicit, semi_implicit"):
        SpringParams(integrator="rk4").validate()
    with pytest.raises(ValueError, match=r"max_iterations = 2\.5"):
        SpringParams(max_iterations=2.5).validate()
    with pytest.raises(ValueError, match=r"k_t = True"):
        SpringParams(k_t=True).validate()
    with pytest.raises(ValueError, match=r"damping = 1\.0.*\[0, 1\)"):
        SpringParams(damping=1.0).validate()
    with pytest.raises(ValueError, match="unknown spring parameter"):
        SpringParams.from_dict({"k_q": 1.0})
    p = SpringParams(k_s=0.7, convergence="energy")
    assert SpringParams.from_dict(p.to_dict()) == p


def test_csr_slots_follow_offsets():
    rows, cols = csr_slots(np.array([3, 0, 5]), np.array([2, 3, 0]), np.array([1, 2, 0, 7, 8, 9, 1, 2]))
    assert rows.tolist() == [0, 0, 1, 1, 1]
    assert cols.tolist() == [7, 8, 1, 2, 0]  # vertex 0 reads from offset 3, vertex 1 from 0


# ----------------------------------------------------------------------------------------------------------
# forces on 2-4 points (hand-worked)


def test_edge_spring_two_points():
    d, fr = bar_setup([[0, 1, 0], [1, 1, 0]], [(0, 1)], only("s", k_s=2.0))
    f, e = d.forces(np.array([[0, 1, 0], [1.5, 1, 0]]), fr)  # stretched by 0.5
    np.testing.assert_allclose(f, [[1.0, 0, 0], [-1.0, 0, 0]], atol=1e-12)  # k (l - L0) towards each other
    assert e == pytest.approx(0.5 * 2.0 * 0.25)
    f, _ = d.forces(np.array([[0, 1, 0], [0.75, 1, 0]]), fr)  # compressed by 0.25: pushed apart
    np.testing.assert_allclose(f, [[-0.5, 0, 0], [0.5, 0, 0]], atol=1e-12)


def test_length_spring_two_points():
    d, fr = bar_setup([[0, 1, 0], [1, 1, 0]], [(0, 1)], only("l", k_l=3.0))
    f, e = d.forces(np.array([[0, 1.2, 0], [1, 1, 0]]), fr)  # |s0| - |s1| grew by 0.2
    np.testing.assert_allclose(f, [[0, -0.6, 0], [0, 0.6, 0]], atol=1e-12)  # along -s0, +s1
    assert e == pytest.approx(0.5 * 3.0 * 0.04)
    # equal lengths (even if both changed) give no force: the spring compares neighbours
    f, _ = d.forces(np.array([[0, 1.3, 0], [1, 1.3, 0]]), fr)
    np.testing.assert_allclose(f, 0.0, atol=1e-12)


def test_torsion_direction_magnitude_and_conversion():
    k_t, phi = 2.0, 0.3
    # s0 has length 2, s1 length 1 at bind, both along +y (rest angle 0); pair weight min(r)^2 = 1
    d, fr = bar_setup([[0, 2, 0], [1, 1, 0]], [(0, 1)], only("t", k_t=k_t))
    x = np.array([[0, 2, 0], [1, math.cos(phi), math.sin(phi)]])  # s1 turned by phi about the bone
    f, e = d.forces(x, fr)
    torque = k_t * 1.0 * phi
    s0, s1 = x[0] - [0, 0, 0], x[1] - [1, 0, 0]
    assert np.linalg.norm(f[0]) == pytest.approx(torque / np.linalg.norm(s0))  # |F_t| / |s_i|
    assert np.linalg.norm(f[1]) == pytest.approx(torque / np.linalg.norm(s1))
    assert abs(f[0] @ s0) < 1e-12 and abs(f[1] @ s1) < 1e-12  # orthogonal to s_i
    np.testing.assert_allclose(f[0] / np.linalg.norm(f[0]), [0, 0, 1], atol=1e-12)  # s0 turns towards s1
    np.testing.assert_allclose(f[1] / np.linalg.norm(f[1]), [0, math.sin(phi), -math.cos(phi)], atol=1e-12)
    assert e == pytest.approx(0.5 * k_t * phi**2)
    # a rest angle that is too narrow now pushes s1 away from s0
    d2, fr2 = bar_setup([[0, 1, 0], [1, math.cos(0.5), math.sin(0.5)]], [(0, 1)], only("t", k_t=k_t))
    f2, _ = d2.forces(np.array([[0, 1, 0], [1, math.cos(0.2), math.sin(0.2)]]), fr2)
    assert f2[1][2] > 0 and f2[0][2] < 0


def test_torsion_sums_over_neighbours():
    # centre point 0 between two neighbours turned by +phi and -phi: forces cancel; both +phi: they add
    pts = [[0.5, 1, 0], [0, 1, 0], [1, 1, 0]]
    d, fr = bar_setup(pts, [(0, 1), (0, 2)], only("t", k_t=1.0))
    c, s = math.cos(0.2), math.sin(0.2)
    f, _ = d.forces(np.array([[0.5, 1, 0], [0, c, s], [1, c, -s]]), fr)
    np.testing.assert_allclose(f[0], 0.0, atol=1e-12)
    f, _ = d.forces(np.array([[0.5, 1, 0], [0, c, s], [1, c, s]]), fr)
    np.testing.assert_allclose(f[0], [0, 0, 2 * 0.2], atol=1e-12)


def test_bone_force_frame_and_cone():
    phi = 0.2
    x_spin = np.array([[0.5, math.cos(phi), math.sin(phi)]])  # spun about the bone
    d, fr = bar_setup([[0.5, 1, 0]], [], only("b", k_b=1.5))
    f, e = d.forces(x_spin, fr)
    np.testing.assert_allclose(f[0], 1.5 * phi * np.array([0, math.sin(phi), -math.cos(phi)]), atol=1e-12)
    assert e == pytest.approx(0.5 * 1.5 * phi**2)
    # cone mode keeps only the angle with the bone run: a spin is free, a tilt is pushed back
    d, fr = bar_setup([[0.5, 1, 0]], [], only("b", k_b=1.5, bone_mode="cone"))
    f, _ = d.forces(x_spin, fr)
    np.testing.assert_allclose(f, 0.0, atol=1e-12)
    tilt = np.array([[0.5 + math.sin(phi), math.cos(phi), 0]])  # s tilted towards +x (the bone)
    f, _ = d.forces(tilt, fr)
    np.testing.assert_allclose(f[0], 1.5 * phi * np.array([-math.cos(phi), math.sin(phi), 0]), atol=1e-12)


def test_radial_force():
    d, fr = bar_setup([[0.5, 1, 0]], [], only("r", k_r=2.0))
    f, _ = d.forces(np.array([[0.5, 0.7, 0]]), fr)
    np.testing.assert_allclose(f[0], [0, 0.6, 0], atol=1e-12)


def test_edit_force_and_handle_weighting():
    pts = [[0, 1, 0], [1, 1, 0]]
    params = SpringParams(use_l=False, use_t=False, use_b=False, use_r=False, use_d=False, k_s=1.0, k_e=2.0,
                          handle_weight=0.25)
    d, fr = bar_setup(pts, [(0, 1)], params)
    edit = SurfaceEdit.from_world([0], np.array([[0, 1.5, 0]]), fr.attach, fr.rot, stiffness=3.0)
    terms = EditStack([edit]).terms(2, fr.attach, fr.rot)
    x = np.array([[0, 1, 0], [1.5, 1, 0]])
    f, _ = d.forces(x, fr, terms)
    f_s = np.array([0.5, 0, 0])  # edge spring on vertex 0 alone
    np.testing.assert_allclose(f[0], 0.25 * f_s + 2.0 * 3.0 * np.array([0, 0.5, 0]), atol=1e-12)
    np.testing.assert_allclose(f[1], -f_s, atol=1e-12)  # not a handle: unweighted, no edit force


def test_forces_are_minus_energy_gradient(tube):
    d = tube.deformer(k_e=1.0)
    fr = d.frame(tube.pose([0, 0, 1], 60))
    rng = np.random.default_rng(3)
    x = d.rigid(fr) + 0.02 * rng.standard_normal(tube.x0.shape)
    kin = np.nonzero(tube.ring == 20)[0][:4]
    edit = SurfaceEdit.from_world(kin, x[kin] + 0.05, fr.attach, fr.rot, stiffness=2.0)
    terms = EditStack([edit]).terms(len(x), fr.attach, fr.rot)
    # the weighting is one non-gradient part; the differential term's force k_d c_i d_i is a descent direction of
    # its energy, not its gradient (tests/unit/test_spring_differential.py)
    d.set_params(d.params.replace(handle_weight=1.0, use_d=False))
    f, _ = d.forces(x, fr, terms)
    h = 1e-6
    for i in rng.choice(len(x), 12, replace=False):
        for a in range(3):
            xp, xm = x.copy(), x.copy()
            xp[i, a] += h
            xm[i, a] -= h
            grad = (d.forces(xp, fr, terms)[1] - d.forces(xm, fr, terms)[1]) / (2 * h)
            assert f[i, a] == pytest.approx(-grad, rel=1e-4, abs=1e-6)


# ----------------------------------------------------------------------------------------------------------
# fixed point, invariance, integrators


def test_bind_is_a_fixed_point(tube):
    d = tube.deformer(convergence="iterations", max_iterations=1000)
    fr = d.frame(tube.joints)
    f, e = d.forces(tube.x0, fr)
    assert np.abs(f).max() < 1e-12 and e < 1e-20
    x, st = d.solve(tube.joints)
    assert st.iterations == 1000 and not st.diverged
    diag = np.linalg.norm(tube.x0.max(0) - tube.x0.min(0))
    assert np.abs(x - tube.x0).max() < 1e-6 * diag


def test_rigid_motion_of_the_whole_skeleton_is_an_equilibrium(tube):
    d = tube.deformer()
    posed = tube.joints.astype(np.float64).copy()
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = rot([1, 2, 3], 70), [0.3, -1.0, 2.0]
    posed = m @ posed
    fr = d.frame(posed)
    x = d.rigid(fr)
    np.testing.assert_allclose(x, tube.x0 @ m[:3, :3].T + m[:3, 3], atol=1e-5)
    f, e = d.forces(x, fr)
    assert np.abs(f).max() < 1e-5 and e < 1e-9


def test_explicit_and_semi_implicit_steps(tube):
    posed = tube.pose([0, 0, 1], 90)
    d = tube.deformer()
    fr = d.frame(posed)
    x0 = d.rigid(fr)
    f, _ = d.forces(x0, fr)
    x1, v1, f1, _ = d.step(x0, fr)
    np.testing.assert_allclose(x1, x0 + d.params.dt * f, atol=1e-12)  # eq. 23
    assert np.array_equal(f1, f)
    semi = tube.deformer(integrator="semi_implicit", damping=0.2)
    x1s, v1s, _, _ = semi.step(x0, fr, vel=np.zeros_like(x0))
    np.testing.assert_allclose(v1s, 0.8 * semi.params.dt * f, atol=1e-12)
    np.testing.assert_allclose(x1s, x0 + semi.params.dt * v1s, atol=1e-12)
    # both integrators settle on the same equilibrium
    xe, se = tube.deformer(max_iterations=3000, displacement_rel=1e-6).solve(posed)
    xs, ss = tube.deformer(integrator="semi_implicit", dt=0.12, damping=0.3, max_iterations=3000,
                           displacement_rel=1e-6).solve(posed)
    assert se.converged and ss.converged and not ss.diverged
    assert np.abs(xe - xs).max() < 0.02 * np.abs(xe - x0).max()


# ----------------------------------------------------------------------------------------------------------
# convergence schemes


def test_scheme_iterations_runs_exactly_max(tube):
    x, st = tube.deformer(convergence="iterations", max_iterations=37).solve(tube.pose([0, 0, 1], 90))
    assert st.iterations == 37 and st.reason == "max_iterations"


def test_scheme_displacement_stops_at_first_small_step(tube):
    posed = tube.pose([0, 0, 1], 90)
    d = tube.deformer(convergence="displacement", max_iterations=2000)
    thr = d.displacement_threshold
    assert thr == pytest.approx(2 * RADIUS * 1e-4)  # AABB_min * 1e-4 (the tube is 2R wide in y and z)
    _, st = d.solve(posed)
    assert st.reason == "displacement" and st.max_displacement < thr and 5 < st.iterations < 2000
    _, before = tube.deformer(convergence="displacement", max_iterations=st.iterations - 1).solve(posed)
    assert before.max_displacement >= thr and not before.converged


def test_scheme_force_stops_when_forces_are_small(tube):
    posed = tube.pose([0, 0, 1], 90)
    d = tube.deformer(convergence="force", force_tol=2e-3, max_iterations=2000)
    _, st = d.solve(posed)
    assert st.reason == "force" and st.max_force < 2e-3 and 0 < st.iterations < 2000
    _, before = tube.deformer(convergence="force", force_tol=2e-3, max_iterations=st.iterations - 1).solve(posed)
    assert before.max_force >= 2e-3 and not before.converged


def test_scheme_energy_stops_at_a_local_minimum(tube):
    posed = tube.pose([1, 0, 0], 120)
    d = tube.deformer(convergence="energy", max_iterations=5000, energy_rtol=1e-6)
    x, st = d.solve(posed)
    assert st.reason == "energy" and st.iterations < 5000 and st.energy < st.initial_energy
    fr = d.frame(posed)
    x_next, _, _, e_here = d.step(x.astype(np.float64), fr)
    _, e_next = d.forces(x_next, fr)
    assert e_next >= e_here * (1 - 2e-6)  # one more step no longer lowers the energy


# ----------------------------------------------------------------------------------------------------------
# stability


def test_safe_range_rule(tube):
    d = tube.deformer(only("s", k_s=0.5))
    rng = d.safe_range()
    dmax = int(tube.topo.adj_count.max())
    assert rng["dt"] == pytest.approx(1.0 / (2 * dmax * 0.5))  # dt * 2 d k_s < 1
    assert rng["k_s"] == pytest.approx(1.0 / (2 * dmax * d.params.dt))
    assert rng["shortest_edge"] == pytest.approx(min(LENGTH / (N_RINGS - 1), 2 * RADIUS * math.sin(math.pi / N_AROUND)),
                                                 rel=1e-5)
    full = tube.deformer()
    assert full.params.dt < full.safe_range()["dt"]  # the defaults sit inside the range
    # inside the range, explicit steps only ever lower the energy (they descend its gradient)
    fr = full.frame(tube.pose([1, 0, 0], 150))
    x = full.rigid(fr)
    energies = []
    for _ in range(40):
        x, _, _, e = full.step(x, fr)
        energies.append(e)
    assert np.all(np.diff(energies) <= 1e-12)


def test_huge_dt_diverges_keeps_last_good_state_and_warns(tube):
    posed = tube.pose([0, 0, 1], 120)
    with pytest.warns(RuntimeWarning, match="`dt`"):
        d = tube.deformer(dt=5.0, max_iterations=50, step_limit=False, joint_blend=False)
    fr = d.frame(posed)
    with pytest.warns(RuntimeWarning, match=r"diverged.*last good state.*`dt` \(now 5"):
        x, st = d.solve(posed)
    assert st.diverged and st.reason == "diverged" and st.iterations == 0
    np.testing.assert_allclose(x, d.rigid(fr), atol=1e-6)  # nothing good came after the start


def test_slow_divergence_is_caught_before_values_explode(tube):
    posed = tube.pose([0, 0, 1], 120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = tube.deformer(dt=0.4, convergence="iterations", max_iterations=400,
                          step_limit=False)  # oscillation grows slowly
    with pytest.warns(RuntimeWarning, match=r"`dt`.*or `k_\w+`"):
        x, st = d.solve(posed)
    assert st.diverged and st.iterations > 0
    assert np.all(np.isfinite(x))
    assert np.abs(x - tube.x0).max() < 2 * LENGTH


# ----------------------------------------------------------------------------------------------------------
# step limiting (per-vertex steps dt_i = min(dt, STEP_SAFETY / lambda_i))


def test_step_limit_is_a_validated_switch_on_by_default():
    assert SpringParams().step_limit is True
    with pytest.raises(ValueError, match=r"step_limit = 1; valid: true or false"):
        SpringParams(step_limit=1).validate()
    p = SpringParams(step_limit=False)
    assert SpringParams.from_dict(p.to_dict()) == p


def test_step_sizes_follow_the_gershgorin_bound(tube):
    deg = tube.topo.adj_count.astype(np.float64)
    p = only("s", k_s=0.5, dt=0.2)
    d = tube.deformer(p)
    lam = 2 * deg * 0.5  # edge springs alone: each neighbour adds k_s on and off the diagonal
    np.testing.assert_allclose(lambda_per_vertex(d.rest, p), lam, rtol=1e-12)
    np.testing.assert_allclose(d.step_sizes(), np.minimum(0.2, STEP_SAFETY / lam), rtol=1e-12)
    assert np.any(d.step_sizes() < 0.2) and np.any(d.step_sizes() == 0.2)  # only the stiffer rows are limited
    semi = p.replace(integrator="semi_implicit", dt=1.0)
    np.testing.assert_allclose(step_sizes(d.rest, semi), np.minimum(1.0, np.sqrt(2 * STEP_SAFETY / lam)), rtol=1e-12)
    assert step_sizes(d.rest, p.replace(step_limit=False)) is None
    # every stiffness enters lambda with its switch: the full set gives a larger lambda than edges alone
    full = SpringParams()
    assert np.all(lambda_per_vertex(d.rest, full) > lambda_per_vertex(d.rest, only("s", k_s=full.k_s)))
    # set_params recomputes the steps from the new stiffnesses
    d.set_params(p.replace(k_s=2.0))
    np.testing.assert_allclose(d.step_sizes(), np.minimum(0.2, STEP_SAFETY / (4 * deg)), rtol=1e-12)


def test_edit_stiffness_enters_the_step_limit(tube):
    d = tube.deformer(dt=0.05, k_e=2.0, k_v=0.0)  # the edit alone (it also switches the volume term off in its region)
    fr = d.frame(tube.joints)
    kin = np.nonzero(tube.ring == 10)[0][:3]
    terms = EditStack([SurfaceEdit.from_world(kin, tube.x0[kin] + 0.05, fr.attach, fr.rot, stiffness=5.0)]
                      ).terms(len(tube.x0), fr.attach, fr.rot)
    plain, edited = d.step_sizes(), d.step_sizes(terms)
    lam = lambda_per_vertex(d.rest, d.params) + 2.0 * terms.stiffness
    np.testing.assert_allclose(edited, np.minimum(0.05, STEP_SAFETY / lam), rtol=1e-12)
    assert np.all(edited[kin] < plain[kin]) and np.array_equal(np.delete(edited, kin), np.delete(plain, kin))
    # the step of an iteration uses them
    x = tube.x0 + 0.01
    x1, _, f, _ = d.step(x, fr, edit=terms)
    np.testing.assert_allclose(x1, x + edited[:, None] * f, atol=1e-15)


def test_step_limit_has_the_same_equilibria_and_fixed_point(tube):
    # where the plain update is stable, both reach the same equilibrium (only the path differs)
    posed = tube.pose([0, 0, 1], 90)
    kw = dict(dt=0.08, max_iterations=3000, displacement_rel=1e-6)
    d_on, d_off = tube.deformer(**kw), tube.deformer(**kw, step_limit=False)
    assert np.any(d_on.step_sizes() < 0.08)  # limiting is active at this dt
    x_on, s_on = d_on.solve(posed)
    x_off, s_off = d_off.solve(posed)
    assert s_on.converged and s_off.converged
    assert np.abs(x_on - x_off).max() < 0.02 * np.abs(x_off - d_off.rigid(d_off.frame(posed))).max()
    # the bind pose stays a fixed point under the limited update, at any dt
    x, st = tube.deformer(dt=5.0, convergence="iterations", max_iterations=50).solve(tube.joints)
    assert not st.diverged and np.abs(x - tube.x0).max() < 1e-6


def test_step_limit_makes_any_dt_stable_without_warning(tube):
    posed = tube.pose([0, 0, 1], 120)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither the set-up warning nor a divergence warning
        d = tube.deformer(dt=5.0, max_iterations=3000)
        x, st = d.solve(posed)
    assert st.converged and not st.diverged
    ref, _ = tube.deformer(max_iterations=3000, step_limit=False).solve(posed)  # research defaults
    assert np.abs(x - ref).max() < 0.05 * RADIUS


def test_fan_pole_plain_update_diverges_limited_one_converges(fan):
    from tests.helpers.tube_rig import pose

    topo = fan.topology
    pole = int(np.argmax(topo.adj_count))
    assert topo.adj_count[pole] == 128
    _, posed = pose(fan, bend=0.6, twist=0.3)
    with pytest.warns(RuntimeWarning, match="may be unstable"):
        plain = fan_deformer(fan, research(step_limit=False, max_iterations=400))  # research defaults
    with pytest.warns(RuntimeWarning, match="diverged"):
        _, st = plain.solve(posed)
    assert st.diverged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        limited = fan_deformer(fan, research(max_iterations=400))  # step_limit on (the default)
        x, st = limited.solve(posed)
    assert st.converged and st.reason == "displacement" and not st.diverged
    steps = limited.step_sizes()
    assert steps[pole] < limited.params.dt and np.sum(steps < limited.params.dt) == 1  # only the pole is slowed
    # each limited step lowers the energy (no oscillation at the pole), while plain steps raise it
    fr = limited.frame(posed)
    xk = limited.rigid(fr)
    energies, pole_moves = [], []
    for _ in range(30):
        x_next, _, _, e = limited.step(xk, fr)
        energies.append(e)
        pole_moves.append(x_next[pole] - xk[pole])
        xk = x_next
    assert np.all(np.diff(energies) <= 1e-12 * energies[0])
    turns = [float(a @ b) for a, b in zip(pole_moves[5:], pole_moves[6:])]
    assert min(turns) >= 0.0  # the pole never reverses direction from one step to the next
    xp, _, _, e0 = plain.step(plain.rigid(fr), fr)
    _, _, _, e1 = plain.step(xp, fr)
    assert e1 > e0
    # the limited equilibrium is the plain update's where that one is stable (small dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Gershgorin bound is ~4x the true eigenvalue at this pole
        ref, st_ref = fan_deformer(fan, research(step_limit=False, dt=0.01, max_iterations=3000,
                                                     displacement_rel=1e-6)).solve(posed)
    assert st_ref.converged
    x_tight, _ = fan_deformer(fan, research(max_iterations=3000, displacement_rel=1e-6)).solve(posed)
    diag = np.linalg.norm(np.ptp(topo.positions, 0))
    assert np.abs(x_tight - ref).max() < 2e-3 * diag


def test_fan_semi_implicit_limited(fan):
    from tests.helpers.tube_rig import pose

    _, posed = pose(fan, bend=0.6, twist=0.3)
    p = SpringParams(integrator="semi_implicit", dt=0.25, damping=0.3, max_iterations=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, st_plain = fan_deformer(fan, p.replace(step_limit=False)).solve(posed)
    assert st_plain.diverged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = fan_deformer(fan, p)
        _, st = d.solve(posed)
    assert st.converged and not st.diverged
    lam = lambda_per_vertex(d.rest, d.params)
    assert np.all(d.step_sizes() ** 2 * lam <= 2 * STEP_SAFETY * (1 + 1e-12))


@pytest.mark.parametrize("scheme", ["displacement", "force", "energy"])
def test_convergence_schemes_with_limited_steps(fan, scheme):
    from tests.helpers.tube_rig import pose

    _, posed = pose(fan, bend=0.6, twist=0.3)
    d = fan_deformer(fan, SpringParams(convergence=scheme, max_iterations=2000, force_tol=2e-3, energy_rtol=1e-6))
    assert np.any(d.step_sizes() < d.params.dt)
    x, st = d.solve(posed)
    assert st.converged and st.reason == scheme and 0 < st.iterations < 2000
    assert st.energy < st.initial_energy
    if scheme == "force":
        assert st.max_force < 2e-3
    if scheme == "displacement":
        assert st.max_displacement < d.displacement_threshold


def test_divergence_detection_still_works_with_limited_steps(tube):
    posed = tube.pose([0, 0, 1], 120)
    d = tube.deformer(dt=5.0, divergence_rel=1e-4)  # any step longer than 1e-4 x diagonal counts as divergence
    with pytest.warns(RuntimeWarning, match="diverged at iteration 1"):
        x, st = d.solve(posed)
    assert st.diverged and st.iterations == 0
    np.testing.assert_allclose(x, d.rigid(d.frame(posed)), atol=1e-6)


def test_gpu_vertex_records_carry_the_lambda_coefficients(fan):
    from engine.skinning.gpu import layouts as L
    from engine.skinning.gpu.spring import rest_arrays

    _, vstatic = rest_arrays(fan.topology, fan.binding, fan.bind_joints)
    rec = np.ascontiguousarray(vstatic).view(L.SPRING_VERTEX.dtype).reshape(-1)
    d = fan_deformer(fan, SpringParams())
    np.testing.assert_allclose(rec["sdir"][:, 3], d.rest.r, rtol=1e-6)
    np.testing.assert_allclose(rec["rest"][:, 1], d.rest.s_floor, rtol=1e-6)
    for p in (SpringParams(), SpringParams(k_s=2.0, use_t=False, k_r=0.0), only("l", k_l=3.0)):
        k = np.array([sum(p.stiffness(n) for n in group) for group in LAMBDA_COLUMNS])
        # the volume and differential terms' coefficients are constants the shader adds: where the point's region
        # takes part, and times the point's share (SpringVertex.diff0.w)
        volume = p.stiffness("k_v") * VOLUME_LAMBDA * (d.rest.vol_region >= 0)
        diff = p.stiffness("k_d") * DIFF_LAMBDA * rec["diff0"][:, 3].astype(np.float64)
        np.testing.assert_allclose(rec["lam"].astype(np.float64) @ k + volume + diff, lambda_per_vertex(d.rest, p),
                                   rtol=1e-6)


# ----------------------------------------------------------------------------------------------------------
# modes and initial skinning


def test_dependent_mode_starts_from_last_output(tube):
    posed = tube.pose([0, 0, 1], 90)
    d = tube.deformer(mode="dependent", max_iterations=3000)
    x1, s1 = d.solve(posed)
    x2, s2 = d.solve(posed)  # same pose: already at equilibrium
    assert s2.iterations < s1.iterations / 5
    np.testing.assert_allclose(x2, x1, atol=5e-3)
    # a whole-skeleton rotation moves last frame's output rigidly before iterating
    m = np.eye(4)
    m[:3, :3] = rot([0, 1, 0], 30)
    fr = d.frame(m @ posed.astype(np.float64))
    x_init = d.initial_positions(m @ posed.astype(np.float64), fr)
    np.testing.assert_allclose(x_init, x2 @ m[:3, :3].T, atol=1e-5)
    d.reset()
    assert d.state.positions is None


def test_blend_initialisation_needs_a_skinner(tube):
    d = SpringDeformer(tube.topo, tube.binding, tube.joints, tube.parents, SpringParams(initial_skinning="lbs"))
    with pytest.raises(ValueError, match="initial_skinning = 'lbs' needs a skinner"):
        d.solve(tube.pose([0, 0, 1], 45))
    d = tube.deformer(initial_skinning="dqs", convergence="iterations", max_iterations=1)
    posed = tube.pose([0, 0, 1], 45)
    fr = d.frame(posed)
    np.testing.assert_allclose(d.initial_positions(posed, fr), tube.blend("dqs", posed), atol=1e-5)


# ----------------------------------------------------------------------------------------------------------
# the research's headline behaviour on the two-bone tube


def test_twist_180_keeps_radius_and_spreads_the_twist(tube):
    posed = tube.pose([1, 0, 0], 180)
    x, st = tube.deformer(max_iterations=3000).solve(posed)
    assert st.converged and not st.diverged
    r = tube.radial(x)
    assert r.min() > 0.8 * RADIUS  # no candy wrapper
    assert tube.radial(tube.blend("lbs", posed)).min() < 0.05 * RADIUS  # LBS collapses
    # the twist is spread over many rings: ring-wise rotation angles change gradually from 0 to 180 degrees
    ang = np.degrees(np.arctan2(x[:, 2], x[:, 1]) - np.arctan2(tube.x0[:, 2], tube.x0[:, 1])) % 360
    per_ring = np.array([np.median(ang[tube.ring == k]) for k in range(N_RINGS)])
    turned = np.where(per_ring > 180 + 1e-6, per_ring - 360, per_ring)  # bone 0 side turns backwards
    twist = np.abs(turned - turned[0])
    assert twist[-1] == pytest.approx(180, abs=3)
    steps = np.abs(np.diff(twist))
    assert steps.max() < 60  # rigid skinning puts all 180 degrees between two rings
    assert np.count_nonzero((twist > 10) & (twist < 170)) >= 8


@pytest.mark.parametrize("deg", [90, 135])
def test_bend_loses_less_volume_than_lbs(tube, deg):
    posed = tube.pose([0, 0, 1], deg)
    x, st = tube.deformer(max_iterations=3000).solve(posed)
    assert st.converged
    v_spring = tube.volume(x) / tube.bind_volume
    v_lbs = tube.volume(tube.blend("lbs", posed)) / tube.bind_volume
    assert v_lbs < 0.97
    assert abs(1 - v_spring) < abs(1 - v_lbs)


def test_initial_skinnings_reach_the_same_equilibrium(tube):
    posed = tube.pose([0, 0, 1], 90)
    out = {}
    for method in ("rigid", "lbs", "dqs"):
        out[method], st = tube.deformer(initial_skinning=method, max_iterations=3000).solve(posed)
        assert st.converged
    start_gap = np.abs(tube.blend("lbs", posed) - tube.deformer().rigid(tube.deformer().frame(posed))).max()
    for method in ("lbs", "dqs"):
        gap = np.abs(out[method] - out["rigid"]).max()
        assert gap < 0.05 * RADIUS and gap < 0.25 * start_gap


# ----------------------------------------------------------------------------------------------------------
# joint blending


def test_joint_blend_turns_both_sides_of_a_half_turn_the_same_way():
    eye, half = np.eye(3)[None], rot([1, 0, 0], 180)[None]
    w = np.array([0.5])
    # bone 0 (lower index) sees bone 1 across the joint and the other way round: one frame at the joint
    from_low = blend_rotations(eye, half, w, np.array([True]))[0]
    from_high = blend_rotations(half, eye, w, np.array([False]))[0] @ half[0]
    np.testing.assert_allclose(from_low, from_high, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.trace(from_low)), 1.0, atol=1e-12)  # a quarter turn about x
    # away from a half turn it is the share of other own^T, from either side
    other = rot([0.3, 1, 0.2], 100)[None]
    for w_own in (0.5, 0.8):
        share = blend_rotations(eye, other, np.array([w_own]), np.array([False]))[0]
        np.testing.assert_allclose(share, rot([0.3, 1, 0.2], 100 * (1 - w_own)), atol=1e-12)
        np.testing.assert_allclose(blend_rotations(eye, other, np.array([w_own]), np.array([True]))[0], share,
                                   atol=1e-12)


def test_joint_blend_keeps_the_inner_side_of_a_180_deg_bend_unfolded():
    """The blended frames turn slower than 1 / r (JOINT_BLEND): along the inner side of even a 180 deg bend
    the rigid start moves forward in every vertex's own frame (1 - phi' r > 0), where per-bone frames fold."""
    from engine.assets.gen.family import TubePose, tube_member
    from engine.skinning.family import MemberRig

    m = tube_member("long", radius=0.2, length=4.0, rings=81, segments=16)
    rig = MemberRig(m)
    posed = m.posed_joints(TubePose("bend180", bend=180.0))
    inner = np.nonzero(np.isclose(m.positions[:, 1], m.radius, atol=1e-6))[0]  # bend about +z: +y is inside
    inner = inner[np.argsort(m.positions[inner, 0])]
    for blend, folds in ((True, False), (False, True)):
        d = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, SpringParams(joint_blend=blend))
        fr = d.frame(posed)
        x = d.rigid(fr)
        ahead = np.einsum("vi,vi->v", x[inner[1:]] - x[inner[:-1]], fr.rot[inner[:-1], :, 0])
        assert bool((ahead <= 0).any()) == folds, blend


def test_joint_blend_leaves_separate_pieces_on_one_bone_rigid():
    """A limb of two separate shells, each bound to its own bone (a rigid-panel rig): no piece spans the elbow,
    so nothing is blended and the springs keep both pieces rigid, as LBS does; a single tube over the same
    bones blends near the elbow."""
    from engine.assets.gen.family import tube_grid

    pa, ta = tube_grid(0.3, 1.7, 18, 16)
    pb, tb = tube_grid(0.27, 1.7, 18, 16)
    pb[:, 0] += 2.2
    pos = np.concatenate([pa, pb]).astype(np.float32)
    topo = prepare_mesh(pos, np.concatenate([ta, tb + len(pa)]).astype(np.int32))
    joints = np.tile(np.eye(4), (2, 1, 1))
    joints[1, 0, 3] = 2.0
    parents = np.array([-1, 0], np.int32)
    binding = bind(topo, joints.astype(np.float32), parents)
    piece = np.repeat([0, 1], [len(pa), len(pb)])
    assert np.array_equal(binding.bone, piece)  # each shell on its own bone
    d = SpringDeformer(topo, binding, joints, parents, SpringParams())
    assert np.all(d.rest.blend_other < 0) and np.all(d.rest.blend_w == 1.0)
    posed = joints.copy()
    posed[1, :3, :3] = rot([0, 0, 1], 110)
    x, _ = d.solve(posed)
    rigid = np.where((piece == 0)[:, None], pos, (pos - joints[1, :3, 3]) @ posed[1, :3, :3].T + joints[1, :3, 3])
    np.testing.assert_allclose(x, rigid, atol=1e-5)
    # one piece over the same bones: the points near the elbow blend
    ps, ts = tube_grid(0.3, 4.0, 41, 16)
    one = prepare_mesh(ps.astype(np.float32), ts)
    d1 = SpringDeformer(one, bind(one, joints.astype(np.float32), parents), joints, parents, SpringParams())
    assert np.count_nonzero(d1.rest.blend_other >= 0) > 0
