"""RIG.toml scripts of the simulated headset (engine/input/simulated_vr.py) and the VR math (engine/input/vr.py):
parsing and every refusal (one line naming the key), interpolation between keys (positions linear,
orientations slerp, trigger and grip held), the simulated eyes (IPD 0.064 m, 100 deg symmetric), and OpenGL
projections from OpenVR's raw tangents in their top/bottom order."""
from __future__ import annotations

import math

import numpy as np
import pytest

from engine.input.events import TrackedSample, VRButtons, event_from_dict
from engine.input.simulated_vr import ACTIONS, RigScriptError, SimulatedHeadset, load_rig_script, parse_rig_script
from engine.input.vr import EyeGeometry, look_rotation, pose_matrix, projection_from_raw, symmetric_raw
from engine.render.camera import perspective

BASE = """version = 1
fps = 10
[[hmd]]
time = 0.0
position = [0.0, 1.6, 1.2]
look_at = [0.0, 1.2, 0.0]
"""

RIGHT = BASE + """
[[right]]
time = 0.0
position = [0.0, 1.0, 0.0]
direction = [0.0, 0.0, -1.0]
trigger = 1.0
[[right]]
time = 1.0
position = [1.0, 2.0, 0.0]
direction = [1.0, 0.0, 0.0]
trigger = 0.0
grip = true
[[actions]]
time = 0.25
name = "tool:bulge"
"""


def test_parse_and_sample():
    s = parse_rig_script(RIGHT, "rig.toml")
    assert s.fps == 10 and s.brush_radius == 0.15 and s.frame_count == 11
    k = s.sample("right", 0.5)
    np.testing.assert_allclose(k.position, [0.5, 1.5, 0.0])
    assert k.trigger == 1.0 and k.grip is False  # held from the key before
    # the orientation half-way is the slerp: -Z turned 45 degrees towards +X
    fwd = -pose_matrix(k.position, k.orientation)[:3, 2]
    np.testing.assert_allclose(fwd, [math.sqrt(0.5), 0.0, -math.sqrt(0.5)], atol=1e-9)
    last = s.sample("right", 5.0)
    assert last.grip is True and last.trigger == 0.0
    assert s.sample("left", 0.0) is None
    dev = SimulatedHeadset(s, eye_size=32)
    assert dev.actions_at(2) == [] and dev.actions_at(3) == ["tool:bulge"] and dev.actions_at(4) == []
    f = dev.sample_frame(3)
    assert set(f.samples) == {"head", "right"} and f.samples["right"].pressure == 1.0
    frames = 0
    while dev.wait_poses() is not None:
        frames += 1
    assert frames == 11


def test_head_look_at_and_eyes_follow_the_script():
    s = parse_rig_script(BASE, "rig.toml")
    k = s.sample("head", 0.0)
    head = pose_matrix(k.position, k.orientation)
    look = np.array([0.0, -0.4, -1.2]) / np.linalg.norm([0.0, -0.4, -1.2])
    np.testing.assert_allclose(-head[:3, 2], look, atol=1e-9)
    geo = EyeGeometry.simulated(64)
    eyes = [np.linalg.inv(geo.view(e, head).astype(np.float64))[:3, 3] for e in (0, 1)]
    np.testing.assert_allclose(np.linalg.norm(eyes[1] - eyes[0]), 0.064, atol=1e-6)
    np.testing.assert_allclose(eyes[1] - eyes[0], head[:3, 0] * 0.064, atol=1e-6)  # along the head's x axis
    np.testing.assert_allclose(geo.projection(0), perspective(100.0, 1.0, geo.near, geo.far), atol=1e-6)
    again = EyeGeometry.from_dict(geo.to_dict())
    np.testing.assert_array_equal(again.raw, geo.raw)


def test_projection_from_raw_top_bottom_order():
    # OpenVR: top is the tangent of the angle DOWN (negative), bottom of the angle UP
    left, right, top, bottom = -1.0, 0.8, -0.9, 1.3
    p = projection_from_raw(left, right, top, bottom, 0.1, 10.0).astype(np.float64)

    def ndc(v):
        c = p @ np.append(v, 1.0)
        return c[:3] / c[3]

    z = -2.0
    np.testing.assert_allclose(ndc([right * 2.0, 0.0, z])[0], 1.0, atol=1e-6)
    np.testing.assert_allclose(ndc([left * 2.0, 0.0, z])[0], -1.0, atol=1e-6)
    np.testing.assert_allclose(ndc([0.0, bottom * 2.0, z])[1], 1.0, atol=1e-6)  # the upper edge
    np.testing.assert_allclose(ndc([0.0, top * 2.0, z])[1], -1.0, atol=1e-6)
    np.testing.assert_allclose(ndc([0.0, 0.0, -0.1])[2], -1.0, atol=1e-6)
    np.testing.assert_allclose(ndc([0.0, 0.0, -10.0])[2], 1.0, atol=1e-5)
    assert symmetric_raw(90.0) == pytest.approx((-1.0, 1.0, -1.0, 1.0))
    with pytest.raises(ValueError):
        projection_from_raw(1.0, -1.0, -1.0, 1.0, 0.1, 10.0)


def test_look_rotation_points_minus_z():
    for d in ([1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.3, 0.2, -0.9]):
        q = look_rotation(d)
        m = pose_matrix([0, 0, 0], q)
        np.testing.assert_allclose(-m[:3, 2], np.asarray(d) / np.linalg.norm(d), atol=1e-9)
    with pytest.raises(ValueError):
        look_rotation([0.0, 0.0, 0.0])


def test_tracked_sample_carries_vr_buttons_and_axis():
    e = TrackedSample(1.0, "right", (0.0, 1.0, 0.0), pressure=0.7, controls=VRButtons.GRIP | VRButtons.MENU,
                      axis=(0.5, -1.0))
    back = event_from_dict(e.to_dict())
    assert back == e and back.controls & VRButtons.GRIP
    old = {"type": "tracked", "t": 0.0, "device": "hand", "position": [0, 0, 0]}  # a version-1 line
    assert event_from_dict(old).controls == VRButtons.NONE
    with pytest.raises(ValueError, match="axis"):
        event_from_dict({**old, "axis": [2.0, 0.0]})


def test_stick_holds_from_key_to_key():
    """A hand key's ``stick = [x, y]`` is the sample's axis from that key to the next (default centred)."""
    text = BASE + ("[[right]]\ntime = 0.0\nposition = [0, 1, 0]\nstick = [0.25, -1.0]\ngrip = true\n"
                   "[[right]]\ntime = 0.5\nposition = [0, 1, 0]\n")
    dev = SimulatedHeadset(parse_rig_script(text), eye_size=8)
    axes = [dev.sample_frame(i).samples["right"].axis for i in range(dev.frames)]
    assert axes[:5] == [(0.25, -1.0)] * 5 and axes[5] == (0.0, 0.0)
    assert dev.sample_frame(2).samples["right"].controls & VRButtons.GRIP


@pytest.mark.parametrize("text, needle", [
    ("version = 1\nfps = [", "not TOML"),
    (BASE + "bogus = 1\n", "hmd[0].bogus: unknown key"),
    (BASE.replace("fps = 10", "fps = 10\nspeed = 2"), "speed: unknown key"),
    (BASE.replace("fps = 10", 'fps = "fast"'), "fps: expected a number, got str"),
    (BASE.replace("fps = 10", "fps = inf"), "fps: expected a finite number"),
    (BASE.replace("fps = 10", "fps = nan"), "fps: expected a finite number"),
    (BASE.replace("version = 1", "version = 2"), "version: unknown version 2"),
    (BASE.replace("[0.0, 1.6, 1.2]", "[0.0, 1.6]"), "hmd[0].position: expected 3 numbers"),
    (BASE.replace("[0.0, 1.6, 1.2]", "[0.0, 1.6, true]"), r"hmd\[0\].position\[2\]: expected a number"),
    (BASE + "[[hmd]]\ntime = -1.0\nposition = [0, 1, 0]\n", "hmd[1].time"),
    (BASE.replace("time = 0.0", "time = 2.0") + "[[hmd]]\ntime = 1.0\nposition = [0, 1, 0]\n",
     "hmd[1].time: keys must be in time order"),
    (BASE + '[[actions]]\ntime = 0.0\nname = "tool:lasso"\n', "actions[0].name: unknown action 'tool:lasso'"),
    (BASE + "[[right]]\ntime = 0.0\nposition = [0, 1, 0]\ntrigger = 1.5\n", "right[0].trigger"),
    (BASE + "[[right]]\ntime = 0.0\nposition = [0, 1, 0]\ngrip = 1\n", "right[0].grip: expected true or false"),
    (BASE + "[[right]]\ntime = 0.0\nposition = [0, 1, 0]\nlook_at = [0, 0, 0]\n", "right[0].look_at: unknown key"),
    (BASE + "[[right]]\ntime = 0.0\nposition = [0, 1, 0]\ndirection = [0, 0, 0]\n", "right[0].direction"),
    (BASE + "[[right]]\ntime = 0.0\nposition = [0, 1, 0]\nstick = [0.5]\n", "right[0].stick: expected [x, y]"),
    (BASE + "[[left]]\ntime = 0.0\nposition = [0, 1, 0]\nstick = [0.0, 1.5]\n", "left[0].stick: 1.5 is outside"),
    (BASE + "[[left]]\ntime = 0.0\nposition = [0, 1, 0]\nstick = [0.0, nan]\n", "left[0].stick: expected a finite"),
    (BASE + "[[left]]\ntime = 0.0\nposition = [0, 1, 0]\nstick = 1.0\n", "left[0].stick: expected [x, y]"),
    (BASE + "stick = [0.0, 1.0]\n", "hmd[0].stick: unknown key"),
    (BASE + "[bulge]\nheight = 0.03\nwidth = 2\n", "bulge.width: unknown key"),
    (BASE + '[bulge]\nprofile = "offset"\n', "bulge.profile: unknown profile"),
    ("version = 1\nfps = 10\n", "hmd: the script needs at least one"),
    (BASE.replace("fps = 10", "fps = 1000") + "[[hmd]]\ntime = 3000.0\nposition = [0, 1, 0]\n",
     "fps: the script spans 3000001 frames"),
])
def test_refusals_name_the_key(text, needle):
    with pytest.raises(RigScriptError) as exc:
        parse_rig_script(text, "rig.toml")
    msg = str(exc.value)
    assert msg.startswith("rig.toml: ") and "\n" not in msg
    assert needle.replace("\\", "") in msg or __import__("re").search(needle, msg)


def test_every_action_is_accepted_and_files_are_read_carefully(tmp_path):
    text = BASE + "".join(f'[[actions]]\ntime = {i * 0.1}\nname = "{a}"\n' for i, a in enumerate(ACTIONS))
    assert [a.name for a in parse_rig_script(text).actions] == list(ACTIONS)
    with pytest.raises(RigScriptError, match="a folder"):
        load_rig_script(tmp_path)
    with pytest.raises(RigScriptError, match="no such script"):
        load_rig_script(tmp_path / "none.toml")


def test_shipped_example_parses():
    from engine.paths import shipped_file

    s = load_rig_script(shipped_file("assets/vr/pose_and_bulge.toml"))
    assert s.bulge["height"] == 0.03 and [a.name for a in s.actions] == ["tool:pose", "tool:bulge"]


def test_tube_around_a_polyline():
    from engine.render.shapes import tube
    from game.vr.tubes import resample

    pts = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    line = resample(pts, 21)
    assert line.shape == (21, 3) and np.allclose(line[10], [0.0, 1.0, 0.0])
    pos, tri = tube(line, 0.01, sides=6)
    assert pos.shape == (126, 3) and tri.shape == (2 * 6 * 20, 3) and tri.max() == 125
    ring0 = pos[:6].astype(np.float64)  # around the first point, perpendicular to +Y
    np.testing.assert_allclose(np.linalg.norm(ring0 - line[0], axis=1), 0.01, atol=1e-6)
    np.testing.assert_allclose(ring0[:, 1], 0.0, atol=1e-6)
    assert resample(np.zeros((3, 3))) is None
    with pytest.raises(ValueError):
        tube(line[:1], 0.01)
