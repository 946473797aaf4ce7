"""`python main.py bench WHICH [options]`: dispatch to the scripts in bench/ (they print tables).

bench/ lives in the repository and is not installed with the wheel: from an installed ``skinengine`` the
command says so (one ``error:`` line) unless the engine runs from a checkout, whose root is then put on the
import path. The scripts parse their own options with plain argparse; while one runs, a rejected option is
turned into the command line's one ``error:`` line (exit 2) instead of argparse's usage block.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from game.commands import UsageError

BENCHES = {
    "deform": "bench.bench_deform",
    "render": "bench.bench_render",
    "reference": "bench.bench_reference",
    "anim": "bench.bench_anim",
    "bake": "bench.bench_bake",
    "soak": "bench.bench_soak",
    "scene": "bench.bench_scene",
    "ecs": "bench.bench_ecs",
    "editor": "bench.bench_editor",
    "cutscene": "bench.bench_cutscene",
    "vr": "bench.bench_vr",
    "weights": "bench.bench_weights",
    "springs": "bench.bench_springs",
}


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """While a bench script parses its options, argparse errors raise UsageError (one line)."""

    def error(self: argparse.ArgumentParser, message: str) -> NoReturn:
        raise UsageError(f"bench: {message}")

    original = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = error  # type: ignore[method-assign]
    try:
        yield
    finally:
        argparse.ArgumentParser.error = original  # type: ignore[method-assign]


def _import_bench(which: str):  # noqa: ANN202 - a module
    from engine.paths import checkout_root

    root = checkout_root()
    if root is not None and (root / "bench").is_dir() and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        return importlib.import_module(BENCHES[which])
    except ModuleNotFoundError as exc:
        if exc.name not in ("bench", BENCHES[which]):
            raise
        raise ValueError("bench needs a checkout of the repository: bench/ is not installed with the "
                         "skinengine package; run `python main.py bench ...` in the checkout") from None


def run_bench(which: str, argv: list[str]) -> int:
    """Run benchmark ``which`` (a key of BENCHES) with its own options ``argv``; returns its exit status."""
    if which not in BENCHES:
        raise ValueError(f"unknown benchmark {which!r}; choose one of {', '.join(BENCHES)}")
    module = _import_bench(which)
    with _one_line_errors():
        result = module.main(list(argv))
    return int(result or 0)
