"""Replaying a recorded VR session (recording version 2 with a ``vr`` header, engine/input/record.py): the
recorded tracked samples and actions are fed frame by frame to a :class:`game.vr.session.VRSession` built from
the header (eye geometry, tracking-to-world transform, brush radius, bulge settings, controller camera size),
with the recorded frame time, so every tool sees exactly what it saw live and the result is bit for bit the
recorded session's.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.input.vr import EyeGeometry

__all__ = ["RecordedVRDevice", "replay_vr"]


class RecordedVRDevice:
    """The device of a replay: the recorded eyes and fps; its frames come from the recording."""

    def __init__(self, vr_header: dict[str, Any]) -> None:
        self.name = str(vr_header["device"])
        self.fps = float(vr_header["fps"])
        self.geometry = EyeGeometry.from_dict(vr_header["eyes"], "header.vr.eyes")
        self.pulses: list[tuple[str, float]] = []

    def wait_poses(self) -> None:
        return None

    def submit(self, left: Any, right: Any) -> None:
        pass

    def haptic(self, hand: str, seconds: float) -> None:
        self.pulses.append((hand, seconds))

    def close(self) -> None:
        pass


def replay_vr(rec: Any, *, screenshot: str | None, export_frame: str | None, save: str | None) -> int:
    """Replay ``rec`` headless and write the outputs (game.commands.vr.write_outputs); returns the frames run."""
    from engine import Session
    from engine.input.record import resolve_source
    from engine.scene import quiet_load
    from game.commands.vr import write_outputs
    from game.vr.session import VRSession

    h = rec.header
    vr_h = h.vr
    device = RecordedVRDevice(vr_h)
    loaded = quiet_load(resolve_source(h.assets[0], rec.path.parent if rec.path is not None else None))
    geo = device.geometry
    with Session(width=geo.width, height=geo.height, deformer="lbs", strict=True) as s:
        ch = s.spawn(loaded, clip=None, time=0.0, speed=0.0, mode="clamp")
        vr = VRSession(s, ch, device, brush_radius=float(vr_h["brush_radius"]), bulge=dict(vr_h.get("bulge", {})),
                       probe_size=int(vr_h["probe_size"]),
                       tracking_to_world=np.asarray(vr_h["tracking_to_world"], np.float64))
        try:
            for f in rec.frames:
                vr.run_events(list(f.events))
            vr.finish()
            for line in write_outputs(vr, screenshot=screenshot, export_frame=export_frame, save=save):
                print(f"wrote {line}")
        finally:
            vr.release()
    return vr.frames
