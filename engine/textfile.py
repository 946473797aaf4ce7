"""The one careful way the engine reads a file a user named (strokes, edits, deformer configs, graphs, recordings).

Floor 0: imports nothing of the engine. Every problem is a ``ValueError`` with one line that names the file:

* the path is ``os.stat``-ed first and only a regular file is opened: a folder, a named pipe (FIFO), a
  character or block device or a socket is refused by name, so ``/dev/zero`` or a FIFO never blocks or fills
  memory; the file is then opened with ``O_NONBLOCK`` (a file swapped for a FIFO after the check cannot block
  either) and checked again on the open descriptor;
* ``max_bytes`` is stated in the message of a file over it (the size is known before reading, and at most
  ``max_bytes + 1`` bytes are ever read);
* text that is not UTF-8 names the byte and its offset;
* :func:`parse_json` measures the nesting depth of brackets outside strings (vectorised, linear) before
  ``json.loads``, so a deeply nested document is refused by depth instead of ending in a RecursionError.

    from engine.textfile import load_json
    data = load_json(path, "strokes file", max_bytes=32 << 20)
"""
from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["read_user_bytes", "read_user_text", "parse_json", "load_json", "json_depth", "check_numbers",
           "MAX_JSON_DEPTH", "MAX_INT"]

#: default nesting limit of user JSON (the file formats need fewer than 10 levels)
MAX_JSON_DEPTH = 64

#: largest integer a user file may hold (int64): larger ones cannot become a float, an index or a count
MAX_INT = 2**63 - 1

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def read_user_bytes(path: str | os.PathLike[str], what: str, *, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path`` (``what`` names it in messages, e.g. "strokes file"); a
    ValueError for a missing or unreadable path, anything but a regular file, or more than ``max_bytes``."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise ValueError(f"cannot read {what} {p}: no such file") from None
    except OSError as exc:
        raise ValueError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    kind = _not_regular(st.st_mode)
    if kind is not None:
        raise ValueError(f"cannot read {what} {p}: it is {kind}, not a regular file")
    if st.st_size > max_bytes:
        raise ValueError(f"{p}: the {what} is {st.st_size} bytes, over the limit of {max_bytes} bytes")
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ValueError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    try:
        kind = _not_regular(os.fstat(fd).st_mode)  # replaced between stat and open
        if kind is not None:
            raise ValueError(f"cannot read {what} {p}: it is {kind}, not a regular file")
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise ValueError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if total > max_bytes:  # it grew while being read
        raise ValueError(f"{p}: the {what} is over the limit of {max_bytes} bytes")
    return b"".join(chunks)


def read_user_text(path: str | os.PathLike[str], what: str, *, max_bytes: int, kind: str = "text") -> str:
    """:func:`read_user_bytes` decoded as UTF-8 (a leading BOM is dropped); ``kind`` ("JSON", "TOML") says
    what the file should have been in the message for bytes that are not UTF-8."""
    raw = read_user_bytes(path, what, max_bytes=max_bytes)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{Path(path)}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                         f"expected a UTF-8 {kind} file") from None


_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_STEP = np.zeros(256, np.int8)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


def json_depth(text: str | bytes) -> int:
    """The deepest bracket nesting of JSON ``text`` outside strings (linear; no recursion)."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    raw = _STRINGS.sub(b'""', raw)
    if not raw:
        return 0
    steps = _STEP[np.frombuffer(raw, np.uint8)]
    nz = steps[steps != 0]
    return int(np.cumsum(nz, dtype=np.int64).max(initial=0))


def parse_json(text: str, name: str, *, max_depth: int = MAX_JSON_DEPTH, label: str = "invalid JSON") -> Any:
    """``json.loads(text)`` after a nesting check; ValueError ``NAME: LABEL: ...`` for depth, syntax, or the
    non-standard constants NaN / Infinity (which the file formats do not allow)."""
    depth = json_depth(text)
    if depth > max_depth:
        raise ValueError(f"{name}: {label}: nested {depth} levels deep, over the limit of {max_depth}")

    def constant(word: str) -> Any:
        raise ValueError(f"{name}: {label}: {word} is not a JSON number (numbers must be finite)")

    try:
        return json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}: {label}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        if str(exc).startswith(name):
            raise
        raise ValueError(f"{name}: {label}: {str(exc).splitlines()[0]}") from None
    except RecursionError:  # below the bracket limit this cannot happen; kept so nothing escapes as a bug
        raise ValueError(f"{name}: {label}: nested too deeply") from None


def load_json(path: str | os.PathLike[str], what: str, *, max_bytes: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Read the UTF-8 JSON file at ``path`` carefully (:func:`read_user_text`, :func:`parse_json`)."""
    text = read_user_text(path, what, max_bytes=max_bytes, kind="JSON")
    return parse_json(text, str(Path(path)), max_depth=max_depth)


def check_numbers(data: Any, name: str, *, max_abs: float | None = None) -> None:
    """Refuse any integer beyond +-MAX_INT anywhere in decoded JSON/TOML ``data`` (so no reader meets an int
    too large for a float) and, with ``max_abs``, any number that is not finite or beyond +-``max_abs``:
    ValueError ``NAME: key.path = value; valid: ...``. Iterative, linear in the document."""
    todo: list[tuple[Any, str]] = [(data, "")]
    while todo:
        value, where = todo.pop()
        if isinstance(value, dict):
            todo.extend((v, f"{where}.{k}" if where else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((v, f"{where}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            shown = f"{value:.3e}" if abs(value) < 10**300 else f"an integer of {value.bit_length()} bits"
            raise ValueError(f"{name}: {where or 'the top level'} = {shown}; valid: integers within +-{MAX_INT}")
        elif max_abs is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and not (
                abs(value) <= max_abs):
            raise ValueError(f"{name}: {where or 'the top level'} = {value!r}; valid: finite numbers within "
                             f"+-{max_abs:g}")
