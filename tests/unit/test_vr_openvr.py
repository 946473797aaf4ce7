"""The OpenVR backend (engine/input/openvr_device.py) against a fake ``openvr`` module built from the real
package's ctypes structures (HmdMatrix34_t, TrackedDevicePose_t, VRControllerState_t, Texture_t) and
constants: matrix conversion, the projection from raw tangents, button masks, the call order
waitGetPoses -> submit left -> submit right, haptics, and the mapping of a missing runtime / headset / failed
init to one VRError line. No runtime or headset is needed."""
from __future__ import annotations

import types

import numpy as np
import pytest

openvr = pytest.importorskip("openvr")

from engine.input.events import VRButtons  # noqa: E402
from engine.input.openvr_device import OpenVRHeadset, controller_buttons, matrix34  # noqa: E402
from engine.input.vr import VRError, pose_matrix, projection_from_raw  # noqa: E402

RAW = [(-1.39, 1.24, -1.47, 1.45), (-1.24, 1.39, -1.47, 1.45)]


def _m34(m: np.ndarray):
    s = openvr.HmdMatrix34_t()
    for r in range(3):
        for c in range(4):
            s.m[r][c] = float(m[r, c])
    return s


def _rot_y(deg: float, pos) -> np.ndarray:
    a = np.radians(deg)
    m = np.eye(4)
    m[:3, :3] = [[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]]
    m[:3, 3] = pos
    return m


class FakeSystem:
    def __init__(self, log):
        self.log = log

    def getRecommendedRenderTargetSize(self):  # noqa: N802 - the openvr API's names
        return 1440, 1600

    def getEyeToHeadTransform(self, eye):  # noqa: N802
        m = np.eye(4)
        m[0, 3] = -0.0315 if eye == openvr.Eye_Left else 0.0315
        return _m34(m)

    def getProjectionRaw(self, eye):  # noqa: N802
        return RAW[int(eye)]

    def getTrackedDeviceIndexForControllerRole(self, role):  # noqa: N802
        return {int(openvr.TrackedControllerRole_LeftHand): 3,
                int(openvr.TrackedControllerRole_RightHand): 4}[int(role)]

    def getControllerState(self, idx):  # noqa: N802
        s = openvr.VRControllerState_t()
        if idx == 4:
            s.ulButtonPressed = (1 << int(openvr.k_EButton_Grip)) | (1 << int(openvr.k_EButton_A))
            s.rAxis[1].x = 0.8
            s.rAxis[0].x, s.rAxis[0].y = 0.25, -0.5
        return True, s

    def triggerHapticPulse(self, idx, axis, micros):  # noqa: N802
        self.log.append(("haptic", idx, axis, micros))


class FakeCompositor:
    def __init__(self, log):
        self.log = log

    def waitGetPoses(self, poses, game):  # noqa: N802
        self.log.append(("wait", len(poses)))
        poses[0].mDeviceToAbsoluteTracking = _m34(_rot_y(30.0, [0.1, 1.7, 0.2]))
        poses[0].bPoseIsValid = True
        poses[4].mDeviceToAbsoluteTracking = _m34(_rot_y(-90.0, [0.3, 1.2, -0.1]))
        poses[4].bPoseIsValid = True
        poses[3].bPoseIsValid = False

    def submit(self, eye, texture):
        assert isinstance(texture, openvr.Texture_t)
        self.log.append(("submit", int(eye), int(texture.handle), int(texture.eType)))


def fake_openvr(*, runtime=True, hmd=True, init_error=None):
    """A module with the real package's structures and constants and fake entry points."""
    log: list = []
    names = ("HmdMatrix34_t", "TrackedDevicePose_t", "VRControllerState_t", "Texture_t", "Eye_Left", "Eye_Right",
             "TextureType_OpenGL", "ColorSpace_Gamma", "VRApplication_Scene", "k_unMaxTrackedDeviceCount",
             "k_unTrackedDeviceIndex_Hmd", "TrackedControllerRole_LeftHand", "TrackedControllerRole_RightHand",
             "k_EButton_Grip", "k_EButton_ApplicationMenu", "k_EButton_A", "k_EButton_SteamVR_Touchpad",
             "OpenVRError")
    mod = types.SimpleNamespace(**{n: getattr(openvr, n) for n in names})
    mod.log = log

    def init(kind):
        log.append(("init", int(kind)))
        if init_error is not None:
            raise init_error
        return FakeSystem(log)

    mod.isRuntimeInstalled = lambda: runtime
    mod.isHmdPresent = lambda: hmd
    mod.init = init
    mod.VRCompositor = lambda: FakeCompositor(log)
    mod.shutdown = lambda: log.append(("shutdown",))
    return mod


def test_geometry_poses_buttons_and_submit_order():
    vr = fake_openvr()
    dev = OpenVRHeadset.open(frames=2, module=vr)
    assert vr.log[0] == ("init", int(openvr.VRApplication_Scene))
    geo = dev.geometry
    assert (geo.width, geo.height) == (1440, 1600)
    np.testing.assert_allclose(geo.eye_to_head[0][:3, 3], [-0.0315, 0, 0], atol=1e-7)
    np.testing.assert_array_equal(geo.projection(1), projection_from_raw(*RAW[1], geo.near, geo.far))
    f = dev.wait_poses()
    assert set(f.samples) == {"head", "right"}  # the left controller's pose is not valid
    head = f.samples["head"]
    np.testing.assert_allclose(pose_matrix(head.position, head.orientation), _rot_y(30.0, [0.1, 1.7, 0.2]),
                               atol=1e-6)
    right = f.samples["right"]
    assert right.pressure == pytest.approx(0.8) and right.axis == pytest.approx((0.25, -0.5))
    assert right.controls == VRButtons.GRIP | VRButtons.PRIMARY
    tex = [types.SimpleNamespace(glo=11), types.SimpleNamespace(glo=12)]
    dev.submit(*tex)
    dev.haptic("right", 0.005)
    assert [e[0] for e in vr.log[1:]] == ["wait", "submit", "submit", "haptic"]
    assert vr.log[2][:3] == ("submit", int(openvr.Eye_Left), 11)
    assert vr.log[3][:3] == ("submit", int(openvr.Eye_Right), 12)
    assert vr.log[2][3] == int(openvr.TextureType_OpenGL)
    assert vr.log[4] == ("haptic", 4, 0, 3999)  # a legacy pulse is at most 3999 us
    assert dev.wait_poses() is not None and dev.wait_poses() is None  # frames=2
    dev.close()
    dev.close()
    assert vr.log.count(("shutdown",)) == 1


def test_matrix_and_button_conversions():
    m = _rot_y(45.0, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(matrix34(_m34(m)), m, atol=1e-6)
    mask = (1 << int(openvr.k_EButton_ApplicationMenu)) | (1 << int(openvr.k_EButton_SteamVR_Touchpad))
    assert controller_buttons(openvr, mask) == VRButtons.MENU | VRButtons.STICK
    assert controller_buttons(openvr, 0) == VRButtons.NONE


@pytest.mark.parametrize("kw, needle", [
    ({"runtime": False}, "no OpenVR runtime is installed"),
    ({"hmd": False}, "found no headset"),
    ({"init_error": openvr.OpenVRError("Init_HmdNotFound\nmore")}, "OpenVR did not start: Init_HmdNotFound"),
])
def test_errors_are_one_line(kw, needle):
    with pytest.raises(VRError) as exc:
        OpenVRHeadset.open(module=fake_openvr(**kw))
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    assert str(exc.value).startswith("--device openvr: ")


def test_the_real_package_without_a_runtime_is_one_line(capfd):
    """This machine has the package and no runtime: the real module gives the one line and nothing else."""
    from engine.gpu.context import openvr_runtime_present
    from game.cli import run

    if openvr_runtime_present():
        pytest.skip("an OpenVR runtime is installed here")
    capfd.readouterr()

    assert run(["vr", "humanoid", "--device", "openvr", "--headless"]) == 2
    out, err = capfd.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: --device openvr: no OpenVR runtime")


@pytest.mark.parametrize("kw, needle", [({"runtime": False}, "no OpenVR runtime"),
                                        ({"hmd": False}, "no headset connected"),
                                        ({}, "headset connected: --device openvr is ready")])
def test_doctor_line(kw, needle):
    from engine.input.openvr_device import openvr_status

    line = openvr_status(fake_openvr(**kw))
    assert line.startswith("VR: ") and needle in line and "\n" not in line
