"""Console habits of the command line: logging configured once (``-v``/``-q``) and progress bars.

``configure(verbosity)`` is called once by game.cli: 0 shows warnings and errors, 1 (``-v``) adds info,
2 (``-vv``) debug, -1 (``-q``) errors only and no progress bars. Records print as one line each on stderr,
``level: message`` like the command line's ``error:`` lines. Library code only calls ``logging.getLogger``.

``quiet_output()`` silences C-level writes to stdout/stderr for a block (native libraries that print their own
messages, such as the OpenVR runtime, on the way to the command line's one ``error:`` line).

``progress(...)`` wraps tqdm: the bar goes to stderr, only when stderr is a terminal (or always with
``--progress``: ``configure(verbosity, force_progress=True)``, for logs), and never under ``-q``. Anything that
can take longer than ~2 s shows one: first-use generation, baking, replay, compare.

    from engine.log import progress
    for item in progress(items, desc="binding"):
        ...
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from tqdm import tqdm

__all__ = ["LEVELS", "configure", "progress", "progress_enabled"]

#: verbosity -> logging level (clamped to this range).
LEVELS = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}

_HANDLER_NAME = "skinengine-cli"
_state = {"progress": True, "force": False}


class _LineFormatter(logging.Formatter):
    """``warning: message`` (the level in lower case, no logger name): one line per record."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage().replace("\n", " ")
        return f"{record.levelname.lower()}: {text}"


def configure(verbosity: int = 0, *, force_progress: bool = False) -> int:
    """Set up the root logger once for a command-line run; returns the level used. Calling it again replaces
    the handler it installed (no duplicate lines). ``force_progress``: bars also when stderr is no terminal."""
    if isinstance(verbosity, bool) or not isinstance(verbosity, int):
        raise TypeError(f"verbosity must be an int, got {verbosity!r}")
    level = LEVELS[max(min(verbosity, max(LEVELS)), min(LEVELS))]
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(_LineFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    _state["progress"] = verbosity >= 0
    _state["force"] = bool(force_progress)
    return level


def progress_enabled() -> bool:
    """False after ``configure(-1)`` (``-q``); bars then never show."""
    return _state["progress"]


def progress(iterable: Iterable[Any] | None = None, *, enabled: bool = True, **kwargs: Any) -> tqdm[Any]:
    """A tqdm bar on stderr, shown only when stderr is a terminal, ``enabled`` and not quiet. Use as an iterable
    wrapper or as a context manager with ``update()``; ``kwargs`` go to tqdm (desc, total, unit, ...)."""
    show = enabled and progress_enabled()
    if show and _state["force"]:  # --progress: into a log too, a line every few seconds
        kwargs.setdefault("mininterval", 2.0)
        return tqdm(iterable, file=sys.stderr, disable=False, leave=True, ascii=True, **kwargs)
    # disable=None: tqdm turns itself off when the stream is not a terminal
    return tqdm(iterable, file=sys.stderr, disable=None if show else True, leave=False, **kwargs)


@contextlib.contextmanager
def quiet_output() -> Iterator[None]:
    """Silence C-level writes to stdout/stderr for the duration (file descriptors 1 and 2 point at the null
    device; restored even on error)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)
