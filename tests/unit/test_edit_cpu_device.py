"""Surface edits on the cpu device (issue 12): ``Character.add_edit`` works without a GPU, the numpy spring
reference takes the frame's edit forces exactly as the session hands them to the GPU graph (decoded with
``edit_pose``), holds the static ring, and forgets the edit when it is cleared."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.skinning import roi
from engine.skinning.edits import EditStack, EditTerms, SurfaceEdit, edit_pose
from engine.skinning.meshprep import copy_to_display
from engine.skinning.springs import SpringDeformer


@pytest.fixture()
def cylinder():
    with Session(device="cpu", render=False, deformer="spring", strict=True) as s:
        ch = s.spawn("cylinder", clip=0, time=0.4, speed=0.0)
        yield s, ch


def _bump(ch, key):
    """Lift the control points of a few faces at mid-height 2 cm along their outward direction."""
    topo = ch.topology(key)
    x = np.asarray(ch.vertices()[key], np.float64)[np.asarray(topo.display_of_control)]
    tri = np.asarray(topo.triangles)
    c = x[tri].mean(1)
    mid = 0.5 * (c[:, 1].min() + c[:, 1].max())
    faces = np.argsort(np.abs(c[:, 1] - mid) + np.abs(c[:, 2] - c[:, 2].max()))[:3]
    region = roi.region_of_interest(topo, faces, np.full((3, 3), 1 / 3), rings=2, positions=x)
    kin = region.kinematic
    out = x[kin].copy()
    out[:, 1] = 0.0  # radial: the cylinder stands along +Y
    targets = x[kin] + 0.02 * out / np.linalg.norm(out, axis=1, keepdims=True)
    attach, rot = ch.edit_frame(key)
    return SurfaceEdit.from_world(kin, targets, attach, rot, passive=region.passive, static=region.static,
                                  stiffness=20.0)


def test_cpu_edit_is_the_reference_with_the_sessions_terms(cylinder):
    s, ch = cylinder
    key = ch.skinned_primitives[0]
    plain = ch.vertices()[key].copy()
    edit = _bump(ch, key)
    ch.add_edit(key, edit)
    s.settle(render=False)
    got = ch.vertices()[key]
    # the reference, fed the terms decoded as the surface-edit systems decode them for the GPU graph
    inst = next(i for i in s.meshes.instances[ch.entity] if i.key == key)
    sp, cfg = inst.skinned, ch.config
    binding = sp.binding(method=cfg.binding.method, smooth_passes=cfg.binding.smooth_passes)
    posed = ch.joints()[sp.skin.joints]
    attach, rot = edit_pose(binding, sp.bind_joints, posed)
    terms = EditStack([edit]).terms(sp.topology().n_control, attach, rot, 0.4)
    ref = SpringDeformer(sp.topology(), binding, sp.bind_joints, sp.parents, cfg.spring)
    want = copy_to_display(sp.topology(), ref.solve(posed, edits=terms)[0]).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    topo = ch.topology(key)
    cod = np.asarray(topo.control_of_display)
    kin, static = np.isin(cod, edit.kinematic), np.isin(cod, edit.static)
    d = np.linalg.norm((got - plain).astype(np.float64), axis=1)  # float32 squares of tiny gaps underflow
    assert d[kin].max() > 0.01          # the bump is there
    start = copy_to_display(sp.topology(), ref.rigid(ref.frame(posed)))
    np.testing.assert_allclose(got[static], start[static], atol=1e-6, rtol=0)  # held at the initial skinning
    ch.clear_edits()
    s.settle(render=False)
    np.testing.assert_array_equal(ch.vertices()[key], plain)


def test_cpu_refuses_edits_for_other_deformers():
    with Session(device="cpu", render=False, deformer="irs") as s:
        ch = s.spawn("cylinder")
        with pytest.raises(ValueError, match="set_deformer"):
            ch.add_edit(ch.skinned_primitives[0], SurfaceEdit([0], [[0.0, 0.0, 0.1]]))
    with Session(device="cpu", render=False, deformer="lbs") as s:
        ch = s.spawn("cylinder")
        sp = s.meshes.instances[ch.entity][0].skinned
        with pytest.raises(ValueError, match="spring"):
            sp.deform(ch.joints(), "lbs", edits=EditTerms.empty(sp.topology().n_control))
