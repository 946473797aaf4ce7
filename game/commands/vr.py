"""`python main.py vr ASSET (--device openvr | --device simulated --script RIG.toml) [--headless] [--frames N]
[--eye-size PX] [--screenshot EYES.png] [--export-frame OUT.npz] [--record S.jsonl] [--save POSED.glb | EDITS.json]`:
VR sketching of poses and surface edits (research 7.5) on a headset, or on a simulated one played from a script
(engine/input/simulated_vr.py).

The character is spawned in its rest pose; the VR session (game/vr/session.py) runs frame after frame: with
``--frames N`` N frames at the script's fps, else until the script's last key (OpenVR: until Ctrl+C, Esc
in the mirror window, or N frames). Then:

* ``--export-frame OUT.npz``: the ``export-frame`` contract (``node{n}_mesh{m}_prim{p}`` float32 (N,3) deformed
  world-space vertices of every skinned primitive), the ``edit`` command's ``K_kinematic``, ``K_passive`` and
  ``K_static`` keys when edits exist, and the last frame's eye matrices ``eye_view`` and ``eye_projection``,
  float32 (2,4,4), left then right, column vectors (clip = projection @ view @ world);
* ``--screenshot EYES.png``: the last frame's two eyes side by side (left | right), each ``--eye-size`` square;
* ``--record S.jsonl``: the session (recording version 2, engine/input/record.py), which ``replay S.jsonl
  --headless --export-frame F.npz`` reproduces bit for bit;
* ``--save POSED.glb``: the asset with the pose keyed into a clip ``pose``; ``--save EDITS.json``: the surface
  edits (the versioned edits file).

Without ``--headless`` and with a display, a desktop mirror window (game/vr/mirror.py) shows the left eye with
the UI while the session runs (Esc or closing it ends the run; the outputs are written as headless);
``--mirror-screenshot MIRROR.png`` writes its last frame with the profiler overlay shown.
``--device openvr`` without a runtime or headset exits 2
with one ``error:`` line naming what is missing.
"""
from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import numpy as np

from engine.paths import check_writable
from game.commands import UsageError

__all__ = ["vr_command", "add_vr_parser", "MAX_EYE_SIZE", "export_arrays"]

log = logging.getLogger(__name__)
MAX_EYE_SIZE = 4096


def add_vr_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``vr`` sub-command's options (game/cli.py)."""
    from engine.input.vr import DEFAULT_EYE_SIZE

    p = sub.add_parser("vr", parents=[common], help="VR sketching: pose and sculpt with tracked controllers "
                       "(OpenVR headset, or a simulated one played from a script)")
    p.add_argument("asset", help="glTF / GLB file or a generated character's name")
    p.add_argument("--device", required=True, choices=("openvr", "simulated"),
                   help="openvr: a headset through SteamVR; simulated: a headset and controllers from --script")
    p.add_argument("--script", default=None, metavar="RIG.toml",
                   help="the simulated devices' script (see the README, VR); needs --device simulated")
    p.add_argument("--headless", action="store_true", help="no mirror window (offscreen)")
    p.add_argument("--frames", type=int, default=None, metavar="N",
                   help="run N frames at the script's fps, then exit (default: until the script's last key)")
    p.add_argument("--eye-size", type=int, default=DEFAULT_EYE_SIZE, metavar="PX",
                   help=f"simulated eye images, PX square (default {DEFAULT_EYE_SIZE})")
    p.add_argument("--controller-camera", type=int, default=16, metavar="PX",
                   help="the controller camera's image, PX square (default 16, at least 1)")
    p.add_argument("--screenshot", default=None, metavar="EYES.png", help="the last frame's eyes side by side")
    p.add_argument("--export-frame", default=None, metavar="OUT.npz",
                   help="deformed vertices (export-frame keys), region keys of edits, eye_view/eye_projection")
    p.add_argument("--mirror-screenshot", default=None, metavar="MIRROR.png",
                   help="with the mirror window: its last frame (the left eye with the profiler overlay)")
    p.add_argument("--record", default=None, metavar="S.jsonl", help="record the session (replay it with replay)")
    p.add_argument("--save", default=None, metavar="POSED.glb|EDITS.json",
                   help="the posed asset (.glb, clip 'pose') or the surface edits (.json)")


def export_arrays(vr: Any) -> dict[str, np.ndarray]:
    """The ``--export-frame`` arrays of a VR session (see the module docstring)."""
    from engine.scene import require_finite
    from game.commands.edit import _region_indices

    ch = vr.ch
    frames = {k: v for k, v in ch.vertices().items() if k in set(ch.skinned_primitives)}
    require_finite(frames)
    arrays: dict[str, np.ndarray] = {k.export_key: np.asarray(v, np.float32) for k, v in frames.items()}
    stacks = ch.edits
    if any(len(st) for st in stacks.values()):
        arrays.update(_region_indices(ch, stacks))
    arrays["eye_view"] = np.asarray(vr.eye_views, np.float32).copy()
    arrays["eye_projection"] = np.asarray(vr.eye_projections, np.float32).copy()
    return arrays


def _outputs(args: argparse.Namespace) -> None:
    for flag, value, suffixes in (("--screenshot", args.screenshot, (".png",)),
                                  ("--export-frame", args.export_frame, (".npz",)),
                                  ("--record", args.record, (".jsonl",)),
                                  ("--save", args.save, (".glb", ".json")),
                                  ("--mirror-screenshot", args.mirror_screenshot, (".png",))):
        if value is None:
            continue
        suffix = Path(value).suffix.lower()
        if suffix not in suffixes:
            raise UsageError(f"{flag} must end in {' or '.join(suffixes)}, got {Path(value).name!r}")
        check_writable(flag, value, suffix=suffix, makes_parents=True)


def _open_device(args: argparse.Namespace) -> Any:
    if args.device == "simulated":
        from engine.input.simulated_vr import SimulatedHeadset, load_rig_script

        if args.script is None:
            raise UsageError("--device simulated needs --script RIG.toml (the simulated devices' keys)")
        script = load_rig_script(args.script)
        from game.vr.session import bulge_profile

        bulge_profile(script.bulge, f"{Path(args.script).name}: bulge")  # refuses an unknown easing now
        return SimulatedHeadset(script, eye_size=args.eye_size, frames=args.frames)
    if args.script is not None:
        raise UsageError("--script plays the simulated devices: use it with --device simulated, not openvr")
    from engine.input.openvr_device import OpenVRHeadset

    return OpenVRHeadset.open(frames=args.frames)


def write_outputs(vr: Any, *, screenshot: str | None, export_frame: str | None, save: str | None) -> list[str]:
    """Check the final vertices, then write the outputs; returns what was written."""
    wrote: list[str] = []
    arrays: dict[str, Any] = dict(export_arrays(vr))
    if export_frame is not None:
        Path(export_frame).parent.mkdir(parents=True, exist_ok=True)
        np.savez(export_frame, **arrays)
        wrote.append(export_frame)
    if screenshot is not None:
        from PIL import Image

        Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(vr.targets.side_by_side(), "RGBA").convert("RGB").save(screenshot)
        wrote.append(screenshot)
    if save is not None:
        if Path(save).suffix.lower() == ".json":
            vr.ch.save_edits(save)
        else:
            vr.ch.key_pose("pose", time=0.0)
            vr.ch.save_glb(save)
        wrote.append(save)
    return wrote


def vr_command(args: argparse.Namespace) -> int:
    """The ``vr`` command body (see the module docstring)."""
    from engine.gpu.context import display_present
    from engine.scene import quiet_load

    if args.frames is not None and not 1 <= args.frames <= 216_000:
        raise UsageError(f"--frames must be in [1, 216000], got {args.frames}")
    if not 16 <= args.eye_size <= MAX_EYE_SIZE:
        raise UsageError(f"--eye-size must be in [16, {MAX_EYE_SIZE}] pixels, got {args.eye_size}")
    if not 1 <= args.controller_camera <= 256:
        raise UsageError(f"--controller-camera must be in [1, 256] pixels, got {args.controller_camera}")
    _outputs(args)
    if args.device == "simulated" and args.script is None:
        raise UsageError("--device simulated needs --script RIG.toml (the simulated devices' keys)")
    window = not args.headless and display_present()
    if not args.headless and not window:
        log.info("vr: no display for the mirror window: running headless")
    device = _open_device(args)
    try:
        loaded = quiet_load(args.asset)
        frames = run_vr(loaded, device, args, window=window)
    finally:
        device.close()
    return frames


def run_vr(loaded: Any, device: Any, args: argparse.Namespace, *, window: bool = False) -> int:
    """Spawn, run the frames (in the mirror window when ``window``), write the outputs (the command's body
    after its checks)."""
    from engine import Session
    from game.vr.session import VRSession

    script = getattr(device, "script", None)
    geo = device.geometry
    recorder = None
    with Session(width=geo.width, height=geo.height, deformer="lbs", strict=True, window=window,
                 title="skinengine VR mirror") as s:
        ch = s.spawn(loaded, clip=None, time=0.0, speed=0.0, mode="clamp")
        kwargs: dict[str, Any] = {"probe_size": args.controller_camera}
        if script is not None:
            kwargs.update(brush_radius=script.brush_radius, bulge=script.bulge)
        if args.record is not None:
            recorder = _recorder(args.record, args.asset, device, kwargs)
            kwargs["recorder"] = recorder
        vr = VRSession(s, ch, device, **kwargs)
        try:
            actions = getattr(device, "actions_at", None)
            if window:
                from game.vr.mirror import run_mirror

                run_mirror(vr, actions, profiler=args.mirror_screenshot is not None,
                           screenshot=args.mirror_screenshot)
            else:
                i = 0
                try:
                    while vr.frame(actions(i) if actions is not None else None):
                        i += 1
                except KeyboardInterrupt:  # a headset session without --frames ends with Ctrl+C: outputs written
                    log.info("vr: interrupted after %d frames", i)
            vr.finish()
            if recorder is not None:
                recorder.close()
            wrote = write_outputs(vr, screenshot=args.screenshot, export_frame=args.export_frame, save=args.save)
        finally:
            vr.release()
            if recorder is not None:
                recorder.close()
    print(f"vr {loaded.name}: {vr.frames} frame(s) on the {device.name} device, {len(vr.strokes)} stroke(s)"
          + (f"; wrote {', '.join(wrote)}" if wrote else ""))
    return 0


def _recorder(path: str, source: str, device: Any, kwargs: dict[str, Any]) -> Any:
    """A version-2 recording whose header holds the VR set-up (engine/input/record.py)."""
    from engine import __version__
    from engine.input.record import Recorder, RecordHeader, file_identity

    geo = device.geometry
    vr = {"device": device.name, "fps": float(device.fps), "eyes": geo.to_dict(),
          "tracking_to_world": np.eye(4).tolist(), "brush_radius": float(kwargs.get("brush_radius", 0.15)),
          "bulge": dict(kwargs.get("bulge", {})), "probe_size": int(kwargs["probe_size"])}
    header = RecordHeader(width=geo.width, height=geo.height,
                          camera={"eye": [0.0, 1.6, 1.2], "target": [0.0, 1.2, 0.0], "fov": 45.0},
                          assets=[{"source": str(source), "time": 0.0, "speed": 0.0, **file_identity(str(source))}],
                          step=1.0 / 60.0,
                          engine=__version__, vr=vr)
    return Recorder(path, header)
