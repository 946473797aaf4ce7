"""`python main.py doctor`: what GL stack this machine gives the engine (exit 1 when OpenGL 4.3 is missing)."""
from __future__ import annotations


def doctor() -> int:
    from engine.gpu.context import doctor_report

    report = doctor_report(headless=True)
    print(report)
    return 1 if "UNAVAILABLE" in report else 0
