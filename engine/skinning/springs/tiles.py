"""Tiled iteration (issue 24, step 5): blocks of K Jacobi iterations in which each tile of control points sees its
own points' current values and its out-of-tile neighbours (the halo) frozen at the block start; what one GPU
dispatch of the tiled spring kernel (``spring_tiled.comp``) does with K iterations per dispatch.

* :func:`tile_ids` partitions the control points into tiles: a tile is the points of one work group (consecutive
  runs of ``TILE_SIZE`` points in control order, as the GPU lays an instance out) that share one bone region
  (``SpringRest.vol_region``; -1, the points outside every volume region, count as one region). A deterministic
  function of the mesh, at most ``TILE_SIZE`` points each.
* :class:`Halo` is what ``spring_forces`` needs to evaluate a block's iteration: the block-start positions and,
  per CSR slot, whether the neighbour (and the face's third corner) lies in the point's own tile.

The volume term's region sums in a block (K > 1; K = 1 is the untiled iteration with its one-iteration lag):
iteration n of block d (n = dK + m) uses, for a point of region r in tile t,

    V_r(n) ~ V_r(b) + N_r / n_t * sum over the tile's points i of (V_i(x_n) - V_i(x_b)),   b = max(d - 1, 0) K,

the exact region volume at the base state x_b (the previous block's start: dispatch d - 1 summed it from its own
input, and x_b still lies in the GPU's state ring) plus the tile's own change since then (its points' shares
with in-tile neighbours current and the halo frozen at the block start) scaled to the region (N_r points in the
region, n_t in the tile). Without the tile's change the feedback of the volume term lags by up to 2K - 1
iterations and oscillates (K = 5, 10 on the tubes); with it a tile feels its own volume change at once, exactly
so for the uniform breathing of a region that the term drives. At a fixed point the estimate is the region's
volume (nothing changes within a block), so tiled and untiled iterations share their fixed points.

With the semi-implicit update the tiles' boundary points step by BOUNDARY_STEP of their dt_i in blocks of K > 1
(:func:`boundary_steps`); measurements and the cases that do not converge yet: docs/springs.md, "Tiled iteration".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.skinning.springs.rest import SpringRest, fan_volumes

__all__ = ["TILE_SIZE", "BOUNDARY_STEP", "Halo", "tile_ids", "halo", "tile_stats", "locality_order", "boundary_steps"]

#: points per tile at most: the GPU's work-group size (engine.gpu.layouts.LOCAL_SIZE; a test checks they agree)
TILE_SIZE = 64


@dataclass(frozen=True)
class Halo:
    """A block's frozen halo: ``frozen`` (V,3) positions at the block start; ``inside`` (H,) per CSR slot (rows,
    cols of SpringRest) True where the neighbour shares the point's tile; ``inside_third`` (H,) the same for the
    slot's third face corner (``SpringRest.vol_third``; False where there is none).

    The volume estimator's data (None without the volume term): ``tiles`` (V,), ``base_region`` (R,) the regions'
    volumes at the base state (the previous block's start), ``base_point`` (V,) each point's share V_i there and
    ``scale`` (V,) N_r / n_t (points of the point's region over points of its tile)."""

    frozen: np.ndarray
    inside: np.ndarray
    inside_third: np.ndarray
    tiles: np.ndarray | None = None
    base_region: np.ndarray | None = None
    base_point: np.ndarray | None = None
    scale: np.ndarray | None = None

    def region_estimate(self, v: np.ndarray, region: np.ndarray) -> np.ndarray:
        """(V,) the volume of each point's region as its tile estimates it from the tile's shares ``v`` (V,)
        now (in-tile neighbours current, halo frozen): the base volume plus the tile's own change since the base
        scaled to the region, V_r(base) + N_r / n_t sum over the tile's points (V_i - V_i(base))."""
        assert self.tiles is not None and self.base_region is not None and self.base_point is not None
        assert self.scale is not None
        on = region >= 0
        change = np.bincount(self.tiles[on], weights=(v - self.base_point)[on], minlength=int(self.tiles.max()) + 1)
        return np.where(on, self.base_region[np.maximum(region, 0)] + self.scale * change[self.tiles], 0.0)

    def neighbours(self, x: np.ndarray, cols: np.ndarray, inside: np.ndarray) -> np.ndarray:
        """Positions of the slots' neighbours ``cols``: current x in the tile, the block start's outside."""
        return np.where(inside[:, None], x[cols], self.frozen[cols])


def locality_order(positions: np.ndarray, region: np.ndarray, bits: int = 10) -> np.ndarray:
    """(n,) a permutation of the control points that keeps neighbours in one tile (issue 24, step 4, measured
    only: the GPU pools keep the assets' order): region-major (ascending region, -1 first), then the Morton
    (Z-order) code of the position quantised to 2^bits cells per axis of the bounding box; ties by index."""
    x = np.asarray(positions, np.float64)
    lo, hi = x.min(0), x.max(0)
    q = np.clip(((x - lo) / np.where(hi > lo, hi - lo, 1.0) * ((1 << bits) - 1)).astype(np.int64), 0, (1 << bits) - 1)
    code = np.zeros(x.shape[0], np.int64)
    for b in range(bits):  # interleave the axes' bits
        for a in range(3):
            code |= ((q[:, a] >> b) & 1) << (3 * b + a)
    return np.lexsort((np.arange(x.shape[0]), code, np.asarray(region, np.int64)))


def tile_ids(n: int, region: np.ndarray, size: int = TILE_SIZE, order: np.ndarray | None = None) -> np.ndarray:
    """(n,) int64 tile of each control point: the pair (work group i // size, bone region), numbered in order of
    first appearance (a deterministic function of the mesh). order: the points in the order the work groups take
    them (:func:`locality_order`; None: the control order)."""
    reg = np.asarray(region, np.int64) if np.shape(region) == (n,) else np.full(n, -1, np.int64)
    rank = np.arange(n, dtype=np.int64)
    if order is not None:
        rank[np.asarray(order, np.int64)] = np.arange(n, dtype=np.int64)
    key = (rank // size) * (int(reg.max(initial=-1)) + 2) + (reg + 1)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # number tiles by their first point
    return order[inverse.reshape(-1)].astype(np.int64)


def halo(x: np.ndarray, rest: SpringRest, tiles: np.ndarray, base: np.ndarray | None = None,
         attach: np.ndarray | None = None) -> Halo:
    """The halo of a block starting at positions x for the partition ``tiles`` (:func:`tile_ids`); with the
    volume term, ``base`` the previous block's start (x for the first block) and the frame's ``attach``."""
    rows, cols = rest.rows, rest.cols
    third = rest.vol_third if rest.vol_third.shape[0] == rows.shape[0] else np.full(rows.shape[0], -1)
    inside_third = (third >= 0) & (tiles[np.maximum(third, 0)] == tiles[rows])
    if base is None or attach is None:
        return Halo(np.array(x, np.float64), tiles[cols] == tiles[rows], inside_third)
    region = rest.vol_region
    on = region >= 0
    n_region = np.bincount(region[on], minlength=rest.vol_v0.shape[0])
    n_tile = np.bincount(tiles[on], minlength=int(tiles.max(initial=-1)) + 1)
    scale = np.where(on, n_region[np.maximum(region, 0)] / np.maximum(n_tile[tiles], 1), 0.0)
    v_base, _ = fan_volumes(base, attach, rest)
    base_region = np.bincount(region[on], weights=v_base[on], minlength=rest.vol_v0.shape[0])
    return Halo(np.array(x, np.float64), tiles[cols] == tiles[rows], inside_third, tiles, base_region, v_base,
                scale)


#: the step of a tile's boundary point (a neighbour outside its tile) in a block of K > 1 semi-implicit iterations,
#: as a fraction of its dt_i: the two ends of a spring across tiles both move towards the other's frozen position,
#: and with the semi-implicit update's momentum a full step overshoots and grows (measured: the box and the humanoid
#: diverge at K >= 3); half a step converges. The fixed points do not depend on the step.
BOUNDARY_STEP = 0.5


def boundary_steps(step: np.ndarray, rest: SpringRest, tiles: np.ndarray) -> np.ndarray:
    """The per-vertex steps (V,) with those of the tiles' boundary points scaled by BOUNDARY_STEP."""
    out = np.array(step, np.float64)
    boundary = np.zeros(out.shape[0], bool)
    boundary[rest.rows[tiles[rest.cols] != tiles[rest.rows]]] = True
    out[boundary] *= BOUNDARY_STEP
    return out


def tile_stats(rest: SpringRest, tiles: np.ndarray) -> tuple[int, float]:
    """(number of tiles, share of CSR neighbour slots outside their point's tile)."""
    n_tiles = int(tiles.max()) + 1 if tiles.size else 0
    if rest.rows.shape[0] == 0:
        return n_tiles, 0.0
    return n_tiles, float(np.mean(tiles[rest.cols] != tiles[rest.rows]))
