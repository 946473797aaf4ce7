"""A real headset through the ``openvr`` package (SteamVR): a :class:`engine.input.vr.VRDevice`.

:meth:`OpenVRHeadset.open` checks for the runtime and a headset, initialises OpenVR as a scene application and
reads the eyes: the recommended render size, each eye's eye-to-head transform and its raw projection tangents
(``getProjectionRaw``, OpenVR's top/bottom order: :func:`engine.input.vr.projection_from_raw`). Each frame
:meth:`wait_poses` calls the compositor's ``waitGetPoses`` once (it paces the loop) and turns the head's and
the two controllers' poses (found by controller role) and their button and axis state (the legacy controller
state: trigger = axis 1's x, stick/trackpad = axis 0, grip, application menu, A, stick press) into
:class:`~engine.input.events.TrackedSample` events; :meth:`submit` hands the left then the right eye's OpenGL
texture to the compositor; :meth:`haptic` pulses a controller.

Without the package, the runtime or a headset, :meth:`open` raises :class:`~engine.input.vr.VRError` with one
line naming what is missing; the runtime library's own chatter on stdout/stderr is silenced. The module to use
can be passed in (``module=``): the tests hand in a fake ``openvr`` built from the package's real ctypes
structures.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.input.events import Buttons, TrackedSample, VRButtons, now
from engine.input.vr import EyeGeometry, VRError, VRFrame
from engine.log import quiet_output

__all__ = ["OpenVRHeadset", "matrix34", "controller_buttons", "openvr_status"]


def openvr_status(module: Any = None) -> str:
    """One line for ``doctor``: whether the openvr package, an OpenVR runtime and a headset are present (the
    runtime's chatter silenced; nothing is initialised)."""
    vr = module
    if vr is None:
        try:
            with quiet_output():
                import openvr
            vr = openvr
        except (ImportError, OSError):
            return "VR: the openvr package is not installed (pip install openvr); --device simulated works"
    try:
        with quiet_output():
            runtime = bool(vr.isRuntimeInstalled())
            headset = runtime and bool(vr.isHmdPresent())
    except (OSError, AttributeError, RuntimeError, ValueError):
        runtime = headset = False
    if not runtime:
        return "VR: no OpenVR runtime (install SteamVR for --device openvr); --device simulated works"
    if not headset:
        return "VR: OpenVR runtime installed, no headset connected; --device simulated works"
    return "VR: OpenVR runtime installed, headset connected: --device openvr is ready"


def matrix34(m: Any) -> np.ndarray:
    """An OpenVR HmdMatrix34_t (3 rows of 4, row-major) as a 4x4 float64 matrix (column vectors)."""
    out = np.eye(4)
    out[:3, :4] = np.array([[float(m.m[r][c]) for c in range(4)] for r in range(3)])
    return out


def controller_buttons(vr: Any, pressed: int) -> VRButtons:
    """The VR buttons held in an OpenVR ``ulButtonPressed`` mask (legacy controller state)."""
    out = VRButtons.NONE
    for button, flag in ((vr.k_EButton_Grip, VRButtons.GRIP), (vr.k_EButton_ApplicationMenu, VRButtons.MENU),
                         (vr.k_EButton_A, VRButtons.PRIMARY), (vr.k_EButton_SteamVR_Touchpad, VRButtons.STICK)):
        if pressed & (1 << int(button)):
            out |= flag
    return out


def _orientation(m: np.ndarray) -> tuple[float, float, float, float]:
    from engine.math.quat import from_matrix

    r = m[:3, :3]
    u, _, vt = np.linalg.svd(r)  # tracking matrices carry float noise: the nearest rotation
    x, y, z, w = (float(v) for v in from_matrix(u @ vt))
    return (x, y, z, w)


class OpenVRHeadset:
    """The OpenVR device (see the module docstring). ``frames``: stop after that many (None: run on)."""

    name = "openvr"

    def __init__(self, vr: Any, system: Any, compositor: Any, *, frames: int | None = None,
                 near: float = 0.05, far: float = 100.0) -> None:
        self.vr = vr
        self.system = system
        self.compositor = compositor
        self.frames = frames
        self.index = 0
        self.fps = 90.0
        w, h = system.getRecommendedRenderTargetSize()
        eyes = (vr.Eye_Left, vr.Eye_Right)
        e2h = np.stack([matrix34(system.getEyeToHeadTransform(e)) for e in eyes])
        raw = np.array([system.getProjectionRaw(e) for e in eyes], np.float64)
        self.geometry = EyeGeometry(int(w), int(h), e2h, raw, near, far)
        self._poses = (vr.TrackedDevicePose_t * int(vr.k_unMaxTrackedDeviceCount))()
        self._closed = False

    @classmethod
    def open(cls, *, frames: int | None = None, module: Any = None) -> OpenVRHeadset:
        """Initialise OpenVR as a scene application; VRError (one line) when the package, the runtime or a
        headset is missing or the runtime refuses."""
        vr = module
        if vr is None:
            try:
                with quiet_output():
                    import openvr

                vr = openvr
            except ImportError:
                raise VRError("--device openvr: the openvr package is not installed (pip install openvr)") from None
            except OSError as e:
                raise VRError(f"--device openvr: the OpenVR client library does not load ({e})") from None
        failure = getattr(vr, "OpenVRError", Exception)
        with quiet_output():
            try:
                if not vr.isRuntimeInstalled():
                    raise VRError("--device openvr: no OpenVR runtime is installed (install SteamVR); "
                                  "use --device simulated --script RIG.toml without a headset")
                if not vr.isHmdPresent():
                    raise VRError("--device openvr: the OpenVR runtime found no headset (connect one and start "
                                  "SteamVR); use --device simulated --script RIG.toml without a headset")
                system = vr.init(vr.VRApplication_Scene)
                compositor = vr.VRCompositor()
            except failure as e:
                text = (str(e.args[0]) if e.args else "") or type(e).__name__
                raise VRError(f"--device openvr: OpenVR did not start: {text.splitlines()[0]}") from None
        return cls(vr, system, compositor, frames=frames)

    # -- frames ----------------------------------------------------------------------------------------
    def wait_poses(self) -> VRFrame | None:
        vr = self.vr
        if self.frames is not None and self.index >= self.frames:
            return None
        self.compositor.waitGetPoses(self._poses, None)
        self.index += 1
        t = now()
        out = VRFrame(t)
        head = self._poses[int(vr.k_unTrackedDeviceIndex_Hmd)]
        if head.bPoseIsValid:
            m = matrix34(head.mDeviceToAbsoluteTracking)
            out.samples["head"] = TrackedSample(t, "head", tuple(m[:3, 3].tolist()), _orientation(m))
        for hand, role in (("left", vr.TrackedControllerRole_LeftHand), ("right", vr.TrackedControllerRole_RightHand)):
            idx = int(self.system.getTrackedDeviceIndexForControllerRole(role))
            if not 0 <= idx < int(vr.k_unMaxTrackedDeviceCount):
                continue
            pose = self._poses[idx]
            if not pose.bPoseIsValid:
                continue
            m = matrix34(pose.mDeviceToAbsoluteTracking)
            ok, state = self.system.getControllerState(idx)
            trigger, axis, held = 0.0, (0.0, 0.0), VRButtons.NONE
            if ok:
                trigger = min(max(float(state.rAxis[1].x), 0.0), 1.0)
                axis = (min(max(float(state.rAxis[0].x), -1.0), 1.0), min(max(float(state.rAxis[0].y), -1.0), 1.0))
                held = controller_buttons(vr, int(state.ulButtonPressed))
            out.samples[hand] = TrackedSample(t, hand, tuple(m[:3, 3].tolist()), _orientation(m),
                                              Buttons.LEFT if trigger >= 0.5 else Buttons.NONE, trigger, held, axis)
        return out

    def submit(self, left: Any, right: Any) -> None:
        """Submit the eyes' OpenGL textures, left then right (after this frame's waitGetPoses)."""
        vr = self.vr
        for eye, tex in ((vr.Eye_Left, left), (vr.Eye_Right, right)):
            t = vr.Texture_t()
            t.handle = int(tex.glo)
            t.eType = vr.TextureType_OpenGL
            t.eColorSpace = vr.ColorSpace_Gamma
            self.compositor.submit(eye, t)

    def haptic(self, hand: str, seconds: float) -> None:
        vr = self.vr
        role = vr.TrackedControllerRole_LeftHand if hand == "left" else vr.TrackedControllerRole_RightHand
        idx = int(self.system.getTrackedDeviceIndexForControllerRole(role))
        if 0 <= idx < int(vr.k_unMaxTrackedDeviceCount):
            # one legacy pulse lasts at most 3999 microseconds
            self.system.triggerHapticPulse(idx, 0, int(min(max(seconds, 0.0), 0.003999) * 1e6))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with quiet_output():
            self.vr.shutdown()
