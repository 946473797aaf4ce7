"""The editor window's file pieces without a window: the file question's typed-path fallback, the user's
folders (XDG), and reading a cut-off autosave up to its last whole frame."""
from __future__ import annotations

import json

import pytest

from game.editor.autosave import autosave_path, previous_path, read_cut_off, take_previous
from game.ui.filedialog import FileDialog, native_backend
from game.ui.userdirs import layout_ini_path, user_cache_dir, user_config_dir

HEADER = {"format": "skinengine-session", "version": 1, "window": {"width": 64, "height": 48},
          "camera": {"eye": [0, 1, 3], "target": [0, 1, 0]}, "assets": [{"source": "humanoid"}], "editor": {}}


def _lines(frames: int) -> list[str]:
    out = [json.dumps(HEADER) + "\n"]
    for i in range(frames):
        out.append(json.dumps({"type": "action", "t": float(i), "name": "undo", "args": {}}) + "\n")
        out.append(json.dumps({"type": "frame", "dt": 0.016}) + "\n")
    return out


def test_without_a_dialog_program_the_path_is_typed(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert native_backend() is None
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.setenv("SKINENGINE_FILE_DIALOG", "typed")
    assert native_backend() is None  # asked for, even with a display and a dialog program
    d = FileDialog()
    assert not d.native and not d.active
    d.ask("save", "Save as", default="renders/x.glb")
    assert d.active and d.typed and d.text == "renders/x.glb"
    assert d.poll() == (False, None)  # waiting
    d.answer("  renders/y.glb ")
    assert d.poll() == (True, "renders/y.glb") and not d.active
    d.ask("open", "Open")
    d.answer(None)  # cancelled
    assert d.poll() == (True, None)
    with pytest.raises(ValueError, match="'open' or 'save'"):
        d.ask("delete", "x")


def test_user_folders_follow_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the specification: relative values are ignored
    assert user_config_dir() == tmp_path / "c" / "skinengine"
    assert user_cache_dir().parts[-2:] == (".cache", "skinengine")
    ini = layout_ini_path("editor")
    assert ini == str(tmp_path / "c" / "skinengine" / "editor-layout.ini") and (tmp_path / "c" / "skinengine").is_dir()


def test_a_cut_off_autosave_reads_to_its_last_whole_frame(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = autosave_path()
    path.parent.mkdir(parents=True)
    lines = _lines(3)
    path.write_text("".join(lines) + json.dumps({"type": "action", "t": 9.0, "name": "undo", "args": {}})
                    + "\n" + '{"type": "fra')  # an event after the last frame line, then half a line
    rec = read_cut_off(path)
    assert len(rec.frames) == 3 and all(len(f.events) == 1 for f in rec.frames)
    taken = take_previous()  # moved aside until the user answers
    assert taken is not None and len(taken.frames) == 3
    assert not path.exists() and previous_path().is_file()
    assert take_previous() is not None  # not answered yet: offered again
    previous_path().write_text("".join(_lines(0)))  # nothing recorded: nothing to offer
    assert take_previous() is None and not previous_path().exists()
    path.write_text("not json\n")  # unreadable: dropped with a warning, never an error
    assert take_previous() is None and not previous_path().exists()
