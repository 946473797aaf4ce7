"""The Chrome trace of schedule timings (no GL): phase runs per fixed step, exact nesting, GPU tracks kept
apart and never overlapping, counters, one frame marker per frame."""
from __future__ import annotations

import json

import pytest

from engine.ecs import Clock, Phase, Schedule, World
from engine.profile import cpu_scope
from engine.profile.trace import CPU_TID, GPU_TIDS, phase_runs, trace_events, write_trace
from tests.helpers.trace_check import assert_nested


def _schedule() -> Schedule:
    s = Schedule(strict=True)

    def simulate(world: World) -> None:
        with cpu_scope("outer"), cpu_scope("inner"):
            sum(range(100))

    s.add_system(Phase.ANIMATION, simulate)
    s.add_system(Phase.SKELETON, lambda w: None, name="fk")
    s.add_system(Phase.RENDER, lambda w: None, name="draw")
    return s


def test_phase_runs_cover_their_systems_once_per_step():
    s = _schedule()
    clock = Clock(step=0.01)
    f = s.run_frame(World(), clock, 0.035)  # three fixed steps
    assert f.steps == 3
    runs = phase_runs(f)
    assert sorted((r.name, r.step) for r in runs) == sorted(
        [("ANIMATION", i) for i in range(3)] + [("SKELETON", i) for i in range(3)] + [("RENDER", -1)])
    for sysev in (e for e in f.events if e.kind == "system"):
        run = next(r for r in runs if r.name == sysev.phase and r.step == sysev.step)
        assert run.start_ns <= sysev.start_ns and sysev.start_ns + sysev.dur_ns <= run.start_ns + run.dur_ns


def test_trace_nests_and_marks_every_frame(tmp_path):
    s = _schedule()
    clock = Clock(step=0.01)
    world = World()
    for _ in range(4):
        f = s.run_frame(world, clock, 0.02)
        # a profiler's GPU intervals: two passes deliberately overlapping on the render queue
        f.record_gpu("gbuffer", f.start_ns, 2000, group="render")
        f.record_gpu("compose", f.start_ns + 1000, 1000, group="render")
        f.record_gpu("skin", f.start_ns, 500, group="deform")
        f.record_counter("spring iterations", {"a": 3, "b": 5})
    out = write_trace(s.history, tmp_path / "x" / "t.json")
    ev = json.loads(out.read_text())["traceEvents"]
    frames = [e for e in ev if e["ph"] == "X" and e["name"] == "frame"]
    assert len(frames) == 4 and all(e["tid"] == CPU_TID for e in frames)
    assert assert_nested(ev) == 5  # frame > phase > system > outer > inner
    render_tid = GPU_TIDS["render"][0]
    passes = sorted((e for e in ev if e["ph"] == "X" and e["tid"] == render_tid), key=lambda e: e["ts"])
    assert len(passes) == 8
    for a, b in zip(passes, passes[1:]):  # the queue is serial: pushed back, never overlapping
        assert b["ts"] >= a["ts"] + a["dur"] - 1e-9
    counters = [e for e in ev if e["ph"] == "C"]
    assert len(counters) == 4 and counters[0]["args"] == {"a": 3.0, "b": 5.0}
    assert min(e["ts"] for e in ev if "ts" in e) == 0.0


def test_trace_of_nothing_and_bad_path(tmp_path):
    assert [e["ph"] for e in trace_events([])] == ["M"] * len(trace_events([]))
    with pytest.raises(ValueError, match="json"):
        write_trace([], tmp_path / "t.trace")
