#!/usr/bin/env python3
"""The engine's command line from a checkout: ``python main.py ...`` is ``skinengine ...`` (game/cli.py).

    python main.py                          play the demo scene (window, or headless without a display)
    python main.py --headless --frames N --screenshot out.png
    python main.py doctor | inspect ASSET | export-frame ... | render ... | compare ... | bench WHICH ...

See game/cli.py (and ``python main.py --help``) for the commands and their options.
"""
from __future__ import annotations

import sys

from game.cli import DEFORMERS, EXIT_USAGE, build_parser, run

__all__ = ["DEFORMERS", "EXIT_USAGE", "build_parser", "run"]

if __name__ == "__main__":
    sys.exit(run())
