"""The editor's state as world resources: :class:`EditorSettings` (what the panels and a recording's header
set) and :class:`EditorState` (the tool, strokes being drawn and finished, messages for the user).

Settings are plain, validated values; :meth:`EditorSettings.update` refuses an out-of-range value with its
range and leaves the settings as they were (the UI shows the message). Strokes are plain data: the samples
of the stroke being drawn and the fitted :class:`engine.input.strokes.Stroke` objects of finished ones.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from engine.input.strokes import DEFAULT_EPSILON_PX, Stroke

__all__ = ["TOOLS", "STROKE_TOOLS", "EditorSettings", "EditorState", "StrokeInProgress"]

#: Every tool of the palette; the surface tools are slots that later issues fill.
TOOLS = ("orbit", "pose", "surface_paint", "surface_sculpt")
#: Tools whose left-button drags draw strokes.
STROKE_TOOLS = ("pose", "surface_paint", "surface_sculpt")

_RANGES: dict[str, tuple[float, float]] = {"brush_radius": (1.0, 2000.0), "epsilon_px": (0.0, 100.0),
                                           "plane_offset": (-10.0, 10.0), "plane_turn": (-180.0, 180.0),
                                           "plane_tilt": (-89.0, 89.0)}


@dataclass
class EditorSettings:
    """``tool`` (one of :data:`TOOLS`), ``brush_radius`` (window pixels at the baseline: which joints a
    line of action selects), ``epsilon_px`` (Ramer-Douglas-Peucker tolerance at 1080 window rows, scaled with
    the window height); the posing plane (through the skeleton's root, facing the camera by default):
    ``plane_offset`` metres along its normal, ``plane_turn`` degrees about the world's up axis and
    ``plane_tilt`` degrees about the camera's horizontal axis."""

    tool: str = "pose"
    brush_radius: float = 60.0
    epsilon_px: float = DEFAULT_EPSILON_PX
    plane_offset: float = 0.0
    plane_turn: float = 0.0
    plane_tilt: float = 0.0

    def __post_init__(self) -> None:
        self.update(**{f.name: getattr(self, f.name) for f in fields(self)})

    def update(self, **values: Any) -> None:
        """Set several settings at once; ValueError (naming the key, the value and the valid range) leaves
        every setting unchanged."""
        names = {f.name for f in fields(self)}
        clean: dict[str, Any] = {}
        for k, v in values.items():
            if k not in names:
                raise ValueError(f"unknown editor setting {k!r} (settings: {', '.join(sorted(names))})")
            if k == "tool":
                if v not in TOOLS:
                    raise ValueError(f"tool must be one of {', '.join(TOOLS)}, got {v!r}")
                clean[k] = v
                continue
            lo, hi = _RANGES[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
                raise ValueError(f"{k} must be a number in [{lo:g}, {hi:g}], got {v!r}")
            clean[k] = float(v)
        for k, v in clean.items():
            setattr(self, k, v)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EditorSettings:
        if not isinstance(d, dict):
            raise ValueError(f"editor settings must be an object, got {d!r}")
        s = cls()
        s.update(**d)
        return s


@dataclass
class StrokeInProgress:
    """The samples of the stroke being drawn: window pixels (row 0 at the top) and timestamps."""

    points: list[tuple[float, float]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    pressures: list[float] = field(default_factory=list)


@dataclass
class EditorState:
    """The editor as the systems see it (a world resource).

    ``drawing``: the stroke being drawn (None between strokes); ``finished``: strokes finished this frame
    (window space, for the TOOLS-phase systems; emptied at the start of each frame); ``strokes``: the strokes
    the current tool holds (the posing tool's baseline, then its offset); ``editable``, ``knot_drag``,
    ``knots_moved``: the last pose's strokes, whose knots can be dragged; ``messages``: what the user should
    read (a refused stroke, an undo with nothing to undo), newest last; ``selected``: the entity the tools act
    on (None: the first character).
    """

    settings: EditorSettings = field(default_factory=EditorSettings)
    drawing: StrokeInProgress | None = None
    finished: list[Stroke] = field(default_factory=list)
    strokes: list[Stroke] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    selected: int | None = None
    pointer: tuple[float, float] | None = None  # the last pointer position the camera system saw
    #: strokes whose knots can be dragged (the last pose's baseline and offset, window space)
    editable: list[Stroke] = field(default_factory=list)
    #: (stroke index in ``editable``, knot index) while a knot is dragged
    knot_drag: tuple[int, int] | None = None
    #: a knot moved this frame (the posing tool re-solves)
    knots_moved: bool = False

    def say(self, message: str) -> None:
        """Show ``message`` to the user (the last 50 are kept)."""
        self.messages.append(message)
        del self.messages[:-50]
