"""Fixtures shared by the GL tests (offscreen context from tests/conftest.py)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def resources(gl_ctx):
    """A GpuResources owner for one test module; everything it made is released at the end."""
    from engine.gpu.resources import GpuResources

    res = GpuResources(gl_ctx)
    yield res
    res.release_all()


@pytest.fixture()
def res(gl_ctx):
    """A GpuResources owner for one test (leak counts start from zero)."""
    from engine.gpu.resources import GpuResources

    r = GpuResources(gl_ctx)
    yield r
    r.release_all()

