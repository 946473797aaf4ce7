"""The cutscene open in the editor window (``python main.py editor --cutscene FILE``, issue 23 item 4): the glue
between the window and the timeline model (game/editor/timeline.py), kept out of game/editor/window.py.

* the "Timeline" panel (docked along the bottom: :data:`PANEL`) is :func:`game.editor.timeline.draw_timeline`
  plus this module's rows: look through the live camera (C), a pose key of the selected character from the pose
  tool at the playhead (Shift+K), save (Ctrl+S writes the cutscene's .toml, Ctrl+Shift+S another one);
* :meth:`CutscenePanel.frame` runs once per displayed frame: play / loop, and the live camera when it is looked
  through (the free orbit camera comes back when the toggle is off, where it was).

Every timeline edit is a step of the editor's undo stack (Ctrl+Z / Ctrl+Shift+Z), so a save marks the editor
saved, and the quit prompt asks only about edits made after it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from game.editor.timeline import CutsceneTimeline, attach_timeline, draw_timeline

__all__ = ["CutscenePanel", "PANEL", "open_cutscene"]

#: the timeline panel's imgui window name (EditorUI's dock layout places it along the bottom)
PANEL = "Timeline"


def open_cutscene(editor: Any, path: str | Path, *, device: str = "gpu") -> CutscenePanel:
    """Open the cutscene at ``path`` in ``editor`` (its characters spawned into the editor's session, the first
    one selected); CutsceneError (a ValueError naming the file and key) when it is refused."""
    panel = CutscenePanel(editor, attach_timeline(editor, path, device=device))
    editor.save_path = None  # Ctrl+S writes the cutscene, not a character .glb
    editor.frame_camera()
    return panel


class CutscenePanel:
    """The editor's cutscene: ``timeline`` (the model), ``live`` (looking through the live camera)."""

    def __init__(self, editor: Any, timeline: CutsceneTimeline) -> None:
        self.editor = editor
        self.timeline = timeline
        self.live = False
        self._free: Any = None  # the orbit camera while the live one is looked through

    # -- the selection ---------------------------------------------------------------------------------------
    def character_name(self) -> str | None:
        """The cutscene name of the editor's selected character (None when it is not one of the cutscene's)."""
        ch = self.editor.selected
        for name, c in self.timeline.player.characters.items():
            if ch is not None and c.entity == ch.entity:
                return str(name)
        return None

    # -- commands (the panel's widgets and the window's keys) ------------------------------------------------
    def toggle_live(self) -> None:
        """Look through the live camera at the playhead, or back through the free (orbit) camera."""
        s = self.editor.session
        if not self.live:
            self._free = s.camera
            self.live = True
            self._follow()
            self._say(f"looking through the live camera ({self.timeline.doc.shot_of(self.timeline.playhead).camera})")
        else:
            self.live = False
            if self._free is not None:
                self._free.view_rect = getattr(s.camera, "view_rect", None)  # the dock may have moved meanwhile
                s.camera = self._free
            self._say("looking through the free camera")

    def pose_key(self) -> bool:
        """Key the selected character's pose layer (what the pose tool made) at the playhead into its pose
        track (one undo step); False with the reason in the messages when refused."""
        name = self.character_name()
        if name is None:
            self._say("pose key refused: select a character of the cutscene")
            return False
        ok = self.timeline.add_pose_key(name)
        self._say(self.timeline.status)
        return ok

    def save(self, path: str | Path | None = None) -> bool:
        """Write the cutscene (to its own file, or ``path``: ``.toml`` added when missing); the editor's edits
        count as saved. A refusal (a folder that cannot be written) becomes a message."""
        target = None if path is None else Path(path)
        if target is not None and target.suffix.lower() != ".toml":
            target = target.with_name(target.name + ".toml")
        try:
            out = self.timeline.save(target)
        except (ValueError, OSError) as exc:
            self._say(f"save refused: {exc}")
            return False
        self.timeline.doc.path = out  # the next Save writes where this one did
        self.editor.saved_mark = self.editor.undo.mark()
        self._say(f"saved {out.name}")
        return True

    # -- per frame --------------------------------------------------------------------------------------------
    def frame(self) -> None:
        """Once per displayed frame, before the session's frame: the next frame while playing; the live camera
        follows the playhead while it is looked through."""
        self.timeline.tick()
        if self.live:
            self._follow()

    def _follow(self) -> None:
        s = self.editor.session
        try:
            cam = self.timeline.live_camera()
        except ValueError as exc:  # no characters left to frame: back to the free camera
            self._say(f"live camera: {exc}")
            self.toggle_live()
            return
        rect = getattr(s.camera, "view_rect", None)
        if rect is not None:  # the live camera's image fills the docked central view, as the orbit camera's did
            cam.view_rect = rect
        s.camera = cam

    def _say(self, message: str) -> None:
        if message:
            self.editor.state.say(message)

    # -- the panel ----------------------------------------------------------------------------------------------
    def draw(self) -> None:
        """The timeline panel and this module's rows (inside the editor's imgui frame)."""
        from imgui_bundle import imgui

        said = self.timeline.status
        draw_timeline(self.timeline, imgui)
        if self.timeline.status != said and self.timeline.status.startswith("saved "):
            self.editor.saved_mark = self.editor.undo.mark()  # the panel's own save button wrote the file
        imgui.begin(PANEL)  # the same window again: these rows go below the timeline's
        imgui.separator()
        if imgui.checkbox("look through the live camera (C)", self.live)[0]:
            self.toggle_live()
        imgui.same_line()
        name = self.character_name()
        if imgui.button(f"pose key of {name or '(select a character)'} at the playhead (Shift+K)"):
            self.pose_key()
        imgui.end()

    def release(self) -> None:
        self.timeline.release()
