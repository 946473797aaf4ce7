"""Pose layers (engine/components.py PoseLayer, Character posing API, engine/anim/save.py): a pose is an
additive layer over the playing clip, a still character does not compound it, undo restores the exact pose,
keys go into a clip, and the saved .glb reads back through the loader with the same vertices and the other
clips kept (also from a multi-buffer .gltf source)."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.anim import Pose
from engine.anim.save import pose_channels, read_document, save_with_poses
from engine.math import quat
from engine.scene import quiet_load
from game.commands.export_frame import deformed_frame
from tests.conftest import shared_dir

Y = np.linspace(0.0, 1.0, 20)
UP = np.c_[np.zeros(20), Y, np.zeros(20)]
RIGHT = np.c_[Y, np.zeros(20), np.zeros(20)]


def _arm_strokes(ch):
    j = ch.joints()[:, :3, 3].astype(np.float64)
    a, b, c = j[6], j[7], j[8]  # upper_arm_L, forearm_L, hand_L
    base = np.vstack([np.linspace(a, b, 10), np.linspace(b, c, 10)[1:]])
    raised = a + np.c_[np.linspace(0, 0.38, 19), np.linspace(0, 0.38, 19), np.zeros(19)]
    return base, raised


def test_a_walking_character_keeps_its_pose_layer_over_the_clip():
    with Session(device="cpu", render=False) as s:
        posed = s.spawn("humanoid", clip="walk", time=0.2)
        plain = s.spawn("humanoid", clip="walk", time=0.2)
        res = posed.apply_line_of_action(*_arm_strokes(posed), brush_radius=0.05)
        assert [posed.loaded.rig.names[i] for i in res.selected] == ["upper_arm_L", "forearm_L", "hand_L"]
        hand = posed.joints()[8, :3, 3]
        assert hand[1] > 1.6  # the hand went up
        deltas = posed.pose_layer.rotation.copy()
        for _ in range(3):
            s.step(7)
            want = quat.normalize(quat.multiply(deltas, plain.local_pose().rotation))
            got = posed.local_pose().rotation
            np.testing.assert_allclose(np.abs(np.sum(got * want, axis=1)), 1.0, atol=1e-6)
            legs = slice(13, 21)  # unposed joints follow the clip exactly
            np.testing.assert_allclose(posed.joints()[legs], plain.joints()[legs], atol=1e-6)
        assert posed.time == pytest.approx(plain.time)


def test_a_still_character_does_not_compound_its_layer_and_undo_is_exact():
    with Session(device="cpu", render=False) as s:
        ch = s.spawn("cylinder", clip=None)
        rest = ch.joints()
        assert ch.pose_layer is None
        ch.apply_line_of_action(UP, RIGHT, brush_radius=0.05)
        first = ch.joints()
        np.testing.assert_allclose(first[2, :3, 3], [1, 0, 0], atol=1e-5)
        before = ch.pose_layer.rotation.copy()
        s.step(5)
        np.testing.assert_allclose(ch.joints(), first, atol=1e-6)  # applied afresh each step
        ch.apply_line_of_action(RIGHT, -UP, brush_radius=0.05)  # layered on top: down -Y now
        np.testing.assert_allclose(ch.joints()[2, :3, 3], [0, -1, 0], atol=1e-4)
        ch.set_pose_layer(before)  # undo the second stroke pair
        np.testing.assert_array_equal(ch.joints(), first)
        ch.clear_pose()
        assert ch.pose_layer is None
        np.testing.assert_array_equal(ch.joints(), rest)
        with pytest.raises(ValueError, match=r"pose layer rotations must be a finite \(4, 4\)"):
            ch.set_pose_layer(np.zeros((3, 4)))
        with pytest.raises(ValueError, match="selects no joint"):
            ch.apply_line_of_action(UP + 5.0, RIGHT + 5.0, brush_radius=0.05)
        assert ch.pose_layer is None  # a refused pose changes nothing


def test_keyed_pose_round_trips_through_the_loader(tmp_path):
    with Session(device="cpu", render=False) as s:
        ch = s.spawn("humanoid", clip="wave", time=0.4, speed=0.0)
        ch.apply_line_of_action(*_arm_strokes(ch), brush_radius=0.05)
        shown = {k: v.copy() for k, v in ch.vertices().items()}
        ch.key_pose("pose", time=0.0)
        out = ch.save_glb(tmp_path / "posed.glb")
        ch.key_pose("pose", time=0.0)  # saving again replaces the clip, never duplicates it
        again = ch.save_glb(tmp_path / "again.glb")
        with pytest.raises(ValueError, match="time must be"):
            ch.key_pose("pose", time=-1.0)
        with pytest.raises(ValueError, match=r"\.glb"):
            ch.save_glb(tmp_path / "posed.gltf")
    loaded = quiet_load(out)
    assert [c.name for c in loaded.asset.clips] == ["idle", "walk", "wave", "stretch", "pose"]
    assert [c.name for c in quiet_load(again).asset.clips] == ["idle", "walk", "wave", "stretch", "pose"]
    frame = deformed_frame(out, clip="pose", time=0.0)
    assert set(frame) == set(shown)
    for k in frame:
        np.testing.assert_allclose(frame[k], shown[k], atol=1e-5)
    walk = deformed_frame(out, clip="walk", time=0.5)  # the other clips are kept as they were
    ref = deformed_frame("humanoid", clip="walk", time=0.5)
    for k in walk:
        np.testing.assert_array_equal(walk[k], ref[k])


def test_two_keys_make_a_linear_clip():
    rig = quiet_load("cylinder").rig
    a, b = Pose.rest(rig), Pose.rest(rig)
    b.rotation[0] = quat.from_axis_angle(np.array([0.0, 0, 1]), np.pi / 2)
    chans = pose_channels(rig, {1.0: b, 0.0: a})
    assert len(chans) == 3 * int((~rig.has_matrix).sum())
    rot = next(c for c in chans if c.node == 0 and c.path == "rotation")
    np.testing.assert_array_equal(rot.times, [0.0, 1.0])
    np.testing.assert_allclose(rot.values[1], b.rotation[0])
    with pytest.raises(ValueError, match="at least one key"):
        pose_channels(rig, {})


def test_a_multi_buffer_gltf_is_gathered_into_one_glb(tmp_path):
    src = shared_dir("gltf-samples") / "SimpleSkin_glTF" / "SimpleSkin.gltf"
    doc, binary = read_document(src)
    assert len(doc["buffers"]) == 1 and "uri" not in doc["buffers"][0] and binary is not None
    loaded = quiet_load(src)
    pose = Pose.rest(loaded.rig)
    pose.rotation[loaded.rig.skins[0].joints[1]] = quat.from_axis_angle(np.array([0.0, 0, 1]), 0.5)
    out = save_with_poses(src, tmp_path / "simple.glb", loaded.rig, {"pose": {0.0: pose}})
    back = quiet_load(out)
    assert [c.name for c in back.asset.clips] == [c.name for c in loaded.asset.clips] + ["pose"]
    for k, v in deformed_frame(src, clip=0, time=0.7).items():
        np.testing.assert_array_equal(deformed_frame(out, clip=0, time=0.7)[k], v)
    textured = shared_dir("gltf-samples") / "AnimatedCube" / "AnimatedCube.gltf"
    doc, _ = read_document(textured)
    assert doc["images"] and all("bufferView" in i and "uri" not in i for i in doc["images"])
