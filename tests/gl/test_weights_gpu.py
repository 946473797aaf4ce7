"""The GPU skin stage with more than 4 influences (skin.comp INFLUENCE_SETS = 2, an unfused batch) against the
numpy reference over all 8 influences, LBS and DQS; a 4-influence mesh next to it keeps its fused batch."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.gpu.context import GLContext
from engine.scene import load_asset
from engine.skinning.skinning import dqs, lbs
from engine.skinning.weights.io import primitive_weights
from tests.helpers.weights_asset import JOINT_NAMES as JOINT
from tests.helpers.weights_asset import run_cli, tube_asset

pytestmark = pytest.mark.gl


@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_eight_influences_on_the_gpu_match_the_reference(gl_ctx, tmp_path, method):
    path = tube_asset(tmp_path / "tube8.glb", influences=8, rings=17, sides=8)
    loaded = load_asset(path)
    (p,) = primitive_weights(loaded)
    assert p.slots == 8
    with Session(gl=GLContext(gl_ctx, None, True), render=False, deformer=method, strict=True, width=64,
                 height=64) as s:
        ch = s.spawn(loaded, clip="wave", time=0.6, speed=0.0, mode="clamp")
        got = ch.vertices()[p.key]
        world = ch.joints()
        graph = s.meshes.graph
        sets = sorted(b.influence_sets for b in graph._batches.values())
    mats = (world[p.joint_nodes].astype(np.float64) @ p.inverse_bind.astype(np.float64)).astype(np.float32)
    ref = (lbs if method == "lbs" else dqs)(p.positions, p.joints, p.weights, mats)
    four = (lbs if method == "lbs" else dqs)(p.positions, p.joints[:, :4], p.weights[:, :4]
                                             / p.weights[:, :4].sum(1, keepdims=True), mats)
    assert sets == [2]
    assert np.abs(four - ref).max() > 1e-3  # the second set changes the result
    np.testing.assert_allclose(got, ref, atol=2e-5)


def test_four_and_eight_influence_meshes_in_one_session(gl_ctx, tmp_path):
    """A 4-influence mesh keeps its (fused) batch beside the 8-influence one; both match the reference."""
    paths = [tube_asset(tmp_path / f"tube{k}.glb", influences=k, rings=9, sides=6) for k in (4, 8)]
    with Session(gl=GLContext(gl_ctx, None, True), render=False, deformer="lbs", strict=True, width=64,
                 height=64) as s:
        chars = [(s.spawn(load_asset(p), clip="wave", time=0.3, speed=0.0, mode="clamp"), p) for p in paths]
        got = [(next(iter(ch.vertices().values())), ch.joints(), p) for ch, p in chars]
        batches = {b.influence_sets: bool(b.fused) for b in s.meshes.graph._batches.values()}
    assert batches == {1: True, 2: False}
    for v, world, path in got:
        (p,) = primitive_weights(load_asset(path))
        mats = (world[p.joint_nodes].astype(np.float64) @ p.inverse_bind.astype(np.float64)).astype(np.float32)
        np.testing.assert_allclose(v, lbs(p.positions, p.joints, p.weights, mats), atol=2e-5)


def test_window_isolines_through_the_gbuffer(gl_ctx, tmp_path, capsys):
    """`weights spline` with window-space isolines: the strokes' surface points (picked in the G-buffer of the
    rest pose through the file's camera) get the joint's iso-values within 0.02."""
    import json

    from engine.authoring.weights import isoline_samples
    from engine.input.strokefile import load_stroke_file

    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=23, sides=8)
    (tmp_path / "s.json").write_text(json.dumps({
        "version": 1, "camera": {"eye": [0.5, 0.0, 1.5], "target": [0.5, 0.0, 0.0], "fov": 30, "width": 160,
                                 "height": 120},
        "strokes": [{"role": "isoline", "space": "window", "iso": 0.85, "points": [[95, 55], [95, 65]]},
                    {"role": "isoline", "space": "window", "iso": 0.15, "points": [[65, 55], [65, 65]]}]}))
    status, _, err = run_cli(capsys, ["weights", "spline", src, "--joint", "Arm.L2", "--splines", tmp_path / "s.json",
                                      "--out", tmp_path / "o.glb"])
    assert status == 0, err
    loaded = load_asset(src)
    (p,) = primitive_weights(loaded)
    sf = load_stroke_file(tmp_path / "s.json", roles=("isoline",), brush_radius=False)
    samples = isoline_samples(loaded, p, sf, device="gpu")
    (q,) = primitive_weights(load_asset(tmp_path / "o.glb"))
    topo = p.skinned.topology()
    w = q.dense()[topo.display_of_control, JOINT.index("Arm.L2")]
    for smp, iso in zip(samples, (0.85, 0.15)):
        assert smp.faces.size >= 2
        vals = (smp.barycentrics * w[topo.triangles[smp.faces]]).sum(1)
        assert np.abs(vals - iso).max() < 0.02
