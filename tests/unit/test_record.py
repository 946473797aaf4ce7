"""Recording files: header checks, frames, the end line, and one error line naming the file and line."""
from __future__ import annotations

import json

import pytest

from engine.input.events import Buttons, KeyDown, PointerDown, PointerMove, PointerUp
from engine.input.record import VERSION, Recorder, RecordError, RecordHeader, parse_recording, read_recording

HEADER = RecordHeader(width=320, height=240, camera={"eye": [0, 1, 3], "target": [0, 1, 0], "fov": 45},
                      assets=[{"source": "cylinder", "clip": "bend"}], editor={"tool": "pose"}, engine="test")


def lines(*objs) -> list[str]:
    return [json.dumps(o) + "\n" for o in objs]


def test_recorder_writes_what_the_reader_reads(tmp_path):
    path = tmp_path / "s.jsonl"
    f0 = [PointerDown(1.0, 10.0, 20.0), PointerMove(1.01, 11.0, 21.0, buttons=Buttons.LEFT)]
    f1 = [PointerUp(1.02, 12.0, 22.0), KeyDown(1.03, "z")]
    with Recorder(path, HEADER) as rec:
        rec.frame(f0, 1 / 60)
        rec.frame([], 0.1 + 0.2)  # a float that needs every digit
        rec.frame(f1, 0.0)
    r = read_recording(path)
    assert r.header.to_dict() == HEADER.to_dict() and r.path == path
    assert [f.dt for f in r.frames] == [1 / 60, 0.1 + 0.2, 0.0]
    assert [f.events for f in r.frames] == [f0, [], f1]
    last = path.read_text().splitlines()[-1]
    assert json.loads(last) == {"type": "end", "frames": 3}
    with pytest.raises(ValueError, match="closed"):
        rec.frame([], 0.1)


def test_files_without_frame_lines_are_grouped_by_fixed_steps():
    h = HEADER.to_dict()
    ev = [PointerDown(5.0, 1, 1).to_dict(), PointerMove(5.001, 2, 2, buttons=1).to_dict(),
          PointerMove(5.02, 3, 3, buttons=1).to_dict(), PointerUp(5.06, 4, 4).to_dict()]
    r = parse_recording(lines(h, *ev, {"type": "end"}))
    assert [len(f.events) for f in r.frames] == [2, 1, 0, 1]
    assert all(f.dt == h["step"] for f in r.frames)


@pytest.mark.parametrize("body, line, needle", [
    ([], 1, "empty file"),
    ([{"format": "skinengine-session", "version": 99}], 1, "unknown version 99"),
    ([{"hello": 1}], 1, "first line must be the header"),
    (["H", {"type": "teleport", "t": 1.0}], 2, "unknown event type 'teleport'"),
    (["H", {"type": "pointer_down", "t": 1.0, "x": 1.0}], 2, "pointer_down event"),
    (["H", {"type": "pointer_down", "t": 1.0, "x": 1, "y": 1}, {"type": "frame", "dt": 0.1}], 3, "truncated"),
    (["H", {"type": "key_down", "t": 2.0, "key": "a"}, {"type": "key_down", "t": 1.0, "key": "a"}], 3,
     "must not decrease"),
    (["H", {"type": "frame", "dt": -1}], 2, "frame line"),
    (["H", {"type": "frame", "dt": 0.1}, {"type": "end", "frames": 5}], 3, "says 5 frames"),
    (["H", {"type": "end", "frames": 0}, {"type": "frame", "dt": 0.1}], 3, "after the end line"),
])
def test_bad_files_name_the_line(body, line, needle):
    objs = [HEADER.to_dict() if b == "H" else b for b in body]
    with pytest.raises(RecordError) as info:
        parse_recording(lines(*objs), name="bad.jsonl")
    msg = str(info.value)
    assert msg.startswith(f"bad.jsonl:{line}: ") and needle in msg, msg


def test_a_line_cut_in_the_middle_is_truncated():
    text = lines(HEADER.to_dict(), {"type": "frame", "dt": 0.1})
    text.append('{"type": "pointer_do')
    with pytest.raises(RecordError, match=r"x:3: truncated line"):
        parse_recording(text, name="x")


@pytest.mark.parametrize("patch, needle", [
    ({"window": {"width": 0, "height": 10}}, "header.window.width"),
    ({"assets": []}, "header.assets"),
    ({"assets": [{"source": "cylinder", "colour": 1}]}, "unknown key"),
    ({"camera": {"target": [0, 0, 0]}}, "header.camera.eye"),
    ({"camera": {"eye": [0, 0, 1], "target": [0, 0, 0], "fov": 500}}, "fov"),
    ({"step": 5}, "header.step"),
    ({"bogus": 1}, "unknown key"),
])
def test_header_checks(patch, needle):
    d = {**HEADER.to_dict(), **patch}
    with pytest.raises(RecordError, match=needle):
        parse_recording(lines(d, {"type": "end", "frames": 0}))


def test_version_constant_and_missing_file(tmp_path):
    assert VERSION == 2  # version 2 added the VR header; version 1 files still read (test_version_one_reads)
    with pytest.raises(FileNotFoundError):
        read_recording(tmp_path / "nope.jsonl")
    bad = tmp_path / "bin.jsonl"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(RecordError, match="UTF-8"):
        read_recording(bad)


def test_version_one_reads_and_vr_needs_version_two():
    d = {**HEADER.to_dict(), "version": 1}
    rec = parse_recording(lines(d, {"type": "end", "frames": 0}))
    assert rec.header.version == 1 and rec.header.vr is None
    with pytest.raises(RecordError, match="header.vr needs version 2"):
        parse_recording(lines({**d, "vr": {}}, {"type": "end", "frames": 0}))
    with pytest.raises(RecordError, match="header.vr misses"):
        parse_recording(lines({**d, "version": 2, "vr": {"device": "simulated"}}, {"type": "end", "frames": 0}))
