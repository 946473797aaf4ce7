"""``python -m engine``: the engine is a library; its command line is the application's (``python -m game``,
``skinengine`` or ``python main.py``). The engine never imports the application, so this only says where to go."""
from __future__ import annotations

import sys

if __name__ == "__main__":
    print("error: the engine is a library; its command line is `python -m game` (also `skinengine` and "
          "`python main.py`)", file=sys.stderr)
    sys.exit(2)
