"""The docked editor offscreen: the panel layout is kept in the user's config folder between runs (a split
the user moved comes back), the UI scales with the window's pixel ratio, and the camera's image is placed in
the central view (the scene never under a panel)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.gl


class _GL:
    def __init__(self, ctx):
        self.ctx = ctx


def _editor_ui(ctx, persist: bool):
    from engine import Session
    from game.editor import Editor
    from game.editor.window import EditorUI

    s = Session(gl=_GL(ctx), width=640, height=400, deformer="lbs")
    ed = Editor(s)
    ed.spawn("humanoid", clip="idle", speed=0.0)
    ed.frame_camera()
    return s, ed, EditorUI(ed, persist_layout=persist)


def test_the_layout_persists_between_runs(gl_ctx, monkeypatch, tmp_path):
    from imgui_bundle import imgui

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    s, ed, ui = _editor_ui(gl_ctx, True)
    try:
        s.step(3)
        first = s.camera.view_rect
        assert first is not None and 0.1 < first[0] < 0.5 and first[2] < 0.8  # the tools column on the left
        ui.overlay.layer._use()
        # the user drags the left column wider: its dock node grows by 80 pixels
        left = imgui.internal.find_window_by_name("Tools").dock_node
        imgui.internal.dock_builder_set_node_size(left.id_, imgui.ImVec2(left.size.x + 80.0, left.size.y))
        s.step(3)
        moved = s.camera.view_rect
        assert moved[0] > first[0] + 60.0 / 640
    finally:
        ui.release()  # imgui writes its ini file when its context ends
        s.release()
    ini = tmp_path / "skinengine" / "editor-layout.ini"
    assert ini.is_file() and "[Docking]" in ini.read_text()
    s, ed, ui = _editor_ui(gl_ctx, True)  # the next run
    try:
        s.step(3)
        assert s.camera.view_rect == pytest.approx(moved, abs=2.0 / 640)
    finally:
        ui.release()
        s.release()


def test_the_ui_scales_with_the_pixel_ratio(gl_ctx):
    from imgui_bundle import imgui

    from game.ui.imgui_layer import ImGuiLayer

    layer = ImGuiLayer(gl_ctx, 64, 48)
    try:
        layer._use()
        pad = imgui.get_style().window_padding.x
        layer.set_scale(2.0)
        assert imgui.get_style().font_scale_main == pytest.approx(2.0)
        assert imgui.get_style().window_padding.x == pytest.approx(2 * pad)
        layer.set_scale(2.0)  # idempotent
        assert imgui.get_style().window_padding.x == pytest.approx(2 * pad)
        with pytest.raises(ValueError, match="UI scale"):
            layer.set_scale(20.0)
    finally:
        layer.release()
