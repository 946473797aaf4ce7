"""Under Xvfb, a bare command line (`main.py` with only window-size options) opens the real editor window, and
Shift+P there shows the profiler overlay (plain P stays the pose tool). Skips without xvfb-run, like the other
window tests."""
from __future__ import annotations

import json

import pytest

from tests.helpers.xvfb import run_under_xvfb

pytestmark = pytest.mark.gl

_SCRIPT = r"""
import json
from pyglet.window import key
import game.editor.window as ge
from game.cli import run

seen = {}
original_loop = ge.run_editor_window
original_release = ge.EditorUI.release

def short_loop(ed, *, frames=None, ui=True, before_frame=None, **options):
    plan = {1: ("on_key_press", key.O, 0), 2: ("on_key_press", key.P, key.MOD_SHIFT)}
    def before(i, window):
        if i in plan:
            window.dispatch_event(*plan[i])
    return original_loop(ed, frames=6, ui=ui, before_frame=before, **options)

def release(self):
    if "profiler" not in seen:
        seen.update(profiler=self.overlay.show_profiler, attached=self.overlay.profiler is not None,
                    tool=self.editor.state.settings.tool, commands=self.overlay.layer.last_draw_commands,
                    size=[self.editor.session.renderer.width, self.editor.session.renderer.height])
    original_release(self)

ge.run_editor_window = short_loop
ge.EditorUI.release = release
status = run(["--width", "320", "--height", "200"])
print("RESULT " + json.dumps({"status": status, **seen}))
"""


def test_bare_command_line_opens_the_editor_and_shift_p_shows_the_profiler():
    r = run_under_xvfb(_SCRIPT)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    res = json.loads(lines[-1][len("RESULT "):])
    assert res["status"] == 0
    assert res["size"] == [320, 200]  # the editor's window, at the size given
    assert res["profiler"] is True and res["attached"] is True  # Shift+P: the profiler overlay
    assert res["tool"] == "orbit"  # O switched the tool; Shift+P did not switch it back to pose
    assert res["commands"] > 0
    assert "warning" not in r.stderr  # a display: nothing to explain
