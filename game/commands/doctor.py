"""`python main.py doctor`: what GL stack this machine gives the engine (exit 1 when OpenGL 4.3 is missing), and
whether VR can run (an OpenVR runtime and a headset; engine.input.openvr_device.openvr_status)."""
from __future__ import annotations


def doctor() -> int:
    from engine.gpu.context import doctor_report
    from engine.input.openvr_device import openvr_status

    report = doctor_report(headless=True)
    print(report)
    print(openvr_status())
    return 1 if "UNAVAILABLE" in report else 0
