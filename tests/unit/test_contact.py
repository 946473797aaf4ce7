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
