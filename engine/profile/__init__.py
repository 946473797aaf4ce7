"""engine.profile: CPU frame timings (``FrameTimings``, ring buffer ``TimingHistory``), ``cpu_scope``,
frame statistics (``FrameStats``) and Chrome-trace export. GPU timer queries live in engine.render.
"""
from engine.profile.stats import FrameStats, cpu_scope, system_table, trace_export
from engine.profile.timings import FrameTimings, TimingEvent, TimingHistory, current_timings, use_timings

__all__ = [
    "FrameStats", "cpu_scope", "system_table", "trace_export",
    "FrameTimings", "TimingEvent", "TimingHistory", "current_timings", "use_timings",
]
