"""Deep hierarchies: the rig set-up does linear work in the node count, FK costs log2(depth) steps on a chain,
cycles are named, and the loader refuses a node count over its documented limit (issue 16).

Work is counted, never timed: the numpy calls made while building a rig must not grow with the node count (the
per-level loop of the old set-up made two per level, so a chain of N nodes cost N scans of N nodes).
"""
from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import pytest

from engine.anim.fk import global_matrices, skin_matrices
from engine.anim.pose import Pose
from engine.anim.rig import JUMP_LEVELS, Rig
from engine.assets.errors import AssetError
from engine.assets.gltf import DEFAULT_MAX_NODES, load
from engine.assets.model import Asset, Node
from engine.math.transform import compose_trs
from tests.helpers.hostile import chain_asset, skinned_document, write_gltf


def _numpy_calls(fn: Callable[[], object]) -> int:
    """Number of calls into numpy (Python functions in numpy's files, C functions and ndarray methods) made by
    ``fn``."""
    count = 0

    def prof(frame, event, arg):  # noqa: ANN001, ANN202 - sys.setprofile signature
        nonlocal count
        if event == "call" and "numpy" in frame.f_code.co_filename:
            count += 1
        elif event == "c_call":
            owner = getattr(arg, "__self__", None)
            if (getattr(arg, "__module__", None) or "").startswith("numpy") or isinstance(owner, np.ndarray):
                count += 1

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def test_rig_setup_numpy_work_does_not_grow_with_chain_length():
    small, large = chain_asset(300), chain_asset(4800)
    calls_small = _numpy_calls(lambda: Rig.from_asset(small).skin_parents(0))
    calls_large = _numpy_calls(lambda: Rig.from_asset(large).skin_parents(0))
    # 16x the nodes (4 doublings): only the log2(depth) pointer-jumping rounds add calls, a few dozen per
    # doubling; a per-level or per-node numpy call would add thousands
    assert calls_large <= calls_small + 25 * 4, (calls_small, calls_large)


def test_deep_chain_depths_levels_and_skin_parents():
    n = 1000
    rig = Rig.from_asset(chain_asset(n))
    np.testing.assert_array_equal(rig.depth, np.arange(n)[::-1])
    assert len(rig.levels) == n and [lv.tolist() for lv in rig.levels[:2]] == [[n - 1], [n - 2]]
    assert rig.levels[-1].tolist() == [0] and rig.level_parents[-1].tolist() == [1]
    np.testing.assert_array_equal(rig.skin_parents(0), [1, -1])  # the leaf's nearest joint above is the root


def test_deep_chain_fk_takes_log_steps_and_matches_a_node_by_node_walk():
    n = 3000
    asset = chain_asset(n)
    rig = Rig.from_asset(asset)
    assert len(rig.levels) > JUMP_LEVELS
    assert len(rig.fk_slices) <= int(np.ceil(np.log2(n))) + 1
    rng = np.random.default_rng(3)
    pose = Pose.rest(rig)
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    half = rng.uniform(-0.01, 0.01, (n, 1))
    pose.rotation[:] = np.hstack([axis * np.sin(half), np.cos(half)]).astype(np.float32)
    g = global_matrices(rig, pose)
    ref = np.zeros((n, 4, 4), np.float64)
    for i in rig.order:  # parents first
        loc = compose_trs(pose.translation[i], pose.rotation[i], pose.scale[i]).astype(np.float64)
        ref[i] = loc if rig.parents[i] < 0 else ref[rig.parents[i]] @ loc
    np.testing.assert_allclose(g, ref, atol=2e-4)
    rest = skin_matrices(global_matrices(rig, Pose.rest(rig)), asset.skins[0])
    np.testing.assert_allclose(rest, np.tile(np.eye(4), (2, 1, 1)), atol=1e-4)


def test_jump_plan_on_a_branching_tree_matches_the_level_plan():
    rng = np.random.default_rng(5)
    n = 700  # each node hangs 1-3 steps below the previous one: deep (> JUMP_LEVELS) and branching
    parents = [-1] + [max(0, i - 1 - int(rng.integers(0, 3))) for i in range(1, n)]
    nodes = [Node(name=f"n{i}", parent=p, translation=rng.normal(0, 0.1, 3).astype(np.float32),
                  rotation=np.array([0, 0, np.sin(0.02), np.cos(0.02)], np.float32)) for i, p in enumerate(parents)]
    for i, p in enumerate(parents):
        if p >= 0:
            nodes[p].children.append(i)
    rig = Rig.from_asset(Asset(path=None, nodes=nodes))
    assert len(rig.levels) > JUMP_LEVELS
    g = global_matrices(rig, Pose.rest(rig))
    ref = np.zeros_like(g)
    for i in rig.order:
        loc = rig.static_matrix[i]
        ref[i] = loc if rig.parents[i] < 0 else ref[rig.parents[i]] @ loc
    np.testing.assert_allclose(g, ref, atol=1e-4)


def test_cycle_is_named():
    nodes = [Node("a", parent=2), Node("b", parent=0), Node("c", parent=1), Node("d", parent=1), Node("e")]
    with pytest.raises(ValueError, match=r"cycle through nodes \[0, 1, 2\]"):
        Rig.from_asset(Asset(path=None, nodes=nodes))


def test_loader_refuses_a_node_count_over_the_limit(tmp_path):
    doc, binary = skinned_document()
    path = write_gltf(tmp_path, doc, binary)
    assert len(load(path, max_nodes=3).nodes) == 3
    with pytest.raises(AssetError, match="nodes: 3 nodes, over the limit max_nodes=2"):
        load(path, max_nodes=2)
    assert DEFAULT_MAX_NODES >= 4096
    with pytest.raises(ValueError, match="max_nodes"):
        load(path, max_nodes=0)
