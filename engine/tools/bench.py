"""`python main.py bench WHICH [options]`: dispatch to the scripts in bench/ (they print tables)."""
from __future__ import annotations

import importlib

BENCHES = {
    "deform": "bench.bench_deform",
    "render": "bench.bench_render",
    "reference": "bench.bench_reference",
    "anim": "bench.bench_anim",
}


def run_bench(which: str, argv: list[str]) -> int:
    if which not in BENCHES:
        raise ValueError(f"unknown benchmark {which!r}; choose one of {', '.join(BENCHES)}")
    module = importlib.import_module(BENCHES[which])
    result = module.main(list(argv))
    return int(result or 0)
