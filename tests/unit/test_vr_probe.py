"""The controller camera in numpy (engine/render/probe.py): the spatial clusters partition the triangles into
compact patches, the cone test never drops a sphere the probe's frustum meets, the exact ray-triangle answer
agrees with the Moller-Trumbore reference and clamps a hair-wide miss onto the triangle, and "auto" culling
follows the renderer kind."""
from __future__ import annotations

import numpy as np

from engine.gpu.context import software_rasteriser
from engine.input.vr import look_rotation, pose_matrix
from engine.render.probe import (
    CLUSTER_TRIANGLES,
    ProbeCamera,
    centre_ray,
    cluster_spheres,
    clusters_in_cone,
    probe_reference,
    ray_triangle,
    spatial_clusters,
)


def test_spatial_clusters_partition_into_small_compact_leaves():
    rng = np.random.default_rng(1)
    c = rng.random((1000, 3)) * [2.0, 0.1, 0.1]  # a long thin limb
    order, starts = spatial_clusters(c, 32)
    assert sorted(order.tolist()) == list(range(1000))
    counts = np.diff(np.append(starts, 1000))
    assert counts.max() <= 32 and counts.min() >= 16
    extent = [np.ptp(c[order[a:a + n], 0]) for a, n in zip(starts, counts)]
    assert max(extent) < 0.25  # a leaf spans a short piece of the 2 m limb, not its length
    assert CLUSTER_TRIANGLES >= 1


def test_cluster_spheres_bound_their_vertices():
    rng = np.random.default_rng(2)
    pos = rng.normal(size=(200, 3))
    flat = rng.integers(0, 200, 90)
    starts = np.array([0, 30, 60])
    centres, radii = cluster_spheres(pos, flat, starts)
    for k, (a, b) in enumerate([(0, 30), (30, 60), (60, 90)]):
        d = np.linalg.norm(pos[flat[a:b]] - centres[k], axis=1)
        assert d.max() <= radii[k] + 1e-5
        assert d.max() >= radii[k] * 0.5


def test_cone_test_keeps_every_sphere_the_frustum_meets():
    """Random spheres against a 10 deg probe: each sphere containing a point strictly inside the frustum is kept;
    spheres far off the axis or behind the probe are dropped."""
    cam = ProbeCamera(pose_matrix((0.1, 1.0, 0.5), look_rotation((0.2, -0.1, -1.0))))
    rng = np.random.default_rng(3)
    # points inside the frustum: pixel-space samples unprojected at random depths
    inv = np.linalg.inv(np.asarray(cam.projection, np.float64) @ np.asarray(cam.view, np.float64))
    ndc = np.concatenate([rng.uniform(-0.99, 0.99, (300, 2)), rng.uniform(-1.0, 0.99, (300, 1)),
                          np.ones((300, 1))], axis=1)
    inside = ndc @ inv.T
    inside = inside[:, :3] / inside[:, 3:]
    radii = rng.uniform(0.001, 0.05, 300)
    centres = inside + rng.normal(size=(300, 3)) * radii[:, None] * 0.5  # each sphere still holds its point
    assert (np.linalg.norm(centres - inside, axis=1) <= radii).mean() > 0.5
    holds = np.linalg.norm(centres - inside, axis=1) <= radii
    assert clusters_in_cone(centres, radii, cam)[holds].all()
    eye = cam.pose[:3, 3]
    behind = eye + cam.pose[:3, 2] * 0.5  # +Z: behind the probe
    side = eye - cam.pose[:3, 2] * 0.5 + cam.pose[:3, 0] * 0.5  # 45 deg off the axis
    assert not clusters_in_cone(np.array([behind, side]), np.array([0.05, 0.05]), cam).any()


def test_ray_triangle_matches_the_reference_and_clamps_a_near_miss():
    """On random triangles a probe's centre ray meets, :func:`ray_triangle` gives the reference's barycentric
    and point to float64 precision; a ray just past an edge is clamped onto it; a ray along the plane gives None."""
    rng = np.random.default_rng(4)
    cam = ProbeCamera(pose_matrix((0.0, 1.0, 1.0), look_rotation((0.1, -0.05, -1.0))))
    o, d = centre_ray(cam, 16)
    checked = 0
    for _ in range(50):
        w = rng.dirichlet([1.0, 1.0, 1.0])
        target = o + d * rng.uniform(0.3, 2.0)
        tri = rng.normal(size=(3, 3)) * 0.1
        tri += target - w @ tri  # the ray passes through barycentric w
        ref = probe_reference(tri, np.array([[0, 1, 2]]), cam, 16, cull_back=False)
        got = ray_triangle(o, d, tri)
        assert ref is not None and got is not None
        np.testing.assert_allclose(got[0], ref[1], atol=1e-9)
        np.testing.assert_allclose(got[1], ref[2], atol=1e-9)
        np.testing.assert_allclose(got[0], w, atol=1e-9)
        checked += 1
    assert checked == 50
    # a hair outside edge b-c (weight of a slightly negative): clamped onto the edge, the point on the triangle
    off = o + d * 1.0
    # a unit right triangle in a plane z = const, placed so that the ray meets its local (0.5005, 0.5005)
    tri = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]) + off - [0.5005, 0.5005, 0.0]
    bary, point = ray_triangle(off - d, d, tri)
    assert (bary >= 0).all() and abs(bary.sum() - 1.0) < 1e-12 and bary[0] == 0.0
    np.testing.assert_allclose(point, bary @ tri, atol=1e-12)
    assert np.linalg.norm(point - off) < 2e-3
    side = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # the plane y = 0 ...
    assert ray_triangle(np.array([0.0, 0.0, -1.0]), np.array([0.0, 0.0, 1.0]), side) is None  # ... ray along it


class _Ctx:
    def __init__(self, name: str) -> None:
        self.info = {"GL_RENDERER": name}


def test_auto_culling_follows_the_renderer_kind():
    assert software_rasteriser(_Ctx("llvmpipe (LLVM 15.0.6, 256 bits)"))
    assert software_rasteriser(_Ctx("softpipe"))
    assert not software_rasteriser(_Ctx("NVIDIA H100 80GB HBM3/PCIe/SSE2"))
    assert not software_rasteriser(_Ctx("AMD Radeon RX 7900 XTX (radeonsi, navi31, LLVM 17.0.6, DRM 3.57)"))
