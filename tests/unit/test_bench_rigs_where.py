"""`bench springs --rigs-where` (bench/bench_springs.py `fold_sources`): where the springs fold a Khronos rig, its
counts checked against the fold metric and the binding they summarise (RiggedFigure: 130 control points)."""
from __future__ import annotations

import warnings

import numpy as np

from bench.bench_springs import AGAINST_WEIGHTS, fold_sources
from engine.anim.fk import global_matrices
from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.anim.sampling import ClipSampler
from engine.skinning.binding.pipeline import per_control
from engine.skinning.metrics import dihedral_change_share, interior_edge_faces
from tests.conftest import shared_dir


def test_fold_sources_count_the_fold_metric_and_the_binding():
    from engine.scene import load_asset

    loaded = load_asset(str(shared_dir("gltf-samples") / "RiggedFigure.glb"))
    rig = Rig.from_asset(loaded.asset)
    g = global_matrices(rig, ClipSampler(rig, loaded.asset.clips[0]).sample(0.5, Pose.rest(rig)))
    sp = loaded.skinned[0]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        f = fold_sources(sp, g)
        topo = sp.topology()
        x0 = np.asarray(topo.positions, np.float64)
        n_pairs = interior_edge_faces(np.asarray(topo.triangles)).shape[0]
        for method in ("lbs", "spring"):
            x = np.asarray(sp.deform(g, method), np.float64)[topo.display_of_control]
            assert f[method] == round(dihedral_change_share(x, x0, topo.triangles) * n_pairs), method
    assert 0 <= f["flat"] <= f["spring"]
    assert f["points"] <= 2 * f["spring"] and (f["points"] >= 2) == (f["spring"] > 0)  # two per folded edge
    assert 0 <= f["against"] <= f["points"] and f["dev"] >= 0.0
    # "against" counts points whose binding bone's parent joint holds under AGAINST_WEIGHTS of their weights:
    # over all points the same rule finds at least as many
    b = sp.binding()
    jn = np.asarray(per_control(topo, np.asarray(sp.primitive.joints)), np.int64)
    w = np.asarray(per_control(topo, np.asarray(sp.primitive.weights)), np.float64)
    carrier = np.asarray(b.bones.parent_joint)[np.asarray(b.bone)]
    share = np.where(jn == carrier[:, None], w, 0.0).sum(1) / w.sum(1)
    assert f["against"] <= np.sum(share < AGAINST_WEIGHTS)


def test_spring_option_parses_validated_parameters():
    import pytest

    from bench.bench_springs import spring_params

    p = spring_params("k_d=10, contact=true,max_iterations=80")
    assert (p.k_d, p.contact, p.max_iterations) == (10.0, True, 80)
    assert spring_params("  ") is None
    for bad, match in (("k_d", "not KEY=VALUE"), ("k_d=-1", "out of range"), ("k_q=1", "unknown spring")):
        with pytest.raises(ValueError, match=match):
            spring_params(bad)
