"""Record and replay: a recorded editor session replays bit-exact headless (vertices, camera, image), and the
``replay`` command writes its outputs or refuses a bad file with one error line naming the line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine import Session
from engine.input.events import Action, Buttons, KeyDown, Modifiers, PointerDown, PointerMove, PointerUp, Wheel
from engine.input.record import read_recording
from game.cli import run
from game.editor import Editor, open_recording, replay


def _drive(ed: Editor, s: Session) -> None:
    """A little session: a stroke, a right-drag orbit, a wheel zoom, a pause and a setting."""
    t = 50.0
    ed.queue.push(PointerDown(t, 60.0, 50.0))
    s.step()
    for i in range(8):
        t += 0.016
        ed.queue.push(PointerMove(t, 60.0 + 6 * i, 50.0 + i * i, buttons=Buttons.LEFT))
        s.frame(0.013 + 0.001 * i, interpolate=False)  # uneven real frame times, as a window has
    ed.queue.push(PointerUp(t + 0.01, 110.0, 110.0))
    ed.queue.push(PointerMove(t + 0.02, 110.0, 110.0, buttons=Buttons.RIGHT))
    ed.queue.push(PointerMove(t + 0.03, 130.0, 100.0, buttons=Buttons.RIGHT))
    ed.queue.push(Wheel(t + 0.04, 100.0, 100.0, 0.0, 1.0))
    s.frame(0.021, interpolate=False)
    ed.queue.push(Action(t + 0.05, "set", {"brush_radius": 25.0}))
    ed.queue.push(KeyDown(t + 0.06, "space", Modifiers.NONE))
    s.step(3)


def test_a_recorded_session_replays_bit_exact(tmp_path):
    path = tmp_path / "session.jsonl"
    with Session(width=160, height=120, strict=True) as s:
        ed = Editor(s)
        ed.spawn("humanoid", clip="walk")
        ed.frame_camera()
        ed.record(path)
        _drive(ed, s)
        ed.stop_recording()
        want = s.characters[0].vertices()
        cam = (s.camera.yaw, s.camera.pitch, s.camera.distance)
        clock = (s.clock.step_count, s.clock.paused, s.clock.real_time)
        settings = ed.state.settings.to_dict()
        image = s.render()
    rec = read_recording(path)
    assert len(rec.frames) == 1 + 8 + 1 + 3 and rec.header.assets[0]["source"] == "humanoid"
    ed2 = open_recording(rec)
    try:
        assert replay(rec, ed2) == len(rec.frames)
        s2 = ed2.session
        got = s2.characters[0].vertices()
        assert want.keys() == got.keys()
        for k in want:
            assert np.array_equal(want[k], got[k]), k
        assert (s2.camera.yaw, s2.camera.pitch, s2.camera.distance) == cam and cam[0] != 0.0
        assert (s2.clock.step_count, s2.clock.paused, s2.clock.real_time) == clock and clock[1]
        assert ed2.state.settings.to_dict() == settings and settings["brush_radius"] == 25.0
        assert np.array_equal(s2.render(), image)
    finally:
        ed2.session.release()


def _header(**over):
    h = {"format": "skinengine-session", "version": 1, "engine": "t", "window": {"width": 96, "height": 64},
         "step": 1 / 60, "camera": {"eye": [0, 1, 3], "target": [0, 0.5, 0], "fov": 45},
         "assets": [{"source": "cylinder", "clip": "bend", "time": 0.5}]}
    h.update(over)
    return h


def test_replay_command_writes_outputs(tmp_path, capsys):
    path = tmp_path / "cyl.jsonl"
    body = [_header(), {"type": "frame", "dt": 1 / 60}, {"type": "frame", "dt": 1 / 60}, {"type": "end", "frames": 2}]
    path.write_text("".join(json.dumps(o) + "\n" for o in body))
    npz, png = tmp_path / "f.npz", tmp_path / "f.png"
    assert run(["replay", str(path), "--headless", "--export-frame", str(npz), "--screenshot", str(png)]) == 0
    assert "replayed 2 frames" in capsys.readouterr().out
    data = np.load(npz)
    assert data.files and all(k.startswith("node") for k in data.files)
    with Session(width=96, height=64, strict=True) as s:  # the same state without the editor
        ch = s.spawn("cylinder", clip="bend", time=0.5)
        s.step(2)
        ref = {k.export_key: v for k, v in ch.vertices().items() if k in set(ch.skinned_primitives)}
    for k, v in ref.items():
        assert np.array_equal(data[k], v)
    assert png.stat().st_size > 0


@pytest.mark.parametrize("lines, needle", [
    ([_header(), {"type": "frame", "dt": 0.1}], "cut.jsonl:2: truncated"),
    ([_header(), {"type": "warp", "t": 0}, {"type": "end"}], "cut.jsonl:2: unknown event type 'warp'"),
    ([_header(version=7)], "cut.jsonl:1: unknown version 7"),
    ([_header(assets=[{"source": "nobody"}]), {"type": "end"}], "header.assets[0]"),
])
def test_replay_command_refuses_bad_files(tmp_path, capsys, lines, needle):
    path = tmp_path / "cut.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    assert run(["replay", str(path), "--headless"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err


SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "sessions" / "arm_pose.jsonl"


def test_the_shipped_arm_pose_replays_bit_exact_and_poses_the_arm(tmp_path):
    shipped = read_recording(SHIPPED)
    assert shipped.header.assets[0]["source"] == "humanoid" and shipped.header.editor["tool"] == "pose"
    # record it again: the shipped events driven live through the editor, as the window would feed them
    again = tmp_path / "again.jsonl"
    live = open_recording(shipped)
    try:
        live.record(again)
        for f in shipped.frames:
            live.queue.extend(f.events)
            live.session.frame(f.dt, interpolate=False)
        live.stop_recording()
        assert any(m.startswith("posed 3 joints") for m in live.state.messages), live.state.messages
        want = live.session.characters[0].vertices()
        hand = live.session.characters[0].joints()[8, :3, 3].copy()
        assert live.undo.history and live.undo.cursor == 1
    finally:
        live.session.release()
    # the new recording is the shipped file (the engine version aside), and replays to the same vertices
    assert again.read_text().splitlines()[1:] == SHIPPED.read_text().splitlines()[1:]
    rec = read_recording(again)
    ed = open_recording(rec)
    try:
        replay(rec, ed)
        got = ed.session.characters[0].vertices()
        for k in want:
            assert np.array_equal(want[k], got[k]), k
        # the hand went up: above the shoulders (1.43 m), from 1.03 m at rest
        assert hand[1] > 1.6
    finally:
        ed.session.release()


def test_replay_command_saves_the_posed_asset(tmp_path):
    out = tmp_path / "posed.glb"
    assert run(["replay", str(SHIPPED), "--headless", "--save", str(out)]) == 0
    from engine.assets.gltf import load

    asset = load(out)
    assert "pose" in [c.name for c in asset.clips]


def test_a_recording_finds_its_asset_from_another_folder(tmp_path, monkeypatch, capsys):
    import shutil

    src = tmp_path / "work" / "hero.glb"
    src.parent.mkdir()
    shutil.copy(Path(__file__).resolve().parents[2] / "assets" / "cylinder.glb", src)
    rec_path = tmp_path / "work" / "session.jsonl"
    monkeypatch.chdir(src.parent)
    with Session(width=64, height=48, strict=True) as s:
        ed = Editor(s)
        ed.spawn("hero.glb", clip=0)  # relative to the folder it was recorded in
        ed.record(rec_path)
        s.step(2)
        ed.stop_recording()
    header = json.loads(rec_path.read_text().splitlines()[0])["assets"][0]
    assert header["source"] == "hero.glb" and header["path"] == str(src.resolve()) and len(header["sha256"]) == 64
    moved = tmp_path / "elsewhere" / "session.jsonl"  # the recording moves away from the asset
    moved.parent.mkdir()
    shutil.move(rec_path, moved)
    monkeypatch.chdir(tmp_path)
    assert run(["replay", str(moved), "--headless"]) == 0  # found through the recorded absolute path
    capsys.readouterr()
    src.unlink()
    assert run(["replay", str(moved), "--headless"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "header.assets[0]: asset 'hero.glb' not found (looked at:" in err[0]
    assert str(src.resolve()) in err[0]
