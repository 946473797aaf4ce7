"""K spring iterations per dispatch (issue 24, step 5): the spring node's ``iterations_per_dispatch`` runs
spring_tiled.comp (tiles of a work group's points of one bone region in shared memory, the halo frozen for the
block; engine.skinning.springs.tiles) and equals the tiled numpy reference (SpringDeformer.solve(block=K)) at
I = 1, 7 and 50 on a tube, the humanoid, a family tube and the Khronos Fox; K = 1 is the untiled stage; the
energy and force schemes run one iteration per dispatch whatever the option says; a frame of 50 iterations at
K = 5 issues 10 iteration dispatches and 12 in all.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from bench.common import count_stage_calls
from engine.gpu.glfunc import multi_bind
from engine.skinning import meshprep as M
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.gpu.plan import default_config
from engine.skinning.gpu.stages import SpringContext
from engine.skinning.springs import SpringDeformer, SpringParams
from tests.helpers.tube_rig import pose, tube

pytestmark = pytest.mark.gl
TOL = 1e-5  # of the bounding-box diagonal (float32 GPU vs float64 reference)


@pytest.fixture(scope="module")
def rig():
    return tube(rings=12, segments=12, n_joints=4)  # 156 control points: 3 work groups, 4 regions, 7 tiles


@functools.cache
def _humanoid():
    from bench.bench_deform import _pose
    from tests.helpers.character_rig import load_character

    topo, binding, jn, w, ib, parents, bj = load_character("humanoid")
    skin, posed = _pose(bj, ib)
    return (topo, binding, jn, w, ib, parents, bj), skin, posed


def _run(gl_ctx, resources, arrays, skin, posed, params, k, frames=1, **options):
    topo, binding, jn, w, ib, parents, _ = arrays
    cfg = default_config("spring").to_dict()
    cfg["nodes"][1]["options"]["iterations_per_dispatch"] = k
    cfg["nodes"][1]["options"].update(options)
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = graph.add_mesh(topo, binding, jn, w, ib, parents, config=cfg, spring=params)
        graph.set_pose(h, skin, posed)
        for _ in range(frames):
            graph.run()
        return graph.download_control(h, "deformed"), graph.spring_status(h)
    finally:
        graph.release()


def _tube_arrays(rig):
    return rig.topology, rig.binding, rig.joints, rig.weights, rig.inverse_bind, rig.parents, rig.bind_joints


def _reference(arrays, params, posed, block):
    topo, binding, _, _, _, parents, bj = arrays
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return SpringDeformer(topo, binding, bj, parents, params).solve(posed, block=block)


@pytest.mark.parametrize("iterations", [1, 7, 50])
@pytest.mark.parametrize("kw", [{}, dict(integrator="explicit", acceleration="momentum"), dict(k_d=5.0)],
                         ids=["default", "momentum", "differential"])
def test_tube_gpu_equals_tiled_reference(gl_ctx, resources, rig, iterations, kw):
    params = SpringParams(convergence="iterations", max_iterations=iterations, **kw)
    skin, posed = pose(rig, bend=0.9, twist=0.6)
    arrays = _tube_arrays(rig)
    out, st = _run(gl_ctx, resources, arrays, skin, posed, params, 5, frames=2)  # the 2nd frame: the same
    ref, stats = _reference(arrays, params, posed, 5)
    assert st["iterations"] == stats.iterations == iterations and st["reason"] == "max_iterations"
    diag = M.bbox_diagonal(rig.topology.positions)
    np.testing.assert_allclose(out, ref, atol=TOL * diag, rtol=0)
    if iterations >= 7:  # the tiled iteration is not the untiled one: the comparison tells them apart
        untiled, _ = _reference(arrays, params, posed, None)
        assert np.abs(untiled - ref).max() > 10 * TOL * diag


@pytest.mark.parametrize("iterations", [1, 7, 50])
def test_humanoid_gpu_equals_tiled_reference(gl_ctx, resources, iterations):
    arrays, skin, posed = _humanoid()
    params = SpringParams(convergence="iterations", max_iterations=iterations, integrator="explicit")
    out, st = _run(gl_ctx, resources, arrays, skin, posed, params, 5)
    ref, stats = _reference(arrays, params, posed, 5)
    assert st["iterations"] == stats.iterations == iterations
    np.testing.assert_allclose(out, ref, atol=TOL * M.bbox_diagonal(arrays[0].positions), rtol=0)


@functools.cache
def _fox():
    """The Khronos Fox (a rig nobody here modelled, 290 control points) running at 0.3 s: arrays as the GPU and
    the reference take them, the reference bound with the skin weights as every skinned primitive is."""
    from bench.bench_springs import exaggerated_globals
    from engine.anim.rig import Rig
    from engine.assets.gltf import load
    from engine.skinning.instances import skinned_primitives

    asset = load("../shared/gltf-samples/Fox.glb")
    sp = skinned_primitives(asset, Rig.from_asset(asset))[0]
    g = exaggerated_globals(asset, "Run", 0.3, factor=1.0)
    prim = sp.primitive
    arrays = (sp.topology(), sp.binding(), prim.joints, prim.weights, sp.skin.inverse_bind, sp.parents,
              sp.bind_joints)
    return sp, arrays, sp.skin_matrices(g), np.asarray(g[sp.skin.joints], np.float32)


@pytest.mark.parametrize("iterations", [1, 7, 50])
def test_khronos_fox_gpu_equals_tiled_reference(gl_ctx, resources, iterations):
    sp, arrays, skin, posed = _fox()
    topo, binding, jn, w, _, parents, bj = arrays
    params = SpringParams(convergence="iterations", max_iterations=iterations)
    out, st = _run(gl_ctx, resources, arrays, skin, posed, params, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref, stats = SpringDeformer(topo, binding, bj, parents, params, joints=jn, weights=w).solve(posed, block=5)
    assert st["iterations"] == stats.iterations == iterations
    np.testing.assert_allclose(out, ref, atol=TOL * M.bbox_diagonal(topo.positions), rtol=0)


@pytest.mark.parametrize("iterations", [7, 50])
def test_family_tube_gpu_equals_tiled_reference(gl_ctx, resources, iterations):
    """The smallest three-bone member of the spring family (engine.assets.gen.family), bent and twisted 90 deg."""
    from engine.assets.gen.family import TubePose, tube_family
    from engine.skinning.family import MemberRig

    member = min((m for m in tube_family(12) if len(m.elbows) == 2), key=lambda m: m.positions.shape[0])
    rig = MemberRig(member)
    posed = member.posed_joints(TubePose("bend90+twist90", bend=90.0, twist=90.0)).astype(np.float32)
    skin = (posed @ np.linalg.inv(member.bind_joints)).astype(np.float32)
    arrays = (rig.topology, rig.binding, member.joints, member.weights,
              np.linalg.inv(member.bind_joints).astype(np.float32), member.parents, member.bind_joints)
    params = SpringParams(convergence="iterations", max_iterations=iterations)
    out, st = _run(gl_ctx, resources, arrays, skin, posed, params, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref, stats = SpringDeformer(rig.topology, rig.binding, member.bind_joints, member.parents, params,
                                    joints=member.joints, weights=member.weights).solve(posed, block=5)
    assert st["iterations"] == stats.iterations == iterations
    np.testing.assert_allclose(out, ref, atol=TOL * M.bbox_diagonal(rig.topology.positions), rtol=0)


def test_k_one_is_the_untiled_stage(gl_ctx, resources, rig):
    params = SpringParams(convergence="iterations", max_iterations=20)
    skin, posed = pose(rig, bend=0.9, twist=0.6)
    arrays = _tube_arrays(rig)
    one, _ = _run(gl_ctx, resources, arrays, skin, posed, params, 1)
    ref, _ = _reference(arrays, params, posed, None)
    np.testing.assert_allclose(one, ref, atol=TOL * M.bbox_diagonal(rig.topology.positions), rtol=0)


def test_displacement_scheme_stops_at_a_block_end(gl_ctx, resources, rig):
    params = SpringParams(convergence="displacement", max_iterations=300, integrator="explicit",
                          acceleration="momentum")
    skin, posed = pose(rig, bend=0.9, twist=0.6)
    arrays = _tube_arrays(rig)
    out, st = _run(gl_ctx, resources, arrays, skin, posed, params, 5)
    ref, stats = _reference(arrays, params, posed, 5)
    assert st["reason"] == stats.reason == "displacement"
    assert st["iterations"] % 5 == 0 and abs(st["iterations"] - stats.iterations) <= 5
    np.testing.assert_allclose(out, ref, atol=1e-4 * M.bbox_diagonal(rig.topology.positions), rtol=0)


@pytest.mark.parametrize("scheme", ["energy", "force"])
def test_energy_and_force_schemes_run_one_per_dispatch(gl_ctx, resources, rig, scheme):
    params = SpringParams(convergence=scheme, max_iterations=40, dt=0.08, energy_rtol=1e-4)
    skin, posed = pose(rig, bend=0.9, twist=0.6)
    arrays = _tube_arrays(rig)
    out, st = _run(gl_ctx, resources, arrays, skin, posed, params, 5)
    ref, stats = _reference(arrays, params, posed, None)
    assert st["iterations"] == stats.iterations
    np.testing.assert_allclose(out, ref, atol=TOL * M.bbox_diagonal(rig.topology.positions), rtol=0)


@pytest.mark.parametrize("k_v", [1.0, 0.0], ids=["volume", "no-volume"])
def test_one_frame_dispatch_count(gl_ctx, resources, rig, k_v):
    skin, posed = pose(rig)
    topo, binding, jn, w, ib, parents, _ = _tube_arrays(rig)
    counts = {}
    for k in (1, 5, 10):
        cfg = default_config("spring").to_dict()
        cfg["nodes"][1]["options"]["iterations_per_dispatch"] = k
        graph = DeformerGraph(gl_ctx, resources)
        try:
            h = graph.add_mesh(topo, binding, jn, w, ib, parents, config=cfg,
                               spring=SpringParams(convergence="iterations", max_iterations=50, k_v=k_v))
            graph.set_pose(h, skin, posed)
            graph.run()  # programs compiled, pools built
            with count_stage_calls(SpringContext) as n:
                graph.run()
            counts[k] = n
        finally:
            graph.release()
    pre = int(k_v != 0.0)
    for k, n in counts.items():
        # frame (+ the reset of the convergence and loop state, no pass of its own since issue 24's GL-call cut),
        # the volume pre-pass, ceil(50 / K) iteration dispatches, the last of which resolves
        assert n.dispatches == 1 + pre + -(-50 // k), (k, n)
        assert n.command_barriers == 0
    assert counts[1].calls - counts[5].calls == 2 * 40  # a dispatch + barrier each
    # issue 24's llvmpipe target at K = 5, I = 50: at most ~12 dispatches and ~30 GL calls (the bindings are two
    # multi-bind calls where GL 4.4 has them)
    assert counts[5].dispatches <= 12
    if multi_bind(gl_ctx).available:
        assert counts[5].calls <= 30, counts[5]


@pytest.mark.parametrize("bad", [0, 65, 2.5, True, "5"])
def test_iterations_per_dispatch_refuses_bad_values(gl_ctx, resources, rig, bad):
    skin, posed = pose(rig)
    with pytest.raises(ValueError, match=r"iterations_per_dispatch must be an integer in \[1, 64\], got "):
        _run(gl_ctx, resources, _tube_arrays(rig), skin, posed, SpringParams(), bad)
