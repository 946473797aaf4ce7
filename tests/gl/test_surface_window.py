"""The surface tools in the real editor window under Xvfb: the B key picks the bulge tool, a left-drag dispatched
to the pyglet window draws a stroke on the humanoid's forearm, the bulge rises with its region drawn in colour,
the = key raises it live, Ctrl+Z takes that back; the recording replays headless to the same edits.

Needs Debian's ``xvfb`` (``xvfb-run``); without it the test skips with the reason.
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
from engine.render.camera import OrbitCamera
from engine.input.events import Action, now
from game.editor.window import run_editor_window

W, H = 800, 600
out = {}
with Session(window=True, width=W, height=H, title="surface test") as s:
    ed = Editor(s)
    ch = ed.spawn("humanoid", clip="idle", speed=0.0)
    s.camera = OrbitCamera(target=np.array([0.12, 1.08, 0.0]), yaw=0.0, pitch=5.0, distance=2.0, aspect=W / H)
    s.step()
    cam = s.camera

    def px(p):
        c = cam.projection_for(W / H) @ cam.view @ np.r_[p, 1.0]
        return float((c[0] / c[3] + 1) * 0.5 * W), float((1 - c[1] / c[3]) * 0.5 * H)

    names = [n.name for n in ch.asset.nodes]
    plan = {2: [("on_key_press", key.B, 0)]}
    N = 10
    last = 4 + N + 12

    def make_plan():
        # window points once the docked layout placed the scene in its central view (the camera's view_rect)
        g = ch.joints()[:, :3, 3]
        e, h = g[names.index("forearm_L")], g[names.index("hand_L")]
        stroke = [px(e + u * (h - e)) for u in np.linspace(0.2, 0.85, N)]
        out["stroke"] = stroke
        frame = 4
        x, y = stroke[0]
        plan[frame] = [("on_mouse_press", x, H - y, mouse.LEFT, 0)]
        for (x0, y0), (x1, y1) in zip(stroke, stroke[1:]):
            frame += 1
            plan[frame] = [("on_mouse_drag", x1, H - y1, x1 - x0, y0 - y1, mouse.LEFT, 0)]
        frame += 1
        plan[frame] = [("on_mouse_release", x1, H - y1, mouse.LEFT, 0)]
        plan[frame + 5] = [("on_key_press", key.EQUAL, 0)]
        plan[frame + 7] = [("on_key_press", key.EQUAL, 0)]
        plan[frame + 9] = [("on_key_press", key.Z, key.MOD_CTRL)]
        assert frame + 12 == last

    def before(i, window):
        if i == 0:
            make_plan()
        if i == 1:  # the character panel's iterations slider (llvmpipe: keep the springs quick)
            ed.queue.push(Action(now(), "config", {"spring_max_iterations": 10}))
        for ev in plan.get(i, []):
            window.dispatch_event(*ev)

    ed.record(sys.argv[2])
    run_editor_window(ed, frames=last, before_frame=before, persist_layout=False)
    ed.stop_recording()
    from PIL import Image
    Image.fromarray(s.renderer.read_pixels()[..., :3]).save(sys.argv[1])
    stacks = {k.export_key: [e.to_dict() for e in st] for k, st in ch.edits.items() if len(st)}
    out.update(history=ed.undo.history, cursor=ed.undo.cursor, messages=ed.state.messages, tool=ed.state.settings.tool,
               height=ed.state.settings.surface_height, stacks=stacks, deformer=ch.deformer)
print("RESULT " + json.dumps(out))
'''


def test_the_bulge_tool_in_the_window(tmp_path):
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run not found: install Debian's xvfb (make test does it as root)")
    png, rec = tmp_path / "surface.png", tmp_path / "surface.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DISPLAY", None)
    r = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", sys.executable, "-c", SCRIPT, str(png),
                        str(rec)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    res = json.loads(lines[-1][len("RESULT "):])
    assert res["tool"] == "bulge" and res["deformer"] == "spring"
    assert res["history"] == ["config of humanoid: {'spring_max_iterations': 10}", "bulge 1 on humanoid",
                              "bulge 1 of humanoid: surface_height", "bulge 1 of humanoid: surface_height"], \
        res["messages"]
    assert res["cursor"] == 3 and res["height"] == pytest.approx(0.025)  # two presses, one undone
    (edits,) = res["stacks"].values()
    assert len(edits) == 1 and edits[0]["profile"]["height"] == pytest.approx(0.025)
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    r_, g_, b_ = img[..., 0], img[..., 1], img[..., 2]
    # the region over the forearm: kinematic green and passive blue marks near the stroke
    xs, ys = zip(*res["stroke"])
    box = (slice(int(min(ys)) - 30, int(max(ys)) + 30), slice(int(min(xs)) - 30, int(max(xs)) + 30))
    green = (g_ > 150) & (r_ < 100) & (b_ < 100)
    blue = (b_ > 150) & (r_ < 100) & (g_ < 120)
    assert green[box].sum() > 20 and blue[box].sum() > 20
    # the recording replays headless to the same edits and settings
    from engine.input.record import read_recording
    from game.editor import open_recording, replay

    recording = read_recording(rec)
    assert [e.key for e in recording.events if e.type == "key_down"] == ["b", "equal", "equal", "z"]
    ed = open_recording(recording)
    try:
        replay(recording, ed)
        ch = ed.session.characters[0]
        got = {k.export_key: [e.to_dict() for e in st] for k, st in ch.edits.items() if len(st)}
        assert got == res["stacks"] and ed.undo.history == res["history"]
    finally:
        ed.session.release()
