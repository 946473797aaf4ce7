"""FrameStats vs numpy, cpu_scope, TimingHistory ring buffer, Chrome trace export."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from engine.ecs import Phase, Schedule, World
from engine.profile import FrameStats, FrameTimings, TimingHistory, cpu_scope, system_table, trace_export


def test_frame_stats_match_numpy():
    samples = np.random.default_rng(5).gamma(2.0, 2.0, size=257)
    st = FrameStats.of(samples)
    assert st.count == 257
    assert st.mean == pytest.approx(samples.mean())
    assert st.p50 == pytest.approx(np.percentile(samples, 50))
    assert st.p95 == pytest.approx(np.percentile(samples, 95))
    assert st.max == samples.max() and st.min == samples.min()
    assert st.summary() == (f"frames 257: mean {samples.mean():.2f} ms, p95 {np.percentile(samples, 95):.2f} ms, "
                            f"max {samples.max():.2f} ms")


def test_frame_stats_empty_and_invalid():
    st = FrameStats.of([])
    assert st.count == 0 and math.isnan(st.mean)
    assert st.summary() == "frames 0: no samples"
    with pytest.raises(ValueError, match="finite"):
        FrameStats.of([1.0, float("nan")])


def test_cpu_scope_outside_frame_and_explicit_target():
    with cpu_scope("loose") as sc:
        sum(range(100))
    assert sc.elapsed_ms > 0
    ft = FrameTimings()
    with cpu_scope("a", timings=ft):
        pass
    with cpu_scope("a", timings=ft):
        pass
    assert len([e for e in ft.events if e.name == "a"]) == 2 and ft.depth == 0
    with pytest.raises(ValueError):
        cpu_scope("")


def test_history_ring_buffer_and_system_table():
    h = TimingHistory(3)
    for i in range(5):
        h.append(FrameTimings(index=i, start_ns=0, end_ns=(i + 1) * 1_000_000, systems={"s": i * 1_000_000},
                              system_phase={"s": "UI"}))
    assert [f.index for f in h] == [2, 3, 4]
    assert h.frame_ms() == [3.0, 4.0, 5.0]
    [(name, phase, st)] = system_table(h)
    assert (name, phase, st.count, st.mean) == ("s", "UI", 3, 3.0)
    with pytest.raises(ValueError, match="capacity"):
        TimingHistory(0)


def test_trace_export_chrome_format(tmp_path):
    s = Schedule(strict=True)

    def work(world: World) -> None:
        with cpu_scope("inner"):
            sum(range(200))

    s.add_system(Phase.DEFORM, work)
    s.add_system(Phase.RENDER, lambda w: None, name="draw")
    for _ in range(3):
        s.run(World())
    out = trace_export(s.history, tmp_path / "sub" / "trace.json")
    data = json.loads(out.read_text())
    ev = [e for e in data["traceEvents"] if e["ph"] == "X"]
    frames = [e for e in ev if e["cat"] == "frame"]
    assert [e["name"] for e in frames] == ["frame 0", "frame 1", "frame 2"]
    assert frames[0]["ts"] == 0.0
    assert sorted(e["name"] for e in ev if e["cat"] != "frame") == ["draw"] * 3 + ["inner"] * 3 + ["work"] * 3
    assert {e["cat"] for e in ev if e["name"] == "work"} == {"DEFORM"}
    for f in frames:  # every event lies inside its frame, with nonnegative durations
        inside = [e for e in ev if e["cat"] != "frame" and f["ts"] <= e["ts"] <= f["ts"] + f["dur"]]
        assert len(inside) == 3 and all(e["dur"] >= 0 for e in inside)
        work = next(e for e in inside if e["name"] == "work")
        inner = next(e for e in inside if e["name"] == "inner")
        assert work["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= work["ts"] + work["dur"] + 1e-3
