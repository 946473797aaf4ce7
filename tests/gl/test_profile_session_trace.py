"""A profiled session writes a Chrome trace: balanced and nested CPU events, GPU tracks, one frame marker per
frame, counters for spring iterations and deformer GPU memory."""
from __future__ import annotations

import json

import pytest

from tests.helpers.trace_check import assert_nested


class _GL:  # the session only needs .ctx from the context wrapper
    def __init__(self, ctx):
        self.ctx = ctx


def test_profiled_session_writes_a_nested_trace_with_gpu_tracks(gl_ctx, tmp_path):
    from engine import Session
    from engine.profile.trace import GPU_TIDS, GRAPH_SCOPE, MEMORY_COUNTER, SPRING_COUNTER, Profiler

    frames = 7
    with Session(gl=_GL(gl_ctx), width=96, height=64, deformer="lbs", strict=True) as s:
        s.spawn("humanoid", clip="walk")
        s.spawn("cylinder", clip=0, deformer="spring", position=(1.0, 0.0, 0.0))
        with Profiler(s) as prof:
            s.step(frames)
            out = prof.write(tmp_path / "t" / "trace.json")
        assert "profile_collect" not in s.schedule and not s.meshes.profile_graph  # detached
        recorded = list(prof.frames)
    data = json.loads(out.read_text())
    ev = data["traceEvents"]
    assert {e["ph"] for e in ev} <= {"M", "X", "C"}
    marks = [e for e in ev if e["ph"] == "X" and e["name"] == "frame"]
    assert len(marks) == frames and [e["args"]["index"] for e in marks] == [f.index for f in recorded]
    assert assert_nested(ev) >= 4  # frame > phase > system > scope
    cpu = [e for e in ev if e["ph"] == "X" and e["tid"] == 1]
    names = {e["name"] for e in cpu}
    assert {"ANIMATION", "SKELETON", "RENDER", "UI", "animation_system", "deform_frame_system", "render_system",
            GRAPH_SCOPE} <= names
    assert not any(n.startswith("gpu:") for n in names)
    threads = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert all("GPU" in threads[tid] for tid, _ in GPU_TIDS.values())
    gpu = [e for e in ev if e["ph"] == "X" and e["tid"] in {t for t, _ in GPU_TIDS.values()}]
    render_tid, deform_tid = GPU_TIDS["render"][0], GPU_TIDS["deform"][0]
    assert {"gbuffer", "compose"} <= {e["name"] for e in gpu if e["tid"] == render_tid}
    assert {e["name"] for e in gpu if e["tid"] == deform_tid}  # the deformer stages
    # GPU times are on the CPU clock: every GPU interval lies within the recorded span (first frame's
    # renderer readings are a few frames late, so they start no earlier than the first frame)
    first, last = marks[0], marks[-1]
    for e in gpu:
        assert first["ts"] - 1e-3 <= e["ts"] <= last["ts"] + last["dur"] + 1e-3, e
    # deformer stages sit inside the CPU scope that dispatched them
    scopes = [e for e in cpu if e["name"] == GRAPH_SCOPE]
    for e in (e for e in gpu if e["tid"] == deform_tid):
        assert any(s["ts"] - 1e-3 <= e["ts"] <= s["ts"] + s["dur"] + 1e-3 for s in scopes), e
    counters = {e["name"] for e in ev if e["ph"] == "C"}
    assert {SPRING_COUNTER, MEMORY_COUNTER} <= counters
    springs = [e for e in ev if e["ph"] == "C" and e["name"] == SPRING_COUNTER]
    assert all(len(e["args"]) == 1 and next(iter(e["args"].values())) >= 1 for e in springs)
    # GPU memory is one total track (not one per buffer kind), and equals the frame's per-kind sum
    memory = [e for e in ev if e["ph"] == "C" and e["name"] == MEMORY_COUNTER]
    assert memory and all(set(e["args"]) == {"total"} and e["args"]["total"] > 0 for e in memory)
    kinds = recorded[-1].counters[MEMORY_COUNTER]
    assert memory[-1]["args"]["total"] == pytest.approx(sum(v for k, v in kinds.items() if k != "total"))


def test_profiler_refuses_twice_and_bad_arguments(gl_ctx, tmp_path):
    from engine import Session
    from engine.profile.trace import Profiler

    with Session(gl=_GL(gl_ctx), width=32, height=32, strict=True) as s:
        with Profiler(s), pytest.raises(ValueError, match="already"):
            Profiler(s)
        with pytest.raises(ValueError, match="keep"):
            Profiler(s, keep=0)
        p = Profiler(s, keep=2)
        s.step(4)
        assert len(p.frames) == 2
        with pytest.raises(ValueError, match="json"):
            p.write(tmp_path / "trace.txt")
        p.detach()
        p.detach()
