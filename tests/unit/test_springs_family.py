"""Issue 13's claims for the spring deformer, measured on the seeded family of generated tubes
(engine.assets.gen.family: 12 members varying radius, length, rings, segments, elbow position and 2-3 bones)
against glTF-weight LBS and DQS, with the default parameters (50 iterations at most) and the default binding.

The module fixture builds the table once and prints it (``pytest -s`` shows it); each test asserts one claim
over every member and pose it applies to, naming the rows that break it. Claims that do not hold with the
defaults are not asserted here (see the module docstring of engine.skinning.springs and the README's deformer
section): the share of edges strained by more than 30 % at bends past 90 deg (the inner side of a bend is
compressed more than LBS's).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from engine.assets.gen.family import tube_family, tube_poses
from engine.skinning.family import CONTACT_METHOD, METHODS, MemberRig, family_table, format_family_table
from engine.skinning.springs import INITIAL_SKINNING, SpringParams

POSES = ("bend0", "bend67.5", "bend90", "bend135", "bend150", "twist90", "twist180", "bend90+twist90", "stretch1.3")
CREASE_SLACK = 0.5  # deg: the tubes' own facet angle moves by a fraction of a degree when the springs settle


@pytest.fixture(scope="module")
def family():
    return tube_family(12)


@pytest.fixture(scope="module")
def table(family):
    poses = [p for p in tube_poses() if p.name in POSES]
    rows = family_table(family, poses, METHODS + (CONTACT_METHOD,))
    print("\n" + format_family_table(rows))
    return {(r["member"], r["pose"], r["method"]): r for r in rows}


SPRINGS = ("springs", CONTACT_METHOD)
"""The spring deformer without and with its contact term (SpringParams.contact): every claim holds for both."""


def _cases(table, poses=None, method="springs"):
    """(member, pose, lbs row, dqs row, `method` row) for every member and pose (of `poses`, a predicate)."""
    keys = dict.fromkeys((m, p) for m, p, _ in table)
    return [(m, p, table[m, p, "lbs"], table[m, p, "dqs"], table[m, p, method])
            for m, p in keys if poses is None or poses(p)]


def _twists(p: str) -> bool:
    return "twist" in p


def test_the_family_is_varied_and_seeded(family):
    assert len(family) >= 12
    assert len({(m.radius, m.length, m.rings, m.segments) for m in family}) == len(family)
    assert {len(m.elbows) + 1 for m in family} == {2, 3}
    again = tube_family(12)
    assert all(np.array_equal(a.positions, b.positions) for a, b in zip(family, again))


def test_bind_pose_is_a_fixed_point(family):
    pose = next(p for p in tube_poses() if p.name == "bend0")
    for m in family[:4]:
        rig = MemberRig(m)
        x = rig.deform(pose, "springs")
        diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
        assert np.abs(x - rig.bind_positions).max() < 1e-6 * diag, m.name


@pytest.mark.parametrize("method", SPRINGS)
def test_no_intersection_where_lbs_has_none_and_never_more_than_lbs(table, method):
    cases = functools.partial(_cases, method=method)
    bad = [(m, p, s["intersecting_pairs"], lb["intersecting_pairs"]) for m, p, lb, _, s in cases(table)
           if s["intersecting_pairs"] > lb["intersecting_pairs"]]
    assert not bad
    # the folds of issue 13 are gone: up to 90 deg no member intersects itself at all
    assert all(s["intersecting_pairs"] == 0 for _, p, _, _, s in cases(table, lambda p: p in POSES[:3]))


@pytest.mark.parametrize("method", SPRINGS)
def test_crease_never_exceeds_lbs(table, method):
    cases = functools.partial(_cases, method=method)
    bad = [(m, p, round(s["crease_max"], 1), round(lb["crease_max"], 1)) for m, p, lb, _, s in cases(table)
           if s["crease_max"] > lb["crease_max"] + CREASE_SLACK]
    assert not bad


@pytest.mark.parametrize("method", SPRINGS)
def test_dihedral_changes_at_most_lbs(table, method):
    cases = functools.partial(_cases, method=method)
    bad = [(m, p) for m, p, lb, _, s in cases(table) if s["dihedral_change_45"] > lb["dihedral_change_45"]]
    assert not bad


@pytest.mark.parametrize("method", SPRINGS)
def test_twist_is_spread_at_most_as_steeply_as_dqs_and_reaches_the_tip(table, method):
    cases = functools.partial(_cases, method=method)
    bad = [(m, p, round(s["twist_step_max"], 1), round(d["twist_step_max"], 1))
           for m, p, _, d, s in cases(table, _twists) if s["twist_step_max"] > d["twist_step_max"]]
    assert not bad
    twists = {p.name: p.twist for p in tube_poses()}
    short = [(m, p, round(s["twist_tip"], 1)) for m, p, _, _, s in cases(table, lambda p: p.startswith("twist"))
             if abs(s["twist_tip"] - twists[p]) > 2.0]
    assert not short


@pytest.mark.parametrize("method", SPRINGS)
def test_no_collapse_under_twist_and_stretch_and_rings_stay_round(table, method):
    cases = functools.partial(_cases, method=method)
    thin = [(m, p, round(s["radius_min"], 3)) for m, p, _, _, s in
            cases(table, lambda p: p.startswith(("twist", "stretch"))) if s["radius_min"] < 0.9]
    assert not thin
    # LBS collapses the 180 deg twist on the thick tubes; the springs keep the radius there
    assert any(lb["radius_min"] < 0.5 for _, p, lb, _, _ in cases(table, lambda p: p == "twist180"))
    oval = [(m, round(s["ring_spread"], 4)) for m, _, _, _, s in cases(table, lambda p: p.startswith("stretch"))
            if s["ring_spread"] > 0.01]
    assert not oval


@pytest.mark.parametrize("method", SPRINGS)
def test_volume_within_three_percent_at_every_bend_and_twist(table, method):
    """The volume term (SpringParams.k_v) keeps every bone region's skeleton-relative volume: within 3 % of bind
    at every bend up to 150 deg, every twist and bend + twist (LBS loses up to 8 %, the springs without the term
    up to 7 %); the stretch lengthens the bones, so its volume grows, as LBS's and DQS's do. With the contact
    term too (issue 26 item 3): its passes flatten the inner sides of a 150 deg bend (0.924 of the volume before
    the restore), and its volume restore gives that volume back on the flanks."""
    cases = functools.partial(_cases, method=method)
    bad = [(m, p, round(s["volume_ratio"], 3)) for m, p, _, _, s in cases(table, lambda p: p != "stretch1.3")
           if abs(s["volume_ratio"] - 1.0) > 0.03]
    assert not bad
    assert any(lb["volume_ratio"] < 0.93 for _, p, lb, _, _ in cases(table, lambda p: p == "bend150"))


@pytest.mark.parametrize("pose", ["bend135", "bend150"])
def test_contact_leaves_no_intersection_at_deep_bends_and_changes_nothing_where_nothing_meets(table, pose):
    """Issue 13 item 4 and issue 26 item 3: with the contact term every member is free of self-intersection at
    135 and 150 deg bends (where LBS, DQS and the plain springs are not all), and wherever the plain springs have
    no intersecting pairs and no facing sheets the contact term leaves the result as it was."""
    deep = _cases(table, lambda p: p == pose, method=CONTACT_METHOD)
    assert [(m, c["intersecting_pairs"]) for m, _, _, _, c in deep if c["intersecting_pairs"]] == []
    assert any(lb["intersecting_pairs"] > 0 for _, _, lb, _, _ in deep)
    assert any(s["intersecting_pairs"] > 0 for _, _, _, _, s in _cases(table, lambda p: p == pose))
    for m, p, _, _, s in _cases(table, lambda p: p in POSES[:3] + ("twist90", "stretch1.3")):
        c = table[m, p, CONTACT_METHOD]
        assert c["crease_max"] == s["crease_max"] and c["volume_ratio"] == s["volume_ratio"], (m, p)


@pytest.mark.parametrize("shape", [dict(radius=50.0, length=400.0), dict(radius=1.2, length=12.0),
                                   dict(radius=0.1, length=4.0, rings=61, segments=12)],
                         ids=["scaled100x", "thick", "thin"])
def test_contact_at_150_deg_on_scaled_thick_and_thin_tubes(shape):
    """Nothing in the contact term is tuned to the family: issue 13's tube scaled 100x deforms to 100x the
    original's result, and a thick and a thin tube at 150 deg end free of self-intersection with their volume
    within 3 % (the springs alone cross on all three)."""
    from engine.assets.gen.family import tube_member

    pose = next(p for p in tube_poses() if p.name == "bend150")
    rig = MemberRig(tube_member("shape", **shape))
    plain = rig.measure(rig.deform(pose, "springs"), pose)
    x = rig.deform(pose, CONTACT_METHOD)
    got = rig.measure(x, pose)
    assert plain["intersecting_pairs"] > 0
    assert got["intersecting_pairs"] == 0 and abs(got["volume_ratio"] - 1.0) <= 0.03, got
    if shape["radius"] == 50.0:
        ref = MemberRig(tube_member("unit", radius=0.5, length=4.0)).deform(pose, CONTACT_METHOD)
        diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
        assert np.abs(x - 100.0 * ref).max() < 1e-6 * diag


def test_contact_keeps_the_bind_pose_a_fixed_point(family):
    pose = next(p for p in tube_poses() if p.name == "bend0")
    for m in family[:4]:
        rig = MemberRig(m)
        x = rig.deform(pose, CONTACT_METHOD)
        diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
        assert np.abs(x - rig.bind_positions).max() < 1e-6 * diag, m.name


def test_default_start_lands_on_the_settled_equilibrium(family):
    """50 default iterations (damped semi-implicit steps) end within 1e-3 of the diagonal of the equilibrium
    that 1000 iterations settle on."""
    poses = {p.name: p for p in tube_poses()}
    for m in (family[0], family[2], family[4]):
        rig = MemberRig(m)
        diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
        for name in ("bend135", "twist135"):
            x = rig.deform(poses[name], "springs")
            settled = rig.deform(poses[name], "springs", SpringParams(max_iterations=1000, displacement_rel=1e-7))
            assert np.abs(x - settled).max() < 1e-3 * diag, (m.name, name)


def test_same_equilibrium_from_rigid_lbs_and_dqs_starts_with_the_defaults(family):
    """Issue 13 item 3 (research Fig. 19b): with the default parameters (50 iterations at most) the rigid, LBS and
    DQS initial skinnings end on the same equilibrium within 1 % of the diagonal, on every member."""
    poses = {p.name: p for p in tube_poses()}
    gaps = {}
    for m in family:
        rig = MemberRig(m)
        diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
        for name in ("bend90", "bend135", "twist180", "bend90+twist90"):
            out = {s: rig.deform(poses[name], "springs", SpringParams(initial_skinning=s)) for s in INITIAL_SKINNING}
            gaps[m.name, name] = max(np.abs(out[s] - out["rigid"]).max() for s in ("lbs", "dqs")) / diag
    assert max(gaps.values()) < 0.01, max(gaps.items(), key=lambda kv: kv[1])


def test_the_research_update_needs_more_than_50_iterations_for_that(family):
    """Why the default is not the research's explicit dt = 1/30: its 50 iterations leave the starts apart."""
    pose = next(p for p in tube_poses() if p.name == "bend135")
    rig = MemberRig(family[0])
    diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
    out = {s: rig.deform(pose, "springs", SpringParams(integrator="explicit", dt=1.0 / 30.0, initial_skinning=s))
           for s in ("rigid", "lbs")}
    assert np.abs(out["lbs"] - out["rigid"]).max() > 0.01 * diag


# ----------------------------------------------------------------------------------------------------------
# multi-part limbs: rigid panels and overlapping open shells with rims (engine.assets.gen.family.parts_limb)


def _parts(kind: str, elbow: float, wrist: float) -> dict:
    from engine.assets.gen.family import parts_limb
    from engine.skinning.binding import bind
    from engine.skinning.meshprep import prepare_mesh
    from engine.skinning.metrics import deformation_metrics
    from engine.skinning.skinning import lbs
    from engine.skinning.springs import SpringDeformer

    limb = parts_limb(kind)
    topo = prepare_mesh(limb.positions, limb.triangles)
    binding = bind(topo, limb.bind_joints.astype(np.float32), limb.parents)
    posed = limb.posed_joints(elbow, wrist)
    skin = (posed @ np.linalg.inv(limb.bind_joints)).astype(np.float32)
    x0 = limb.positions.astype(np.float64)
    out = {"lbs": np.asarray(lbs(limb.positions, limb.joints, limb.weights, skin), np.float64),
           "springs": np.asarray(SpringDeformer(topo, binding, limb.bind_joints, limb.parents).solve(posed)[0],
                                 np.float64)}
    return {k: (x, deformation_metrics(x, x0, topo.triangles, boundary=limb.rim)) for k, x in out.items()}


@pytest.mark.parametrize("elbow,wrist", [(110.0, 0.0), (90.0, 45.0)])
def test_rigid_panels_stay_rigid(elbow, wrist):
    """Every panel is weighted to one joint and bound to one bone: the springs move it as LBS does."""
    res = _parts("panels", elbow, wrist)
    (x_l, _), (x_s, m_s) = res["lbs"], res["springs"]
    assert m_s["strain_30"] == 0.0 and m_s["dihedral_change_45"] == 0.0
    np.testing.assert_allclose(x_s, x_l, atol=1e-5)


@pytest.mark.parametrize("elbow,wrist", [(110.0, 0.0), (90.0, 45.0)])
def test_open_shells_keep_their_rims_and_crease_less_than_lbs(elbow, wrist):
    """Shells overlapping across the joints: fewer strained and re-angled edges than LBS, rims rougher than
    bind by less than LBS's. (Not asserted: the layers are solved independently, so where a sleeve overlaps the
    next shell they can cross each other where LBS, one space warp for both, keeps them nested.)"""
    res = _parts("shells", elbow, wrist)
    m_l, m_s = res["lbs"][1], res["springs"][1]
    for key in ("strain_30", "dihedral_change_45", "roughness", "roughness_rim", "crease_max"):
        assert m_s[key] <= m_l[key], (key, m_s[key], m_l[key])


# ----------------------------------------------------------------------------------------------------------
# the volume term (SpringParams.k_v): what holds the volume claim above


def test_region_volumes_sum_a_closed_mesh_exactly_when_the_attachments_meet():
    """Each face is counted once per corner (slot_third_corners), so with every attachment at one point the
    region's volume is the enclosed volume (a cube of side 2: 8), whatever the winding of the cube's faces."""
    from types import SimpleNamespace

    from engine.skinning.meshprep import prepare_mesh
    from engine.skinning.springs import csr_slots, fan_volumes, slot_third_corners

    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tri = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])
    topo = prepare_mesh(corners.astype(np.float32), tri.astype(np.int32))
    rows, cols = csr_slots(topo.adj_offset, topo.adj_count, topo.adj_index)
    third = slot_third_corners(topo, rows, cols)
    assert (third >= 0).sum() == 3 * tri.shape[0]  # every face once per corner
    rest = SimpleNamespace(rows=rows, cols=cols, vol_third=third)
    x = np.asarray(topo.positions, np.float64)
    for centre in ((0.0, 0.0, 0.0), (0.3, -0.2, 0.5)):
        v, _ = fan_volumes(x, np.tile(centre, (8, 1)), rest)
        assert abs(abs(v.sum()) - 8.0) < 1e-12


def test_without_the_volume_term_the_bends_lose_volume(family):
    """The same member and pose with k_v = 0: the springs alone keep 0.93-0.97 at 150 deg (what the term fixes)."""
    pose = next(p for p in tube_poses() if p.name == "bend150")
    rig = MemberRig(family[0])
    off = rig.measure(rig.deform(pose, "springs", SpringParams(k_v=0.0)), pose)["volume_ratio"]
    on = rig.measure(rig.deform(pose, "springs"), pose)["volume_ratio"]
    assert off < 0.975 and on > 0.98, (off, on)


def test_an_edit_switches_the_volume_term_off_in_its_regions_only(family):
    from engine.skinning.edits import EditStack, SurfaceEdit
    from engine.skinning.springs import SpringDeformer, volume_points

    rig = MemberRig(family[0])
    m = rig.member
    d = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, SpringParams())
    fr = d.frame(m.posed_joints(next(p for p in tube_poses() if p.name == "bend90")))
    region = d.rest.vol_region
    assert set(np.unique(region[region >= 0])) == {0, 1}  # both bones take part
    kin = np.flatnonzero(region == 1)[:4]
    terms = EditStack([SurfaceEdit.from_world(kin, d.rigid(fr)[kin] + 0.01, fr.attach, fr.rot)]).terms(
        rig.topology.n_control, fr.attach, fr.rot)
    on = volume_points(d.rest, d.params, terms)
    assert np.all(on[region == 0]) and not np.any(on[region == 1])
    assert np.all(volume_points(d.rest, d.params, None)[region >= 0])
