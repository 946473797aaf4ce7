"""The deformer graph on the GPU: the plan (stages as data, order and barriers from declared reads/writes),
layouts of its records, spring set-up arrays, one dispatch per stage over pooled buffers (graph.py)."""
