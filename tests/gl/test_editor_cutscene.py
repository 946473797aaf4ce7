"""``python main.py editor --cutscene FILE`` (issue 23 item 4) in the real window under Xvfb: the timeline panel
docks along the bottom, below the scene's view; scrubbing moves the characters; C looks through the live camera
and back; Shift+K keys the pose tool's pose at the playhead; a moved key undoes and redoes with Ctrl+Z /
Ctrl+Shift+Z; Ctrl+S writes the cutscene and the saved file loads with the moved key and the pose key. A refused
cutscene is one ``error:`` line (exit 2) before any window opens.

Skips without xvfb-run (tests/helpers/xvfb.py), like the other window tests.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from game.cutscene.document import load
from tests.conftest import ROOT
from tests.helpers.xvfb import run_under_xvfb

pytestmark = pytest.mark.gl

#: a tiny cutscene: one humanoid walking, a pose track with two keys, one camera
TINY = """format = "skinengine-cutscene"
version = 1
fps = 12
duration = 1.0
width = 64
height = 36
[[characters]]
name = "hero"
asset = "humanoid"
deformer = "lbs"
[[tracks]]
character = "hero"
type = "animation"
[[tracks.clips]]
clip = "walk"
start = 0.0
end = 1.0
mode = "loop"
[[tracks]]
character = "hero"
type = "pose"
[[tracks.keys]]
time = 0.0
[tracks.keys.joints]
head = [0.0, 0.0, 0.0, 1.0]
[[tracks.keys]]
time = 0.5
[tracks.keys.joints]
head = [0.0, 0.258819, 0.0, 0.965926]
[[cameras]]
name = "wide"
[[cameras.keys]]
time = 0.0
eye = [0.0, 1.4, 5.0]
target = [0.0, 0.9, 0.0]
fov = 45.0
[[cuts]]
time = 0.0
camera = "wide"
"""

SCRIPT = r'''
import json, sys
import numpy as np
from pyglet.window import key
from engine import Session
from game.editor import Editor
from game.editor.cutscene_panel import open_cutscene
from game.editor.window import run_editor_window

W, H = 800, 600
path = sys.argv[1]
out = {}
with Session(window=True, width=W, height=H, title="cutscene test") as s:
    ed = Editor(s)
    panel = open_cutscene(ed, path)
    tl = panel.timeline
    orbit = s.camera

    def press(window, symbol, mods=0):
        window.dispatch_event("on_key_press", symbol, mods)
        window.dispatch_event("on_key_release", symbol, mods)

    def before(i, window):
        if i == 3:
            from imgui_bundle import imgui
            w = imgui.internal.find_window_by_name("Timeline")
            out["panel"] = None if w is None else [w.pos.x, w.pos.y, w.size.x, w.size.y, int(w.dock_id != 0)]
            out["view"] = list(s.camera.view_rect)
            out["joints0"] = ed.selected.joints()[:, :3, 3].tolist()
            tl.scrub(6)  # what the panel's frame slider does
        if i == 4:
            out["joints6"] = ed.selected.joints()[:, :3, 3].tolist()
            out["playhead"] = tl.playhead
            press(window, key.C)  # the live camera
        if i == 6:
            out["live_eye"] = [float(x) for x in s.camera.eye]
            out["live_is_orbit"] = s.camera is orbit
            press(window, key.C)  # back to the free camera
        if i == 8:
            out["back_is_orbit"] = s.camera is orbit
            ch = ed.selected  # the pose tool's result: a pose layer on the selected character
            rot = np.tile(np.array([0, 0, 0, 1], np.float32), (len(ch.joints()), 1))
            names = tl.loaded["hero"].rig.names
            rot[names.index("upper_arm_L")] = [0.0, 0.0, 0.3826834, 0.9238795]
            ch.set_pose_layer(rot)
            tl.scrub(9)
            ed.selected.set_pose_layer(rot)
            press(window, key.K, key.MOD_SHIFT)
        if i == 10:
            pose = next(t for t in tl.doc.tracks if t.type == "pose")
            out["keys_after_pose"] = [k["time"] for k in pose.keys]
            ti = tl.doc.tracks.index(pose)
            tl.move_key(ti, 1, 0.25)  # what the key-time drag does when it ends
            out["unsaved"] = ed.unsaved
        if i == 11:
            press(window, key.Z, key.MOD_CTRL)
        if i == 13:
            pose = next(t for t in tl.doc.tracks if t.type == "pose")
            out["undone"] = [k["time"] for k in pose.keys]
            press(window, key.Z, key.MOD_CTRL | key.MOD_SHIFT)
        if i == 15:
            press(window, key.S, key.MOD_CTRL)
        if i == 17:
            out["saved"] = not ed.unsaved
            out["messages"] = ed.state.messages
            out["history"] = ed.undo.history

    run_editor_window(ed, frames=19, before_frame=before, persist_layout=False, cutscene=panel)
print("RESULT " + json.dumps(out))
'''


def test_editor_opens_scrubs_keys_and_saves_a_cutscene(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    r = run_under_xvfb(SCRIPT.replace("sys.argv[1]", repr(str(path))), screen="1024x768x24")
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    res = json.loads(lines[-1][len("RESULT "):])
    msgs = res["messages"]
    # the timeline panel is docked, and lies below the scene's central view
    x, y, w, h, docked = res["panel"]
    vx, vy, vw, vh = res["view"]
    assert docked and y >= (vy + vh) * 600 - 1 and w > 100 and h > 50, (res["panel"], res["view"])
    # scrubbing moved the walking character
    assert res["playhead"] == 6
    assert np.abs(np.array(res["joints6"]) - np.array(res["joints0"])).max() > 0.01
    # C: the live camera (the document's "wide" eye), C again: the free orbit camera back
    assert not res["live_is_orbit"] and np.allclose(res["live_eye"], [0.0, 1.4, 5.0], atol=1e-6)
    assert res["back_is_orbit"]
    # Shift+K: a pose key at the playhead (frame 9 = 0.75 s)
    assert res["keys_after_pose"] == [0.0, 0.5, 0.75], msgs
    # the moved key undoes and redoes through the editor's stack; Ctrl+S saved the cutscene
    assert res["undone"] == [0.0, 0.5, 0.75] and res["unsaved"]
    assert res["saved"] and any(m == "saved tiny.toml" for m in msgs), msgs
    assert res["history"] == ["pose key of hero at 0.750 s", "move key 1 of track 1 to 0.250 s"]
    doc = load(path)
    pose = next(t for t in doc.tracks if t.type == "pose")
    assert [k["time"] for k in pose.keys] == [0.0, 0.25, 0.75]
    assert np.allclose(pose.keys[2]["joints"]["upper_arm_L"], [0.0, 0.0, 0.3826834, 0.9238795], atol=1e-6)
    assert np.allclose(pose.keys[1]["joints"]["head"], [0.0, 0.258819, 0.0, 0.965926], atol=1e-6)


@pytest.mark.parametrize("text, words", [
    (TINY.replace("duration = 1.0", "duration = -1.0"), "duration"),
    (TINY.replace('camera = "wide"', 'camera = "close"'), "close"),
])
def test_a_refused_cutscene_is_one_error_line(tmp_path, text, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    r = subprocess.run([sys.executable, "main.py", "editor", "--cutscene", str(path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], r.stderr
