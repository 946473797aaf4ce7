"""Shared test set-up: seeded randomness, numpy errors raise, paths to ../shared, a headless GL context.

Tiers: tests/unit (no GL), tests/gl (offscreen OpenGL 4.3 through EGL; Mesa llvmpipe in CI),
tests/golden (images with a tolerance; UPDATE_GOLDEN=1 regenerates them).

../shared holds the Khronos samples and the validator corpus. A user's clone has none: those tests
skip with the reason; under CI (CI=true) a missing ../shared is a failure.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SAMPLES = SHARED / "gltf-samples"
INVALID = SHARED / "gltf-invalid"


def shared_dir(sub: str) -> Path:
    """Path to ../shared/<sub>; skip (or fail under CI) when it is absent."""
    p = SHARED / sub
    if not p.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {p} is missing: CI must provide ../shared beside the clone")
        pytest.skip(f"{p} not found: ../shared (Khronos samples, validator corpus) is not part of a user's clone")
    return p


@pytest.fixture(autouse=True)
def _seed_and_raise():
    np.random.seed(1234)
    with np.errstate(all="raise"):
        yield


@pytest.fixture(scope="session")
def gl_ctx():
    """One headless OpenGL 4.3+ context for the GL tests (EGL; llvmpipe without a GPU)."""
    moderngl = pytest.importorskip("moderngl")
    try:
        ctx = moderngl.create_standalone_context(require=430, backend="egl")
    except Exception as exc:  # set-up error: report it clearly, as a failure under CI
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"no headless OpenGL 4.3 context: {exc}")
        pytest.skip(f"no headless OpenGL 4.3 context: {exc}")
    yield ctx
    ctx.release()


def count_dispatches(monkeypatch) -> list[int]:
    """Count compute dispatches from now on: one list entry per ``ComputeShader.run`` (for the tests that
    check a graph's dispatch count)."""
    calls = []
    import moderngl

    original = moderngl.ComputeShader.run

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(moderngl.ComputeShader, "run", counting)
    return calls
