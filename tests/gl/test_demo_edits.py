"""The showcase's keyed surface edits (issue 12 item 3): the idling humanoid breathes and the waving one flexes
its forearm on the spring deformer (the bulge follows its weight keys over the clip's loop), the edits survive a
switch to LBS and back, the showcase on LBS still starts with them in place, and an edit that cannot be built
costs one warning, not the demo."""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning.config import DeformerConfig

pytestmark = pytest.mark.gl


class _GL:  # the session only needs .ctx from the context wrapper
    def __init__(self, ctx):
        self.ctx = ctx


def _session(gl_ctx, deformer):
    from engine import Session

    cfg = DeformerConfig().with_overrides(spring_iterations=30)  # llvmpipe: keep the spring cast quick
    return Session(gl=_GL(gl_ctx), width=160, height=90, deformer=deformer, config=cfg, strict=True)


def _gap(s, ch, twin, clip, t):
    """Per display vertex distance between the edited character and its unedited twin at clip time t."""
    ch.play(clip, time=t, speed=0.0)
    twin.play(clip, time=t, speed=0.0)
    s.settle()
    key = next(iter(ch.edits))
    return key, np.linalg.norm(ch.vertices()[key] - twin.vertices()[key], axis=1)


def test_showcase_breathes_on_springs_and_keeps_its_edits_through_a_switch(gl_ctx):
    from game.demo import SHOWCASE, DemoScene, clip_period

    with _session(gl_ctx, "spring") as s:
        scene = DemoScene(s, deformer="spring")
        cast = scene.build_showcase()
        edited = {slot.edit: ch for ch, slot in zip(cast, SHOWCASE, strict=True) if slot.edit}
        assert set(edited) == {"breath", "flex"} and scene.edited == list(edited.values())
        for name, clip in (("breath", "idle"), ("flex", "wave")):
            ch = edited[name]
            twin = s.spawn(ch.loaded, clip=clip, speed=0.0, matrix=ch.matrix.copy(), deformer="spring")
            try:
                period = clip_period(s, ch)
                key, rest = _gap(s, ch, twin, clip, 0.0)  # weight 0 at the loop's start
                (edit,) = ch.edits[key]
                kin = np.isin(np.asarray(ch.topology(key).control_of_display), edit.kinematic)
                _, full = _gap(s, ch, twin, clip, period / 2.0)  # weight 1 halfway
                _, half = _gap(s, ch, twin, clip, period / 4.0)  # weight 1/2
                assert rest[kin].max() < 2e-3, name
                assert full[kin].max() > 0.015, name
                assert rest[kin].max() + 5e-3 < half[kin].max() < full[kin].max(), name  # it grows with the weight
                assert full[~kin].max() < full[kin].max()  # the bulge is where the stroke was
                # the frame itself differs at the edited vertices between the two clip times
                ch.play(clip, time=0.0, speed=0.0)
                s.settle()
                a = ch.vertices()[key]
                ch.play(clip, time=period / 2.0, speed=0.0)
                s.settle()
                assert np.linalg.norm(ch.vertices()[key] - a, axis=1)[kin].max() > 0.015, name
                # LBS ignores the edit (it stays), springs bring it back
                ch.set_deformer("lbs")
                twin.set_deformer("lbs")
                _, lbs = _gap(s, ch, twin, clip, period / 2.0)
                assert lbs.max() < 1e-4 and len(ch.edits[key]) == 1, name
                ch.set_deformer("spring")
                twin.set_deformer("spring")
                _, back = _gap(s, ch, twin, clip, period / 2.0)
                np.testing.assert_allclose(back, full, atol=1e-4)
            finally:
                twin.remove()


def test_showcase_on_lbs_starts_with_its_edits_waiting_for_springs(gl_ctx):
    from game.demo import DemoScene

    with _session(gl_ctx, "lbs") as s:
        scene = DemoScene(s, deformer="lbs")
        cast = scene.build_showcase()
        assert {ch.deformer for ch in cast} == {"lbs"}  # the edited ones went back to the cast's method
        assert len(scene.edited) == 2 and all(len(ch.edits) == 1 for ch in scene.edited)
        s.step(2)
        assert all(np.all(np.isfinite(p)) for ch in cast for p in ch.vertices().values())


def test_an_edit_that_cannot_be_built_warns_once_and_the_showcase_goes_on(gl_ctx, monkeypatch):
    from game import demo

    bad = demo.BindStroke(("hips", "no_such_joint"), 0.0, 1.0, (0.0, 0.0, 0.4), height=0.03)
    monkeypatch.setitem(demo.SHOWCASE_EDITS, "breath", bad)
    with _session(gl_ctx, "lbs") as s:
        scene = demo.DemoScene(s, deformer="lbs")
        with pytest.warns(RuntimeWarning, match="no_such_joint") as caught:
            cast = scene.build_showcase()
        assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 1
        assert len(cast) == len(demo.SHOWCASE) and len(scene.edited) == 1
        with pytest.raises(ValueError, match="period"):
            demo.bind_stroke_edit(cast[0], demo.SHOWCASE_EDITS["flex"], period=0.0)
        with pytest.raises(TypeError, match="BindStroke"):
            demo.bind_stroke_edit(cast[0], "flex")
