"""Generate the project's characters as GLB files.

    python assets/generate.py                 # every character: small ones into assets/, large into assets/cache/
    python assets/generate.py --only humanoid
    python assets/generate.py --out out/chars --only box --only plus
    python assets/generate.py --list

Generation is deterministic: the same code writes the same bytes. See engine/assets/gen/ for how each
character is built and engine/assets/library.py for generation on first use.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere without installing

from engine.assets.gen.characters import (
    SPECS,  # noqa: E402
    write,  # noqa: E402
)
from engine.assets.gen.meshutil import weld_by_position  # noqa: E402
from engine.assets.library import expected_path  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: assets/; large ones in cache/)")
    ap.add_argument("--only", action="append", metavar="NAME", choices=list(SPECS),
                    help="generate only this character (repeatable): " + ", ".join(SPECS))
    ap.add_argument("--list", action="store_true", help="list the characters and exit")
    args = ap.parse_args(argv)
    if args.list:
        for s in SPECS.values():
            print(f"{s.name:16s} {s.description}")
        return 0
    names = args.only or list(SPECS)
    print(f"{'name':16s} {'display':>8s} {'welded':>8s} {'tris':>8s} {'joints':>6s} {'clips':>5s} "
          f"{'bytes':>10s} {'sec':>6s}  path")
    for name in names:
        path = expected_path(name, assets_dir=args.out)
        t0 = time.perf_counter()
        path, ch = write(name, path)
        dt = time.perf_counter() - t0
        welded = len(weld_by_position(ch.positions)[0])
        print(f"{name:16s} {len(ch.positions):8d} {welded:8d} {len(ch.indices):8d} {ch.rig.count:6d} "
              f"{len(ch.clips):5d} {path.stat().st_size:10d} {dt:6.2f}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
