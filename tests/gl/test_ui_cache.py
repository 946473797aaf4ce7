"""The cached UI layer (game/ui/ui_cache.py) against drawing imgui straight into the frame: the same pixels
(within the 2/255 the layer's extra rounding allows), bit-identical frames while nothing changes, a changed
value redrawn only where it changed, the scene under the panels free to change; and the editor's panels
through it (clip time readout at its own rate)."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gl

W, H = 320, 200


class _Frame:
    """A target framebuffer whose content (the 'scene') the test sets before each UI draw."""

    def __init__(self, ctx):
        self.tex = ctx.texture((W, H), 4)
        self.fbo = ctx.framebuffer([self.tex])

    def scene(self, seed: int) -> None:
        y, x = np.mgrid[0:H, 0:W]
        img = np.stack([(x * 3 + seed * 17) % 256, (y * 5 + seed * 29) % 256, ((x + y) * 2) % 256,
                        np.full_like(x, 255)], axis=-1).astype(np.uint8)
        self.tex.write(img.tobytes())

    def read(self) -> np.ndarray:
        """The pixels, GL rows (row 0 at the bottom)."""
        return np.frombuffer(self.tex.read(), np.uint8).reshape(H, W, 4).astype(np.int16)

    def release(self) -> None:
        self.fbo.release()
        self.tex.release()


def _panels(state: dict) -> None:
    from imgui_bundle import imgui

    imgui.set_next_window_pos(imgui.ImVec2(10, 10), imgui.Cond_.always)
    imgui.set_next_window_size(imgui.ImVec2(180, 110), imgui.Cond_.always)
    imgui.set_next_window_bg_alpha(0.75)
    imgui.begin("tools")
    imgui.text(f"value {state['v']:.2f}")
    imgui.slider_float("v", state["v"], 0.0, 1.0)
    imgui.end()
    imgui.set_next_window_pos(imgui.ImVec2(150, 80), imgui.Cond_.always)  # overlaps the first
    imgui.set_next_window_size(imgui.ImVec2(150, 100), imgui.Cond_.always)
    imgui.set_next_window_bg_alpha(0.6)
    imgui.begin("help")
    imgui.text("H  this help")
    imgui.end()
    dl = imgui.get_background_draw_list()  # a sparse list over the whole display (strokes)
    dl.add_polyline([imgui.ImVec2(20, 190), imgui.ImVec2(160, 150), imgui.ImVec2(300, 20)], 0xFF30A0FF, 3.0, 0)


def _draw(layer, frame: _Frame, state: dict, seed: int) -> np.ndarray:
    frame.scene(seed)
    layer.draw(lambda: _panels(state), frame.fbo, dt=1 / 60)
    return frame.read()


def _close(a: np.ndarray, b: np.ndarray) -> None:
    d = np.abs(a - b)
    assert d.max() <= 2 and (d > 1).mean() < 0.01, (int(d.max()), float((d > 0).mean()))


def test_cached_layer_matches_direct_drawing_and_redraws_only_changes(gl_ctx):
    from game.ui.imgui_layer import ImGuiLayer

    frame = _Frame(gl_ctx)
    cached, direct = ImGuiLayer(gl_ctx, W, H), ImGuiLayer(gl_ctx, W, H, cached=False)
    state = {"v": 0.25}
    try:
        assert cached.cached and not direct.cached
        for _ in range(3):  # imgui settles its windows over the first frames
            _draw(cached, frame, state, 0)
            _draw(direct, frame, state, 0)
        frame.scene(0)
        scene0 = frame.read()
        a = _draw(cached, frame, state, 0)
        assert cached.last_redrawn_commands == 0 and cached.last_dirty_rects == []  # nothing changed
        assert cached.last_draw_commands > 0
        ref = _draw(direct, frame, state, 0)
        assert direct.last_redrawn_commands == direct.last_draw_commands > 0
        _close(a, ref)
        assert np.abs(a - scene0).max(axis=2)[100:170, 20:180].mean() > 20  # the panel is there (GL rows)
        # unchanged: what the cache shows is what drawing everything again gives, bit for bit
        assert cached._cache is not None
        cached._cache.invalidate()
        again = _draw(cached, frame, state, 0)
        assert cached.last_redrawn_commands > 0 and np.array_equal(again, a)
        # the scene under the panels changes every frame; the UI layer is reused over it
        moved = _draw(cached, frame, state, 5)
        assert cached.last_redrawn_commands == 0
        _close(moved, _draw(direct, frame, state, 5))
        assert not np.array_equal(moved, a)
        # a changed value redraws its window's rectangle (and what overlaps it), nothing else
        state["v"] = 0.52  # glyphs already in the atlas (a new glyph updates the atlas: all is redrawn)
        changed = _draw(cached, frame, state, 5)
        assert 0 < cached.last_redrawn_commands < direct.last_draw_commands + 1
        dirty = np.zeros((H, W), bool)
        for x0, y0, x1, y1 in cached.last_dirty_rects:
            dirty[y0:y1, x0:x1] = True  # read() gives GL rows (bottom first), like the rectangles
        assert dirty.any() and not dirty[:50, 200:].any(), cached.last_dirty_rects  # not the help's lower part
        assert not np.array_equal(changed[dirty], moved[dirty])  # the new value is drawn
        assert np.array_equal(changed[~dirty], moved[~dirty])
        _close(changed, _draw(direct, frame, state, 5))
        # switched off: straight drawing, the same picture
        cached.cached = False
        _close(_draw(cached, frame, state, 5), changed)
        cached.cached = True
        assert np.array_equal(_draw(cached, frame, state, 5), changed)
        # a new display size draws everything again
        cached.resize(W, H)
        cached.resize(W - 20, H)
        cached.draw(lambda: _panels(state), frame.fbo, dt=1 / 60)
        assert cached.last_dirty_rects == [(0, 0, W - 20, H)]
    finally:
        for obj in (cached, direct, frame):
            obj.release()


class _GL:
    def __init__(self, ctx):
        self.ctx = ctx


def test_editor_panels_through_the_cache(gl_ctx):
    from engine import Session
    from game.editor import Editor
    from game.editor.window import TIME_READOUT_HZ, EditorUI

    with Session(gl=_GL(gl_ctx), width=W * 2, height=H * 2, deformer="lbs") as s:
        ed = Editor(s)
        ed.spawn("humanoid", clip="idle")
        ed.frame_camera()
        ui = EditorUI(ed, show_help=True)
        layer = ui.overlay.layer
        try:
            s.step(3)
            assert ed.selected is not None and layer.cached
            # the clip plays: the character panel's time readout ticks at TIME_READOUT_HZ, so most frames
            # (fixed steps of 1/60 s) reuse the whole layer
            redrawn = []
            for _ in range(12):
                s.step()
                redrawn.append(layer.last_redrawn_commands)
            steps_per_tick = 60.0 / TIME_READOUT_HZ
            assert sum(r == 0 for r in redrawn) >= len(redrawn) * (1 - 1.5 / steps_per_tick), redrawn
            assert any(r > 0 for r in redrawn)  # ... and the readout does move
            # paused: the frame is the same whichever way the UI is drawn
            s.clock.toggle_pause()
            s.step()
            s.step()
            assert layer.last_redrawn_commands == 0
            cached_img = s.renderer.read_pixels().astype(np.int16)
            layer.cached = False
            s.step()
            _close(cached_img, s.renderer.read_pixels().astype(np.int16))
        finally:
            ui.release()


def test_profiler_panel_refreshes_at_its_own_rate():
    from engine.profile.timings import TimingHistory
    from game.ui.profiler import ProfilerPanel

    history = TimingHistory()
    slow = ProfilerPanel(history, refresh_s=10.0)
    first = slow.update()
    assert slow.update() is first  # within its interval: the same snapshot (the same pixels)
    every = ProfilerPanel(history)
    assert every.update() is not every.update()
    for bad in (-1.0, 11.0, True, "1"):
        with pytest.raises(ValueError, match="refresh_s"):
            ProfilerPanel(history, refresh_s=bad)  # type: ignore[arg-type]


def test_opaque_panels_are_copied_with_the_pixels_blending_gives(gl_ctx):
    from game.ui.imgui_layer import ImGuiLayer

    frame = _Frame(gl_ctx)
    layer, direct = ImGuiLayer(gl_ctx, W, H), ImGuiLayer(gl_ctx, W, H, cached=False)
    translucent = ImGuiLayer(gl_ctx, W, H, opaque_panels=False)
    state = {"v": 0.25}
    try:
        assert layer.opaque_panels and layer._cache is not None and layer._cache.blit
        for _ in range(3):
            for lay in (layer, direct, translucent):
                _draw(lay, frame, state, 0)
        copied = _draw(layer, frame, state, 0)
        n_copied, n_blended = layer._cache.last_composite
        assert n_copied > 0 and n_blended > 0  # the windows copied, the stroke (background list) blended
        backdrops = [d.backdrop for d in layer._cache.lists if d.backdrop is not None]
        assert len(backdrops) == 2  # "tools" and "help"; not the background list
        # the blended path over the same layer gives the same pixels, bit for bit
        layer._cache.blit = False
        blended = _draw(layer, frame, state, 0)
        assert layer._cache.last_composite[0] == 0
        assert np.array_equal(copied, blended)
        layer._cache.blit = True
        # drawn straight into the frame: the same picture (opaque backdrops there too)
        _close(copied, _draw(direct, frame, state, 0))
        # the panels are opaque: the scene under them does not show; without opaque_panels it does
        other = _draw(layer, frame, state, 7)
        inside = np.zeros((H, W), bool)
        for x0, y0, x1, y1 in backdrops:
            inside[y0:y1, x0:x1] = True
        assert inside.mean() > 0.2 and np.array_equal(other[inside], copied[inside])
        assert not np.array_equal(other[~inside], copied[~inside])
        see_through = _draw(translucent, frame, state, 0), _draw(translucent, frame, state, 7)
        assert translucent._cache is not None and translucent._cache.last_composite[0] == 0
        assert not np.array_equal(see_through[0][inside], see_through[1][inside])
    finally:
        for obj in (layer, direct, translucent, frame):
            obj.release()


def test_subtract_covers_exactly_the_difference():
    from game.ui.ui_cache import subtract

    def mask(rects):
        m = np.zeros((40, 40), int)
        for x0, y0, x1, y1 in rects:
            m[y0:y1, x0:x1] += 1
        return m

    rects = [(0, 0, 20, 20), (10, 10, 30, 25), (32, 0, 40, 40)]
    holes = [(5, 5, 15, 15), (30, 0, 36, 40), (0, 30, 40, 40)]
    out = subtract(rects, holes)
    want = (mask(rects) > 0) & (mask(holes) == 0)
    got = mask(out)
    assert got.max() == 1  # disjoint
    assert np.array_equal(got == 1, want)
    assert subtract(rects, []) == subtract(rects, [(50, 50, 40, 40)])  # empty holes change nothing
    assert subtract([(0, 0, 10, 10)], [(0, 0, 10, 10)]) == []
