"""Issue 26, item 1 on the GPU: the spring stage deforms the humanoid under a root scaled 100x (the mesh in the
armature's own units, a Blender export) to the numpy reference's shape of the unscaled original within 1e-5 of
the diagonal (0.01x too)."""
from __future__ import annotations

import numpy as np
import pytest

from engine.anim.rig import Rig
from engine.assets.gltf import load
from engine.assets.library import source_path
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.instances import skinned_primitives
from tests.helpers.scaled_rig import TURNS, posed_globals, scaled_copy

pytestmark = pytest.mark.gl
TOL = 1e-5


def _gpu(gl_ctx, resources, asset, spring=None):
    sp = skinned_primitives(asset, Rig.from_asset(asset))[0]
    g = posed_globals(asset, TURNS)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        prim = sp.primitive
        h = graph.add_mesh(sp.topology(), sp.binding(), prim.joints, prim.weights, sp.skin.inverse_bind,
                           sp.parents, method="spring", spring=spring)
        graph.set_pose(h, sp.skin_matrices(g), g[sp.skin.joints])
        graph.run()
        return graph.download(h)[0]
    finally:
        graph.release()


@pytest.mark.parametrize("k", [100.0, 0.01])
def test_scaled_armature_on_gpu_matches_the_original(gl_ctx, resources, k):
    base = load(source_path("humanoid"))
    sp = skinned_primitives(base, Rig.from_asset(base))[0]
    ref = sp.deform(posed_globals(base, TURNS), "spring")
    out = _gpu(gl_ctx, resources, scaled_copy(base, k, "armature"))
    diag = float(np.linalg.norm(ref.max(0) - ref.min(0)))
    assert float(np.abs(out - ref).max()) <= TOL * diag
