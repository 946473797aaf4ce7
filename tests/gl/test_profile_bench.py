"""`bench scene --quick` runs (CI; no timing assertions): one table per deformer, a row per cast size with
finite figures, the python-side ratio and the cost of a cpu_scope."""
from __future__ import annotations

import math
import re

import pytest


def test_bench_scene_quick_prints_its_tables(capsys):
    from bench.bench_scene import COLUMNS, main

    assert main(["--quick", "--characters", "1,2", "--frames", "1"]) == 0
    out = capsys.readouterr().out
    assert "deformer lbs" in out
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == len(COLUMNS) + 1 and parts[0].isdigit():
            rows[int(parts[0])] = [float(p) for p in parts[1:]]
    assert sorted(rows) == [1, 2]
    assert all(math.isfinite(v) and v >= 0 for r in rows.values() for v in r)
    for r in rows.values():  # py = cpu - gl, and the parts of the frame are inside it
        col = dict(zip(COLUMNS, r))
        assert col["py"] == pytest.approx(col["cpu"] - col["gl"], abs=0.02)
        assert col["render"] <= col["cpu"] + 0.01
    assert re.search(r"python-side cpu, 2 characters against 1: [\d.]+x", out)
    assert re.search(r"cpu_scope cost: [\d.]+ us idle \(profiling off\), [\d.]+ us recorded", out)


def test_bench_scene_refuses_bad_options():
    from bench.bench_scene import main, parse_counts

    assert parse_counts("1, 8,64") == (1, 8, 64)
    for bad in ("0", "1,x", "", "300"):
        with pytest.raises(ValueError, match="--characters"):
            parse_counts(bad)
    with pytest.raises(ValueError, match="nope"):
        main(["--deformer", "nope", "--quick"])
