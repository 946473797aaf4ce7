"""Every user file other than glTF through the real command line (issue 27 item 9): seeded hostile strokes,
edits, config and recording files (tests/helpers/hostile.py) each give exit 2, exactly one ``error:`` line, no
traceback, and leave nothing on disk. Refusals are bounded by counts and caps, never by timing."""
from __future__ import annotations

import json

import pytest

from engine.input.strokefile import MAX_POINTS
from engine.skinning.gpu.plan import GraphConfig
from tests.helpers.hostile import hostile_user_files, one_error_line

COMMANDS = {
    "strokes": lambda f, out: ["pose", "cylinder", "--strokes", str(f), "--export-frame", str(out / "p.npz")],
    "edits": lambda f, out: ["edit", "cylinder", "--load", str(f), "--export-frame", str(out / "e.npz")],
    "config": lambda f, out: ["export-frame", "cylinder", "--device", "cpu", "--config", str(f),
                              "--out", str(out / "c.npz")],
    "recording": lambda f, out: ["replay", str(f), "--headless", "--export-frame", str(out / "r.npz")],
}


def _snapshot(folder):
    return sorted(p.relative_to(folder) for p in folder.rglob("*"))


@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_hostile_files_at_the_command_line(capsys, tmp_path, kind):
    files = tmp_path / "in"
    files.mkdir()
    cases = hostile_user_files(kind, files, seed=27, count=14)
    cases.append(("a character device", "/dev/zero"))
    out = tmp_path / "out"
    before = _snapshot(tmp_path)
    for name, path in cases:
        line = one_error_line(capsys, COMMANDS[kind](path, out))
        assert "internal error" not in line, (name, line)
        assert _snapshot(tmp_path) == before, f"{name}: left {set(_snapshot(tmp_path)) - set(before)}"


def test_missing_strokes_file_is_one_readable_line(capsys, tmp_path):
    line = one_error_line(capsys, COMMANDS["strokes"](tmp_path / "none.json", tmp_path))
    assert "cannot read strokes file" in line and "no such file" in line and "Errno" not in line


def test_a_million_points_are_refused_by_the_cap(capsys, tmp_path):
    pts = [[0, k * 1e-6, 0] for k in range(MAX_POINTS + 1)]
    doc = {"version": 1, "brush_radius": 0.05, "strokes": [{"role": "baseline", "space": "world", "points": pts}]}
    f = tmp_path / "long.json"
    f.write_text(json.dumps(doc))
    line = one_error_line(capsys, COMMANDS["strokes"](f, tmp_path / "out"))
    assert f"{MAX_POINTS + 1} points, over the limit of {MAX_POINTS} per stroke" in line


def test_recording_gaps_and_far_placements_are_refused(capsys, tmp_path):
    from tests.helpers.hostile import valid_user_document

    lines = valid_user_document("recording")
    lines[1:1] = [{"type": "pointer_move", "t": 0.0, "x": 1.0, "y": 1.0},
                  {"type": "pointer_move", "t": 1e9, "x": 1.0, "y": 1.0}]
    f = tmp_path / "gap.jsonl"
    f.write_text("".join(json.dumps(d) + "\n" for d in lines))
    assert "over the limit of 3600 s" in one_error_line(capsys, COMMANDS["recording"](f, tmp_path / "out"))
    lines = valid_user_document("recording")
    lines[0]["assets"][0]["position"] = [1e308, 0, 0]
    f.write_text("".join(json.dumps(d) + "\n" for d in lines))
    line = one_error_line(capsys, COMMANDS["recording"](f, tmp_path / "out"))
    assert "header.assets[0].position[0]" in line or "assets[0].position[0]" in line, line


def test_hostile_graph_files_raise_one_line_value_errors(tmp_path):
    """--graph is the demo's (it needs GL); the reader is the same: every case is one ValueError line."""
    (tmp_path / "dev.json").symlink_to("/dev/zero")
    cases = hostile_user_files("graph", tmp_path, seed=27, count=14) + [("device", tmp_path / "dev.json")]
    for name, path in cases:
        with pytest.raises(ValueError) as info:
            GraphConfig.load(path)
        assert "\n" not in str(info.value), name
        assert str(info.value).startswith(("cannot read", str(path))), (name, str(info.value))
