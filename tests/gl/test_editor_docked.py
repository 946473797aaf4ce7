"""The editor as a docked tool, in the real window under Xvfb (issue 27 items 3, 4, 6):

* the docked panels keep the scene's view rectangle free at 800x600 and at 1920x1080: in the screenshot the
  central view holds the scene (no panel pixels), the panels hold the sides, and the character lies inside;
* the rotate gizmo on a joint picked on the drawn skeleton writes into the pose layer as one undo step that
  undoes and redoes exactly; a bulge edit; Save as (the typed path: Xvfb has no dialog program) writes the
  .glb and the edits, and Open of that file brings the pose, the edits and the weights back;
* a session cut off without saving leaves its autosave in the user cache; the next editor offers it and
  Restore (R) brings the pose back.

Skips without xvfb-run (tests/helpers/xvfb.py), like the other window tests.
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
pytestmark = pytest.mark.gl


def _run(script: str, tmp_path: Path, *args: str, screen: str = "1280x800x24") -> dict:
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run not found: install Debian's xvfb (make test does it as root)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("DISPLAY", None)
    env["SKINENGINE_FILE_DIALOG"] = "typed"  # the typed path even where zenity or kdialog is installed
    r = subprocess.run(["xvfb-run", "-a", "-s", f"-screen 0 {screen}", sys.executable, "-c", script, *args],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


LAYOUT = r'''
import json, sys
import numpy as np
from engine import Session
from game.editor import Editor
from game.editor.window import run_editor_window
from tests.helpers.arm_strokes import window_point

out = {}
for W, H in ((800, 600), (1920, 1080)):
    with Session(window=True, width=W, height=H, title="layout test") as s:
        ed = Editor(s)
        ch = ed.spawn("humanoid", clip="idle", speed=0.0)
        ed.frame_camera()
        s.step()
        got = {}

        def before(i, window):
            if i == 4:  # the frame drawn last (frame 3), panels and all
                np.save(sys.argv[1] + f"/{W}x{H}.npy", s.renderer.read_pixels()[..., :3])
                got["rect"] = s.camera.view_rect
                got["joints"] = [window_point(s.camera, W, H, p) for p in ch.joints()[:, :3, 3]]
                got["size"] = [s.renderer.width, s.renderer.height]

        run_editor_window(ed, frames=5, before_frame=before, persist_layout=False)
        out[f"{W}x{H}"] = got
print("RESULT " + json.dumps(out))
'''


def test_docked_panels_leave_the_view_to_the_scene(tmp_path):
    res = _run(LAYOUT, tmp_path, str(tmp_path), screen="1920x1080x24")  # both sizes in one run
    for size in ("800x600", "1920x1080"):
        got = res[size]
        w, h = (int(v) for v in size.split("x"))
        assert got["size"] == [w, h]
        fx, fy, fw, fh = got["rect"]
        x0, y0 = int(np.ceil(fx * w)), int(np.ceil(fy * h))
        x1, y1 = int((fx + fw) * w), int((fy + fh) * h)
        assert 0.3 * w < x1 - x0 < w and 0.4 * h < y1 - y0 < h, size  # a real central view, panels around
        img = np.load(tmp_path / f"{size}.npy").astype(int)
        dark = img.max(axis=2) < 60  # imgui's panel colours; the sky, floor and skin are light
        view = dark[y0:y1, x0:x1]
        assert view.mean() < 0.01, f"{size}: panel pixels inside the view: {view.mean():.3f}"
        assert dark[y0:y1, : max(x0 - 2, 1)].mean() > 0.6, size  # the left column is panels
        assert dark[y0:y1, x1 + 2:].mean() > 0.6, size  # the right column is panels
        assert dark[y1 + 2:, x0:x1].mean() > 0.6, size  # the bottom row is panels
        joints = np.array(got["joints"])  # the character lies inside the view, never under a panel
        assert (joints[:, 0] > x0).all() and (joints[:, 0] < x1).all(), size
        assert (joints[:, 1] > y0).all() and (joints[:, 1] < y1).all(), size


ROUND_TRIP = r'''
import json, math, sys
import numpy as np
from pyglet.window import key, mouse
from engine import Session
from engine.input.events import Action, now
from game.editor import Editor
from game.editor.window import run_editor_window
from tests.helpers.arm_strokes import window_point

W, H = 800, 600
glb = sys.argv[1]
J = 7  # forearm_L
out = {"layer": {}}
with Session(window=True, width=W, height=H, title="round trip") as s:
    ed = Editor(s)
    ch = ed.spawn("humanoid", clip="idle", speed=0.0)
    ed.frame_camera()
    s.step()
    cam = s.camera
    plan = {1: [("on_key_press", key.K, 0)]}  # the skeleton
    names = [n.name for n in ch.asset.nodes]

    def at(i, *events):
        plan.setdefault(i, []).extend(events)

    def drag(start, points):
        # the pointer arrives first: what it is over (a panel, the gizmo) is known from the frames it was there
        (x, y) = points[0]
        at(start, ("on_mouse_motion", x, H - y, 0, 0))
        at(start + 2, ("on_mouse_press", x, H - y, mouse.LEFT, 0))
        for k, ((x0, y0), (x1, y1)) in enumerate(zip(points, points[1:])):
            at(start + 3 + k, ("on_mouse_drag", x1, H - y1, x1 - x0, y0 - y1, mouse.LEFT, 0))
        at(start + 2 + len(points), ("on_mouse_release", points[-1][0], H - points[-1][1], mouse.LEFT, 0))
        return start + 3 + len(points)

    def layer():
        return None if ch.pose_layer is None else ch.pose_layer.rotation.tolist()

    def before(i, window):
        if i == 0:
            c = window_point(cam, W, H, ch.joints()[J, :3, 3])
            at(3, ("on_mouse_press", c[0], H - c[1], mouse.LEFT, 0))  # a click on the joint selects it
            at(4, ("on_mouse_release", c[0], H - c[1], mouse.LEFT, 0))
            out["joint_px"] = c
        if i == 7:  # the gizmo's outer ring (white) right of the joint, as drawn in the last frame
            img = s.renderer.read_pixels()
            cx, cy = out["joint_px"]
            row = img[int(round(cy)), :, :3].astype(int)
            xs = [x for x in range(int(cx) + 12, min(W, int(cx) + 200)) if (row[x] > 235).all()]
            r = xs[0] + 1 - cx
            out["ring"] = r
            end = drag(8, [(cx + r * math.cos(a), cy - r * math.sin(a)) for a in np.linspace(0.0, 0.7, 8)])
            out["layer"]["before"] = layer()
            at(end + 2, ("on_key_press", key.Z, key.MOD_CTRL))
            at(end + 5, ("on_key_press", key.Z, key.MOD_CTRL | key.MOD_SHIFT))
            out["marks"] = [end + 1, end + 4, end + 7]
        if i in out.get("marks", ()):
            out["layer"][str(i)] = layer()
            out.setdefault("history", []).append(list(ed.undo.history[:ed.undo.cursor]))
        if i == 30:  # the bulge tool on the other forearm (surface edits: the spring deformer)
            ed.queue.push(Action(now(), "config", {"spring_max_iterations": 10}))
            at(31, ("on_key_press", key.B, 0))
            g = ch.joints()[:, :3, 3]
            e, h = g[names.index("forearm_R")], g[names.index("hand_R")]
            out["save_at"] = drag(33, [window_point(cam, W, H, e + u * (h - e)) for u in np.linspace(0.2, 0.85, 8)]) + 4
        if i == out.get("save_at"):
            out["saved_joints"] = ch.joints().tolist()
            out["saved_edits"] = {k.export_key: [e.to_dict() for e in st] for k, st in ch.edits.items() if len(st)}
            out["saved_weights"] = [p.weights.tolist() for m in ch.asset.meshes for p in m.primitives
                                    if p.weights is not None]
            out["unsaved_before"] = ed.unsaved
            # imgui takes one key's press and release in different frames: the keys are frames apart
            at(i + 1, ("on_key_press", key.S, key.MOD_CTRL | key.MOD_SHIFT))  # Save as: the typed path
            at(i + 3, ("on_text", glb))
            at(i + 10, ("on_key_press", key.ENTER, 0))
            at(i + 17, ("on_key_press", key.O, key.MOD_CTRL))  # Open the file just written
            at(i + 19, ("on_text", glb))
            at(i + 26, ("on_key_press", key.ENTER, 0))
        if i == out.get("save_at", -1) + 16:  # saved (Enter at +10), before Ctrl+O
            out["caption_saved"] = window.caption
        for ev in plan.get(i, []):
            if ev[0] == "on_text":  # the typed-path field has focus: Ctrl+A, Backspace clear its default
                for k, m in ((key.LCTRL, 0), (key.A, key.MOD_CTRL)):
                    window.dispatch_event("on_key_press", k, m)
                for k, m in ((key.A, key.MOD_CTRL), (key.LCTRL, 0)):
                    window.dispatch_event("on_key_release", k, m)
                window.dispatch_event("on_key_press", key.BACKSPACE, 0)
                window.dispatch_event("on_key_release", key.BACKSPACE, 0)
            window.dispatch_event(*ev)
            if ev[0] == "on_key_press":
                window.dispatch_event("on_key_release", *ev[1:])

    run_editor_window(ed, frames=88, before_frame=before, persist_layout=False)
    ch = ed.selected
    out.update(messages=ed.state.messages, save_path=str(ed.save_path), unsaved=ed.unsaved,
               final_history=ed.undo.history, source=ch.asset.path and str(ch.asset.path),
               joints=ch.joints().tolist(), clips=ch.clips,
               edits={k.export_key: [e.to_dict() for e in st] for k, st in ch.edits.items() if len(st)},
               weights=[p.weights.tolist() for m in ch.asset.meshes for p in m.primitives if p.weights is not None])
print("RESULT " + json.dumps(out))
'''


def test_gizmo_edit_save_as_and_open_round_trip(tmp_path):
    glb = tmp_path / "out" / "hero.glb"
    res = _run(ROUND_TRIP, tmp_path, str(glb))
    msgs = res["messages"]
    # the gizmo: one undo step that rotated the joint; undo restores the layer before it exactly, redo again
    b, u, r = (res["layer"][str(m)] for m in res["marks"])
    assert res["history"][0] == ["rotate joint 7 of humanoid"], msgs
    assert res["history"][1] == [] and res["history"][2] == ["rotate joint 7 of humanoid"]
    assert u == res["layer"]["before"]  # no layer before the rotation: none after the undo
    assert b is not None and r == b
    q = np.array(b)[7]
    assert 2 * np.degrees(np.arccos(min(1.0, abs(q[3])))) > 15.0  # the drag turned the forearm
    assert np.allclose(np.array(b)[np.arange(len(b)) != 7], [0, 0, 0, 1])  # only that joint
    # Save as wrote the pose and the edits; the title followed
    assert res["unsaved_before"] and res["saved_edits"], msgs
    assert (tmp_path / "out" / "hero.glb").is_file() and (tmp_path / "out" / "hero.edits.json").is_file(), msgs
    assert any(m.startswith("saved hero.glb, hero.edits.json") for m in msgs), msgs
    assert res["caption_saved"].endswith("hero.glb"), res["caption_saved"]
    # Open brought the file back: pose, edits and weights as saved
    assert any(m == "opened hero.glb with its edits" for m in msgs), msgs
    assert res["source"] == str(glb) and res["save_path"] == str(glb) and not res["unsaved"]
    assert "pose" in res["clips"] and res["final_history"] == []
    np.testing.assert_allclose(res["joints"], res["saved_joints"], atol=1e-6)
    assert res["edits"] == res["saved_edits"]
    assert len(res["weights"]) == len(res["saved_weights"])
    for a, b_ in zip(res["weights"], res["saved_weights"]):
        assert np.array_equal(np.array(a, np.float32), np.array(b_, np.float32))


CRASH = r'''
import json, os, sys
from pyglet.window import key, mouse
from engine import Session
from game.editor import Editor
from game.editor.window import run_editor_window
from tests.helpers.arm_strokes import arm_pose_plan

W, H = 800, 600
phase = sys.argv[1]
out = {}
with Session(window=True, width=W, height=H, title="autosave") as s:
    ed = Editor(s)
    ch = ed.spawn("humanoid", clip="idle", speed=0.0)
    ed.frame_camera()
    s.step()
    plan = {}

    def before(i, window):
        if phase == "crash":
            if i == 0:
                out["end"], _ = arm_pose_plan(ch, s.camera, W, H, start=3, n=8, plan=plan)
            if i == out["end"] + 2:
                print("RESULT " + json.dumps({"layer": ch.pose_layer.rotation.tolist(),
                                              "history": ed.undo.history}), flush=True)
                os._exit(0)  # a crash: no clean exit, the autosave stays
        else:
            if i == 1:
                out["asking"] = window.caption, ed.unsaved
            if i == 2:
                window.dispatch_event("on_key_press", key.R, 0)
        for ev in plan.get(i, []):
            window.dispatch_event(*ev)

    run_editor_window(ed, frames=60 if phase == "crash" else 6, before_frame=before, autosave=True,
                      persist_layout=False)
    now_ch = ed.selected
    out.update(layer=None if now_ch.pose_layer is None else now_ch.pose_layer.rotation.tolist(),
               history=ed.undo.history, messages=ed.state.messages, unsaved=ed.unsaved)
print("RESULT " + json.dumps(out))
'''


def test_a_crashed_session_is_offered_back_and_restored(tmp_path):
    crashed = _run(CRASH, tmp_path, "crash")
    assert crashed["history"] and crashed["history"][0].startswith("pose ")
    left = tmp_path / "cache" / "skinengine" / "autosave.jsonl"
    assert left.is_file() and '"type": "end"' not in left.read_text()  # cut off, as a crash leaves it
    restored = _run(CRASH, tmp_path, "restore")
    assert any(m.startswith("restored the last session") for m in restored["messages"]), restored["messages"]
    assert restored["history"] == crashed["history"] and restored["unsaved"]
    np.testing.assert_array_equal(np.array(restored["layer"]), np.array(crashed["layer"]))
    assert not (tmp_path / "cache" / "skinengine" / "autosave-previous.jsonl").exists()
