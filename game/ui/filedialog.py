"""Asking for a file: the desktop's own dialog through imgui-bundle's portable-file-dialogs, or a typed path in
an imgui window when the desktop has none.

    dialog = FileDialog()
    dialog.ask("open", "Open a glTF", filters=["glTF 2.0", "*.glb *.gltf"])
    ... each frame, inside the imgui frame:
    dialog.draw()                      # the typed-path window (nothing while a native dialog runs)
    done, path = dialog.poll()         # (True, "/path/x.glb"), (True, None) cancelled, (False, None) waiting

portable-file-dialogs runs an external program on Linux (zenity, matedialog, qarma or kdialog, found on PATH;
the Windows and macOS dialogs are always there) without blocking the frame: :meth:`FileDialog.poll` asks it
each frame whether the user answered. Where none of those programs exists (a bare X server, Xvfb in the
tests), with ``SKINENGINE_FILE_DIALOG=typed`` in the environment, or ``native=False``, the typed-path window
shows instead: a text field with the path, Enter or OK
accepts it, Esc or Cancel gives up.
"""
from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["FileDialog", "native_backend", "LINUX_BACKENDS"]

#: the programs portable-file-dialogs drives on Linux and the BSDs, in its order of preference
LINUX_BACKENDS = ("zenity", "matedialog", "qarma", "kdialog")


def native_backend() -> str | None:
    """The program portable-file-dialogs would use ("zenity", "kdialog", ...; "system" on Windows and macOS),
    None when there is none or ``SKINENGINE_FILE_DIALOG=typed`` is set (then the typed path is asked for)."""
    if os.environ.get("SKINENGINE_FILE_DIALOG", "").strip().lower() == "typed":
        return None  # the user (or a test) asked for the typed path
    if sys.platform in ("win32", "darwin"):
        return "system"
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return None
    return next((b for b in LINUX_BACKENDS if shutil.which(b)), None)


class FileDialog:
    """One file question at a time (see the module docstring). ``native``: use the desktop's dialog when
    there is one (None: when :func:`native_backend` finds one)."""

    WINDOW = "File"

    def __init__(self, *, native: bool | None = None) -> None:
        self.native = native_backend() is not None if native is None else bool(native)
        self.kind: str | None = None  # "open" / "save" while a question is asked
        self.title = ""
        self.text = ""
        self._pending: Any = None  # the native dialog object
        self._answer: tuple[bool, str | None] = (False, None)
        self._focus = False

    @property
    def active(self) -> bool:
        """A question is being asked (its answer not yet taken by :meth:`poll`)."""
        return self.kind is not None

    @property
    def typed(self) -> bool:
        """The typed-path window is showing (it takes the keyboard)."""
        return self.kind is not None and self._pending is None and not self._answer[0]

    def ask(self, kind: str, title: str, *, default: str = "", filters: Sequence[str] = ()) -> None:
        """Ask for a file to ``kind`` ("open" or "save"); ``filters``: pairs of (label, "*.a *.b") flattened,
        as portable-file-dialogs takes them."""
        if kind not in ("open", "save"):
            raise ValueError(f"kind must be 'open' or 'save', got {kind!r}")
        self.kind, self.title, self.text = kind, title, default
        self._answer = (False, None)
        self._pending = None
        self._focus = True
        if self.native:
            from imgui_bundle import portable_file_dialogs as pfd

            flt = list(filters) + ["All files", "*"]
            self._pending = pfd.open_file(title, default, flt) if kind == "open" else \
                pfd.save_file(title, default, flt)

    def poll(self) -> tuple[bool, str | None]:
        """(done, path): (False, None) while waiting; (True, path) answered; (True, None) cancelled. An
        answer is returned once, then the dialog is idle."""
        if self._pending is not None and self._pending.ready(0):
            result = self._pending.result()
            self._pending = None
            path = (result[0] if result else "") if isinstance(result, list) else str(result or "")
            self._answer = (True, path or None)
        done, path = self._answer
        if done:
            self.kind, self._answer = None, (False, None)
        return done, path

    def answer(self, path: str | None) -> None:
        """Answer the typed-path question (OK with ``path``, or None to cancel); tests and scripts use it."""
        if self.kind is not None:
            self._answer = (True, path.strip() if path and path.strip() else None)

    def draw(self) -> None:
        """The typed-path window (inside an imgui frame); nothing while a native dialog runs or when idle."""
        if not self.typed:
            return
        from imgui_bundle import imgui

        vp = imgui.get_main_viewport()
        imgui.set_next_window_pos(imgui.ImVec2(vp.work_pos.x + vp.work_size.x / 2, vp.work_pos.y + vp.work_size.y / 2),
                                  imgui.Cond_.always, imgui.ImVec2(0.5, 0.5))
        imgui.set_next_window_size(imgui.ImVec2(min(560.0, vp.work_size.x - 16.0), 0.0), imgui.Cond_.always)
        flags = imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_docking | imgui.WindowFlags_.no_saved_settings
        imgui.begin(f"{self.title}###{self.WINDOW}", None, flags)
        imgui.text_wrapped("No file dialog program (zenity, kdialog) was found: type the path.")
        imgui.push_item_width(-1.0)
        if self._focus:
            imgui.set_keyboard_focus_here()
            self._focus = False
        entered, self.text = imgui.input_text("##path", self.text, imgui.InputTextFlags_.enter_returns_true)
        imgui.pop_item_width()
        if entered or imgui.button("OK (Enter)"):
            self.answer(self.text)
        imgui.same_line()
        if imgui.button("Cancel (Esc)") or imgui.is_key_pressed(imgui.Key.escape):
            self.answer(None)
        imgui.end()
