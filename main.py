#!/usr/bin/env python3
"""The engine's command line.

    python main.py                          play the demo scene (window, or headless without a display)
    python main.py --headless --frames N --screenshot out.png
    python main.py doctor                   GL vendor/renderer/version, compute limits, display, OpenVR
    python main.py inspect ASSET            meshes, skins, clips
    python main.py export-frame ASSET --clip C --time T [--deformer D] [--device gpu|cpu] --out F.npz|F.obj
    python main.py render ASSET [...] --out frame.png [--gbuffer frame.npz]
    python main.py compare ASSET --clip C --time T [--deformers lbs,dqs,irs,spring] --out sheet.png
    python main.py bench deform|render|reference|anim [...]

Errors in user input (a broken asset, a wrong parameter) print one line `error: ...` on stderr and exit
with status 2; no traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

DEFORMERS = ("lbs", "dqs", "rigid", "irs", "spring", "arap")
EXIT_USAGE = 2


def _add_deform_options(p: argparse.ArgumentParser, *, default: str = "lbs") -> None:
    p.add_argument("--deformer", default=default, choices=DEFORMERS,
                   help=f"deformation method (default {default})")
    p.add_argument("--device", default="gpu", choices=("gpu", "cpu"),
                   help="gpu = compute shaders, cpu = numpy reference (default gpu)")
    p.add_argument("--spring-iterations", type=int, default=None, help="spring iterations per frame")
    p.add_argument("--spring-dt", type=float, default=None, help="spring integration step")
    p.add_argument("--config", default=None, help="TOML file with deformer parameters")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="main.py", description="Expressive character-skinning engine")
    parser.add_argument("--headless", action="store_true", help="render offscreen (EGL), no window")
    parser.add_argument("--frames", type=int, default=None, help="render N frames, then exit")
    parser.add_argument("--screenshot", default=None, help="write the last frame to this PNG")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--characters", type=int, default=6, help="number of characters in the demo scene")
    parser.add_argument("--asset", default=None, help="play this glTF file instead of the generated cast")
    parser.add_argument("--deformer", default="auto", choices=("auto",) + DEFORMERS[:-1],
                        help="demo deformer (auto: spring on a GPU, lbs on a software rasteriser)")
    parser.add_argument("--device", default="gpu", choices=("gpu", "cpu"),
                        help="demo deformation on the GPU deformer graph (default) or numpy (lbs/dqs)")
    parser.add_argument("--graph", default=None,
                        help="deformer graph file (TOML/JSON, see config/) for the demo's skinned meshes")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("doctor", help="report the GL stack, compute limits, display and OpenVR")

    p = sub.add_parser("inspect", help="print meshes, skins and clips of an asset")
    p.add_argument("asset")

    p = sub.add_parser("export-frame", help="write deformed world-space vertices of one frame")
    p.add_argument("asset")
    p.add_argument("--clip", default="0", help="clip name or index (default 0)")
    p.add_argument("--time", type=float, default=0.0, help="seconds into the clip")
    p.add_argument("--out", required=True, help="output .npz (or .obj)")
    _add_deform_options(p)

    p = sub.add_parser("render", help="render one frame headless to PNG (+ G-buffer npz)")
    p.add_argument("asset")
    p.add_argument("--clip", default=None)
    p.add_argument("--time", type=float, default=0.0)
    p.add_argument("--camera", default=None, help="EX,EY,EZ:TX,TY,TZ (default: fit the asset)")
    p.add_argument("--up", default="0,1,0")
    p.add_argument("--fov", type=float, default=45.0, help="vertical field of view in degrees")
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--height", type=int, default=720)
    p.add_argument("--out", required=True)
    p.add_argument("--gbuffer", default=None, help="also write the G-buffer as .npz")
    p.add_argument("--view", default="color", help="G-buffer channel to show: color, normal, position, "
                   "triangle, barycentric, depth")
    _add_deform_options(p)

    p = sub.add_parser("compare", help="render deformers side by side and print quality metrics")
    p.add_argument("asset")
    p.add_argument("--clip", default="0")
    p.add_argument("--time", type=float, default=0.0)
    p.add_argument("--deformers", default="lbs,dqs,irs,spring")
    p.add_argument("--out", default=None, help="contact sheet PNG")
    p.add_argument("--width", type=int, default=480, help="width of one panel")
    p.add_argument("--height", type=int, default=480, help="height of one panel")
    p.add_argument("--spring-iterations", type=int, default=None)
    p.add_argument("--spring-dt", type=float, default=None)
    p.add_argument("--config", default=None)

    p = sub.add_parser("bench", help="benchmarks (print tables)")
    p.add_argument("which", choices=("deform", "render", "reference", "anim"))
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options passed to the benchmark")
    return parser


def _cli_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings at the command line read as one line each, like errors (no source lines)."""
    print(f"warning: {message}", file=sys.stderr)


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.showwarning = _cli_warning
    from engine.assets.errors import AssetError

    try:
        if args.command == "doctor":
            from engine.tools.doctor import doctor
            return doctor()
        if args.command == "inspect":
            from engine.assets import load
            from engine.tools.inspect_asset import describe
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # warnings are listed by describe()
                asset = load(args.asset)
            print(describe(asset))
            return 0
        if args.command == "export-frame":
            from engine.tools.export_frame import export_frame
            return export_frame(args)
        if args.command == "render":
            from engine.tools.render_frame import render_frame
            return render_frame(args)
        if args.command == "compare":
            from engine.tools.compare import compare
            return compare(args)
        if args.command == "bench":
            from engine.tools.bench import run_bench
            return run_bench(args.which, args.rest)
        from game.demo import run_demo
        return run_demo(args)
    except AssetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # an engine bug, not the user's input: say so, traceback on request
        if os.environ.get("SKINENGINE_DEBUG"):
            raise
        print(f"error: internal error ({type(exc).__name__}: {exc}); "
              f"rerun with SKINENGINE_DEBUG=1 for the traceback", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(run())
