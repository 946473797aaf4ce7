"""Structure checks of a Chrome trace (tests of engine/profile/trace.py): complete events on one thread nest."""
from __future__ import annotations

EPS_US = 1e-3  # float rounding of ns -> us


def assert_nested(events: list[dict]) -> int:
    """Every complete ("X") event of one thread lies inside the enclosing one or after it (never across its
    end); returns the deepest nesting seen."""
    by_tid: dict[int, list[dict]] = {}
    for e in events:
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
            by_tid.setdefault(e["tid"], []).append(e)
    deepest = 0
    for evs in by_tid.values():
        stack: list[float] = []  # end times of the open events
        for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            start, end = e["ts"], e["ts"] + e["dur"]
            while stack and start >= stack[-1] - EPS_US and end > stack[-1] + EPS_US:
                stack.pop()  # this event starts at or after the top's end: the top is closed
            if stack:
                assert end <= stack[-1] + EPS_US, f"{e['name']} crosses the end of its parent"
            stack.append(end)
            deepest = max(deepest, len(stack))
    return deepest
