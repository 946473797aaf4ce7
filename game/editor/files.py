"""The editor window's file commands: Open (Ctrl+O), Save (Ctrl+S), Save as (Ctrl+Shift+S), as the File menu
and the keys ask for them.

* Open asks for a .gltf/.glb (the desktop's dialog, or a typed path: game/ui/filedialog.py) and opens it in
  place of the characters (:meth:`game.editor.Editor.open`: a saved file's pose, edits and weights come back).
* Save writes the selected character to the file it came from or was last saved to (:meth:`Editor.save`: the
  .glb with the pose clip and the weights the Weights tool edited, the surface edits beside it as
  ``<stem>.edits.json``); with no such file yet it is Save as.
* Save as asks for the .glb to write (``.glb`` is added to a name without it).

With a cutscene open (``editor --cutscene FILE``, game/editor/cutscene_panel.py) Save writes the cutscene's
.toml and Save as asks for another .toml; Open is refused (the cutscene's characters are the scene).

A refusal (a file that is not glTF, a folder that cannot be written) becomes one message in the Messages
panel; the scene and the edits stay as they were.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["FileCommands", "GLTF_FILTERS"]

#: the Open dialog's filter (portable-file-dialogs' pairs of label and patterns)
GLTF_FILTERS = ("glTF 2.0 (.glb, .gltf)", "*.glb *.gltf")


class FileCommands:
    """Open / Save / Save as of one editor window; ``ui`` (an EditorUI, or None without panels) asks for
    paths."""

    def __init__(self, ed: Any, ui: Any, *, cutscene: Any = None) -> None:
        self.ed = ed
        self.ui = ui
        self.cutscene = cutscene  # a CutscenePanel: Save and Save as write its .toml
        self._asked: str | None = None  # "open" or "save_as" while its dialog is open
        self._quit_after = False  # the pending Save as was asked for by the quit prompt
        self._quit_now = False  # saved on the quit prompt's request: the window quits

    def request(self, what: str, *, then_quit: bool = False) -> None:
        """Carry out "open", "save" or "save_as" (``then_quit``: quit once saved)."""
        if what not in ("open", "save", "save_as"):
            raise ValueError(f"unknown file command {what!r}; commands: open, save, save_as")
        if self._asked is not None:
            return  # one question at a time
        self._quit_after = then_quit
        if self.cutscene is not None:
            self._cutscene_request(what, then_quit)
            return
        if what == "save" and (self.ed.save_path is not None or self.ui is None):
            self._quit_now = self.save(None) and then_quit
            return
        if self.ui is None:
            self.ed.state.say(f"{what}: needs the panels (a file dialog)")
            return
        ch = self.ed.selected
        if what == "open":
            self.ui.files.ask("open", "Open a glTF character", default=str(Path.cwd()) + "/",
                              filters=GLTF_FILTERS)
        else:
            default = self.ed.save_path or Path.cwd() / f"{ch.name if ch is not None else 'character'}_edited.glb"
            self.ui.files.ask("save", "Save the character as .glb", default=str(default),
                              filters=("glTF binary (.glb)", "*.glb"))
        self._asked = "open" if what == "open" else "save_as"

    def _cutscene_request(self, what: str, then_quit: bool) -> None:
        if what == "open":
            self.ed.state.say("open refused: a cutscene is open (its characters are the scene); "
                              "start the editor without --cutscene to open a character")
        elif what == "save" or self.ui is None:
            self._quit_now = self.cutscene.save() and then_quit
        else:
            default = self.cutscene.timeline.doc.path or Path.cwd() / "cutscene.toml"
            self.ui.files.ask("save", "Save the cutscene as .toml", default=str(default),
                              filters=("cutscene (.toml)", "*.toml"))
            self._asked = "save_as"

    def poll(self) -> bool:
        """Take a dialog's answer and act on it; True when the window should quit now (saved before quitting)."""
        if self._quit_now:
            return True
        if self._asked is None or self.ui is None:
            return False
        done, path = self.ui.files.poll()
        if not done:
            return False
        asked, self._asked = self._asked, None
        if path is None:
            self.ed.state.say(f"{'open' if asked == 'open' else 'save'} cancelled")
            return False
        if asked == "open":
            self.open(path)
            return False
        if self.cutscene is not None:
            return self.cutscene.save(path) and self._quit_after
        return self.save(path) and self._quit_after

    def save(self, path: str | None) -> bool:
        """Save (to ``path``, ``.glb`` added when it has another or no suffix); a refusal becomes a message."""
        target = None if path is None else Path(path)
        if target is not None and target.suffix.lower() != ".glb":
            target = target.with_name(target.name + ".glb")
        try:
            self.ed.save(target)
        except (ValueError, OSError) as exc:
            self.ed.state.say(f"save refused: {exc}")
            return False
        return True

    def open(self, path: str) -> bool:
        """Open ``path`` in place of the characters; a refusal becomes a message (the scene stays)."""
        from engine.assets.errors import AssetError

        try:
            self.ed.open(path)
        except (AssetError, ValueError, OSError) as exc:  # the loader's refusals name the file and why
            self.ed.state.say(f"open refused: {exc}")
            return False
        return True
