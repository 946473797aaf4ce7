"""The demo's window controls under Xvfb: the overlay keys (P profiler, H help) and the demo's keys (2: every
character to DQS, C: comparison mode) act on the running scene, and the help lists them."""
from __future__ import annotations

import pytest

from tests.helpers.xvfb import run_under_xvfb

pytestmark = pytest.mark.gl

_SCRIPT = r"""
import pyglet
from pyglet.window import key
from engine import Session
from engine.runloop import run_window
from game.demo import SWITCH_DEFORMERS, DemoScene, _window_keys
from game.ui.cast import CastPanel
from game.ui.overlay import SessionOverlay

with Session(window=True, width=192, height=108, deformer="lbs") as s:
    scene = DemoScene(s, deformer="lbs")
    scene.build_grid(2)
    scene.frame()
    overlay = SessionOverlay(s, show_profiler=False)
    panel = CastPanel(lambda: scene.characters, choices=SWITCH_DEFORMERS)
    overlay.panels.append(panel.draw)
    window = s.gl.window
    presses = [(key.P, key.MOD_SHIFT), (key.H, 0), (key._2, 0)]  # Shift+P: the profiler in every window
    def press(dt):
        window.dispatch_event("on_key_press", *presses.pop(0))
        if not presses:  # the loop ends after the last key, however fast the frames are
            pyglet.clock.schedule_once(lambda dt: pyglet.app.exit(), 0.05)
    for i in range(len(presses)):
        pyglet.clock.schedule_once(press, 0.02 * (i + 1))
    run_window(s, None, overlay=overlay, keys=_window_keys(scene, panel))
    print("state", overlay.show_profiler, overlay.show_help, [c.deformer for c in scene.characters])
    print("help", "|".join(overlay.help_lines))
    window.dispatch_event("on_key_press", key.C, 0)
    s.frame(0.0)  # the key reaches the demo's controls through the session's event queue, in the next frame
    print("mode", scene.mode, [c.deformer for c in scene.characters])
    overlay.release()
"""


def test_demo_window_keys_under_xvfb():
    r = run_under_xvfb(_SCRIPT)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if line.startswith(("state", "help", "mode")))
    assert lines["state"] == "True True ['dqs', 'dqs']"
    help_lines = lines["help"].split("|")
    assert "Shift+P profiler, Shift+F freeze it" in help_lines and help_lines[-1] == "Esc  quit"
    assert "1-5  all: lbs dqs rigid irs spring" in help_lines
    assert any(h.startswith("C  comparison mode") for h in help_lines)
    assert "" not in help_lines
    assert lines["mode"] == "compare ['lbs', 'dqs', 'irs', 'spring']"
