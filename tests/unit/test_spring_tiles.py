"""The tiled spring iteration of the numpy reference (issue 24, step 5; engine.skinning.springs.tiles): the tile
partition, K = 1 equal to the untiled iteration bit for bit (tubes of tests/helpers/tube_rig.py and the
humanoid), and tiled and untiled iterations meeting at convergence (within 1e-4 of the bounding-box diagonal)
on the tubes with the explicit updates (plain and heavy ball) and the default semi-implicit one (its tiles'
boundary points at BOUNDARY_STEP of their step) at K = 5 and 10.

Not asserted (too slow for the suite, measured and quoted in docs/springs.md "Tiled iteration"): the humanoid at
K = 5 with the explicit update approaches the untiled result slowly (1.1e-3 of the diagonal after 100
iterations); with the semi-implicit update it does not converge yet.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from engine.gpu.layouts import LOCAL_SIZE
from engine.skinning.springs import SpringDeformer, SpringParams
from engine.skinning.springs.tiles import TILE_SIZE, locality_order, tile_ids, tile_stats
from tests.helpers.tube_rig import pose, tube

CONVERGED = 1e-4  # of the bounding-box diagonal


def _deformer(rig, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, SpringParams(**kw))


def _solve(d, posed, block=None):
    d.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return d.solve(posed, block=block)


@functools.cache
def _humanoid():
    from bench.bench_deform import _pose
    from tests.helpers.character_rig import load_character

    topo, binding, _, _, ib, parents, bj = load_character("humanoid")
    return topo, binding, bj, parents, _pose(bj, ib)[1]


TUBES = [(8, 6, 3), (16, 12, 4), (30, 16, 4)]  # rings, segments, joints: 48 .. 480 control points


def test_tile_size_is_the_work_group_size():
    assert TILE_SIZE == LOCAL_SIZE


@pytest.mark.parametrize("shape", TUBES, ids=str)
def test_tiles_partition_work_groups_by_region(shape):
    rig = tube(rings=shape[0], segments=shape[1], n_joints=shape[2])
    d = _deformer(rig)
    t = d.tiles
    n = rig.topology.n_control
    region = d.rest.vol_region
    assert t.shape == (n,) and np.array_equal(t, tile_ids(n, region))  # deterministic
    assert set(np.unique(t)) == set(range(int(t.max()) + 1))
    for k in np.unique(t):
        pts = np.flatnonzero(t == k)
        assert pts.size <= TILE_SIZE
        assert np.unique(pts // TILE_SIZE).size == 1  # one work group
        assert np.unique(region[pts]).size == 1  # one bone region
    # a work group with two regions holds two tiles
    assert len(np.unique(t)) == len({(i // TILE_SIZE, r) for i, r in enumerate(region)})
    n_tiles, outside = tile_stats(d.rest, t)
    assert n_tiles == int(t.max()) + 1 and 0.0 < outside < 1.0


@pytest.mark.parametrize("kw", [{}, dict(integrator="explicit"), dict(integrator="explicit", k_v=0.0),
                                dict(integrator="explicit", acceleration="momentum"), dict(k_d=5.0)], ids=str)
def test_block_one_is_the_untiled_iteration(kw):
    rig = tube(rings=16, segments=12, n_joints=4)
    d = _deformer(rig, convergence="iterations", max_iterations=30, **kw)
    posed = pose(rig, bend=0.9, twist=0.6)[1]
    ref, st = _solve(d, posed)
    x, st1 = _solve(d, posed, block=1)
    np.testing.assert_array_equal(x, ref)
    assert st1.iterations == st.iterations == 30


def test_block_one_is_the_untiled_iteration_on_the_humanoid():
    topo, binding, bj, parents, posed = _humanoid()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = SpringDeformer(topo, binding, bj, parents, SpringParams(convergence="iterations", max_iterations=3))
    np.testing.assert_array_equal(_solve(d, posed, block=1)[0], _solve(d, posed)[0])


# (tube, K, update): 500 iterations bring both within ~4e-5 of each other (the plain explicit update converges
# slower than the heavy ball; "semi": the default damped semi-implicit update, boundary points at half a step).
# Without the differential term: with its default k_d = 10 (share ~1 on these coarse tubes) the tiled iteration
# does not settle at K = 10 (30x16 tube: 0.07 % of the diagonal from the untiled result at 500 iterations, 1.1 % at
# 2000; docs/springs.md, tiled iteration), and the untiled one needs over 500 on the 8x6 tube.
CONVERGENCE = [(TUBES[0], 5, "momentum"), (TUBES[1], 5, "momentum"), (TUBES[1], 10, "momentum"),
               (TUBES[2], 5, "momentum"), (TUBES[1], 5, "none"), (TUBES[1], 5, "semi"), (TUBES[2], 10, "semi")]


@pytest.mark.parametrize(("shape", "block", "accel"), CONVERGENCE, ids=str)
def test_tiled_meets_untiled_at_convergence(shape, block, accel):
    rig = tube(rings=shape[0], segments=shape[1], n_joints=shape[2])
    update: dict = dict(k_d=0.0) if accel == "semi" else dict(integrator="explicit", acceleration=accel, k_d=0.0)
    d = _deformer(rig, convergence="iterations", max_iterations=500, **update)
    posed = pose(rig, bend=0.9, twist=0.6)[1]
    ref, _ = _solve(d, posed)
    x, st = _solve(d, posed, block=block)
    diag = d.bbox_diag
    assert np.abs(x - ref).max() < CONVERGED * diag
    # the tiled iteration is not the untiled one on the way there
    d.params = SpringParams(convergence="iterations", max_iterations=2 * block, **update)
    early, _ = _solve(d, posed)
    early_tiled, _ = _solve(d, posed, block=block)
    assert np.abs(early - early_tiled).max() > 1e-6 * diag


def test_tiled_displacement_scheme_stops_at_block_ends():
    rig = tube(rings=16, segments=12, n_joints=4)
    d = _deformer(rig, convergence="displacement", max_iterations=500, integrator="explicit",
                  acceleration="momentum")
    posed = pose(rig, bend=0.9, twist=0.6)[1]
    ref, st = _solve(d, posed)
    x, st5 = _solve(d, posed, block=5)
    assert st5.reason == "displacement" and st5.iterations % 5 == 0
    assert np.abs(x - ref).max() < 10 * d.displacement_threshold * max(st.iterations, 1) ** 0.5


@pytest.mark.parametrize("scheme", ["energy", "force"])
def test_block_needs_one_for_energy_and_force(scheme):
    rig = tube(rings=8, segments=6)
    d = _deformer(rig, convergence=scheme)
    with pytest.raises(ValueError, match=f"block = 5; valid: an integer >= 1, and 1 for the '{scheme}' scheme"):
        d.solve(pose(rig)[1], block=5)


def test_locality_order_keeps_more_neighbours_in_their_tile():
    rig = tube(rings=30, segments=16, n_joints=4)
    d = _deformer(rig)
    n, region = rig.topology.n_control, d.rest.vol_region
    order = locality_order(rig.topology.positions, region)
    assert np.array_equal(np.sort(order), np.arange(n))  # a permutation
    assert np.all(np.diff(region[order]) >= 0)  # region-major
    assert np.array_equal(order, locality_order(rig.topology.positions, region))
    tiles = tile_ids(n, region, order=order)
    assert np.bincount(tiles).max() <= TILE_SIZE
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    for k in np.unique(tiles):  # a tile: one work group of the new order, one region
        pts = np.flatnonzero(tiles == k)
        assert np.unique(rank[pts] // TILE_SIZE).size == 1 and np.unique(region[pts]).size == 1
    # far fewer neighbour slots cross tiles than in a scrambled order (the tube's own ring-major order is about
    # as good: 20 % against 24 %; on the box and the humanoid the order takes 45 % to 25 % and 29 %)
    scrambled = tile_stats(d.rest, tile_ids(n, region, order=np.random.default_rng(1).permutation(n)))[1]
    after = tile_stats(d.rest, tiles)[1]
    assert after < 0.5 * scrambled
