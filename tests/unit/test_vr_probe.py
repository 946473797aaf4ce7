"""The controller camera's cluster culling in numpy (engine/render/probe.py): the spatial clusters partition the
triangles into compact patches, and the cone test never drops a sphere the probe's frustum meets."""
from __future__ import annotations

import numpy as np

from engine.input.vr import look_rotation, pose_matrix
from engine.render.probe import CLUSTER_TRIANGLES, ProbeCamera, cluster_spheres, clusters_in_cone, spatial_clusters


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
