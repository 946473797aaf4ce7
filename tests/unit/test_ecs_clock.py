"""Clock: fixed-step counts, alpha, pause, single step, time scale, spiral-of-death guard."""
from __future__ import annotations

import math

import numpy as np
import pytest

from engine.ecs import Clock, interpolate


def drive(clock: Clock, dts) -> list[int]:
    out = []
    for dt in dts:
        n = clock.tick(dt)
        for _ in range(n):
            clock.advance()
        out.append(n)
    return out


def test_step_counts_match_floor_of_accumulated_time():
    rng = np.random.default_rng(3)
    dts = rng.uniform(0.0, 0.05, size=300)
    step = 1 / 60
    c = Clock(step=step, max_substeps=10)
    counts = drive(c, dts)
    # without the guard, total steps after k frames = floor(sum(dt) / step)
    expected_total = np.floor(np.cumsum(dts) / step + 1e-9).astype(int)
    assert np.array_equal(np.cumsum(counts), expected_total)
    assert c.step_count == expected_total[-1]
    assert c.sim_time == pytest.approx(expected_total[-1] * step)
    assert c.alpha == pytest.approx(np.sum(dts) / step - expected_total[-1], abs=1e-6)
    assert c.dropped_steps == 0


def test_round_off_does_not_lose_steps():
    c = Clock(step=1 / 60)
    assert drive(c, [1 / 180] * 9) == [0, 0, 1, 0, 0, 1, 0, 0, 1]
    assert c.alpha == pytest.approx(0.0, abs=1e-6)


def test_alpha_in_unit_interval_and_exact():
    c = Clock(step=0.02)
    assert drive(c, [0.015]) == [0] and c.alpha == pytest.approx(0.75)
    assert drive(c, [0.010]) == [1] and c.alpha == pytest.approx(0.25)
    assert 0.0 <= c.alpha < 1.0


def test_pause_freezes_and_single_step_advances_exactly_one():
    c = Clock(step=0.01)
    drive(c, [0.025])
    alpha, t = c.alpha, c.sim_time
    c.pause()
    assert drive(c, [0.5, 0.5]) == [0, 0]
    assert c.sim_time == t and c.alpha == alpha
    c.single_step()
    assert drive(c, [0.5]) == [1]  # exactly one step whatever the real dt
    assert c.sim_time == pytest.approx(t + 0.01) and c.alpha == alpha
    assert drive(c, [0.5]) == [0]
    c.single_step()
    c.single_step()
    assert drive(c, [0.0]) == [2]
    c.resume()
    assert drive(c, [0.005]) == [1]  # lag 0.005 kept through the pause + 0.005
    with pytest.raises(RuntimeError):
        c.single_step()


def test_time_scale_scales_simulated_time_and_is_validated():
    c = Clock(step=0.01, time_scale=0.5, max_substeps=100)
    assert sum(drive(c, [0.1] * 10)) == 50
    c.time_scale = 4.0
    assert sum(drive(c, [0.1] * 10)) == 400
    for bad in (0.0, -1.0, 16.5, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"time scale must be in \(0, 16\]"):
            c.time_scale = bad
    assert c.time_scale == 4.0
    with pytest.raises(ValueError):
        Clock(time_scale=17)


def test_spiral_guard_caps_steps_and_counts_dropped_time():
    c = Clock(step=0.01, max_substeps=4)
    assert drive(c, [0.105]) == [4]
    assert c.dropped_steps == 6 and c.dropped_time == pytest.approx(0.06) and c.overrun_frames == 1
    assert c.alpha == pytest.approx(0.5)  # the fraction is kept, only whole steps are dropped
    assert drive(c, [0.005]) == [1]  # no backlog carried over
    assert c.overrun_frames == 1


def test_unadvanced_steps_count_as_dropped_and_advance_guarded():
    c = Clock(step=0.01)
    assert c.tick(0.03) == 3
    c.advance()
    assert c.substep == 0 and c.steps_due == 2
    c.tick(0.0)
    assert c.dropped_steps == 2 and c.step_count == 1
    with pytest.raises(RuntimeError):
        c.advance()


@pytest.mark.parametrize("kw", [dict(step=0.0), dict(step=-1), dict(step=math.nan), dict(max_substeps=0),
                                dict(max_substeps=2.5)])
def test_bad_parameters(kw):
    with pytest.raises(ValueError):
        Clock(**kw)


def test_bad_real_dt():
    c = Clock()
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(ValueError, match="real_dt"):
            c.tick(bad)


def test_interpolate():
    a, b = np.zeros(3, np.float32), np.array([1.0, 2.0, 4.0], np.float32)
    np.testing.assert_allclose(interpolate(a, b, 0.25), [0.25, 0.5, 1.0])
