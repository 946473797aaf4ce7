"""The spring deformer's contact term (engine.skinning.contact): parameters and their ranges, the config switch,
two crossing sheets pushed apart symmetrically, the smoothing of the pushes, and fixed points (bind pose, poses
where nothing meets)."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning.config import loads_config
from engine.skinning.contact import (
    CONTACT_MAX_PASSES,
    contact_pairs,
    contact_rest,
    mean_edge_length,
    resolve_contacts,
    smooth_pushes,
)
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.springs import SpringParams

N = 9  # points per side of a sheet


def _sheet(z: float, flip: bool) -> tuple[np.ndarray, np.ndarray]:
    u = np.linspace(-1.0, 1.0, N)
    xx, yy = np.meshgrid(u, u, indexing="ij")
    pos = np.stack([xx.ravel(), yy.ravel(), np.full(N * N, z)], 1)
    k = np.arange(N - 1)
    a = (k[:, None] * N + k[None, :]).ravel()
    tri = np.concatenate([np.stack([a, a + N, a + N + 1], 1), np.stack([a, a + N + 1, a + 1], 1)])
    return pos, (tri[:, ::-1] if flip else tri)


@pytest.fixture(scope="module")
def sheets():
    """Two 9 x 9 sheets 5 apart at bind (separate pieces), and a pose where the upper one went 0.2 through the
    lower: attachments 1 below the lower sheet and 1 above the upper one (they face each other)."""
    pa, ta = _sheet(0.0, False)
    pb, tb = _sheet(5.0, True)
    topo = prepare_mesh(np.concatenate([pa, pb]).astype(np.float32), np.concatenate([ta, tb + N * N]))
    x = np.concatenate([pa, pb - [0.0, 0.0, 5.2]])
    attach = x + np.where(np.arange(2 * N * N)[:, None] < N * N, [0.0, 0.0, -1.0], [0.0, 0.0, 1.0])
    return topo, x, attach


@pytest.mark.parametrize("change", [dict(contact_thickness=0.0), dict(contact_thickness=2.5),
                                    dict(contact_passes=0), dict(contact_passes=CONTACT_MAX_PASSES + 1),
                                    dict(contact_passes=1.5), dict(contact="yes")])
def test_contact_parameters_are_validated(change):
    name = next(iter(change))
    with pytest.raises(ValueError, match=f"SpringParams.{name}"):
        SpringParams(**change).validate()


def test_contact_is_off_by_default_and_switched_on_in_the_config():
    assert SpringParams().contact is False
    cfg = loads_config("[spring]\ncontact = true\ncontact_thickness = 0.75\ncontact_passes = 4\n")
    assert (cfg.spring.contact, cfg.spring.contact_thickness, cfg.spring.contact_passes) == (True, 0.75, 4)
    assert loads_config(cfg.to_toml()).spring == cfg.spring
    with pytest.raises(ValueError, match="spring.contact_passes"):
        loads_config("[spring]\ncontact_passes = 100\n")


def test_contact_rest_lengths_follow_the_mesh(sheets):
    topo, _, _ = sheets
    e = mean_edge_length(topo)
    rest = contact_rest(topo, 0.5, 8)
    assert rest.thickness == pytest.approx(0.5 * e) and rest.reach > rest.thickness + rest.lateral - 1e-12
    big = prepare_mesh(np.asarray(topo.positions) * 10.0, topo.triangles)
    assert contact_rest(big, 0.5, 8).thickness == pytest.approx(5.0 * e)  # scale-free
    with pytest.raises(ValueError, match="thickness"):
        contact_rest(topo, 0.0, 8)
    with pytest.raises(ValueError, match="passes"):
        contact_rest(topo, 0.5, 0)


def test_crossing_sheets_are_pushed_apart_symmetrically(sheets):
    topo, x, attach = sheets
    rest = contact_rest(topo, 0.5, 8)
    pr, w, _ = contact_pairs(x, attach, rest)
    assert pr.shape[0] > 0 and np.all(w > 0)
    y, moved = resolve_contacts(x, attach, rest)
    assert moved > 0
    lower, upper = y[: N * N], y[N * N:]
    centre = np.abs(x[: N * N, :2]).max(1) < 0.5
    gap = upper[centre, 2] - lower[centre, 2]
    assert gap.min() > 0.9 * rest.thickness  # the upper sheet is back above the lower one, a thickness apart
    # each pair pushes both points by opposite amounts: the sheets' mean height stays where it was
    assert (upper[:, 2].mean() + lower[:, 2].mean()) == pytest.approx(x[N * N:, 2].mean() + x[: N * N, 2].mean(),
                                                                     abs=1e-9)
    np.testing.assert_array_equal(y[:, :2], x[:, :2])  # pushed along the separating direction only


def test_bind_pose_and_poses_where_nothing_meets_are_fixed_points(sheets):
    topo, x, attach = sheets
    rest = contact_rest(topo, 0.5, 8)
    bind = np.asarray(topo.positions, np.float64)
    up = np.where(np.arange(2 * N * N)[:, None] < N * N, [0.0, 0.0, -1.0], [0.0, 0.0, 1.0])
    y, moved = resolve_contacts(bind, bind + up, rest)
    assert moved == 0 and np.array_equal(y, bind)
    apart = x + np.where(np.arange(2 * N * N)[:, None] < N * N, 0.0, [0.0, 0.0, 1.0])  # 0.8 apart: no contact
    y, moved = resolve_contacts(apart, apart + up, rest)
    assert moved == 0 and np.array_equal(y, apart)


def test_smoothing_spreads_a_lone_push_over_its_neighbours(sheets):
    topo, _, _ = sheets
    push = np.zeros((2 * N * N, 3))
    mid = (N // 2) * N + N // 2
    push[mid] = [0.0, 0.0, 1.0]
    out = smooth_pushes(push, topo.edges)
    nbrs = np.unique(np.asarray(topo.edges)[(np.asarray(topo.edges) == mid).any(1)])
    nbrs = nbrs[nbrs != mid]
    assert out[mid, 2] == 0.0 and np.all(out[nbrs, 2] > 0.0)
    assert np.count_nonzero(out[:, 2]) == nbrs.size


# ----------------------------------------------------------------------------------------------------------
# the volume restore (restore_volume): the volume the passes took comes back on the points that face nothing


@pytest.fixture(scope="module")
def tube():
    """A closed-volume test piece: issue 13's tube shape, small (21 rings of 16), attachments on its axis."""
    from engine.assets.gen.family import tube_member

    m = tube_member("restore", radius=0.5, length=4.0, rings=21, segments=16)
    topo = prepare_mesh(m.positions, m.triangles)
    x = np.asarray(topo.positions, np.float64)
    attach = x * [1.0, 0.0, 0.0]
    return m, topo, x, attach


def _dented(tube, depth: float):
    """The tube with the points of its +y side near the middle pushed in by `depth` x the radius."""
    m, topo, x, attach = tube
    n = (x - attach) / np.linalg.norm(x - attach, axis=1)[:, None]
    patch = (np.abs(x[:, 0] - 2.0) < 0.6) & (n[:, 1] > 0.7)
    dent = np.where(patch[:, None], -depth * m.radius * n, 0.0)
    return dent, n, patch


def test_restore_gives_the_dent_volume_back_on_the_other_points(tube):
    from engine.skinning.contact import restore_volume
    from engine.skinning.metrics import volume

    m, topo, x, attach = tube
    rest = contact_rest(topo, 0.5, 8)
    dent, n, patch = _dented(tube, 0.2)
    off = restore_volume(dent, x + dent, attach, rest)
    # first order: the area-weighted normal offsets cancel the dent's exactly
    taken = np.sum(rest.area * np.einsum("ij,ij->i", dent, n))
    given = np.sum(rest.area * np.einsum("ij,ij->i", off, n))
    assert taken < 0.0 and given == pytest.approx(-taken, rel=1e-9)
    # outward only, nothing on the dent itself, spread: under half the dent's depth, on more points than the dent
    along = np.einsum("ij,ij->i", off, n)
    assert along.min() >= 0.0 and np.all(along[patch] == 0.0)
    assert along.max() < 0.5 * np.abs(dent).max() and np.count_nonzero(along > 1e-6) > 3 * np.count_nonzero(patch)

    def vol(y):
        return volume(m.closed_positions(y), m.closed_triangles)

    v0 = vol(x)
    assert vol(x + dent) < 0.985 * v0  # the dent alone loses volume
    assert abs(vol(x + dent + off) / v0 - 1.0) < 0.003  # given back (to the second order)


def test_restore_of_no_dent_is_exactly_nothing(tube):
    from engine.skinning.contact import restore_volume

    _, topo, x, attach = tube
    rest = contact_rest(topo, 0.5, 8)
    assert np.array_equal(restore_volume(np.zeros_like(x), x, attach, rest), np.zeros_like(x))


def test_restore_skips_points_that_face_another_sheet(sheets):
    """The crossing sheets: after the passes every point of the two facing patches faces the other sheet; the
    restore puts its volume on the sheets' far rims only (points further than reach from the other sheet)."""
    from engine.skinning.contact import facing_share, restore_volume

    topo, x, attach = sheets
    rest = contact_rest(topo, 0.5, 8)
    y, moved = resolve_contacts(x, attach, rest)
    assert moved > 0
    # resolve_contacts ends with the restore: the passes alone are the same loop without it
    from engine.skinning.contact import contact_pass

    z = x.copy()
    for k in range(2 * rest.passes):
        z, found = contact_pass(z, attach, rest, smooth=k < rest.passes)
        if found == 0:
            break
    off = y - z
    np.testing.assert_allclose(off, restore_volume(z - x, z, attach, rest), atol=1e-12)
    facing = facing_share(z, attach, rest)
    assert np.all(off[facing >= 1.0] == 0.0)
