"""The real editor window under Xvfb: synthetic pointer events dispatched to the pyglet window draw a baseline
and an offset stroke on the humanoid's arm; the last frame shows the UI, the strokes and the raised arm.

Needs Debian's ``xvfb`` (``xvfb-run``; the Makefile installs it like Mesa when missing and root); without it the
test skips with the reason.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import json, sys
import numpy as np
from pyglet.window import key, mouse
from engine import Session
from game.editor import Editor
from game.editor.window import run_editor_window

W, H = 960, 600
out = {}
with Session(window=True, width=W, height=H, title="editor test") as s:
    ed = Editor(s, settings={"brush_radius": 14.0})
    ch = ed.spawn("humanoid", clip="idle", speed=0.0)
    ed.frame_camera()
    s.step()
    cam = s.camera

    from tests.helpers.arm_strokes import arm_pose_plan, window_point as px

    g = ch.joints()[:, :3, 3]
    plan = {}
    FRAMES = 6 + 2 * 12 + 8 + 4 + 5

    def make_plan():
        # window points once the docked layout placed the scene in its central view (the camera's view_rect)
        frame, where = arm_pose_plan(ch, cam, W, H, start=6, n=12, plan=plan)
        chest = where["chest"]
        plan[3] = [("on_mouse_press", chest[0], H - chest[1], mouse.LEFT, 0)]  # a click selects the character
        plan[4] = [("on_mouse_release", chest[0], H - chest[1], mouse.LEFT, 0)]
        plan.setdefault(frame, []).append(("on_key_press", key.Z, key.MOD_CTRL))  # undo ...
        plan.setdefault(frame + 2, []).append(("on_key_press", key.Z, key.MOD_CTRL | key.MOD_SHIFT))  # ... redo
        up = where["up"]
        before_hit = s.pick(int(up[0]), int(up[1]))
        out["hit_before"] = None if before_hit is None else before_hit.entity
        out.update(where)
        assert frame + 4 + 5 == FRAMES, frame

    def before(i, window):
        if i == 0:
            make_plan()
        for ev in plan.get(i, []):
            window.dispatch_event(*ev)

    ed.record(sys.argv[2])
    run_editor_window(ed, frames=FRAMES, before_frame=before, persist_layout=False)
    ed.stop_recording()
    np.savez(sys.argv[3], joints=ch.joints(), layer=ch.pose_layer.rotation)
    img = s.renderer.read_pixels()
    from PIL import Image
    Image.fromarray(img[..., :3]).save(sys.argv[1])
    g1 = ch.joints()[:, :3, 3]
    out.update(hand0=g[8].tolist(), hand1=g1[8].tolist(), messages=ed.state.messages, history=ed.undo.history,
               cursor=ed.undo.cursor, selected=ed.state.selected,
               hand_px=px(cam, W, H, g1[8]))
    hit = s.pick(*[int(v) for v in px(cam, W, H, g1[8])])
    out["hit_after"] = None if hit is None else hit.entity
    out["entity"] = ch.entity
print("RESULT " + json.dumps(out))
'''


def test_the_editor_window_poses_the_arm_from_pointer_events(tmp_path):
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run not found: install Debian's xvfb (make test does it as root)")
    png, rec, npz = tmp_path / "editor.png", tmp_path / "window.jsonl", tmp_path / "window.npz"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DISPLAY", None)
    r = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", sys.executable, "-c", SCRIPT, str(png),
                        str(rec), str(npz)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    res = json.loads(lines[-1][len("RESULT "):])
    assert res["history"] == ["pose 3 joints of humanoid"] and res["cursor"] == 1, res["messages"]
    assert res["hand1"][1] > res["hand0"][1] + 0.4  # the arm went up
    assert res["selected"] == res["entity"]  # the click selected it through the G-buffer
    assert res["hit_before"] is None and res["hit_after"] == res["entity"]  # the frame shows the raised hand
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    h, w, _ = img.shape
    assert (w, h) == (960, 600)
    # the UI: the Tools panel at the top left is imgui's dark window colour, not the sky
    panel = img[40:120, 20:120]
    assert (panel.max(axis=2) < 90).mean() > 0.5
    # the strokes in the README's colours (game/ui/colours.py): the baseline's green and the offset's blue
    r_, g_, b_ = img[..., 0], img[..., 1], img[..., 2]
    assert ((g_ > 200) & (r_ < 90) & (b_ < 130)).sum() > 30
    assert ((b_ > 200) & (r_ < 90) & (g_ > 100) & (g_ < 180)).sum() > 30


    # the adapter: pyglet's bottom-up y became row 0 at the top, keys became names with modifiers
    from engine.input.record import read_recording
    from game.editor import open_recording, replay

    recording = read_recording(rec)
    events = recording.events
    down = [e for e in events if e.type == "pointer_down"][1]  # the baseline's start (the first is the click)
    assert abs(down.x - res["shoulder"][0]) < 1.0 and abs(down.y - res["shoulder"][1]) < 1.0
    keys = [(e.key, int(e.modifiers)) for e in events if e.type == "key_down"]
    assert ("z", 2) in keys and ("z", 3) in keys  # Ctrl+Z, Ctrl+Shift+Z
    assert [e.args for e in events if e.type == "action" and e.name == "select"] == [{"entity": res["entity"]}]
    rects = [e.args["rect"] for e in events if e.type == "action" and e.name == "view_rect"]
    assert rects and 0.1 < rects[-1][2] < 0.9  # the docked central view, recorded for the replay
    # the window session replays headless to the same skeleton and pose layer, bit for bit
    want = np.load(npz)
    ed = open_recording(recording)
    try:
        replay(recording, ed)
        ch = ed.session.characters[0]
        assert np.array_equal(ch.joints(), want["joints"])
        assert np.array_equal(ch.pose_layer.rotation, want["layer"])
    finally:
        ed.session.release()
