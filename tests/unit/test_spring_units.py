"""Issue 26, item 1: nothing in the springs depends on the asset's units or on where a scale sits in the node
hierarchy. The humanoid with its armature under a root scaled 100x (offsets 0.01x) and 0.01x (offsets 100x),
with the mesh in world units or in the armature's own units (a Blender export), deforms to the original's
shape within 1e-5 of the bounding-box diagonal (numpy reference; the GPU: tests/gl/test_spring_real_rigs.py)."""
from __future__ import annotations

import numpy as np
import pytest

from engine.anim.rig import Rig
from engine.assets.gltf import load
from engine.assets.library import source_path
from engine.skinning.instances import skinned_primitives
from engine.skinning.springs import pose_unit, to_pose_unit
from tests.helpers.scaled_rig import TURNS, posed_globals, scaled_copy

TOL = 1e-5


@pytest.fixture(scope="module")
def humanoid():
    base = load(source_path("humanoid"))
    return base, _deform(base)


def _deform(asset):
    sp = skinned_primitives(asset, Rig.from_asset(asset))[0]
    return sp.deform(posed_globals(asset, TURNS), "spring")


def test_pose_unit_is_the_root_scale_between_bind_and_pose():
    bind = np.tile(np.eye(4), (3, 1, 1))
    posed = np.array(bind)
    posed[0, :3, :3] *= 100.0  # root posed 100x its bind scale
    posed[1, :3, :3] *= 1.3  # a stretched bone does not change the unit
    assert pose_unit(bind, np.array([-1, 0, 1]), posed) == pytest.approx(100.0)
    assert pose_unit(bind, np.array([-1, 0, 1]), bind) == 1.0
    moved = to_pose_unit(posed, 100.0)
    np.testing.assert_allclose(moved[0, :3, :3], np.eye(3))


@pytest.mark.parametrize("k,space", [(100.0, "armature"), (0.01, "armature"), (100.0, "world")])
def test_scaled_armature_deforms_to_the_same_shape(humanoid, k, space):
    base, ref = humanoid
    out = _deform(scaled_copy(base, k, space))
    diag = float(np.linalg.norm(ref.max(0) - ref.min(0)))
    assert np.isfinite(out).all()
    assert float(np.abs(out - ref).max()) <= TOL * diag
