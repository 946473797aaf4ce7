"""Playback clock (loop / clamp / pingpong, negative speed), crossfades and pose blending."""
from __future__ import annotations

import numpy as np
import pytest

from engine.anim.playback import MODES, Playback, blend_poses, wrap_time
from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.assets.model import Asset, Channel, Clip, Node
from engine.math import quat

F = np.float32
Y = np.array([0.0, 1.0, 0.0])


def _asset() -> Asset:
    """Clip 0 'ramp': node 0 x = clip time over [0, 2]. Clip 1 'turn': node 0 at x = 10, rotated 90 deg about y,
    node 1 scaled 3x. Clip 2 'spin': node 0 rotation ramps 0 -> 180 deg about y over [0, 1]."""
    t2 = np.array([0, 2], F)
    ramp = Clip("ramp", [Channel(0, "translation", "LINEAR", t2, np.array([[0, 0, 0], [2, 0, 0]], F))])
    q90 = quat.from_axis_angle(Y, np.pi / 2).astype(F)
    turn = Clip("turn", [Channel(0, "translation", "STEP", np.array([0], F), np.array([[10, 0, 0]], F)),
                         Channel(0, "rotation", "LINEAR", np.array([0], F), q90[None]),
                         Channel(1, "scale", "LINEAR", np.array([0], F), np.array([[3, 3, 3]], F))])
    spin_keys = quat.from_axis_angle(np.stack([Y] * 3), np.array([0, np.pi / 2, np.pi])).astype(F)
    spin = Clip("spin", [Channel(0, "rotation", "LINEAR", np.array([0, 0.5, 1], F), spin_keys)])
    return Asset(path=None, nodes=[Node("a", children=[1]), Node("b", parent=0)], clips=[ramp, turn, spin])


def _playback(**kw) -> Playback:
    asset = _asset()
    rig = Rig.from_asset(asset)
    return Playback.for_asset(rig, asset, **kw)


def test_wrap_time_modes():
    assert wrap_time(2.5, 1.0, "loop") == pytest.approx(0.5)
    assert wrap_time(-0.25, 1.0, "loop") == pytest.approx(0.75)
    assert wrap_time(-0.25, 1.0, "clamp") == 0.0
    assert wrap_time(1.7, 1.0, "clamp") == 1.0
    assert wrap_time(1.25, 1.0, "pingpong") == pytest.approx(0.75)
    assert wrap_time(2.25, 1.0, "pingpong") == pytest.approx(0.25)
    assert wrap_time(-0.25, 1.0, "pingpong") == pytest.approx(0.25)
    assert wrap_time(5.0, 0.0, "loop") == 0.0
    arr = wrap_time(np.array([0.5, 1.5, 2.5]), 1.0, "pingpong")
    np.testing.assert_allclose(arr, [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="loop, clamp, pingpong"):
        wrap_time(0.0, 1.0, "bounce")


def test_loop_clamp_pingpong_and_negative_speed():
    pb = _playback(clip="ramp")
    assert pb.duration == 2.0 and pb.mode == "loop"
    pb.advance(0.5)
    assert pb.evaluate().translation[0, 0] == pytest.approx(0.5)
    pb.advance(2.0)  # 2.5 -> wraps to 0.5
    assert pb.local_time == pytest.approx(0.5)
    pb.speed = -1.0
    pb.advance(3.0)  # 2.5 - 3 = -0.5 -> loops to 1.5
    assert pb.local_time == pytest.approx(1.5)
    assert pb.evaluate().translation[0, 0] == pytest.approx(1.5)

    pb.mode = "clamp"
    assert pb.local_time == 0.0 and pb.evaluate().translation[0, 0] == 0.0
    pb.speed = 2.0
    pb.advance(3.0)  # -0.5 + 6 = 5.5 -> clamps at 2
    assert pb.local_time == 2.0 and pb.evaluate().translation[0, 0] == pytest.approx(2.0)

    pb.mode = "pingpong"  # 5.5 mod 4 = 1.5 <= 2: forward leg at 1.5
    assert pb.local_time == pytest.approx(1.5)
    pb.advance(0.5)  # 6.5 mod 4 = 2.5 -> backward leg: 4 - 2.5 = 1.5
    assert pb.local_time == pytest.approx(1.5)
    pb.advance(0.25)  # 7.0 -> 3.0 -> 1.0
    assert pb.evaluate().translation[0, 0] == pytest.approx(1.0)

    with pytest.raises(ValueError, match="valid modes: loop, clamp, pingpong"):
        pb.mode = "bounce"
    with pytest.raises(ValueError, match="valid modes"):
        _playback(mode="once")
    with pytest.raises(ValueError, match="speed"):
        pb.speed = float("nan")
    with pytest.raises(ValueError, match="clip 7"):
        pb.crossfade(7, 1.0)


def test_crossfade_endpoints_and_midpoint():
    pb = _playback(clip=0)
    pb.advance(1.0)
    before = pb.evaluate()
    pb.crossfade(1, 1.0)
    assert pb.fading and pb.fade_weight == 0.0 and pb.clip == 1
    start = pb.evaluate()  # weight 0: still the source pose
    np.testing.assert_allclose(start.translation, before.translation, atol=1e-6)
    np.testing.assert_allclose(start.rotation, before.rotation, atol=1e-6)

    pb.advance(0.5)  # source keeps playing: ramp at t = 1.5 -> x = 1.5; target x = 10
    mid = pb.evaluate()
    assert pb.fade_weight == pytest.approx(0.5)
    np.testing.assert_allclose(mid.translation[0], [0.5 * 1.5 + 0.5 * 10, 0, 0], atol=1e-5)
    assert quat.angle_between(mid.rotation[0], quat.from_axis_angle(Y, np.pi / 4)) < 1e-5
    np.testing.assert_allclose(mid.scale[1], [2, 2, 2], atol=1e-6)

    pb.advance(0.5)
    assert not pb.fading
    end = pb.evaluate()
    np.testing.assert_allclose(end.translation[0], [10, 0, 0])
    assert quat.angle_between(end.rotation[0], quat.from_axis_angle(Y, np.pi / 2)) < 1e-5
    np.testing.assert_allclose(end.scale[1], [3, 3, 3])
    # an instant switch
    pb.crossfade(0, 0.0, start_time=0.25)
    assert not pb.fading and pb.evaluate().translation[0, 0] == pytest.approx(0.25)


def test_smooth_ramp_and_interrupted_crossfade_do_not_pop():
    pb = _playback(clip=0)
    pb.crossfade(1, 1.0, ramp="smooth")
    pb.advance(0.25)
    assert pb.fade_weight == pytest.approx(0.25**2 * (3 - 2 * 0.25))
    before = pb.evaluate()
    pb.crossfade(2, 0.5)  # interrupts: fades from a frozen snapshot of the current blend
    after = pb.evaluate()
    np.testing.assert_allclose(after.translation, before.translation, atol=1e-6)
    np.testing.assert_allclose(after.rotation, before.rotation, atol=1e-6)
    pb.advance(0.5)
    assert not pb.fading
    assert quat.angle_between(pb.evaluate().rotation[0], quat.from_axis_angle(Y, np.pi / 2)) < 1e-5
    with pytest.raises(ValueError, match="ramp"):
        pb.crossfade(0, 1.0, ramp="cubic")
    with pytest.raises(ValueError, match="duration"):
        pb.crossfade(0, -1.0)


def test_crossfade_to_the_same_clip_blends_two_times():
    pb = _playback(clip=0, mode="clamp")
    pb.advance(1.0)
    pb.crossfade(0, 1.0)  # restart the clip from 0 while the old instance continues from 1.0
    pb.advance(0.5)  # source at 1.5, target at 0.5, weight 0.5 -> x = 1.0
    assert pb.evaluate().translation[0, 0] == pytest.approx(1.0)


def test_blend_poses_endpoints_per_node_weights_and_short_arc():
    a = Pose(np.zeros((2, 3)), np.tile([0, 0, 0, 1.0], (2, 1)), np.ones((2, 3)))
    q = quat.from_axis_angle(Y, np.radians(60))
    b = Pose(np.full((2, 3), 4.0), np.stack([-q, -q]), np.full((2, 3), 2.0))  # -q: far hemisphere
    np.testing.assert_allclose(blend_poses(a, b, 0.0).rotation, a.rotation, atol=1e-7)
    end = blend_poses(a, b, 1.0)
    np.testing.assert_allclose(end.translation, b.translation)
    assert np.all(quat.angle_between(end.rotation, b.rotation) < 1e-5)
    out = a.copy()
    m = blend_poses(a, b, np.array([0.25, 0.5]), out=out)
    assert m is out
    np.testing.assert_allclose(m.translation[:, 0], [1, 2])
    np.testing.assert_allclose(m.scale[:, 0], [1.25, 1.5])
    np.testing.assert_allclose(quat.angle_between(m.rotation, a.rotation), np.radians([15, 30]), atol=1e-5)
    with pytest.raises(ValueError, match="blend weight"):
        blend_poses(a, b, np.ones(3))


def test_modes_constant_is_public():
    assert MODES == ("loop", "clamp", "pingpong")
