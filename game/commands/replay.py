"""`python main.py replay FILE [--headless] [--screenshot out.png] [--export-frame out.npz] [--save out.glb|.json]`:
reproduce a recorded editor session (engine/input/record.py) and write what it produced.

Headless (``--headless``, or no display) the frames run back to back, each with its recorded dt, offscreen;
in a window (game/editor/window.py) they are paced in real time. Either way the final state is the recorded one.
``--export-frame`` writes every character's deformed skinned vertices of the last frame in the
``export-frame`` npz contract (``node{n}_mesh{m}_prim{p}`` float32 (N, 3); with several characters each
key gets the prefix ``char{i}_``, i in spawn order); ``--screenshot`` the last frame as PNG; ``--save`` the
selected character's asset with its pose keyed into a clip ``pose`` (needs the posing layer); ``--save
EDITS.json`` its surface edits instead (the versioned edits file of ``Character.save_edits``, read back by
``edit --load`` and ``Character.load_edits``).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from engine.authoring.stage import export_vertices
from engine.gpu.context import display_present
from engine.paths import check_writable

__all__ = ["replay_command", "export_vertices"]


def _check_out(path: str | None, suffix: str, option: str) -> Path | None:
    return None if path is None else check_writable(option, path, suffix=suffix, makes_parents=True)


def replay_command(args: argparse.Namespace) -> int:
    """The ``replay`` command body (errors in the file raise ValueError: one ``error:`` line, status 2)."""
    from engine.input.record import read_recording
    from game.editor.editor import open_recording, replay

    shot = _check_out(args.screenshot, ".png", "--screenshot")
    npz = _check_out(args.export_frame, ".npz", "--export-frame")
    edits = args.save is not None and Path(args.save).suffix.lower() == ".json"
    glb = _check_out(args.save, ".json" if edits else ".glb", "--save")
    rec = read_recording(args.file)
    if rec.header.vr is not None:  # a VR session (the vr command's --record): replayed headless
        from game.vr.replay import replay_vr

        frames = replay_vr(rec, screenshot=None if shot is None else str(shot),
                           export_frame=None if npz is None else str(npz), save=None if glb is None else str(glb))
        print(f"replayed {frames} VR frames, {len(rec.events)} events from {rec.path}")
        return 0
    headless = bool(args.headless) or not display_present()
    if headless:
        ed = open_recording(rec, headless=True, device=args.device)
        try:
            frames = replay(rec, ed)
            _write_outputs(ed, shot, npz, glb)
        finally:
            ed.session.release()
    else:
        from game.editor.window import replay_window

        frames = replay_window(rec, device=args.device, outputs=lambda ed: _write_outputs(ed, shot, npz, glb))
    print(f"replayed {frames} frames, {len(rec.events)} events from {rec.path}")
    return 0


def _write_outputs(ed: Any, shot: Path | None, npz: Path | None, glb: Path | None) -> None:
    """Check everything first (finite vertices, something to save), then write: a refusal leaves no file."""
    s = ed.session
    arrays: dict[str, Any] = export_vertices(s)
    for key, v in arrays.items():
        ok = np.isfinite(v).all(axis=-1)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"the replayed frame's deformed vertices of {key} are not finite (vertex {i}: "
                             f"{v[i].tolist()}); nothing written")
    if glb is not None and glb.suffix.lower() == ".json" and ed.selected is None:
        raise ValueError("--save: no character to save the edits of")
    if glb is not None and glb.suffix.lower() != ".json" and getattr(ed, "save_asset", None) is None:
        raise ValueError("--save needs the posing layer (the pose command's keyed clip), not available here")
    if npz is not None:
        npz.parent.mkdir(parents=True, exist_ok=True)
        np.savez(npz, **arrays)
        print(f"wrote {npz}")
    if shot is not None:
        s.render()
        s.save_png(shot)
        print(f"wrote {shot}")
    if glb is not None and glb.suffix.lower() == ".json":  # the surface edits, in the versioned edits file
        ch = ed.selected
        if ch is None:
            raise ValueError("--save: no character to save the edits of")
        ch.save_edits(glb)
        print(f"wrote {glb}")
    elif glb is not None:
        save = getattr(ed, "save_asset", None)
        if save is None:
            raise ValueError("--save needs the posing layer (the pose command's keyed clip), not available here")
        save(glb)
        print(f"wrote {glb}")
