"""Issue 26, item 1: nothing in the springs depends on the asset's units or on where a scale sits in the node
hierarchy. The humanoid with its armature under a root scaled 100x (offsets 0.01x) and 0.01x (offsets 100x),
with the mesh in world units or in the armature's own units (a Blender export), deforms to the original's
shape within 1e-5 of the bounding-box diagonal (numpy reference; the GPU: tests/gl/test_spring_real_rigs.py):
the springs at the elbows-110 pose, the springs with the contact term at a deep bend where its passes move
points (`DEEP`), and the standalone rigid and IRS deformers."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import engine.skinning.contact as contact_mod
from engine.anim.rig import Rig
from engine.assets.gltf import load
from engine.assets.library import source_path
from engine.skinning.config import DeformerConfig
from engine.skinning.instances import skinned_primitives
from engine.skinning.springs import SpringParams, pose_unit, to_pose_unit
from tests.helpers.scaled_rig import CONTACT_PARAMS, DEEP, TURNS, posed_globals, scaled_copy

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


@pytest.fixture(scope="module")
def humanoid_contact():
    base = load(source_path("humanoid"))
    return base, _deform_contact(base)


def _deform_contact(asset):
    """The springs with the contact term at the deep pose, and how many contact passes moved points."""
    moved: list[int] = []
    resolve = contact_mod.resolve_contacts

    def counting(*args, **kw):
        y, n = resolve(*args, **kw)
        moved.append(n)
        return y, n

    cfg = dataclasses.replace(DeformerConfig(), spring=SpringParams(**CONTACT_PARAMS))
    sp = skinned_primitives(asset, Rig.from_asset(asset))[0]
    contact_mod.resolve_contacts = counting  # the solver imports it at the call
    try:
        out = sp.deform(posed_globals(asset, DEEP), "spring", config=cfg)
    finally:
        contact_mod.resolve_contacts = resolve
    return out, moved


@pytest.mark.parametrize("k", [100.0, 0.01])
def test_scaled_armature_with_contact_deforms_to_the_same_shape(humanoid_contact, k):
    """The contact term runs in bind units like the springs (its thickness, reach and grid are measured on the
    bind mesh): before, on the scene-unit result its gap scaled with the pose's unit (100x: no pair found, 0.018
    of the diagonal off; 0.01x: every point within reach of every other)."""
    base, (ref, moved_ref) = humanoid_contact
    out, moved = _deform_contact(scaled_copy(base, k, "armature"))
    assert moved_ref == moved and moved[0] > 0  # the passes acted, as many on the original as on the variant
    diag = float(np.linalg.norm(ref.max(0) - ref.min(0)))
    assert np.isfinite(out).all()
    assert float(np.abs(out - ref).max()) <= TOL * diag


def _attachment(asset, method, cfg=None):
    sp = skinned_primitives(asset, Rig.from_asset(asset))[0]
    return sp.deform(posed_globals(asset, TURNS), method, config=cfg)


@pytest.fixture(scope="module")
def attachment_refs():
    """The original humanoid and its rigid / IRS / IRS with length correction results at TURNS."""
    base = load(source_path("humanoid"))
    sp = skinned_primitives(base, Rig.from_asset(base))[0]
    g = posed_globals(base, TURNS)
    lc = dataclasses.replace(DeformerConfig(), irs=dataclasses.replace(DeformerConfig().irs, length_correction=True))
    return base, lc, {"rigid": sp.deform(g, "rigid"), "irs": sp.deform(g, "irs"), "lc": sp.deform(g, "irs", config=lc)}


@pytest.mark.parametrize("method", ["rigid", "irs"])
@pytest.mark.parametrize("k,space", [(100.0, "armature"), (0.01, "armature"), (100.0, "world")])
def test_scaled_armature_rigid_and_irs_give_the_same_shape(attachment_refs, method, k, space):
    """The standalone attachment deformers scale the bind-unit scale vectors by the pose unit (skinning.rigid; with
    the mesh in world units u = 1, and they agreed before): before, the armature-unit variants put them on
    scene-unit attachments (0.085 of the diagonal off at 100x, collapsed onto the bones; 8.5 diagonals at 0.01x)."""
    base, _, refs = attachment_refs
    ref = refs[method]
    out = _attachment(scaled_copy(base, k, space), method)
    diag = float(np.linalg.norm(ref.max(0) - ref.min(0)))
    assert float(np.abs(out - ref).max()) <= TOL * diag


@pytest.mark.parametrize("k", [100.0, 0.01])
def test_scaled_armature_irs_length_correction(attachment_refs, k):
    """IRS's length correction keeps the bind distance to the skeleton, scaled by the pose unit too. It picks per
    point between the corrected and the plain position; a point near a tie may pick the other on a variant (one
    display vertex of 16k at 0.01x, 1.6e-5 of the diagonal, with the mesh in world units as well): all others
    agree within 1e-5, and none is off by more than 1e-4 (before: 0.085 at 100x, 7.9 diagonals at 0.01x)."""
    base, cfg, refs = attachment_refs
    ref = refs["lc"]
    out = _attachment(scaled_copy(base, k, "armature"), "irs", cfg)
    diag = float(np.linalg.norm(ref.max(0) - ref.min(0)))
    err = np.abs(out - ref).max(1)
    assert int((err > TOL * diag).sum()) <= 1 and float(err.max()) <= 1e-4 * diag
