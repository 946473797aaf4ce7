"""Rig flattening, forward kinematics and skinning matrices on hand-computed hierarchies."""
from __future__ import annotations

import numpy as np
import pytest

from engine.anim.fk import global_matrices, global_matrices_batched, joint_matrices, local_matrices, skin_matrices
from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.assets.model import Asset, Node, Scene, Skin
from engine.math import quat
from tests.helpers.synthetic_asset import make_asset

F = np.float32
S2 = np.sqrt(0.5)

# Hand-computed (see the comments) for the chain root -> mid (matrix node) -> leaf.
# root: T=(1,0,0), R=90 deg about z, S=2    -> L0 = [[0,-2,0,1],[2,0,0,0],[0,0,2,0],[0,0,0,1]]
# mid:  matrix = 90 deg about x, T=(0,1,0)  -> L1 = [[1,0,0,0],[0,0,-1,1],[0,1,0,0],[0,0,0,1]]
# leaf: T=(0,0,3), S=(1,0.5,1)              -> L2 = diag(1,0.5,1) with translation (0,0,3)
L1 = np.array([[1, 0, 0, 0], [0, 0, -1, 1], [0, 1, 0, 0], [0, 0, 0, 1]], F)
G0 = np.array([[0, -2, 0, 1], [2, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 1]], F)
G1 = np.array([[0, 0, 2, -1], [2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 0, 1]], F)  # G0 @ L1
G2 = np.array([[0, 0, 2, 5], [2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]], F)  # G1 @ L2


def _chain_asset() -> Asset:
    """Node indices deliberately not in parent-first order: leaf=0, root=2, mid=1, plus a lone root 3."""
    leaf = Node("leaf", parent=1, translation=np.array([0, 0, 3], F), scale=np.array([1, 0.5, 1], F))
    mid = Node("mid", parent=2, children=[0], matrix=L1.copy())
    root = Node("root", children=[1], translation=np.array([1, 0, 0], F), rotation=np.array([0, 0, S2, S2], F),
                scale=np.array([2, 2, 2], F))
    lone = Node("lone", translation=np.array([0, 7, 0], F))
    return Asset(path=None, nodes=[leaf, mid, root, lone], scenes=[Scene("s", [2])])


def test_rig_order_levels_and_rest():
    rig = Rig.from_asset(_chain_asset())
    np.testing.assert_array_equal(rig.parents, [1, 2, -1, -1])
    np.testing.assert_array_equal(rig.depth, [2, 1, 0, 0])
    np.testing.assert_array_equal(rig.order, [2, 3, 1, 0])
    assert [lv.tolist() for lv in rig.levels] == [[2, 3], [1], [0]]
    assert [lp.tolist() for lp in rig.level_parents] == [[-1, -1], [2], [1]]
    pos = {int(n): i for i, n in enumerate(rig.order)}
    assert all(pos[int(p)] < pos[c] for c, p in enumerate(rig.parents) if p >= 0)
    np.testing.assert_array_equal(rig.has_matrix, [False, True, False, False])
    np.testing.assert_array_equal(rig.in_scene, [True, True, True, False])  # "lone" is outside the scene
    # the matrix node gets a rest TRS by decomposition: 90 deg about x, T=(0,1,0), unit scale
    np.testing.assert_allclose(rig.translation[1], [0, 1, 0], atol=1e-6)
    np.testing.assert_allclose(rig.scale[1], [1, 1, 1], atol=1e-6)
    assert quat.angle_between(rig.rotation[1], np.array([S2, 0, 0, S2])) < 1e-5
    np.testing.assert_allclose(rig.static_matrix[1], L1)
    np.testing.assert_allclose(rig.static_matrix[2], G0, atol=1e-6)
    assert rig.node_index("mid") == 1
    with pytest.raises(ValueError, match="'nope'"):
        rig.node_index("nope")


def test_fk_chain_matches_hand_computed_matrices():
    rig = Rig.from_asset(_chain_asset())
    pose = Pose.rest(rig)
    assert not rig.fk_identity  # glTF order is not depth order here: FK permutes internally
    buf = np.zeros((4, 4, 4), F)
    g = global_matrices(rig, pose, out=buf)
    assert g is buf and g.shape == (4, 4, 4) and g.dtype == np.float32
    np.testing.assert_allclose(g[2], G0, atol=1e-6)
    np.testing.assert_allclose(g[1], G1, atol=1e-6)
    np.testing.assert_allclose(g[0], G2, atol=1e-6)
    want_lone = np.eye(4, dtype=F)
    want_lone[1, 3] = 7
    np.testing.assert_allclose(g[3], want_lone)
    # a point 1 m along the leaf's local x ends at G2 @ (1,0,0,1) = (5,2,0)
    np.testing.assert_allclose(g[0] @ np.array([1, 0, 0, 1], F), [5, 2, 0, 1], atol=1e-6)
    # the matrix node ignores its pose TRS (glTF forbids animating it)
    pose.translation[1] = [9, 9, 9]
    pose.rotation[1] = [0, 1, 0, 0]
    np.testing.assert_allclose(global_matrices(rig, pose)[0], G2, atol=1e-6)
    np.testing.assert_allclose(local_matrices(rig, pose)[1], L1)
    # animating the root rotates everything below it
    pose.rotation[2] = [0, 0, 0, 1]
    g = global_matrices(rig, pose)
    # leaf origin: L1 @ (0,0,3,1) = (0,-2,0); then scale 2 and shift by (1,0,0) -> (1,-4,0)
    np.testing.assert_allclose(g[0][:3, 3], [1, -4, 0], atol=1e-6)


def test_batched_fk_equals_single_pose_fk():
    asset = make_asset(20, seed=3)
    rig = Rig.from_asset(asset)
    n_inst = 5
    t = rig.translation + np.random.normal(0, 0.1, (n_inst, rig.count, 3)).astype(F)
    r = quat.normalize(np.random.normal(size=(n_inst, rig.count, 4))).astype(F)
    s = np.random.uniform(0.5, 1.5, (n_inst, rig.count, 3)).astype(F)
    gb = global_matrices_batched(rig, t, r, s)
    assert gb.shape == (n_inst, rig.count, 4, 4)
    for i in range(n_inst):
        single = global_matrices(rig, Pose(t[i], r[i], s[i]))
        np.testing.assert_allclose(gb[i], single, atol=1e-6)
        # and against a plain per-node recursion
        loc = local_matrices(rig, Pose(t[i], r[i], s[i]))
        ref = np.zeros_like(loc)
        for n in rig.order:
            p = rig.parents[n]
            ref[n] = loc[n] if p < 0 else ref[p] @ loc[n]
        np.testing.assert_allclose(gb[i], ref, rtol=1e-5, atol=1e-5)
    buf = np.empty_like(gb)
    assert global_matrices_batched(rig, t, r, s, out=buf) is buf
    np.testing.assert_array_equal(buf, gb)
    sk = skin_matrices(gb, asset.skins[0])
    assert sk.shape == (n_inst, 20, 4, 4)
    np.testing.assert_allclose(sk[2], skin_matrices(gb[2], asset.skins[0]), atol=1e-7)
    with pytest.raises(ValueError, match="pose arrays"):
        global_matrices_batched(rig, t[:, :3], r, s)


def test_skin_matrices_identity_at_bind_and_joint_matrices():
    asset = make_asset(12, seed=1)
    rig = Rig.from_asset(asset)
    g = global_matrices(rig, Pose.rest(rig))
    skin = asset.skins[0]
    np.testing.assert_allclose(skin_matrices(g, skin), np.tile(np.eye(4), (12, 1, 1)), atol=1e-5)
    np.testing.assert_array_equal(joint_matrices(g, skin), g[skin.joints])
    np.testing.assert_allclose(rig.bind_globals(0), g[skin.joints], atol=1e-5)


def test_skin_parents_skip_non_joints_and_foreign_ancestors():
    #   0 root (not a joint) -> 1 hip (joint) -> 2 helper (not a joint) -> 3 knee (joint) -> 4 foot (joint)
    #   1 hip -> 5 spine (joint);  6 other root joint
    nodes = [Node(f"n{i}") for i in range(7)]
    for c, p in [(1, 0), (2, 1), (3, 2), (4, 3), (5, 1)]:
        nodes[c].parent = p
    eye = np.tile(np.eye(4, dtype=F), (5, 1, 1))
    skin = Skin("s", joints=np.array([4, 3, 1, 5, 6]), inverse_bind=eye)
    skin2 = Skin("t", joints=np.array([3, 4]), inverse_bind=eye[:2])
    rig = Rig.from_asset(Asset(path=None, nodes=nodes, skins=[skin, skin2]))
    got = rig.skin_parents(skin)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [1, 2, -1, 2, -1])  # foot->knee, knee->hip (over helper), spine->hip
    np.testing.assert_array_equal(rig.skin_parents(1), [-1, 0])
    with pytest.raises(ValueError, match="skin 5"):
        rig.skin_parents(5)


def test_rig_rejects_broken_hierarchies():
    a = Asset(path=None, nodes=[Node("a", parent=1), Node("b", parent=0)])
    with pytest.raises(ValueError, match="cycle"):
        Rig.from_asset(a)
    b = Asset(path=None, nodes=[Node("a", children=[2]), Node("b", children=[2]), Node("c")])
    with pytest.raises(ValueError, match="two parents"):
        Rig.from_asset(b)
    with pytest.raises(ValueError, match="scene 3"):
        Rig.from_asset(_chain_asset(), scene=3)
    with pytest.raises(ValueError, match="out of range"):
        Rig.from_asset(Asset(path=None, nodes=[Node("a", children=[5])]))
