"""The demo's profiler and help dock around the scene's view (issue 27 item 4), as in the editor: headless with
``--overlay`` at 800x600 and 1920x1080 every character's projected bounds lie inside the free view rectangle
(the docked layout's central node, which the camera's image fills), the profiler takes a fraction of the window
(not the 446 px column it covered before), and showing the help (H) docks it on the right, shrinks the view and
frames the cast again inside it."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gl


def _inside(session, rect_px):
    from engine.authoring.view import window_points

    r = session.renderer
    x0, y0, w, h = rect_px
    for ch in session.characters:
        pts = np.concatenate([p for p in ch.vertices().values() if len(p)])
        xy = window_points(session.camera, r.width, r.height, pts)
        assert np.isfinite(xy).all(), ch.name
        lo, hi = xy.min(0), xy.max(0)
        assert lo[0] >= x0 - 0.5 and lo[1] >= y0 - 0.5 and hi[0] <= x0 + w + 0.5 and hi[1] <= y0 + h + 0.5, \
            (ch.name, lo, hi, rect_px)


@pytest.mark.parametrize("size", [(800, 600), (1920, 1080)])
def test_the_docked_profiler_and_help_never_cover_a_character(tmp_path, monkeypatch, size):
    import engine.runloop
    from game.cli import parse
    from game.demo import run_demo
    from game.ui.overlay import SessionOverlay

    W, H = size
    seen: dict = {}
    real = engine.runloop.run_headless

    def run_and_check(session, frames):
        out = real(session, frames)
        (ui,) = [f.__self__ for f in session.view.ui if isinstance(getattr(f, "__self__", None), SessionOverlay)]
        rect = ui.dock.view_rect
        assert rect is not None and session.camera.view_rect is not None
        x, y, w, h = rect
        assert (x, y) == (0.0, 0.0) and w == pytest.approx(W, abs=1) and H * 0.5 < h < H * 0.75  # profiler below
        np.testing.assert_allclose(session.camera.view_rect, (x / W, y / H, w / W, h / H), atol=1e-6)
        _inside(session, rect)
        # H: the help docks on the right (wrapped to its panel, inside the window), the cast is framed again
        ui.help_lines = [*engine.runloop.CONTROLS, engine.runloop.QUIT_HELP]
        ui.show_help = True
        ui.settle()
        session.step()
        x2, y2, w2, h2 = ui.dock.view_rect
        assert W * 0.6 < w2 < W - 150 and h2 == pytest.approx(h, abs=1)
        _inside(session, ui.dock.view_rect)
        seen["checked"] = len(session.characters)
        return out

    monkeypatch.setattr(engine.runloop, "run_headless", run_and_check)
    args = parse(["--headless", "--overlay", "--frames", "2", "--width", str(W), "--height", str(H),
                  "--screenshot", str(tmp_path / "shot.png")])
    assert run_demo(args) == 0
    assert seen["checked"] >= 3
