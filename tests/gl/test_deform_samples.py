"""GPU skinning of Khronos samples (../shared/gltf-samples) equals the numpy reference (LBS, DQS; normals from
the deformed surface or skinned from the glTF normals)."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning import skinning as S
from engine.skinning.binding import per_control
from engine.skinning.gpu.graph import DeformerGraph, default_config
from tests.conftest import shared_dir

pytestmark = [pytest.mark.gl, pytest.mark.shared]


def _skinned_primitive(path):
    from engine.assets.gltf import load

    asset = load(path)
    for node in asset.nodes:
        if node.mesh is None or node.skin is None:
            continue
        for prim in asset.meshes[node.mesh].primitives:
            if prim.is_skinned:
                skin = asset.skins[node.skin]
                index = {int(n): k for k, n in enumerate(skin.joints)}
                parents = np.array([index.get(asset.nodes[int(n)].parent, -1) for n in skin.joints], np.int32)
                return prim, skin, parents
    raise AssertionError(f"{path} has no skinned primitive")


def _rot(axis, angle):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


@pytest.mark.parametrize("name", ["RiggedSimple.glb", "CesiumMan.glb"])
@pytest.mark.parametrize("method", ["lbs", "dqs"])
@pytest.mark.parametrize("normals", ["surface", "skinned"])
def test_sample_skinning(gl_ctx, name, method, normals):
    from engine.gpu.resources import GpuResources

    prim, skin, parents = _skinned_primitive(shared_dir("gltf-samples") / name)
    topo = M.prepare_mesh(prim.positions, prim.indices.astype(np.int64))
    ib = np.asarray(skin.inverse_bind, np.float64)
    bind = np.linalg.inv(ib)
    rng = np.random.default_rng(7)
    posed = bind.copy()
    for j in range(1, bind.shape[0]):  # rotate every joint about its own origin
        r = np.eye(4)
        r[:3, :3] = _rot(rng.normal(size=3), 0.5)
        posed[j] = bind[j] @ r
    skin_mats = posed @ ib
    res = GpuResources(gl_ctx)
    graph = DeformerGraph(gl_ctx, res)
    try:
        h = graph.add_mesh(topo, None, prim.joints, prim.weights, ib, parents,
                           config=default_config(method, normals=normals), normals=prim.normals)
        graph.set_pose(h, skin_mats, posed)
        graph.run()
        p, n = graph.download(h)
        ref = S.skin_control_points(method, topo, bind, posed, joints=prim.joints, weights=prim.weights,
                                    inverse_bind=ib)
        diag = M.bbox_diagonal(topo.positions)
        np.testing.assert_allclose(p, M.copy_to_display(topo, ref), atol=1e-5 * diag, rtol=0)
        if normals == "skinned":  # the glTF normals under the same blend as their control point
            fn = S.lbs_normals if method == "lbs" else S.dqs_normals
            c = topo.control_of_display
            nref = fn(prim.normals, per_control(topo, prim.joints)[c], per_control(topo, prim.weights)[c],
                      skin_mats.astype(np.float32))
            assert np.abs(nref - prim.normals).max() > 0.3  # the pose really turns normals
            np.testing.assert_allclose(n, nref, atol=1e-5)
            return
        nref = M.vertex_normals(ref, topo.triangles, display_triangles=topo.display_triangles,
                                n_display=topo.n_display)
        # normals of well-shaped triangles; a tiny triangle's normal is ill-conditioned in float32
        area = np.linalg.norm(np.cross(*(ref[topo.triangles[:, k]] - ref[topo.triangles[:, 0]] for k in (1, 2))),
                              axis=1)
        ok = np.ones(topo.n_display, bool)
        small = topo.display_triangles[area < 1e-6 * diag * diag].reshape(-1)
        ok[small] = False
        np.testing.assert_allclose(n[ok], nref[ok], atol=1e-4)
    finally:
        graph.release()
        res.release_all()
