"""The command bodies behind the command line (game/cli.py parses; each body here is thin: read the inputs,
call the engine (``engine.Session`` and ``engine.authoring``), write the outputs).

``UsageError`` is what the command line and the bodies raise for a parameter they refuse: one ``error:``
line, exit status 2 (game/cli.py prints it).
"""
from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """A parameter the parser rejected; printed as one ``error:`` line, exit status 2."""
