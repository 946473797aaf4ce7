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
from engine.skinning.edits import EASINGS

__all__ = ["TOOLS", "STROKE_TOOLS", "SURFACE_TOOLS", "SURFACE_PROFILES", "SURFACE_SOLVERS", "EditorSettings",
           "EditorState", "StrokeInProgress"]

#: Every tool of the palette: orbit, line-of-action posing, the surface tools (game/editor/surface.py):
#: "bulge" (a stroke on the skin raised by a profile) and "silhouette" (an accent stroke moves an outline), and
#: "weights" (skin-weight painting, dragging and influence regions: game/editor/weights_edit.py).
TOOLS = ("orbit", "pose", "bulge", "silhouette", "weights")
#: Tools whose left-button drags draw strokes.
STROKE_TOOLS = ("pose", "bulge", "silhouette")
#: The surface-editing tools.
SURFACE_TOOLS = ("bulge", "silhouette")
#: Profiles the bulge tool offers (engine.skinning.edits.Profile types with an amount).
SURFACE_PROFILES = ("bulge", "sine")
#: How a silhouette edit is solved: the spring edit forces, or Laplacian editing once (CPU) held by them.
SURFACE_SOLVERS = ("springs", "laplacian")

_RANGES: dict[str, tuple[float, float]] = {"brush_radius": (1.0, 2000.0), "epsilon_px": (0.0, 100.0),
                                           "plane_offset": (-10.0, 10.0), "plane_turn": (-180.0, 180.0),
                                           "plane_tilt": (-89.0, 89.0), "surface_height": (-0.25, 0.25),
                                           "surface_rings": (0.0, 64.0), "surface_stiffness": (0.0, 1000.0),
                                           "surface_waves": (0.25, 20.0), "surface_speed": (-10.0, 10.0),
                                           "surface_grab_px": (1.0, 100.0)}
_CHOICES: dict[str, tuple[str, ...]] = {"tool": TOOLS, "surface_profile": SURFACE_PROFILES,
                                        "surface_ease": tuple(EASINGS), "surface_solver": SURFACE_SOLVERS}
_INTEGERS = ("surface_rings",)


@dataclass
class EditorSettings:
    """``tool`` (one of :data:`TOOLS`), ``brush_radius`` (window pixels at the baseline: which joints a
    line of action selects), ``epsilon_px`` (Ramer-Douglas-Peucker tolerance at 1080 window rows, scaled with
    the window height); the posing plane (through the skeleton's root, parallel to the image plane by default):
    ``plane_offset`` metres along its normal, ``plane_turn`` degrees about the world's up axis and
    ``plane_tilt`` degrees about the camera's horizontal axis.

    The surface tools (game/editor/surface.py) read: ``surface_profile`` ("bulge" or "sine"),
    ``surface_height`` metres (the bulge's height at the stroke's middle, the sine's amplitude),
    ``surface_ease`` (an easing of engine.skinning.edits.EASINGS; "quadOut" is the research's parabola),
    ``surface_waves`` / ``surface_speed`` (sine: waves along the stroke, waves per second of clip time),
    ``surface_rings`` (the passive region, edges around the stroke's faces), ``surface_stiffness`` (the edit
    force's k) and ``surface_solver`` ("springs" or "laplacian", for silhouette strokes). Changing one while
    an edit is active changes that edit live. ``surface_grab_px``: how near (window pixels) a left press must
    be to the active bulge's stroke to drag the stroke as a handle instead of drawing a new one."""

    tool: str = "pose"
    brush_radius: float = 60.0
    epsilon_px: float = DEFAULT_EPSILON_PX
    plane_offset: float = 0.0
    plane_turn: float = 0.0
    plane_tilt: float = 0.0
    surface_profile: str = "bulge"
    surface_height: float = 0.02
    surface_ease: str = "quadOut"
    surface_waves: float = 1.0
    surface_speed: float = 0.0
    surface_rings: int = 4
    surface_stiffness: float = 5.0
    surface_solver: str = "springs"
    surface_grab_px: float = 8.0

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
            if k in _CHOICES:
                if v not in _CHOICES[k]:
                    raise ValueError(f"{k} must be one of {', '.join(_CHOICES[k])}, got {v!r}")
                clean[k] = v
                continue
            lo, hi = _RANGES[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
                raise ValueError(f"{k} must be a number in [{lo:g}, {hi:g}], got {v!r}")
            if k in _INTEGERS:
                if v != int(v):
                    raise ValueError(f"{k} must be a whole number in [{lo:g}, {hi:g}], got {v!r}")
                clean[k] = int(v)
                continue
            clean[k] = float(v)
        for k, v in clean.items():
            setattr(self, k, v)

    def nudge(self, **steps: float) -> None:
        """Add ``steps`` to numeric settings, clamped to their ranges (keys: ``surface_height`` +0.005 ...)."""
        values: dict[str, Any] = {}
        for k, step in steps.items():
            if k not in _RANGES:
                raise ValueError(f"{k!r} is not a numeric setting; numeric: {', '.join(sorted(_RANGES))}")
            if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step):
                raise ValueError(f"the step of {k} must be a finite number, got {step!r}")
            lo, hi = _RANGES[k]
            values[k] = min(hi, max(lo, getattr(self, k) + step))
        self.update(**values)

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
    #: the skeleton is drawn (K); ``joint``: the selected joint (a node index; its rotate gizmo shows)
    show_skeleton: bool = False
    joint: int | None = None

    def say(self, message: str) -> None:
        """Show ``message`` to the user (the last 50 are kept)."""
        self.messages.append(message)
        del self.messages[:-50]
