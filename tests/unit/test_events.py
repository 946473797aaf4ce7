"""The one input event model: construction checks, dict round trips, the queue and the device state."""
from __future__ import annotations

import json

import pytest

from engine.ecs import World
from engine.input.events import (
    EVENT_TYPES,
    Action,
    Buttons,
    EventError,
    EventQueue,
    KeyDown,
    KeyUp,
    Modifiers,
    PointerDown,
    PointerMove,
    PointerUp,
    Resize,
    Text,
    TrackedSample,
    Wheel,
    event_from_dict,
    input_begin_system,
    now,
)

SAMPLES = [
    PointerDown(1.0, 10.5, 20.0, Modifiers.SHIFT, pressure=0.5, device="pen", button=Buttons.LEFT),
    PointerMove(1.01, 11.0, 21.0, buttons=Buttons.LEFT | Buttons.RIGHT),
    PointerUp(1.02, 12.0, 22.0, button=Buttons.RIGHT),
    Wheel(1.03, 5.0, 6.0, 0.0, -2.0, Modifiers.CTRL),
    KeyDown(1.04, "Z", Modifiers.CTRL | Modifiers.SHIFT),
    KeyUp(1.05, "z"),
    Text(1.06, "a"),
    TrackedSample(1.07, "right_hand", (0.1, 1.2, -0.3), (0.0, 0.0, 0.0, 1.0), Buttons.LEFT, 0.8),
    Action(1.08, "set", {"brush_radius": 40.0, "list": [1, 2]}),
    Resize(1.09, 800, 600),
]


def test_every_type_has_a_sample_and_round_trips_through_json():
    assert {type(e) for e in SAMPLES} == set(EVENT_TYPES.values())
    for e in SAMPLES:
        d = json.loads(json.dumps(e.to_dict()))
        assert d["type"] == e.type
        back = event_from_dict(d)
        assert back == e and type(back) is type(e)


def test_fields_are_normalised():
    k = KeyDown(0.0, "Z")
    assert k.key == "z"
    d = PointerDown(0.0, 1, 2, 3, button=2)
    assert d.modifiers == Modifiers.SHIFT | Modifiers.CTRL and d.button == Buttons.RIGHT
    assert isinstance(d.x, float)


@pytest.mark.parametrize("make, needle", [
    (lambda: PointerDown(0.0, float("nan"), 0.0), "x must be a finite number"),
    (lambda: PointerMove(0.0, 0.0, 0.0, pressure=1.5), "pressure must be in [0, 1]"),
    (lambda: PointerDown(0.0, 0.0, 0.0, button=64), "Buttons"),
    (lambda: KeyDown(0.0, ""), "key must be a non-empty string"),
    (lambda: TrackedSample(0.0, "hand", (0.0, 0.0)), "position must be 3 numbers"),
    (lambda: TrackedSample(0.0, "hand", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 2.0)), "unit quaternion"),
    (lambda: Resize(0.0, 0, 10), "width must be an integer"),
    (lambda: Action(0.0, "x", args=[1]), "args must be a dict"),
])
def test_bad_fields_name_the_value(make, needle):
    with pytest.raises(EventError, match=None) as info:
        make()
    assert needle in str(info.value)


def test_event_from_dict_refuses_unknown_types_and_fields():
    with pytest.raises(EventError, match="unknown event type 'teleport'"):
        event_from_dict({"type": "teleport", "t": 0.0})
    with pytest.raises(EventError, match="unknown field"):
        event_from_dict({"type": "wheel", "t": 0.0, "x": 0, "y": 0, "colour": 1})
    with pytest.raises(EventError, match="pointer_down event"):
        event_from_dict({"type": "pointer_down", "t": 0.0, "x": 1.0})
    with pytest.raises(EventError, match="JSON object"):
        event_from_dict([1, 2])


def test_queue_hands_each_frame_its_events_and_tracks_state():
    world = World()
    q = EventQueue()
    world.insert_resource(q)
    seen = []
    stop = q.listen(lambda i, ev: seen.append((i, list(ev))))
    q.push(Resize(0.0, 640, 480))
    q.push(PointerDown(0.1, 5.0, 6.0, button=Buttons.LEFT))
    q.push(KeyDown(0.2, "shift", Modifiers.SHIFT))
    assert q.pending == 3
    input_begin_system(world)
    assert [e.type for e in q.frame] == ["resize", "pointer_down", "key_down"] and q.pending == 0
    st = q.state
    assert (st.width, st.height, st.x, st.y) == (640, 480, 5.0, 6.0)
    assert st.buttons == Buttons.LEFT and "shift" in st.keys and st.modifiers == Modifiers.SHIFT
    q.push(PointerUp(0.3, 7.0, 8.0, button=Buttons.LEFT))
    q.push(KeyUp(0.4, "shift"))
    input_begin_system(world)
    assert st.buttons == Buttons.NONE and st.keys == set() and (st.x, st.y) == (7.0, 8.0)
    input_begin_system(world)  # an empty frame drops the previous frame's events
    assert q.frame == [] and q.frame_index == 2
    assert [i for i, _ in seen] == [0, 1, 2] and len(seen[0][1]) == 3
    stop()
    input_begin_system(world)
    assert len(seen) == 3
    with pytest.raises(TypeError, match="InputEvent"):
        q.push({"type": "wheel"})


def test_clock_is_monotonic():
    a = now()
    b = now()
    assert b >= a
