"""The one input event model: every device (mouse, pen, keyboard, tracked VR devices, a replayed file) becomes
these plain, immutable events; tools never read a windowing library.

* Pointer events (:class:`PointerDown`, :class:`PointerMove`, :class:`PointerUp`) are in window pixels with
  row 0 at the top (as the G-buffer and :func:`engine.input.rays.window_ray`), with ``pressure`` in [0, 1]
  (1.0 where the device gives none), the button that changed (down/up) or the buttons held (move) as
  :class:`Buttons` flags, and the :class:`Modifiers` held.
* Keys (:class:`KeyDown`, :class:`KeyUp`) are lower-case names (``"z"``, ``"space"``, ``"escape"``,
  ``"bracketleft"``), so a recording does not depend on a library's key codes; :class:`Text` carries typed text.
* :class:`Wheel` is a scroll in notches (``dy`` > 0: away from the user).
* :class:`TrackedSample` is a 3D sample of a tracked device (a VR headset ``"head"`` or controller ``"left"`` /
  ``"right"``): position (metres, tracking space) and orientation (unit quaternion x, y, z, w), with its
  pointer buttons, the trigger value as ``pressure``, the VR :class:`VRButtons` held (``controls``: grip, menu,
  primary, secondary, stick press) and the stick/trackpad ``axis`` (x, y in [-1, 1]).
* :class:`Action` is a tool or UI action (``name`` and JSON-able ``args``): choosing a tool, undo, a slider
  moved in a panel. Panels emit actions instead of changing state, so a recording replays them.
* :class:`Resize` is the window's new size in pixels.

Every event has ``t``: seconds on one monotonic clock (:func:`now`). Each serialises to a JSON-able dict
(:meth:`InputEvent.to_dict`, :func:`event_from_dict`): the record/replay files (engine/input/record.py) hold
exactly these dicts, one per line.

The :class:`EventQueue` is a world resource: the window adapter (:class:`PygletAdapter`, the one place that
knows pyglet) or a replay pushes events; :func:`input_begin_system` (the first INPUT-phase system) moves the
pending events into :attr:`EventQueue.frame`, the events every INPUT-phase system of this frame reads, and
keeps :class:`PointerState` (position, buttons held, modifiers, keys down) up to date. Listeners
(:meth:`EventQueue.listen`, e.g. a recorder) see each frame's events as they are taken.
"""
from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

__all__ = ["Buttons", "Modifiers", "VRButtons", "InputEvent", "PointerDown", "PointerMove", "PointerUp", "Wheel",
           "KeyDown", "KeyUp", "Text", "TrackedSample", "Action", "Resize", "EVENT_TYPES", "EventError",
           "event_from_dict", "now", "PointerState", "EventQueue", "input_begin_system", "PygletAdapter"]


def now() -> float:
    """The one monotonic clock of input timestamps, in seconds."""
    return time.perf_counter()


class EventError(ValueError):
    """An event that cannot be built from its fields (unknown type, missing or bad field)."""


class Buttons(enum.IntFlag):
    """Pointer buttons (a pen's tip is LEFT, its barrel button RIGHT)."""

    NONE = 0
    LEFT = 1
    RIGHT = 2
    MIDDLE = 4


class Modifiers(enum.IntFlag):
    """Modifier keys held with an event."""

    NONE = 0
    SHIFT = 1
    CTRL = 2
    ALT = 4
    SUPER = 8


class VRButtons(enum.IntFlag):
    """Buttons of a tracked VR controller held with a :class:`TrackedSample` (the trigger is its value,
    ``pressure``)."""

    NONE = 0
    GRIP = 1
    MENU = 2
    PRIMARY = 4
    SECONDARY = 8
    STICK = 16


def _finite(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise EventError(f"{name} must be a finite number, got {v!r}")
    return float(v)


def _flags(kind: type[enum.IntFlag]) -> Callable[[str, Any], Any]:
    def check(name: str, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v & ~sum(m.value for m in kind):
            raise EventError(f"{name} must be a combination of {kind.__name__} flags (int >= 0), got {v!r}")
        return kind(v)
    return check


def _name(name: str, v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise EventError(f"{name} must be a non-empty string, got {v!r}")
    return v


def _unit_interval(name: str, v: Any) -> float:
    x = _finite(name, v)
    if not 0.0 <= x <= 1.0:
        raise EventError(f"{name} must be in [0, 1], got {x!r}")
    return x


def _numbers(n: int) -> Callable[[str, Any], tuple[float, ...]]:
    def check(name: str, v: Any) -> tuple[float, ...]:
        if not isinstance(v, (list, tuple)) or len(v) != n:
            raise EventError(f"{name} must be {n} numbers, got {v!r}")
        return tuple(_finite(name, x) for x in v)
    return check


def _unit_quaternion(name: str, v: Any) -> tuple[float, ...]:
    q = _numbers(4)(name, v)
    if not abs(math.sqrt(sum(x * x for x in q)) - 1.0) < 1e-3:
        raise EventError(f"{name} must be a unit quaternion (x, y, z, w), got {v!r}")
    return q


def _axis(name: str, v: Any) -> tuple[float, ...]:
    a = _numbers(2)(name, v)
    if not all(-1.0 <= x <= 1.0 for x in a):
        raise EventError(f"{name} must be two numbers in [-1, 1], got {v!r}")
    return a


def _size(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 16384:
        raise EventError(f"{name} must be an integer in [1, 16384], got {v!r}")
    return v


def _text(name: str, v: Any) -> str:
    if not isinstance(v, str):
        raise EventError(f"{name} must be a string, got {v!r}")
    return v


def _args(name: str, v: Any) -> dict[str, Any]:
    if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
        raise EventError(f"{name} must be a dict with string keys, got {v!r}")
    return v


#: One check (and normalisation) per field name, the same in every event type that has the field.
_FIELD_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "t": _finite, "x": _finite, "y": _finite, "dx": _finite, "dy": _finite,
    "modifiers": _flags(Modifiers), "button": _flags(Buttons), "buttons": _flags(Buttons),
    "pressure": _unit_interval, "device": _name, "name": _name, "key": lambda n, v: _name(n, v).lower(),
    "text": _text, "position": _numbers(3), "orientation": _unit_quaternion, "args": _args,
    "width": _size, "height": _size, "controls": _flags(VRButtons), "axis": _axis,
}


@dataclass(frozen=True)
class InputEvent:
    """Base of every event: ``t`` seconds on the monotonic clock of :func:`now`. Every field is checked and
    normalised on construction by the rule for its name; EventError names the bad value."""

    type: ClassVar[str] = ""
    t: float

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _FIELD_CHECKS[f.name](f.name, getattr(self, f.name)))

    def to_dict(self) -> dict[str, Any]:
        """The event as a JSON-able dict with its ``type`` first (flags as ints, tuples as lists)."""
        out: dict[str, Any] = {"type": self.type}
        for k, v in asdict(self).items():
            out[k] = list(v) if isinstance(v, tuple) else int(v) if isinstance(v, enum.IntFlag) else v
        return out


@dataclass(frozen=True)
class _Pointer(InputEvent):
    x: float
    y: float
    modifiers: Modifiers = Modifiers.NONE
    pressure: float = 1.0
    device: str = "mouse"


@dataclass(frozen=True)
class PointerDown(_Pointer):
    """A button pressed (or a pen touching) at window pixel (x, y), row 0 at the top."""

    type: ClassVar[str] = "pointer_down"
    button: Buttons = Buttons.LEFT


@dataclass(frozen=True)
class PointerUp(_Pointer):
    """A button released at (x, y)."""

    type: ClassVar[str] = "pointer_up"
    button: Buttons = Buttons.LEFT


@dataclass(frozen=True)
class PointerMove(_Pointer):
    """The pointer moved to (x, y) with ``buttons`` held (NONE: hovering)."""

    type: ClassVar[str] = "pointer_move"
    buttons: Buttons = Buttons.NONE


@dataclass(frozen=True)
class Wheel(InputEvent):
    """A scroll of (dx, dy) notches with the pointer at (x, y)."""

    type: ClassVar[str] = "wheel"
    x: float
    y: float
    dx: float = 0.0
    dy: float = 0.0
    modifiers: Modifiers = Modifiers.NONE


@dataclass(frozen=True)
class KeyDown(InputEvent):
    """A key pressed: its lower-case name (``"z"``, ``"space"``) and the modifiers held."""

    type: ClassVar[str] = "key_down"
    key: str
    modifiers: Modifiers = Modifiers.NONE


@dataclass(frozen=True)
class KeyUp(InputEvent):
    """A key released."""

    type: ClassVar[str] = "key_up"
    key: str
    modifiers: Modifiers = Modifiers.NONE


@dataclass(frozen=True)
class Text(InputEvent):
    """Typed text (what a key press produced, for text fields)."""

    type: ClassVar[str] = "text"
    text: str


@dataclass(frozen=True)
class TrackedSample(InputEvent):
    """A tracked device's 3D sample: ``position`` (metres), ``orientation`` (unit quaternion x, y, z, w),
    ``buttons`` held, the trigger's ``pressure`` in [0, 1], the VR ``controls`` held and the stick ``axis``.
    ``controls`` and ``axis`` were added with the VR devices; a recording without them reads them as none."""

    type: ClassVar[str] = "tracked"
    device: str
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    buttons: Buttons = Buttons.NONE
    pressure: float = 0.0
    controls: VRButtons = VRButtons.NONE
    axis: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class Action(InputEvent):
    """A tool or UI action: ``name`` (``"tool"``, ``"undo"``, ``"redo"``, ``"set"``, ...) and JSON-able
    ``args``."""

    type: ClassVar[str] = "action"
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Resize(InputEvent):
    """The window's new size in pixels."""

    type: ClassVar[str] = "resize"
    width: int
    height: int


#: Every event type by its ``type`` name (the record format's ``type`` field).
EVENT_TYPES: dict[str, type[InputEvent]] = {c.type: c for c in (
    PointerDown, PointerMove, PointerUp, Wheel, KeyDown, KeyUp, Text, TrackedSample, Action, Resize)}


def event_from_dict(d: Any) -> InputEvent:
    """The event a :meth:`InputEvent.to_dict` dict describes; EventError for an unknown type or a bad field."""
    if not isinstance(d, dict):
        raise EventError(f"an event must be a JSON object, got {type(d).__name__}")
    kind = d.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise EventError(f"unknown event type {kind!r} (known: {', '.join(sorted(EVENT_TYPES))})")
    names = {f.name for f in fields(cls)}
    extra = sorted(set(d) - names - {"type"})
    if extra:
        raise EventError(f"{kind} event has unknown field(s) {extra}")
    try:
        kwargs: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k != "type"}
        return cls(**kwargs)
    except TypeError as exc:
        raise EventError(f"{kind} event: {exc}") from None


@dataclass
class PointerState:
    """What the devices hold now (after this frame's events): pointer position, buttons, modifiers, keys."""

    x: float = 0.0
    y: float = 0.0
    buttons: Buttons = Buttons.NONE
    modifiers: Modifiers = Modifiers.NONE
    keys: set[str] = field(default_factory=set)
    width: int = 0
    height: int = 0

    def apply(self, e: InputEvent) -> None:
        """Update the state by one event."""
        if isinstance(e, _Pointer):
            self.x, self.y, self.modifiers = e.x, e.y, e.modifiers
            if isinstance(e, PointerDown):
                self.buttons |= e.button
            elif isinstance(e, PointerUp):
                self.buttons &= ~e.button
            elif isinstance(e, PointerMove):
                self.buttons = e.buttons
        elif isinstance(e, KeyUp):
            self.keys.discard(e.key)
            self.modifiers = e.modifiers
        elif isinstance(e, KeyDown):
            self.keys.add(e.key)
            self.modifiers = e.modifiers
        elif isinstance(e, Resize):
            self.width, self.height = e.width, e.height


class EventQueue:
    """The input queue (a world resource): devices push, :func:`input_begin_system` takes one frame's worth.

    ``frame`` holds the events of the current frame (read by every INPUT-phase system, in order); ``state``
    the devices' state after them; ``frame_index`` counts taken frames. Listeners are called with
    (frame index, events) each time a frame's events are taken, also when there are none.
    """

    def __init__(self) -> None:
        self._pending: list[InputEvent] = []
        self.frame: list[InputEvent] = []
        self.state = PointerState()
        self.frame_index = -1
        self._listeners: list[Callable[[int, list[InputEvent]], None]] = []

    def push(self, event: InputEvent) -> None:
        """Queue one event for the next frame."""
        if not isinstance(event, InputEvent):
            raise TypeError(f"push takes an InputEvent, got {type(event).__name__}")
        self._pending.append(event)

    def extend(self, events: Iterable[InputEvent]) -> None:
        for e in events:
            self.push(e)

    @property
    def pending(self) -> int:
        """How many events wait for the next frame."""
        return len(self._pending)

    def listen(self, fn: Callable[[int, list[InputEvent]], None]) -> Callable[[], None]:
        """Call ``fn(frame_index, events)`` for every frame taken; returns a function that stops it."""
        self._listeners.append(fn)
        return lambda: self._listeners.remove(fn) if fn in self._listeners else None

    def take_frame(self) -> list[InputEvent]:
        """Make the pending events this frame's events (the previous frame's are dropped)."""
        self.frame, self._pending = self._pending, []
        self.frame_index += 1
        for e in self.frame:
            self.state.apply(e)
        for fn in list(self._listeners):
            fn(self.frame_index, self.frame)
        return self.frame


def input_begin_system(world: Any) -> None:
    """The first INPUT-phase system: this frame's events become ``EventQueue.frame`` for the others."""
    queue = world.try_resource(EventQueue)
    if queue is not None:
        queue.take_frame()


class PygletAdapter:
    """The one place pyglet's window events become :class:`InputEvent` (pushed into ``queue``).

    pyglet's y axis points up from the bottom of the window; events are in pixels with row 0 at the top, so
    ``y = height - y_pyglet`` (the framebuffer scale for HiDPI windows is applied too). Call
    :meth:`attach` with the window; every handler returns None so others (imgui) still see the events.
    """

    def __init__(self, queue: EventQueue, *, clock: Callable[[], float] = now) -> None:
        self.queue = queue
        self.clock = clock
        self._window: Any = None

    @staticmethod
    def buttons(pyglet_buttons: int) -> Buttons:
        from pyglet.window import mouse

        out = Buttons.NONE
        for src, dst in ((mouse.LEFT, Buttons.LEFT), (mouse.RIGHT, Buttons.RIGHT), (mouse.MIDDLE, Buttons.MIDDLE)):
            if pyglet_buttons & src:
                out |= dst
        return out

    @staticmethod
    def modifiers(pyglet_modifiers: int) -> Modifiers:
        from pyglet.window import key

        out = Modifiers.NONE
        for src, dst in ((key.MOD_SHIFT, Modifiers.SHIFT), (key.MOD_CTRL, Modifiers.CTRL),
                         (key.MOD_ALT, Modifiers.ALT), (key.MOD_COMMAND, Modifiers.SUPER)):
            if pyglet_modifiers & src:
                out |= dst
        return out

    @staticmethod
    def key_name(symbol: int) -> str:
        from pyglet.window import key

        return str(key.symbol_string(symbol)).lower().lstrip("_")

    def _xy(self, x: float, y: float) -> tuple[float, float]:
        w = self._window
        if w is None:
            return float(x), float(y)
        fw, fh = w.get_framebuffer_size()
        sx, sy = fw / max(w.width, 1), fh / max(w.height, 1)
        return float(x) * sx, float(fh) - float(y) * sy

    def attach(self, window: Any) -> None:
        """Register the handlers on a pyglet window."""
        self._window = window
        q, c = self.queue, self.clock

        def on_mouse_press(x, y, button, modifiers):
            px, py = self._xy(x, y)
            q.push(PointerDown(c(), px, py, self.modifiers(modifiers), button=self.buttons(button)))

        def on_mouse_release(x, y, button, modifiers):
            px, py = self._xy(x, y)
            q.push(PointerUp(c(), px, py, self.modifiers(modifiers), button=self.buttons(button)))

        def on_mouse_motion(x, y, dx, dy):
            px, py = self._xy(x, y)
            q.push(PointerMove(c(), px, py))

        def on_mouse_drag(x, y, dx, dy, buttons, modifiers):
            px, py = self._xy(x, y)
            q.push(PointerMove(c(), px, py, self.modifiers(modifiers), buttons=self.buttons(buttons)))

        def on_mouse_scroll(x, y, scroll_x, scroll_y):
            px, py = self._xy(x, y)
            q.push(Wheel(c(), px, py, float(scroll_x), float(scroll_y)))

        def on_key_press(symbol, modifiers):
            q.push(KeyDown(c(), self.key_name(symbol), self.modifiers(modifiers)))

        def on_key_release(symbol, modifiers):
            q.push(KeyUp(c(), self.key_name(symbol), self.modifiers(modifiers)))

        def on_text(text):
            q.push(Text(c(), str(text)))

        def on_resize(width, height):
            fw, fh = window.get_framebuffer_size()
            if fw > 0 and fh > 0:
                q.push(Resize(c(), int(fw), int(fh)))

        window.push_handlers(on_mouse_press=on_mouse_press, on_mouse_release=on_mouse_release,
                             on_mouse_motion=on_mouse_motion, on_mouse_drag=on_mouse_drag,
                             on_mouse_scroll=on_mouse_scroll, on_key_press=on_key_press,
                             on_key_release=on_key_release, on_text=on_text, on_resize=on_resize)
