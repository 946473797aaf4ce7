"""The cast panel: switch the deformer of every character, or of one, from imgui (the demo; the editor).

    panel = CastPanel(rows, choices=("lbs", "dqs", "rigid", "irs", "spring"))
    panel.draw()                                   # inside an imgui frame
    panel.set_all("dqs")                           # what the "all" buttons and the demo's keys do

``rows`` is a callable returning the switchable characters (anything with ``name``, ``deformer`` and
``set_deformer(name)``, e.g. :class:`engine.Character`); ``extra`` draws more widgets in the same window (the
demo's comparison-mode checkbox); ``on_all(name)`` is told of every switch of all characters. A refused
switch (a method the device cannot run) keeps the current method and its message is shown in the panel and
kept in :attr:`message`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["CastPanel"]


class CastPanel:
    """Deformer switch per character and for all (see the module docstring)."""

    def __init__(self, rows: Callable[[], Sequence[Any]], *, choices: Sequence[str], title: str = "Cast",
                 extra: Callable[[], None] | None = None, on_all: Callable[[str], None] | None = None) -> None:
        if not choices:
            raise ValueError("choices must name at least one deformer")
        self.rows = rows
        self.choices = tuple(choices)
        self.title = title
        self.extra = extra
        #: called after every switch of all characters (the demo remembers the method for a rebuilt cast)
        self.on_all = on_all
        #: start collapsed (a title bar until clicked)
        self.collapsed = False
        #: the last switch's outcome (a refusal's message, or what was switched)
        self.message = ""

    def _check(self, deformer: str) -> None:
        if deformer not in self.choices:
            raise ValueError(f"unknown deformer {deformer!r}; choose one of {', '.join(self.choices)}")

    def set_one(self, character: Any, deformer: str) -> bool:
        """Switch one character; False (and :attr:`message` says why) when it was refused."""
        self._check(deformer)
        try:
            character.set_deformer(deformer)
        except ValueError as exc:
            self.message = f"{character.name}: {exc}"
            return False
        self.message = f"{character.name}: {deformer}"
        return True

    def set_all(self, deformer: str) -> int:
        """Switch every character; returns how many now use ``deformer``."""
        self._check(deformer)
        ok, refused = 0, []
        for ch in self.rows():
            try:
                ch.set_deformer(deformer)
                ok += 1
            except ValueError as exc:
                refused.append(f"{ch.name}: {exc}")
        self.message = refused[0] if refused else f"all: {deformer}"
        if self.on_all is not None:
            self.on_all(deformer)
        return ok

    def draw(self, *, pos: tuple[float, float] = (8.0, 8.0), width: float = 300.0) -> None:
        """The panel window: buttons for all, then one combo per character."""
        from imgui_bundle import imgui

        imgui.set_next_window_pos(imgui.ImVec2(*pos), imgui.Cond_.first_use_ever)
        imgui.set_next_window_size(imgui.ImVec2(width, 0.0), imgui.Cond_.first_use_ever)
        imgui.set_next_window_bg_alpha(0.8)
        imgui.set_next_window_collapsed(self.collapsed, imgui.Cond_.first_use_ever)
        opened, _ = imgui.begin(self.title)
        try:
            if opened:
                self._body()
        finally:
            imgui.end()

    def _body(self) -> None:
        from imgui_bundle import imgui

        imgui.text("all:")
        for i, name in enumerate(self.choices):
            imgui.same_line()
            if imgui.small_button(f"{name}##all{i}"):
                self.set_all(name)
        if self.extra is not None:
            self.extra()
        for i, ch in enumerate(self.rows()):
            current = self.choices.index(ch.deformer) if ch.deformer in self.choices else 0
            imgui.set_next_item_width(110.0)
            changed, picked = imgui.combo(f"{i + 1}. {ch.name}##row{i}", current, list(self.choices))
            if changed and picked != current:
                self.set_one(ch, self.choices[picked])
        if self.message:
            imgui.text_wrapped(self.message)
