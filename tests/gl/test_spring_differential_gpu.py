"""The springs' differential term (`SpringParams.k_d`, issue 26) on the GPU spring stage (llvmpipe here): after 1, 7
and 50 iterations the GPU matches the numpy reference within 1e-5 of the bounding-box diagonal, on a tube of the
family (tests/helpers/tube_rig.py; with the volume term, with a surface edit) and on Khronos' RiggedFigure (the rig
whose boxes the springs fold without the term). Each case also checks that the term changes the result, so the
comparison sees it (spring_frame.comp's turned offsets, spring.comp's force and step limit)."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning.edits import EditStack, SurfaceEdit
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.springs import SpringDeformer, SpringParams
from tests.conftest import shared_dir
from tests.helpers.tube_rig import pose, tube

pytestmark = pytest.mark.gl
TOL = 1e-5
K_D = 5.0
ITERATIONS = (1, 7, 50)


@pytest.fixture(scope="module")
def rig():
    return tube(rings=10, segments=8)


def _gpu(gl_ctx, resources, add, skin, posed, params_list, edits=None):
    """The GPU's control points for each of params_list (one graph, the params set in turn)."""
    graph = DeformerGraph(gl_ctx, resources)
    out = []
    try:
        for params in params_list:
            h = add(graph, params)
            graph.set_pose(h, skin, posed)
            if edits is not None:
                graph.set_edits(h, edits)
            graph.run()
            out.append(graph.download_control(h, "deformed"))
            graph.remove_mesh(h)
    finally:
        graph.release()
    return out


def _tube_case(rig, volume: bool, edit: bool):
    """(params per iteration count, posed, skin, edit terms or None) of one tube case."""
    base: dict[str, Any] = dict(convergence="iterations", k_d=K_D, k_v=3.0 if volume else 0.0)
    if edit:
        base.update(k_e=2.0, handle_weight=0.3)
    skin, posed = pose(rig, bend=0.9, twist=0.6)
    terms = None
    if edit:
        d = SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, SpringParams(**base))
        fr = d.frame(posed)
        kin = np.array([30, 31, 32])
        target = fr.attach[kin] + 1.6 * (d.rigid(fr)[kin] - fr.attach[kin])  # pushed outwards
        terms = EditStack([SurfaceEdit.from_world(kin, target, fr.attach, fr.rot, stiffness=3.0)]).terms(
            rig.topology.n_control, fr.attach, fr.rot)
    return base, skin, posed, terms


@pytest.mark.parametrize("volume,edit", [(False, False), (True, False), (True, True)],
                         ids=["plain", "volume", "volume-edit"])
def test_tube_matches_the_reference(gl_ctx, resources, rig, volume, edit):
    base, skin, posed, terms = _tube_case(rig, volume, edit)
    params = [SpringParams(**base, max_iterations=n) for n in ITERATIONS]

    def add(graph, p):
        return graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents,
                              method="spring", spring=p)

    gpu = _gpu(gl_ctx, resources, add, skin, posed, params, edits=terms)
    diag = M.bbox_diagonal(rig.topology.positions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for p, out in zip(params, gpu):
            d = SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, p)
            if volume:
                assert np.any(d.rest.vol_region >= 0)  # the volume term acts on this tube
            ref, stats = d.solve(posed, edits=terms)
            assert stats.iterations == p.max_iterations
            np.testing.assert_allclose(out, ref, atol=TOL * diag, rtol=0)
        # the term changes the result at 50 iterations (the comparison above sees it)
        off = SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents,
                             params[-1].replace(k_d=0.0)).solve(posed, edits=terms)[0]
    assert np.abs(off - gpu[-1]).max() > 100 * TOL * diag


def test_riggedfigure_matches_the_reference(gl_ctx, resources):
    from engine.anim.fk import global_matrices
    from engine.anim.pose import Pose
    from engine.anim.rig import Rig
    from engine.anim.sampling import ClipSampler
    from engine.scene import load_asset
    from engine.skinning.instances import skinned_primitives

    loaded = load_asset(str(shared_dir("gltf-samples") / "RiggedFigure.glb"))
    arig = Rig.from_asset(loaded.asset)
    sp = skinned_primitives(loaded.asset, arig)[0]
    g = global_matrices(arig, ClipSampler(arig, loaded.asset.clips[0]).sample(0.5, Pose.rest(arig)))
    topo, prim = sp.topology(), sp.primitive
    params = [SpringParams(convergence="iterations", max_iterations=n, k_d=K_D) for n in ITERATIONS]

    def add(graph, p):
        return graph.add_mesh(topo, sp.binding(), prim.joints, prim.weights, sp.skin.inverse_bind, sp.parents,
                              method="spring", spring=p)

    gpu = _gpu(gl_ctx, resources, add, sp.skin_matrices(g), g[sp.skin.joints], params)
    diag = M.bbox_diagonal(topo.positions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for p, out in zip(params, gpu):
            d = SpringDeformer(topo, sp.binding(), sp.bind_joints, sp.parents, p, joints=prim.joints,
                               weights=prim.weights)
            ref, _ = d.solve(g[sp.skin.joints])
            np.testing.assert_allclose(out, ref, atol=TOL * diag, rtol=0)
        assert np.ptp(d.rest.diff_scale) > 0.3  # the points' shares differ: the comparison sees them
        off = SpringDeformer(topo, sp.binding(), sp.bind_joints, sp.parents, params[-1].replace(k_d=0.0),
                             joints=prim.joints, weights=prim.weights).solve(g[sp.skin.joints])[0]
    assert np.abs(off - gpu[-1]).max() > 100 * TOL * diag


def test_batch_mixed_and_switched_at_run_time(gl_ctx, resources, rig):
    """Two tubes in one batch, one with the term and one without, each match their reference; the second switched
    on at run time (set_spring: the instance table only, spring_frame.comp then writes its offsets) matches too."""
    on = SpringParams(convergence="iterations", max_iterations=7, k_d=K_D)
    off = on.replace(k_d=0.0)
    skin, posed = pose(rig, bend=0.9, twist=0.6)
    diag = M.bbox_diagonal(rig.topology.positions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = {p.k_d: SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, p).solve(posed)[0]
               for p in (on, off)}
    assert np.abs(ref[K_D] - ref[0.0]).max() > 100 * TOL * diag
    graph = DeformerGraph(gl_ctx, resources)
    try:
        hs = [graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents,
                             method="spring", spring=p) for p in (on, off)]
        for h in hs:
            graph.set_pose(h, skin, posed)
        graph.run()
        for h, k in zip(hs, (K_D, 0.0)):
            np.testing.assert_allclose(graph.download_control(h, "deformed"), ref[k], atol=TOL * diag, rtol=0)
        graph.set_spring(hs[1], on)
        graph.run()
        for h in hs:
            np.testing.assert_allclose(graph.download_control(h, "deformed"), ref[K_D], atol=TOL * diag, rtol=0)
    finally:
        graph.release()


@pytest.mark.parametrize("case", [dict(convergence="displacement", max_iterations=100),
                                  dict(convergence="force", max_iterations=300),
                                  dict(convergence="energy", max_iterations=300, dt=0.08, energy_rtol=1e-4,
                                       integrator="explicit")],
                         ids=lambda c: str(c["convergence"]))
def test_convergence_schemes_stop_where_the_reference_does(gl_ctx, resources, rig, case):
    """The term's force and energy enter the schemes' checks as in the reference: same stopping iteration."""
    params = SpringParams(k_d=K_D, **case)
    skin, posed = pose(rig, bend=0.9, twist=0.6)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = graph.add_mesh(rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents,
                           method="spring", spring=params)
        graph.set_pose(h, skin, posed)
        graph.run()
        out, st = graph.download_control(h, "deformed"), graph.spring_status(h)
    finally:
        graph.release()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref, stats = SpringDeformer(rig.topology, rig.binding, rig.bind_joints, rig.parents, params).solve(posed)
    assert st["iterations"] == stats.iterations < params.max_iterations and st["reason"] == stats.reason
    np.testing.assert_allclose(out, ref, atol=TOL * M.bbox_diagonal(rig.topology.positions), rtol=0)
