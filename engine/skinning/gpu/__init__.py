"""The deformer graph on the GPU: the plan (stages as data, order and barriers from declared reads/writes),
layouts of its records, spring set-up arrays, one dispatch per stage over pooled buffers. The facade is
graph.py; it runs over pools.py (pooled buffers, layout), records.py (set-up records), pose.py (per-frame
pose upload) and stages/ (one module per stage, typed contexts built by contexts.py)."""
