"""The schedule: the one place that says in which order systems run, with per-system CPU timing.

Phases run in this order every frame (``Phase``): INPUT, TOOLS, ANIMATION, SKELETON, DEFORM, DEFORM_FRAME, RENDER,
UI.
Within a phase, systems run in insertion order, adjusted by their ``before=`` / ``after=`` constraints: of
the systems whose constraints are met, the earliest inserted runs next (the topological order that is
lexicographically smallest by insertion index), so the order is deterministic. A constraint naming a system in
another phase must agree with the phase order (``after=`` a later phase is a ``ValueError``); a cycle is a
``ValueError`` naming it; a constraint naming an unknown system is a ``ValueError`` when the order is resolved.
``order()`` returns the resolved run order (tests assert it).

Two ways to run a frame:

* ``run(world)``: every phase once, no clock (tools, tests, export-frame).
* ``run_frame(world, clock, real_dt)``: the game loop. Decision: the per-frame phases INPUT and TOOLS run
  once (devices are polled and strokes turned into pose/surface edits once per displayed frame), then
  ``n = clock.tick(real_dt)`` and the fixed-step phases ANIMATION, SKELETON, DEFORM run ``n`` times, each
  after ``clock.advance()`` (so they see ``clock.sim_time`` of the state they compute and use ``clock.step``
  as dt; the springs in DEFORM never see a variable dt), then DEFORM_FRAME, RENDER and UI run once and
  interpolate with ``clock.alpha``. ``n`` may be 0 (a frame faster than the step) or capped by
  ``clock.max_substeps``. DEFORM_FRAME is the deformation of the displayed frame (the interpolated pose, see
  engine/frame.py): a phase of its own because it runs once per frame, not per step, and its work is
  deformation, so its timings are charged to DEFORM (``Phase.label``), with ``step`` -1 telling it apart from
  the fixed-step runs.
  The clock is inserted as a world resource so systems find it with ``world.resource(Clock)``.

Both end the frame with ``world.flush()`` (deferred despawns) and push a ``FrameTimings`` into ``history``,
a ring buffer of the last ``history_size`` frames (default 600). Each system call is timed with
``time.perf_counter_ns``; totals per system and per phase label are kept (summed over fixed steps).

Errors: an exception in a system is logged once per (system, exception type) with its traceback, counted in
``error_counts`` and the frame's ``errors``, and the frame goes on with the next system (STYLE.md: an error
for one entity is logged and skipped). ``Schedule(strict=True)`` re-raises instead (tests use it).
"""
from __future__ import annotations

import enum
import heapq
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from engine.ecs.clock import Clock
from engine.ecs.world import World
from engine.profile.timings import FrameTimings, TimingHistory, use_timings

__all__ = ["Phase", "Schedule", "System", "FRAME_PHASES_BEFORE", "FIXED_PHASES", "FRAME_PHASES_AFTER"]

log = logging.getLogger(__name__)

SystemFn = Callable[[World], None]


class Phase(enum.IntEnum):
    """Frame phases in run order."""

    INPUT = 0
    TOOLS = 1
    ANIMATION = 2
    SKELETON = 3
    DEFORM = 4
    DEFORM_FRAME = 5
    RENDER = 6
    UI = 7

    @property
    def label(self) -> str:
        """The phase name the timings charge its systems to: DEFORM_FRAME (the deformation of the displayed
        frame) counts as DEFORM; every other phase is its own."""
        return "DEFORM" if self is Phase.DEFORM_FRAME else self.name


#: once per displayed frame, before the clock ticks
FRAME_PHASES_BEFORE: tuple[Phase, ...] = (Phase.INPUT, Phase.TOOLS)
#: once per fixed simulation step (0..clock.max_substeps times per frame)
FIXED_PHASES: tuple[Phase, ...] = (Phase.ANIMATION, Phase.SKELETON, Phase.DEFORM)
#: once per displayed frame, after the fixed steps
FRAME_PHASES_AFTER: tuple[Phase, ...] = (Phase.DEFORM_FRAME, Phase.RENDER, Phase.UI)


@dataclass(frozen=True)
class System:
    """A registered system: ``fn(world) -> None`` in ``phase``, with its ordering constraints."""

    name: str
    phase: Phase
    fn: SystemFn
    before: tuple[str, ...]
    after: tuple[str, ...]
    seq: int  # insertion index, the tie-break


def _names(value: str | Iterable[str] | None, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    out = tuple(value)
    for v in out:
        if not isinstance(v, str):
            raise TypeError(f"{what}= takes system names (str), got {v!r}")
    return out


class Schedule:
    """Ordered phases of systems, per-system timing and error isolation."""

    def __init__(self, *, strict: bool = False, history_size: int = 600) -> None:
        self.strict = strict
        self.history = TimingHistory(history_size)
        #: (system name, exception type name) -> times raised
        self.error_counts: dict[tuple[str, str], int] = {}
        self._systems: dict[str, System] = {}
        self._seq = 0
        self._order: dict[Phase, list[System]] | None = None
        self._frame_index = 0
        #: called after every system, inside its timing (profiling: e.g. a GPU finish, so that each system's
        #: time includes the GPU work it submitted); None in normal running
        self.after_system: Callable[[], None] | None = None

    # ------------------------------------------------------------------ building
    def add_system(
        self,
        phase: Phase,
        fn: SystemFn,
        *,
        name: str | None = None,
        before: str | Iterable[str] | None = None,
        after: str | Iterable[str] | None = None,
    ) -> str:
        """Register ``fn(world)`` in ``phase``; return its name (default: the function's qualified name,
        without ``<locals>.``; lambdas need ``name=``).

        ``before``/``after``: names of systems this one must run before / after."""
        if not isinstance(phase, Phase):
            raise TypeError(f"phase must be a Phase ({', '.join(p.name for p in Phase)}), got {phase!r}")
        if not callable(fn):
            raise TypeError(f"a system must be callable fn(world) -> None, got {fn!r}")
        if name is None:
            # qualified name without the "<locals>." of nested functions: "move", "Tools.pose_edit"
            qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
            name = qual.rsplit("<locals>.", 1)[-1]
        if not isinstance(name, str) or not name:
            raise ValueError(f"system name must be a non-empty string, got {name!r}")
        if name in self._systems:
            raise ValueError(f"a system named {name!r} is already in phase {self._systems[name].phase.name}; "
                             "pass name= to register the function twice")
        b, a = _names(before, "before"), _names(after, "after")
        if name in b or name in a:
            raise ValueError(f"system {name!r} cannot be ordered relative to itself")
        self._systems[name] = System(name, phase, fn, b, a, self._seq)
        self._seq += 1
        self._order = None
        return name

    def remove_system(self, name: str) -> None:
        """Unregister a system. Constraints other systems declare on it must go too, else order() raises."""
        if name not in self._systems:
            raise KeyError(f"no system named {name!r}; have {sorted(self._systems)}")
        del self._systems[name]
        self._order = None

    def __contains__(self, name: object) -> bool:
        return name in self._systems

    def __len__(self) -> int:
        return len(self._systems)

    # ------------------------------------------------------------------ ordering
    def order(self, phase: Phase | None = None) -> list[str]:
        """System names in run order (all phases, or one phase)."""
        resolved = self._resolve()
        if phase is not None:
            return [s.name for s in resolved[phase]]
        return [s.name for p in Phase for s in resolved[p]]

    def _resolve(self) -> dict[Phase, list[System]]:
        if self._order is not None:
            return self._order
        systems = self._systems
        # edges u -> v : u runs before v (same phase only; cross-phase ones are checked, then implied)
        succ: dict[str, set[str]] = {n: set() for n in systems}
        for s in systems.values():
            for rel, others in (("before", s.before), ("after", s.after)):
                for o in others:
                    other = systems.get(o)
                    if other is None:
                        raise ValueError(f"system {s.name!r} declares {rel}={o!r} but no system has that name; "
                                         f"known: {sorted(systems)}")
                    u, v = (s, other) if rel == "before" else (other, s)
                    if u.phase > v.phase:
                        raise ValueError(
                            f"system {s.name!r} ({s.phase.name}) declares {rel}={o!r} ({other.phase.name}), "
                            f"which contradicts the phase order {[p.name for p in Phase]}"
                        )
                    if u.phase == v.phase:
                        succ[u.name].add(v.name)
        order: dict[Phase, list[System]] = {p: [] for p in Phase}
        for p in Phase:
            members = [s for s in systems.values() if s.phase == p]
            indeg = {s.name: 0 for s in members}
            for s in members:
                for nxt in succ[s.name]:
                    indeg[nxt] += 1
            ready = [(s.seq, s.name) for s in members if indeg[s.name] == 0]
            heapq.heapify(ready)
            while ready:
                _, n = heapq.heappop(ready)
                order[p].append(systems[n])
                for nxt in succ[n]:
                    indeg[nxt] -= 1
                    if indeg[nxt] == 0:
                        heapq.heappush(ready, (systems[nxt].seq, nxt))
            if len(order[p]) != len(members):
                left = {n for n, d in indeg.items() if d > 0}
                raise ValueError(f"cycle in the before/after constraints of phase {p.name}: "
                                 f"{' -> '.join(_find_cycle(left, succ))}")
        self._order = order
        return order

    # ------------------------------------------------------------------ running
    def run(self, world: World) -> FrameTimings:
        """Run every phase once (no clock), flush the world, record and return the frame's timings."""
        order = self._resolve()
        frame = self._begin()
        with use_timings(frame):
            for p in Phase:
                self._run_phase(world, frame, p, order[p], -1)
        return self._end(world, frame)

    def run_frame(self, world: World, clock: Clock, real_dt: float) -> FrameTimings:
        """One displayed frame of the game loop (see the module docstring for the policy)."""
        order = self._resolve()
        if world.try_resource(Clock) is not clock:
            world.insert_resource(clock)
        frame = self._begin()
        with use_timings(frame):
            for p in FRAME_PHASES_BEFORE:
                self._run_phase(world, frame, p, order[p], -1)
            n = clock.tick(real_dt)
            frame.steps = n
            try:
                for i in range(n):
                    clock.advance()
                    for p in FIXED_PHASES:
                        self._run_phase(world, frame, p, order[p], i)
            finally:
                clock.end_steps()
            for p in FRAME_PHASES_AFTER:
                self._run_phase(world, frame, p, order[p], -1)
        return self._end(world, frame)

    def _begin(self) -> FrameTimings:
        frame = FrameTimings(index=self._frame_index, start_ns=time.perf_counter_ns())
        self._frame_index += 1
        return frame

    def _end(self, world: World, frame: FrameTimings) -> FrameTimings:
        world.flush()
        frame.end_ns = time.perf_counter_ns()
        self.history.append(frame)
        return frame

    def _run_phase(self, world: World, frame: FrameTimings, phase: Phase, systems: list[System], step: int) -> None:
        if not systems:
            return
        pname = phase.label
        clock = time.perf_counter_ns
        p0 = clock()
        for s in systems:
            t0 = clock()
            try:
                s.fn(world)
                if self.after_system is not None:
                    self.after_system()
            except Exception as exc:
                t1 = clock()
                frame.record_system(s.name, pname, t0, t1 - t0, step)
                frame.errors += 1
                if self.strict:
                    raise
                self._report(s, exc)
            else:
                t1 = clock()
                frame.record_system(s.name, pname, t0, t1 - t0, step)
        frame.record_phase(pname, clock() - p0)

    def _report(self, system: System, exc: Exception) -> None:
        key = (system.name, type(exc).__qualname__)
        count = self.error_counts.get(key, 0) + 1
        self.error_counts[key] = count
        if count == 1:
            log.error("system %r (%s) raised %s; logged once, further ones only counted; the frame goes on",
                      system.name, system.phase.name, key[1], exc_info=exc)

    @property
    def error_total(self) -> int:
        return sum(self.error_counts.values())


def _find_cycle(nodes: set[str], succ: dict[str, set[str]]) -> list[str]:
    """One cycle among ``nodes``, as a closed path ``a -> b -> a``.

    ``nodes`` are those Kahn's algorithm could not emit: each still has a predecessor inside ``nodes``, so
    walking predecessors from any of them must revisit a node (a successor walk could dead-end downstream)."""
    pred: dict[str, list[str]] = {n: [] for n in nodes}
    for u in nodes:
        for v in succ[u]:
            if v in nodes:
                pred[v].append(u)
    cur = min(nodes)
    path: list[str] = []
    seen: dict[str, int] = {}
    while cur not in seen:
        seen[cur] = len(path)
        path.append(cur)
        cur = min(pred[cur])
    cycle = path[seen[cur]:]
    cycle.reverse()  # predecessor walk -> run order
    return cycle + [cycle[0]]
