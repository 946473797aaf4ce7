"""THE frame: the phases and the engine's systems run in the order engine/frame.py lists, and every way of
running the engine (Session, the demo, the commands) uses that one schedule."""
from __future__ import annotations

import numpy as np

from engine.ecs import Phase
from engine.frame import ENGINE_SYSTEMS, build_schedule, interpolate_matrices

EXPECTED = ["input_begin_system", "animation_system", "skeleton_system", "surface_edit_step_system",
            "deform_step_system", "surface_edit_frame_system", "deform_frame_system", "render_system"]


def test_the_frame_runs_the_systems_in_the_listed_order():
    s = build_schedule()
    assert s.order() == EXPECTED
    assert s.order(Phase.ANIMATION) == ["animation_system"]
    assert s.order(Phase.DEFORM_FRAME) == ["surface_edit_frame_system", "deform_frame_system"]
    assert s.order(Phase.RENDER) == ["render_system"]
    assert [p for p, _ in ENGINE_SYSTEMS] == sorted(p for p, _ in ENGINE_SYSTEMS)  # listed in phase order


def test_a_session_without_gl_runs_the_same_frame():
    from engine import Session

    with Session(device="cpu", render=False) as s:
        assert s.schedule.order() == EXPECTED
        assert s.ctx is None  # the numpy reference without drawing needs no GL context


def test_interpolated_matrices_lie_between_the_steps():
    from engine.math.transform import compose_trs

    def q(axis, deg):
        a = np.asarray(axis, np.float64) / np.linalg.norm(axis)
        h = np.radians(deg) / 2
        return np.r_[a * np.sin(h), np.cos(h)]

    a = compose_trs(np.array([[0.0, 0.0, 0.0]]), np.array([q((0, 1, 0), 0)]), np.ones((1, 3)))
    b = compose_trs(np.array([[2.0, 0.0, 0.0]]), np.array([q((0, 1, 0), 90)]), np.full((1, 3), 3.0))
    mid = interpolate_matrices(a, b, 0.5)
    expect = compose_trs(np.array([[1.0, 0.0, 0.0]]), np.array([q((0, 1, 0), 45)]), np.full((1, 3), 2.0))
    np.testing.assert_allclose(mid, expect, atol=1e-5)
    assert interpolate_matrices(a, b, 0.0) is a and interpolate_matrices(a, b, 1.0) is b


def test_a_later_before_constraint_keeps_the_engine_order():
    """A system added with only ``before="surface_edit_frame_system"`` runs before it, and deform_frame_system
    still follows it (the topological order must not lift deform_frame_system above the newcomer and the
    surface-edit system)."""
    schedule = build_schedule()
    schedule.add_system(Phase.DEFORM_FRAME, lambda w: None, name="probe", before="surface_edit_frame_system")
    names = [s.name for s in schedule._resolve()[Phase.DEFORM_FRAME]]
    assert names == ["probe", "surface_edit_frame_system", "deform_frame_system"]


def test_the_frame_deformation_is_charged_to_deform():
    """The deformation of the displayed frame (DEFORM_FRAME) counts under DEFORM in the timings, RENDER is the
    renderer alone."""
    from engine import Session

    with Session(device="cpu", render=False) as s:
        s.spawn("cylinder", clip=0)
        s.step()
        f = s.schedule.history.last
        assert f is not None
        assert f.system_phase["deform_frame_system"] == f.system_phase["surface_edit_frame_system"] == "DEFORM"
        assert f.system_phase["render_system"] == "RENDER" and "DEFORM_FRAME" not in f.phases
        assert f.phase_ms(Phase.DEFORM_FRAME) == f.phase_ms(Phase.DEFORM) > 0
