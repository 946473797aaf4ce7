"""Regions of interest (engine.skinning.roi): crossed faces from sparse stroke samples, ring counts on a known
grid, geodesic versus Euclidean radius on the generated cylinder, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning import roi
from engine.skinning.meshprep import prepare_mesh

N = 21  # grid vertices per side


def grid(n: int = N):
    """A flat n x n vertex grid in the XY plane (unit spacing); quad (i, j) split along its diagonal from
    (i, j) to (i+1, j+1): lower-right triangle 2q, upper-left 2q+1."""
    ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="xy")
    pos = np.stack([ii, jj, np.zeros_like(ii)], -1).reshape(-1, 3).astype(np.float32)
    tris = []
    for j in range(n - 1):
        for i in range(n - 1):
            a, b, c, d = j * n + i, j * n + i + 1, (j + 1) * n + i, (j + 1) * n + i + 1
            tris += [[a, b, d], [a, d, c]]
    return prepare_mesh(pos, np.array(tris, np.int64))


def sample(topo, point):
    """(face, barycentric) of a point of the flat grid (solved against every face at once)."""
    x = np.asarray(topo.positions, np.float64)[:, :2]
    t = x[np.asarray(topo.triangles)]
    m = np.stack([t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]], -1)
    uv = np.linalg.solve(m, (np.asarray(point, np.float64) - t[:, 0])[..., None])[..., 0]
    inside = np.flatnonzero((uv >= -1e-12).all(1) & (uv.sum(1) <= 1 + 1e-12))
    if inside.size == 0:
        raise AssertionError(f"{point} is not on the grid")
    f = int(inside[0])
    u, v = uv[f]
    return f, [1 - u - v, u, v]


def graph_distance(p, q):
    """Edge count between grid vertices with diagonals from (i, j) to (i+1, j+1)."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    return max(abs(dx), abs(dy)) if dx * dy >= 0 else abs(dx) + abs(dy)


@pytest.fixture(scope="module")
def topo():
    return grid()


def test_two_samples_cross_every_face_in_between(topo):
    """A straight stroke given only by its ends crosses both triangles of every quad of its band."""
    f0, b0 = sample(topo, (2.3, 10.5))
    f1, b1 = sample(topo, (17.7, 10.5))
    faces = roi.crossed_faces(topo, [f0, f1], [b0, b1])
    expected = {2 * (10 * (N - 1) + i) + k for i in range(2, 18) for k in (0, 1)}
    assert set(faces.tolist()) == expected
    assert faces[0] == f0 and faces[-1] == f1 and len(faces) == len(expected)


def test_diagonal_stroke_crosses_a_staircase(topo):
    """Dense samples and the walk agree: the faces crossed by a slanted line, from two samples, are exactly
    those a fine sampling of the line finds."""
    a, b = np.array([3.2, 4.1]), np.array([15.6, 9.3])
    fa, ba = sample(topo, a)
    fb, bb = sample(topo, b)
    walked = set(roi.crossed_faces(topo, [fa, fb], [ba, bb]).tolist())
    dense = {sample(topo, a + s * (b - a))[0] for s in np.linspace(0, 1, 1501)}
    assert walked == dense


@pytest.mark.parametrize("rings", [0, 1, 2, 4, 6])
def test_ring_counts_on_grid(topo, rings):
    f0, b0 = sample(topo, (6.5, 10.4))
    f1, b1 = sample(topo, (13.5, 10.4))
    region = roi.region_of_interest(topo, [f0, f1], [b0, b1], rings=rings)
    x = np.asarray(topo.positions)[:, :2].astype(int)
    # the start (6.5, 10.4) lies in the lower-right triangle of quad 6, which the line leaves to the right
    kin = {(i, 10) for i in range(6, 15)} | {(i, 11) for i in range(7, 15)}
    vid = {tuple(p): k for k, p in enumerate(x.tolist())}
    assert set(region.kinematic.tolist()) == {vid[p] for p in kin}
    dist = {k: min(graph_distance(p, q) for q in kin) for k, p in enumerate(x.tolist())}
    assert set(region.passive.tolist()) == {k for k, d in dist.items() if 1 <= d <= rings}
    assert set(region.static.tolist()) == {k for k, d in dist.items() if d == rings + 1}
    # the sets are disjoint and the static ring separates the region from the rest
    assert not (set(region.kinematic) & set(region.passive) or set(region.passive) & set(region.static))


def test_default_is_four_rings_and_display_indices(topo):
    f0, b0 = sample(topo, (9.5, 9.4))
    region = roi.region_of_interest(topo, [f0], [b0])
    x = np.asarray(topo.positions)[:, :2].astype(int).tolist()
    kin = [tuple(x[k]) for k in region.kinematic]
    far = max(min(graph_distance(p, q) for q in kin) for p in (tuple(x[k]) for k in region.passive))
    assert far == roi.DEFAULT_RINGS and region.kinematic.size == 3
    disp = region.display(topo)  # no seams: display == control indices
    np.testing.assert_array_equal(disp["passive"], region.passive)


def test_radius_growth_euclidean_on_grid(topo):
    f0, b0 = sample(topo, (10.2, 10.1))
    region = roi.region_of_interest(topo, [f0], [b0], radius=3.0)
    x = np.asarray(topo.positions, np.float64)
    d = np.linalg.norm(x[:, None] - x[region.kinematic][None], axis=2).min(1)
    expected = set(np.flatnonzero(d <= 3.0).tolist()) - set(region.kinematic.tolist())
    assert set(region.passive.tolist()) == expected


def cylinder_topology():
    from engine.assets.library import character_path
    from engine.scene import load_asset

    loaded = load_asset(character_path("cylinder"))
    return loaded.skinned[0].topology()


def test_geodesic_radius_on_cylinder():
    topo = cylinder_topology()
    x = np.asarray(topo.positions, np.float64)
    r = float(np.median(np.hypot(x[:, 0], x[:, 2])))
    side = (np.abs(np.hypot(x[:, 0], x[:, 2]) - r) < 1e-3 * r)  # the tube wall, not the caps
    # a face at mid-height on the +X side
    tri = np.asarray(topo.triangles)
    centre = x[tri].mean(1)
    cand = np.flatnonzero(side[tri].all(1))
    f = int(cand[np.argmin(np.linalg.norm(centre[cand] - [r, 0.5 * (x[:, 1].min() + x[:, 1].max()), 0], axis=1))])
    radius = 0.25
    geo = roi.region_of_interest(topo, [f], [[1 / 3, 1 / 3, 1 / 3]], radius=radius, geodesic=True)
    euc = roi.region_of_interest(topo, [f], [[1 / 3, 1 / 3, 1 / 3]], radius=radius)
    kin = x[geo.kinematic]

    def surface_distance(p):  # true geodesic on the cylinder wall to the nearest kinematic vertex
        dth = np.abs(np.arctan2(p[2], p[0]) - np.arctan2(kin[:, 2], kin[:, 0]))
        dth = np.minimum(dth, 2 * np.pi - dth)
        return float(np.min(np.hypot(r * dth, p[1] - kin[:, 1])))

    wall = [int(v) for v in np.flatnonzero(side) if v not in set(geo.kinematic.tolist())]
    true = {v: surface_distance(x[v]) for v in wall}
    chosen = set(geo.passive.tolist())
    # edge paths are never shorter than the surface distance: nothing beyond the radius is chosen ...
    assert all(true[v] <= radius + 1e-9 for v in chosen if v in true)
    # ... and the wall within 1/sqrt(2) of it is (on a grid split along one diagonal, an edge path is at most
    # sqrt(2) times the straight distance); most of the wall within the radius is chosen
    assert {v for v, d in true.items() if d <= 0.7 * radius} <= chosen
    within = {v for v, d in true.items() if d <= radius}
    assert len(chosen & within) > 0.75 * len(within)
    # the far side (pi r = 0.31 m around) is out by geodesic distance, in by straight distance (0.2 m)
    back = [v for v in wall if x[v, 0] < -0.95 * r and abs(x[v, 1] - kin[:, 1].mean()) < 0.02]
    assert back and not (set(back) & chosen) and set(back) <= set(euc.passive.tolist())
    assert set(geo.static.tolist()) == set(roi.outer_ring(topo, np.concatenate([geo.kinematic, geo.passive])).tolist())


def test_refusals(topo):
    f0, b0 = sample(topo, (5.5, 5.2))
    with pytest.raises(ValueError, match="rings or radius"):
        roi.region_of_interest(topo, [f0], [b0], rings=2, radius=0.5)
    with pytest.raises(ValueError, match="geodesic"):
        roi.region_of_interest(topo, [f0], [b0], geodesic=True)
    with pytest.raises(ValueError, match="rings"):
        roi.region_of_interest(topo, [f0], [b0], rings=-1)
    with pytest.raises(ValueError, match="radius"):
        roi.region_of_interest(topo, [f0], [b0], radius=float("nan"))
    with pytest.raises(ValueError, match="out of range"):
        roi.crossed_faces(topo, [10**6], [b0])
    with pytest.raises(ValueError, match="at least one"):
        roi.crossed_faces(topo, [], [])


def test_disconnected_samples_are_refused():
    """Two separate grids in one mesh: a stroke jumping from one to the other left the surface."""
    a, b = grid(4), grid(4)
    pos = np.concatenate([np.asarray(a.positions), np.asarray(b.positions) + [10.0, 0, 0]])
    tris = np.concatenate([np.asarray(a.triangles), np.asarray(b.triangles) + a.n_control])
    topo = prepare_mesh(pos.astype(np.float32), tris)
    with pytest.raises(ValueError, match="left the surface"):
        roi.crossed_faces(topo, [0, len(a.triangles)], [[1 / 3] * 3, [1 / 3] * 3])


def test_laplacian_marks_the_outline_of_a_disc():
    yy, xx = np.mgrid[0:41, 0:41]
    inside = (xx - 20) ** 2 + (yy - 20) ** 2 <= 15 ** 2
    normal = np.where(inside[..., None], [0.0, 0.0, 1.0], 0.0)
    edge = roi.silhouette_pixels(normal, inside, threshold=roi.SILHOUETTE_THRESHOLDS["normal"])
    r = np.hypot(xx - 20, yy - 20)
    assert edge.any() and np.all(r[edge] > 13.5)  # only the rim, never the flat interior
    ring = inside & (r > 14.5)
    assert edge[ring].mean() > 0.9


def test_silhouette_chain_follows_the_outline(topo):
    """Between two vertices of row 10, with row 10 marked as silhouette, the chain is that row in order; without
    the preference it may cut across."""
    x = np.asarray(topo.positions)[:, :2].astype(int).tolist()
    vid = {tuple(p): k for k, p in enumerate(x)}
    row = [vid[(i, 10)] for i in range(3, 16)]
    chain = roi.silhouette_chain(topo, row, row[0], row[-1])
    assert chain.tolist() == row
    region = roi.region_around(topo, chain, rings=1)
    assert set(region.kinematic.tolist()) == set(row) and region.static.size > 0
