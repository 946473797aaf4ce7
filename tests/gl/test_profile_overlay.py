"""The profiler overlay draws without a display (imgui offscreen, into the frame and so into screenshots) and
its numbers are the schedule's history: frame times, percentiles, per-system CPU, per-pass/stage GPU,
spring iterations, GPU memory; freezing keeps the snapshot."""
from __future__ import annotations

import numpy as np
import pytest


class _GL:
    def __init__(self, ctx):
        self.ctx = ctx


def test_overlay_numbers_are_the_schedule_history(gl_ctx):
    from engine import Session
    from engine.profile.trace import SPRING_COUNTER
    from game.ui.overlay import SessionOverlay
    from game.ui.profiler import PERCENTILES

    with Session(gl=_GL(gl_ctx), width=320, height=240, deformer="lbs", strict=True) as s:
        s.spawn("humanoid", clip="walk")
        s.spawn("cylinder", clip=0, deformer="spring", position=(1.0, 0.0, 0.0))
        s.step(1)
        plain = s.renderer.read_pixels().astype(np.int16)
        overlay = SessionOverlay(s, window=4, show_help=True, help_lines=["P profiler"])
        s.step(7)
        drawn = s.renderer.read_pixels().astype(np.int16)
        snap = overlay.panel.snapshot
        history = s.schedule.history
        # drawn during RENDER of the last frame: it shows the frame before it, the last finished one
        shown = history[-2]
        assert snap.frame is shown
        frames = list(history)[-6:-1]
        assert np.array_equal(snap.cpu_ms, [f.total_ms for f in frames][-4:])
        gpu = np.array([sum(e.dur_ns for e in f.gpu) / 1e6 for f in frames][-4:])
        assert np.allclose(snap.gpu_ms, gpu)
        assert np.allclose(snap.cpu_pct, np.percentile(snap.cpu_ms, PERCENTILES))
        assert snap.systems == [(n, shown.system_phase[n], shown.system_ms(n)) for n in shown.systems]
        assert {"animation_system", "deform_frame_system", "render_system"} <= {n for n, _, _ in snap.systems}
        assert {(g, n) for g, n, _ in snap.gpu} >= {("render", "gbuffer"), ("deform", "spring")}
        for group, name, ms in snap.gpu:
            assert ms == pytest.approx(shown.gpu_ms(group)[name])
        assert snap.springs == shown.counters[SPRING_COUNTER] and all(v >= 1 for v in snap.springs.values())
        assert snap.memory_mib["total"] == pytest.approx(sum(s.graph.gpu_bytes().values()) / 2 ** 20)
        assert snap.slowest_system[1] == max(ms for _, _, ms in snap.systems)
        assert overlay.layer.last_draw_commands > 0
        # the panel is in the frame (top-left), the help box bottom-right; the middle is the scene
        diff = np.abs(drawn - plain).max(axis=2)
        assert diff[20:200, 20:200].mean() > 20
        # freeze: the snapshot stays while frames go on
        overlay.panel.toggle_freeze()
        s.step(2)
        assert overlay.panel.snapshot is snap
        overlay.panel.toggle_freeze()
        s.step(1)
        assert overlay.panel.snapshot.frame is s.schedule.history[-2]
        overlay.release()
        overlay.release()
        assert overlay._draw not in s.view.ui and "profile_collect" not in s.schedule


def test_imgui_layer_offscreen_and_refusals(gl_ctx):
    from imgui_bundle import imgui

    from game.ui.imgui_layer import ImGuiLayer

    tex = gl_ctx.texture((160, 120), 4)
    fbo = gl_ctx.framebuffer([tex])
    fbo.clear(0.0, 0.0, 0.0, 1.0)
    layer = ImGuiLayer(gl_ctx, 160, 120)
    try:
        def build() -> None:
            imgui.set_next_window_pos(imgui.ImVec2(0, 0))
            imgui.set_next_window_size(imgui.ImVec2(160, 120))
            imgui.begin("t")
            imgui.text("hello")
            imgui.end()

        for _ in range(2):
            layer.draw(build, fbo, dt=1 / 60)
        img = np.frombuffer(tex.read(), np.uint8).reshape(120, 160, 4)
        assert layer.last_draw_commands > 0 and img[..., :3].max() > 100
        assert not layer.wants_mouse
        with pytest.raises(ValueError, match="at least 1x1"):
            layer.resize(0, 10)
    finally:
        layer.release()
        layer.release()
        tex.release()
        fbo.release()
    with pytest.raises(ValueError, match="width"):
        ImGuiLayer(gl_ctx, 0, 10)
    with pytest.raises(RuntimeError, match="released"):
        layer.draw(lambda: None, fbo)
