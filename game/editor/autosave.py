"""The editor window's autosave: the session's recording (engine/input/record.py), written frame by frame to
the user's cache folder, so a crash loses nothing; the next editor offers to restore it.

* While the window runs, :meth:`game.editor.Editor.start_autosave` records to :func:`autosave_path`
  (``$XDG_CACHE_HOME/skinengine/autosave.jsonl``); each frame is flushed.
* Quitting with nothing unsaved (saved, discarded, or no edits) deletes it: only a session that ended
  without a choice (a crash, a killed process) leaves one behind.
* At start, :func:`take_previous` moves a file left behind aside (``autosave-previous.jsonl``) and reads it;
  the window asks "restore / discard"; :func:`restore` replays it into the running editor (the characters of
  its header, its camera and settings, then every recorded frame's events with their recorded dt, as
  ``replay`` does), recording the restored frames into the new autosave, so the work is at once as it was
  and safe again. A file cut off mid-line is read up to its last whole frame (:func:`read_cut_off`).

The restored session is exact when the window has the recorded size (window pixels are the events'
coordinates); the window is asked for that size first.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from engine.input.record import MAX_FILE_BYTES, Recording, parse_recording
from engine.textfile import read_user_text
from game.ui.userdirs import user_cache_dir

__all__ = ["autosave_path", "previous_path", "read_cut_off", "take_previous", "restore", "discard_previous"]

log = logging.getLogger(__name__)


def autosave_path() -> Path:
    """``$XDG_CACHE_HOME/skinengine/autosave.jsonl`` (default ``~/.cache/skinengine``)."""
    return user_cache_dir() / "autosave.jsonl"


def previous_path() -> Path:
    """Where a left-behind autosave waits for the restore / discard answer."""
    return user_cache_dir() / "autosave-previous.jsonl"


def read_cut_off(path: Path) -> Recording:
    """A recording that may lack its end (a crash): read up to its last whole frame line. RecordError (a
    ValueError naming the file and line) when what is there is bad."""
    text = read_user_text(path, "autosave", max_bytes=MAX_FILE_BYTES, kind="JSON-lines")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines.pop()  # the line being written when it stopped
    if lines and '"type": "end"' not in lines[-1]:
        last_frame = max((i for i, ln in enumerate(lines) if ln.startswith('{"type": "frame"')), default=0)
        lines = lines[:last_frame + 1]
        frames = sum(1 for ln in lines if ln.startswith('{"type": "frame"'))
        lines.append(json.dumps({"type": "end", "frames": frames}, separators=(", ", ": ")) + "\n")
    rec = parse_recording(lines, name=path.name)
    rec.path = path
    return rec


def take_previous() -> Recording | None:
    """A session's autosave left behind (moved aside to :func:`previous_path`; one set aside earlier and not
    yet answered counts too), read; None when there is none, it holds no frame, or it cannot be read (then it
    is dropped, with a warning)."""
    src, dst = autosave_path(), previous_path()
    if not src.is_file() and not dst.is_file():
        return None
    try:
        if src.is_file():
            src.replace(dst)
        rec = read_cut_off(dst)
    except (OSError, ValueError) as exc:
        log.warning("the autosave %s cannot be restored: %s", dst, exc)
        dst.unlink(missing_ok=True)
        return None
    if not rec.frames:
        dst.unlink(missing_ok=True)
        return None
    return rec


def discard_previous() -> None:
    """Forget the left-behind autosave (the user chose discard, or it was restored)."""
    previous_path().unlink(missing_ok=True)


def restore(ed: Any, rec: Recording, *, window: Any = None) -> int:
    """Replay ``rec`` into the running editor ``ed`` (see the module docstring); returns the frame count.
    ValueError when its characters cannot be found; the scene is then left empty of them, with a message."""
    from game.editor.editor import replay, spawn_recorded

    h = rec.header
    if window is not None and tuple(window.get_size()) != (h.width, h.height):
        window.set_size(h.width, h.height)  # events are window pixels: the recorded size replays exactly
    ed.clear_scene()
    ed.state.settings.update(**(h.editor or {}))
    spawn_recorded(ed, rec)
    if ed.autosaver is not None:  # the new autosave starts from the restored header, then gets its frames
        ed.start_autosave(ed.autosaver.path)
    n = replay(rec, ed)
    discard_previous()
    ed.state.say(f"restored the last session ({n} frames)")
    return n
