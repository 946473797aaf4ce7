"""The benches' shared figures (bench/common.py): the median and its spread over the repetitions, and the device
line every bench prints first (the arithmetic and the text; no timing is asserted)."""
from __future__ import annotations

import numpy as np
import pytest

from bench.common import Spread, device_line, median_of


def test_spread_is_the_interquartile_range_over_the_median():
    s = Spread.of([4.0, 1.0, 3.0, 2.0, 100.0])  # one pre-empted call: the max moves, the quartiles do not
    assert (s.median, s.min, s.max, s.count) == (3.0, 1.0, 100.0, 5)
    assert (s.p25, s.p75) == (2.0, 4.0)
    assert s.pct == pytest.approx(100.0 * (4.0 - 2.0) / 3.0)
    assert s.text(1) == "3.0 (1.0..100.0)"
    assert Spread.of([2.5]).pct == 0.0 and Spread.of(np.zeros(3)).pct == 0.0
    assert median_of([1.0, 5.0, 2.0]) == 2.0


def test_spread_of_nothing_raises():
    with pytest.raises(ValueError, match="at least one sample"):
        Spread.of([])


class _FakeContext:
    info = {"GL_RENDERER": "TestRenderer 1.0", "GL_VENDOR": "TestVendor"}


def test_device_line_names_the_renderer_or_the_cpu(monkeypatch):
    monkeypatch.setenv("LP_NUM_THREADS", "3")
    gl = device_line(_FakeContext(), "median of 7 frames")
    assert gl.startswith("device: TestRenderer 1.0 (TestVendor);")
    assert "LP_NUM_THREADS 3" in gl and gl.endswith("median of 7 frames")
    cpu = device_line(None, "median of 5 calls")
    assert cpu.startswith("device: CPU only (no GL): ") and cpu.endswith("median of 5 calls")
