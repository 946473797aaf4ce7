"""``python -m game ...``: the same command line as ``skinengine`` and ``python main.py``."""
from __future__ import annotations

from game.cli import main

if __name__ == "__main__":
    main()
