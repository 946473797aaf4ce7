"""The editor's file commands without a window (the typed-path dialog answered by the test): the quit prompt's
Save with no file yet asks where, saves (``.glb`` added) and then quits; Open of a file that is not glTF is
refused in one message and the scene stays; Open of the saved file replaces the character."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.gl


def test_save_as_then_quit_and_open(tmp_path, monkeypatch):
    from engine import Session
    from game.editor import Editor
    from game.editor.files import FileCommands
    from game.ui.filedialog import FileDialog

    monkeypatch.chdir(tmp_path)
    with Session(width=64, height=48, deformer="lbs") as s:
        ed = Editor(s)
        ch = ed.spawn("humanoid", clip="idle", speed=0.0)
        s.step()
        ui = SimpleNamespace(files=FileDialog(native=False))
        files = FileCommands(ed, ui)
        files.request("save", then_quit=True)  # no file yet: Save as
        assert ui.files.typed and ui.files.text == str(tmp_path / "humanoid_edited.glb")
        assert files.poll() is False  # waiting for the answer
        ui.files.answer(str(tmp_path / "out" / "mine"))
        assert files.poll() is True  # saved, then the window quits
        assert (tmp_path / "out" / "mine.glb").is_file() and ed.save_path == tmp_path / "out" / "mine.glb"
        (tmp_path / "model.fbx").write_bytes(b"Kaydara FBX Binary  \x00")
        files.request("open")
        ui.files.answer(str(tmp_path / "model.fbx"))
        assert files.poll() is False
        assert ed.state.messages[-1].startswith("open refused: ") and "FBX" in ed.state.messages[-1]
        assert ch.alive and s.characters == [ch]  # the scene stays
        files.request("open")
        ui.files.answer(None)
        files.poll()
        assert ed.state.messages[-1] == "open cancelled"
        files.request("open")
        ui.files.answer(str(tmp_path / "out" / "mine.glb"))
        files.poll()
        assert not ch.alive and len(s.characters) == 1 and "pose" in s.characters[0].clips
        assert ed.state.messages[-1] == "opened mine.glb" and not ed.unsaved and ed.undo.history == []
