"""The editor never quits with unsaved work unasked: in the real window under Xvfb, a pose makes the session
unsaved (the title says so); Esc with no strokes then opens the save / discard / cancel prompt instead of
quitting; cancel keeps the editor running, Ctrl+S writes the posed character as .glb (and the title loses its
mark), and Esc then quits at once. Discard in the prompt quits without writing."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gl

SCRIPT = r'''
import json, sys
import numpy as np
from pyglet.window import key, mouse
from engine import Session
from game.editor import Editor
from game.editor.window import run_editor_window

W, H = 960, 600
mode, out_glb = sys.argv[1], sys.argv[2]
out = {"seen": []}
with Session(window=True, width=W, height=H, title="editor save test") as s:
    ed = Editor(s, settings={"brush_radius": 14.0})
    ch = ed.spawn("humanoid", clip="idle", speed=0.0)
    ed.frame_camera()
    s.step()
    import pathlib
    ed.save_path = pathlib.Path(out_glb)  # where Ctrl+S writes (the default is the current folder)
    ed.saved_mark = ed.undo.mark()
    cam = s.camera

    from tests.helpers.arm_strokes import CHEST, arm_pose_plan, window_point

    plan = {1: [("on_key_press", key.P, 0)]}  # the pose tool
    at = {}

    def make_plan():
        # window points once the docked layout placed the scene in its central view (the camera's view_rect)
        chest = window_point(cam, W, H, ch.joints()[CHEST, :3, 3])
        plan[3] = [("on_mouse_press", chest[0], H - chest[1], mouse.LEFT, 0)]  # a click selects the character
        plan[4] = [("on_mouse_release", chest[0], H - chest[1], mouse.LEFT, 0)]
        frame, _ = arm_pose_plan(ch, cam, W, H, start=6, n=10, plan=plan)
        at["posed"] = frame
        plan[frame] = [("on_key_press", key.ESCAPE, 0)]           # unsaved: asks instead of quitting
        if mode == "save":
            plan[frame + 3] = [("on_key_press", key.ESCAPE, 0)]   # cancel the prompt
            plan[frame + 6] = [("on_key_press", key.S, key.MOD_CTRL)]  # save
            plan[frame + 9] = [("on_key_press", key.ESCAPE, 0)]   # saved: quits at once
        else:
            plan[frame + 3] = [("on_key_press", key.D, 0)]        # discard: quits without writing
    last = 6 + 2 * (9 + 1 + 4) + 40

    def before(i, window):
        if i == 0:
            make_plan()
        p = at["posed"]
        if i in (p - 1, p + 2, p + 5, p + 8):
            out["seen"].append([i, window.caption, ed.unsaved])
        for ev in plan.get(i, []):
            window.dispatch_event(*ev)

    n = len(run_editor_window(ed, frames=last, before_frame=before, persist_layout=False))
    out.update(frames=n, last=last, history=ed.undo.history, messages=ed.state.messages)
print("RESULT " + json.dumps(out))
'''


def _run(tmp_path: Path, mode: str) -> tuple[dict, Path]:
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run not found: install Debian's xvfb (make test does it as root)")
    glb = tmp_path / "saved" / "hero.glb"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DISPLAY", None)
    r = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", sys.executable, "-c", SCRIPT, mode,
                        str(glb)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):]), glb


def test_unsaved_work_is_asked_for_then_saved(tmp_path):
    res, glb = _run(tmp_path, "save")
    assert res["history"] and res["history"][0].startswith("pose "), res["messages"]
    seen = {i: (caption, unsaved) for i, caption, unsaved in res["seen"]}
    first = min(seen)
    assert seen[first][1] and seen[first][0].endswith(" *")  # posed, not saved: the title has the mark
    assert res["frames"] < res["last"]  # Esc after saving quit the loop early ...
    assert res["frames"] > first + 8  # ... but the first Esc (unsaved) did not
    assert glb.is_file() and glb.stat().st_size > 1000
    assert any(m.startswith("saved hero.glb") for m in res["messages"])
    after = seen[max(seen)]
    assert not after[1] and not after[0].endswith(" *")

    from engine import Session

    with Session(device="cpu", render=False) as s:  # the saved file holds the pose as a clip
        ch = s.spawn(str(glb), clip="pose")
        assert "pose" in ch.clips


def test_discard_quits_without_writing(tmp_path):
    res, glb = _run(tmp_path, "discard")
    assert res["history"] and res["frames"] < res["last"]
    assert not glb.exists() and not any(tmp_path.glob("*.glb"))
