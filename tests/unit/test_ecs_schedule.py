"""Schedule: run order across phases, before/after, cycles, timing per system, error isolation, run_frame."""
from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from engine.ecs import FIXED_PHASES, Clock, Phase, Schedule, World
from engine.profile import cpu_scope


def recorder(log: list, name: str):
    def fn(world: World) -> None:
        log.append(name)
    fn.__qualname__ = name
    return fn


def test_phases_run_in_enum_order_regardless_of_insertion():
    assert [p.name for p in Phase] == ["INPUT", "TOOLS", "ANIMATION", "SKELETON", "DEFORM", "DEFORM_FRAME", "RENDER",
                                       "UI"]
    calls: list[str] = []
    s = Schedule(strict=True)
    for p in reversed(list(Phase)):
        s.add_system(p, recorder(calls, p.name.lower()))
    s.add_system(Phase.ANIMATION, recorder(calls, "anim2"))
    expected = ["input", "tools", "animation", "anim2", "skeleton", "deform", "deform_frame", "render", "ui"]
    assert s.order() == expected
    s.run(World())
    assert calls == expected


def test_before_after_resolved_deterministically():
    calls: list[str] = []
    s = Schedule(strict=True)
    s.add_system(Phase.SKELETON, recorder(calls, "a"))
    s.add_system(Phase.SKELETON, recorder(calls, "b"), after="c")
    s.add_system(Phase.SKELETON, recorder(calls, "c"))
    s.add_system(Phase.SKELETON, recorder(calls, "d"), before=["a"])
    s.add_system(Phase.SKELETON, recorder(calls, "e"), after="a", before="b")
    # rule: among systems whose constraints are met, the earliest inserted runs first
    # (a waits for d, b for c and e): c(2) d(3) ready -> c; d -> a -> e -> b
    expected = ["c", "d", "a", "e", "b"]
    assert s.order(Phase.SKELETON) == expected
    s.run(World())
    assert calls == expected


def test_cross_phase_constraints_checked():
    s = Schedule(strict=True)
    s.add_system(Phase.RENDER, recorder([], "draw"))
    s.add_system(Phase.ANIMATION, recorder([], "sample"), before="draw")  # agrees with phase order
    assert s.order() == ["sample", "draw"]
    s.add_system(Phase.ANIMATION, recorder([], "bad"), after="draw")
    with pytest.raises(ValueError, match="contradicts the phase order"):
        s.order()


def test_cycle_detected_and_named():
    s = Schedule(strict=True)
    s.add_system(Phase.DEFORM, recorder([], "x"), before="y")
    s.add_system(Phase.DEFORM, recorder([], "y"), before="z")
    s.add_system(Phase.DEFORM, recorder([], "z"), before="x")
    s.add_system(Phase.DEFORM, recorder([], "tail"), after="z")
    with pytest.raises(ValueError, match=r"cycle .*x -> y -> z -> x"):
        s.order()
    with pytest.raises(ValueError, match="cycle"):
        s.run(World())


def test_unknown_constraint_duplicate_and_bad_arguments():
    s = Schedule()
    s.add_system(Phase.UI, recorder([], "hud"), after="nope")
    with pytest.raises(ValueError, match="nope"):
        s.order()
    with pytest.raises(ValueError, match="already"):
        s.add_system(Phase.UI, recorder([], "hud"))
    with pytest.raises(TypeError):
        s.add_system("UI", recorder([], "x"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="itself"):
        s.add_system(Phase.UI, recorder([], "self"), before="self")


def test_timing_recorded_for_every_system_and_phase():
    s = Schedule(strict=True, history_size=4)
    names = [s.add_system(p, recorder([], f"sys_{p.name}")) for p in Phase]

    def scoped(world: World) -> None:
        with cpu_scope("outer"), cpu_scope("inner"):
            sum(range(1000))

    s.add_system(Phase.RENDER, scoped, name="scoped")
    for _ in range(6):
        ft = s.run(World())
    assert len(s.history) == 4 and s.history.last is ft and ft.index == 5
    assert set(ft.systems) == set(names) | {"scoped"}
    assert all(ft.calls[n] == 1 for n in ft.systems)
    assert set(ft.phases) == {p.label for p in Phase}
    assert ft.systems["scoped"] >= ft.scopes["outer"] >= ft.scopes["inner"] > 0
    assert ft.total_ns >= sum(ft.phases.values())
    depth = {e.name: e.depth for e in ft.events}
    assert depth["scoped"] == 0 and depth["outer"] == 1 and depth["inner"] == 2


def test_error_isolated_logged_once_per_type(caplog):
    calls: list[str] = []
    kinds = iter([ValueError, ValueError, ValueError, KeyError])

    def flaky(world: World) -> None:
        raise next(kinds)("boom")

    s = Schedule()
    s.add_system(Phase.ANIMATION, flaky)
    s.add_system(Phase.ANIMATION, recorder(calls, "after"))
    with caplog.at_level(logging.ERROR, logger="engine.ecs.schedule"):
        frames = [s.run(World()) for _ in range(4)]
    assert calls == ["after"] * 4  # the frame went on every time
    assert s.error_counts == {("flaky", "ValueError"): 3, ("flaky", "KeyError"): 1}
    assert [f.errors for f in frames] == [1, 1, 1, 1]
    recs = [r for r in caplog.records if "flaky" in r.getMessage()]
    assert len(recs) == 2 and all(r.exc_info for r in recs)
    assert "flaky" in frames[0].systems  # the failing call is still timed


def test_strict_reraises():
    def bad(world: World) -> None:
        raise RuntimeError("x")

    s = Schedule(strict=True)
    s.add_system(Phase.TOOLS, bad)
    with pytest.raises(RuntimeError):
        s.run(World())


@dataclass
class Marker:
    pass


def test_run_frame_fixed_phases_per_step_and_flush():
    calls: list[str] = []
    world = World()
    s = Schedule(strict=True)
    for p in Phase:
        s.add_system(p, recorder(calls, p.name))
    seen_times: list[float] = []
    s.add_system(Phase.SKELETON, lambda w: seen_times.append(w.resource(Clock).sim_time), name="t")
    e = world.spawn(Marker())
    s.add_system(Phase.UI, lambda w: w.despawn(e) if w.is_alive(e) else None, name="kill")

    clock = Clock(step=0.01, max_substeps=5)
    ft = s.run_frame(world, clock, 0.025)  # 2 steps, alpha 0.5
    assert ft.steps == 2
    fixed = [p.name for p in FIXED_PHASES]
    assert calls == ["INPUT", "TOOLS"] + fixed + fixed + ["DEFORM_FRAME", "RENDER", "UI"]
    assert seen_times == pytest.approx([0.01, 0.02])
    assert ft.calls["ANIMATION"] == 2 and ft.calls["RENDER"] == 1
    assert [ev.step for ev in ft.events if ev.name == "DEFORM"] == [0, 1]
    assert not world.is_alive(e)  # despawned in UI, flushed at the end of the frame
    assert clock.substep == -1

    calls.clear()
    ft = s.run_frame(world, clock, 0.001)  # lag 0.006: no step this frame
    assert ft.steps == 0 and calls == ["INPUT", "TOOLS", "DEFORM_FRAME", "RENDER", "UI"]
    assert "ANIMATION" not in ft.phases and ft.phase_ms(Phase.ANIMATION) == 0.0
