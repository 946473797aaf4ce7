"""engine.textfile, the one careful reader of user files: special files refused by name without blocking, the
size limit stated, UTF-8 and JSON nesting checked before decoding (issue 27 item 9)."""
from __future__ import annotations

import os

import pytest

from engine.textfile import MAX_JSON_DEPTH, check_numbers, json_depth, load_json, parse_json, read_user_bytes


def test_fifo_is_refused_by_name_without_blocking(tmp_path):
    fifo = tmp_path / "strokes.json"
    os.mkfifo(fifo)  # no writer: opening it for reading in blocking mode would hang the test
    with pytest.raises(ValueError, match=r"cannot read strokes file .*: it is a named pipe \(FIFO\)"):
        read_user_bytes(fifo, "strokes file", max_bytes=100)


def test_devices_and_folders_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"/dev/zero: it is a character device, not a regular file"):
        read_user_bytes("/dev/zero", "edits file", max_bytes=1 << 30)
    with pytest.raises(ValueError, match=r"it is a folder"):
        read_user_bytes(tmp_path, "config file", max_bytes=100)
    with pytest.raises(ValueError, match=r"cannot read config file .*missing.toml: no such file"):
        read_user_bytes(tmp_path / "missing.toml", "config file", max_bytes=100)


def test_size_limit_is_stated(tmp_path):
    p = tmp_path / "big.json"
    p.write_bytes(b" " * 101)
    with pytest.raises(ValueError, match=r"the recording is 101 bytes, over the limit of 100 bytes"):
        read_user_bytes(p, "recording", max_bytes=100)
    assert read_user_bytes(p, "recording", max_bytes=101) == b" " * 101


def test_utf8_errors_are_one_line(tmp_path):
    p = tmp_path / "x.json"
    p.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ValueError, match=r"not UTF-8 text \(byte 0xff at offset 7\); expected a UTF-8 JSON file"):
        load_json(p, "strokes file", max_bytes=100)


def test_deep_nesting_is_refused_before_decoding(tmp_path):
    text = "[" * 200_000 + "]" * 200_000
    assert json_depth(text) == 200_000
    assert json_depth('{"a": "[[[[[", "b": [[1]]}') == 3  # brackets inside strings do not count
    assert json_depth('["\\"[[[", [2]]') == 2  # nor after an escaped quote
    with pytest.raises(ValueError, match=rf"nested 200000 levels deep, over the limit of {MAX_JSON_DEPTH}"):
        parse_json(text, "x.json")
    assert parse_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, "x.json") is not None


def test_non_standard_constants_and_huge_integers(tmp_path):
    with pytest.raises(ValueError, match=r"x.json: invalid JSON: NaN is not a JSON number"):
        parse_json("[NaN]", "x.json")
    with pytest.raises(ValueError, match=r"x.json: invalid JSON: Exceeds the limit"):
        parse_json("[" + "9" * 5000 + "]", "x.json")
    with pytest.raises(ValueError, match=r"f: a\[1\] = 1.000e\+30; valid: integers within"):
        check_numbers({"a": [1, 10**30]}, "f")
    with pytest.raises(ValueError, match=r"f: b = 1e\+300; valid: finite numbers within \+-1e\+09"):
        check_numbers({"b": 1e300}, "f", max_abs=1e9)
    check_numbers({"a": [1, 2.5, True, "x"]}, "f", max_abs=1e9)
