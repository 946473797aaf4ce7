"""The engine's command line: ``skinengine`` (installed console script), ``python -m game`` or ``python main.py``.

    skinengine                               the editor window (the default command; see below)
    skinengine demo                          play the demo scene (window, or headless without a display)
    skinengine --headless --frames N --screenshot out.png      the demo headless (a demo option: the demo)
    skinengine doctor                        GL vendor/renderer/version, compute limits, display, OpenVR
    skinengine inspect ASSET                 meshes, skins, clips
    skinengine export-frame ASSET --clip C --time T [--deformer D] [--device gpu|cpu] --out F.npz|F.obj
    skinengine render ASSET [...] --out frame.png [--gbuffer frame.npz]
    skinengine compare ASSET --clip C --time T [--deformers lbs,dqs,irs,spring] --out sheet.png
    skinengine pose ASSET --strokes FILE.json [--clip C --time T] [--deformer D] [--export-frame OUT.npz]
                      [--out POSED.glb] [--screenshot S.png]      line-of-action posing from a strokes file
    skinengine edit ASSET --strokes FILE.json [--clip C --time T] --export-frame OUT.npz [--screenshot S.png]
    skinengine cutscene validate|info|frame|render|export-otio FILE [...]   cutscene documents (game/cutscene/)
    skinengine weights auto|export|edit|drag|spline ASSET [...]   skin-weight tools (see the README)
    skinengine influence ASSET --clip C --vertex KEY:I [--frames N] [--threshold T] --out R.npz
    skinengine bench deform|render|reference|anim|scene|bake|soak|ecs|editor [...] (needs a checkout)
    skinengine editor [--asset A] [--record FILE]   the editor window (pose with strokes); --record records it
    skinengine replay FILE [--headless] [--screenshot S.png] [--export-frame F.npz] [--save P.glb|E.json]
    skinengine vr ASSET (--device openvr | --device simulated --script RIG.toml) [--headless] [--frames N]
                      [--eye-size PX] [--screenshot EYES.png] [--export-frame OUT.npz] [--record S.jsonl]
                      [--save POSED.glb | EDITS.json]      VR sketching (a headset, or a simulated one)
    skinengine --version

This module owns the argument parsing; the command bodies live in game.commands and game.demo and keep their
signatures (``export_frame(args)``, ``render_frame(args)``, ``compare(args)``, ``run_bench(which, rest)``,
``run_demo(args)``).

Habits: errors in user input (a broken asset, a wrong parameter, an option argparse rejects) print one line
``error: ...`` on stderr and exit with status 2, no usage block and no traceback; an engine bug prints one
``error: internal error ...`` line and exits 1 (``SKINENGINE_DEBUG=1`` shows the traceback). ``-v``/``-q``
set the logging level once (engine.log); a closed pipe (``skinengine inspect X | head -1``) ends the command
quietly with status 141. The demo's options (``--frames``, ``--screenshot``, ``--characters``, ...) belong to
the ``demo`` sub-command; for the documented ``main.py --headless --frames N`` they are also accepted with no
sub-command, and refused, with a line saying so, next to any other sub-command. With no sub-command the
editor opens (:func:`default_command`), unless a demo-only option is given (``--headless --frames
--screenshot --characters --graph --compare --overlay --profile``: the documented headless contract) or there
is no display: then the demo runs as before, and one log line says why (info for a demo option, shown with
``-v``; a warning when there is no display). Values that look like negative
numbers (``--time -inf``, ``--time -1e-3``) are read as values, not flags. Output paths (``--out``,
``--gbuffer``) are checked writable before the command starts, so no work is lost to a bad path.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

# The command line sets numpy's BLAS to one thread unless the user chose otherwise, before numpy loads: the
# engine's linear algebra is small (4x4 inverses, per-bone products) and OpenBLAS's spinning worker threads
# took the cores a software rasteriser needs (bench render, 2 cores, llvmpipe: 15-21 -> 13-15 ms CPU per frame
# in paired runs). Scripts that import ``engine`` keep numpy's default.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from engine.paths import check_writable, shipped_file  # noqa: E402  (after the BLAS setting)
from engine.skinning import registry  # noqa: E402
from game.commands import UsageError  # noqa: E402

__all__ = ["DEFORMERS", "DEMO_DEFAULTS", "EDITOR_OPTIONS", "EXIT_USAGE", "ArgumentParser", "UsageError",
           "build_parser", "default_command", "main", "run", "version"]

log = logging.getLogger(__name__)

#: the public deformer names (engine/skinning/registry.py is the table)
DEFORMERS = registry.names()
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a command whose reader went away

#: The demo's options and their defaults (the ``demo`` sub-command, or no sub-command at all).
DEMO_DEFAULTS: dict[str, Any] = {"headless": False, "frames": None, "screenshot": None, "width": 1280,
                                 "height": 720, "characters": None, "asset": None, "deformer": "auto",
                                 "device": "gpu", "graph": None, "compare": None, "overlay": False,
                                 "profile": None, "record": None}
#: The demo options the editor takes too; any other one given with no sub-command makes it the demo.
EDITOR_OPTIONS = ("width", "height", "asset", "deformer", "device", "record")
_TOP = "_top_"  # dest prefix of the demo options given before (or without) a sub-command

# A float the way a user writes one: -1, -.5, -1e3, -inf, -nan (argparse alone reads only -1 and -1.5).
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the house habits: a rejected parameter raises UsageError (one line, no usage block) and
    negative numbers in any spelling (``-inf``, ``-1e3``) are values. Sub-parsers inherit the class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def version() -> str:
    """The engine's version (``engine.__version__``, which pyproject.toml reads too)."""
    from engine import __version__

    return __version__

# --------------------------------------------------------------------------------------------------- options
def _add_demo_options(p: argparse.ArgumentParser, *, dest_prefix: str = "") -> None:
    """The demo's options; every default is SUPPRESS so that run() can tell given from not given."""
    d = DEMO_DEFAULTS

    def add(*flags: str, **kw: Any) -> None:
        name = flags[0].lstrip("-").replace("-", "_")
        p.add_argument(*flags, dest=dest_prefix + name, default=argparse.SUPPRESS, **kw)

    add("--headless", action="store_true", help="render offscreen (EGL), no window")
    add("--frames", type=int, metavar="N", help="render N frames, then exit (headless default 120)")
    add("--screenshot", metavar="PNG", help="write the last frame to this PNG (headless default out/demo.png)")
    add("--width", type=int, metavar="PX", help=f"window / frame width in pixels (default {d['width']})")
    add("--height", type=int, metavar="PX", help=f"window / frame height in pixels (default {d['height']})")
    add("--characters", type=int, metavar="N",
        help="N characters on a grid, up to 256 (stress; default: the composed showcase cast)")
    add("--asset", metavar="GLTF", help="play this glTF file instead of the generated cast")
    add("--deformer", choices=("auto",) + registry.names(device="gpu"),
        help="demo deformer: %(choices)s (default auto: spring on a GPU, lbs on a software rasteriser)")
    add("--device", choices=("gpu", "cpu"),
        help="deform on the GPU deformer graph (default) or with the numpy reference")
    add("--graph", metavar="FILE", help="deformer graph file (TOML/JSON, see config/) for the skinned meshes")
    add("--compare", metavar="D1,D2,...", nargs="?", const="lbs,dqs,irs,spring",
        help="side-by-side comparison: the same character and clip once per deformer, labelled "
             "(default lbs,dqs,irs,spring)")
    add("--overlay", action="store_true",
        help="show the profiler overlay from the start (headless: drawn into the screenshot)")
    add("--profile", metavar="FILE.json", help="write a Chrome/Perfetto trace of the frames to this file")
    add("--record", metavar="FILE", help="open the editor window and record the session to FILE (.jsonl; "
        "replay it with the replay command)")


def _add_verbosity(p: argparse.ArgumentParser, *, default: Any) -> None:
    p.add_argument("-v", "--verbose", action="count", default=default,
                   help="more log output (-v info, -vv debug)")
    p.add_argument("-q", "--quiet", action="store_true", default=default,
                   help="errors only: no warnings, no progress bars")
    p.add_argument("--progress", action="store_true", default=default,
                   help="progress bars also when stderr is not a terminal (logs)")


def _add_clip_time(p: argparse.ArgumentParser, *, clip_default: str | None) -> None:
    shown = "0, the first clip" if clip_default == "0" else "none, the rest pose"
    p.add_argument("--clip", default=clip_default, metavar="NAME_OR_INDEX",
                   help=f"clip name or index (default: {shown})")
    p.add_argument("--time", type=float, default=0.0, metavar="SECONDS",
                   help="seconds into the clip (default 0)")


def _add_spring_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spring-iterations", type=int, default=None, metavar="N",
                   help="spring iterations per frame (default from the config)")
    p.add_argument("--spring-dt", type=float, default=None, metavar="S",
                   help="spring integration step (default from the config)")
    p.add_argument("--config", default=None, metavar="TOML", help="TOML file with deformer parameters")


def _add_deform_options(p: argparse.ArgumentParser, *, default: str = "lbs") -> None:
    p.add_argument("--deformer", default=default, choices=DEFORMERS,
                   help=f"deformation method: %(choices)s (default {default})")
    p.add_argument("--device", default="gpu", choices=("gpu", "cpu"),
                   help="gpu = compute shaders, cpu = numpy reference (default gpu)")
    _add_spring_options(p)


def build_parser(prog: str = "main.py") -> ArgumentParser:
    """The full parser: global options, the demo's options (also accepted with no sub-command) and every
    sub-command. ``parse_args`` raises UsageError for a rejected parameter."""
    from engine.render.renderer import VIEWS
    from game.commands.bench import BENCHES

    parser = ArgumentParser(prog=prog, description="Expressive character-skinning engine: glTF characters "
                            "deformed on the GPU by compute shaders. With no command: the editor window (pose "
                            "with strokes; H lists the keys). `demo` plays the demo scene; a demo-only option "
                            "(--headless --frames --screenshot --characters --graph --compare --overlay "
                            "--profile) with no command, or no display, also runs the demo.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}",
                        help="print the version and exit")
    _add_verbosity(parser, default=None)
    demo_top = parser.add_argument_group("demo options (also accepted without the `demo` command)")
    _add_demo_options(demo_top, dest_prefix=_TOP)  # type: ignore[arg-type]

    common = ArgumentParser(add_help=False)
    _add_verbosity(common, default=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)

    p = sub.add_parser("demo", parents=[common], help="play the demo scene (the showcase; `make demo`)")
    _add_demo_options(p)

    p = sub.add_parser("editor", parents=[common],
                       help="the editor window on the humanoid (or --asset): pose with strokes, undo, panels; "
                            "needs a display; --record FILE records the session (the default command)")
    _add_demo_options(p)
    p.add_argument("--cutscene", metavar="FILE", default=None,
                   help="open this cutscene (.toml) with its timeline panel: scrub, move keys, pose keys, the live "
                        "camera (C), save (Ctrl+S)")

    sub.add_parser("doctor", parents=[common], help="report the GL stack, compute limits, display and OpenVR")

    p = sub.add_parser("inspect", parents=[common], help="print meshes, skins and clips of an asset")
    p.add_argument("asset", help="a glTF / GLB file or a generated character (humanoid, cylinder, ...)")

    p = sub.add_parser("export-frame", parents=[common], help="write deformed world-space vertices of one frame")
    p.add_argument("asset", help="glTF / GLB file")
    _add_clip_time(p, clip_default="0")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="output .npz (or .obj); with --times/--frames an .npz with a leading frame axis or DIR/ "
                        "for one OBJ per frame")
    bake = p.add_mutually_exclusive_group()
    bake.add_argument("--times", default=None, metavar="START:STOP:STEP",
                      help="bake the frames at these clip seconds in one process (STOP included on a step)")
    bake.add_argument("--frames", type=int, default=None, metavar="N",
                      help="bake N frames evenly from 0 to the clip's end in one process")
    _add_deform_options(p)

    p = sub.add_parser("render", parents=[common], help="render one frame headless to PNG (+ G-buffer npz)")
    p.add_argument("asset", help="glTF / GLB file")
    _add_clip_time(p, clip_default=None)
    p.add_argument("--camera", default=None, metavar="EX,EY,EZ:TX,TY,TZ",
                   help="eye and target (default: fit the asset)")
    p.add_argument("--up", default="0,1,0", metavar="X,Y,Z", help="camera up vector (default 0,1,0)")
    p.add_argument("--fov", type=float, default=45.0, metavar="DEG",
                   help="vertical field of view in degrees (default 45)")
    p.add_argument("--width", type=int, default=1280, metavar="PX", help="image width in pixels (default 1280)")
    p.add_argument("--height", type=int, default=720, metavar="PX", help="image height in pixels (default 720)")
    p.add_argument("--out", required=True, metavar="PNG", help="output PNG")
    p.add_argument("--gbuffer", default=None, metavar="NPZ", help="also write the G-buffer as .npz")
    # no choices=: render_frame names the valid views in its own error; the help lists them
    p.add_argument("--view", default="color", metavar="CHANNEL",
                   help=f"what the image shows: {', '.join(VIEWS)} (default color)")
    _add_deform_options(p)

    p = sub.add_parser("compare", parents=[common],
                       help="render deformers side by side and print quality metrics")
    p.add_argument("asset", help="glTF / GLB file")
    _add_clip_time(p, clip_default="0")
    p.add_argument("--deformers", default="lbs,dqs,irs,spring", metavar="D1,D2,...",
                   help=f"comma-separated deformers out of {','.join(DEFORMERS)} or spring+contact (the springs with "
                        "their contact term; default lbs,dqs,irs,spring)")
    p.add_argument("--out", default=None, metavar="PNG", help="contact sheet PNG")
    p.add_argument("--width", type=int, default=480, metavar="PX", help="width of one panel (default 480)")
    p.add_argument("--height", type=int, default=480, metavar="PX", help="height of one panel (default 480)")
    p.add_argument("--view", default="side", choices=("side", "inside"),
                   help="sheet camera: the most-rotated joint in profile, or into the inside of its bend")
    _add_spring_options(p)

    p = sub.add_parser("pose", parents=[common], help="pose an asset with line-of-action strokes from a file")
    p.add_argument("asset", help="glTF / GLB file or a generated character's name")
    p.add_argument("--strokes", required=True, metavar="FILE.json",
                   help="strokes file: camera, brush_radius, baseline/offset strokes (see the README, Posing)")
    _add_clip_time(p, clip_default=None)
    p.add_argument("--export-frame", default=None, metavar="OUT.npz",
                   help="write the posed frame's vertices (the export-frame npz contract)")
    p.add_argument("--out", default=None, metavar="POSED.glb",
                   help="write the asset with the pose keyed at t=0 into a new clip named 'pose'")
    p.add_argument("--screenshot", default=None, metavar="S.png",
                   help="render the posed frame with the file's camera, strokes drawn over it")
    _add_deform_options(p)

    p = sub.add_parser("edit", parents=[common],
                       help="surface edits from strokes on the skin, applied by the springs (export-frame npz)")
    p.add_argument("asset", help="glTF / GLB file")
    _add_clip_time(p, clip_default="0")
    p.add_argument("--strokes", default=None, metavar="FILE.json",
                   help="strokes file (version, camera, strokes with role surface or silhouette; see the README)")
    p.add_argument("--export-frame", required=True, metavar="OUT.npz",
                   help="deformed vertices (export-frame contract) + K_kinematic/K_passive/K_static per primitive")
    p.add_argument("--screenshot", default=None, metavar="S.png", help="the edited frame seen by the file's camera")
    p.add_argument("--save", default=None, metavar="EDITS.json", help="write the edits as a versioned JSON file")
    p.add_argument("--load", default=None, metavar="EDITS.json", help="add the edits of a file written by --save")
    p.add_argument("--deformer", default="spring", choices=("spring",),
                   help="surface edits are spring forces: spring (the default and only choice)")
    p.add_argument("--solver", default="springs", choices=("springs", "laplacian"),
                   help="springs: edit forces in the GPU spring stage (default); laplacian: the CPU baseline, "
                        "solved once")
    p.add_argument("--device", default="gpu", choices=("gpu", "cpu"),
                   help="gpu = the spring compute shaders (default), cpu = the numpy reference (same edits)")
    p.add_argument("--debug-silhouette", default=None, metavar="PNG",
                   help="write the silhouette filter's output (the 'silhouette' debug view) of the unedited frame")
    _add_spring_options(p)

    p = sub.add_parser("replay", parents=[common], help="reproduce a recorded editor session (.jsonl)")
    p.add_argument("file", help="a recording written by --record (or by hand, see docs/contracts.md)")
    p.add_argument("--headless", action="store_true", help="replay offscreen (the default without a display)")
    p.add_argument("--screenshot", default=None, metavar="PNG", help="write the last frame as PNG")
    p.add_argument("--export-frame", default=None, metavar="NPZ",
                   help="write the last frame's deformed vertices (export-frame keys)")
    p.add_argument("--save", default=None, metavar="GLB|JSON",
                   help="write the posed asset (.glb) or the surface edits (.json, the versioned edits file)")
    p.add_argument("--device", default="gpu", choices=("gpu", "cpu"),
                   help="gpu = compute shaders, cpu = numpy reference (default gpu)")

    from game.commands.cutscene import add_cutscene_parser

    add_cutscene_parser(sub, common)
    from game.commands.vr import add_vr_parser

    add_vr_parser(sub, common)
    _add_weights_parsers(sub, common)

    p = sub.add_parser("bench", parents=[common], help="benchmarks (print tables; needs a checkout)")
    p.add_argument("which", choices=tuple(BENCHES), help="benchmark: %(choices)s")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options passed to the benchmark (see bench WHICH -h)")
    return parser


def _add_weights_parsers(sub: Any, common: ArgumentParser) -> None:
    """`weights auto|export|edit|drag|spline` and `influence` (game/commands/weights.py, influence.py)."""
    w = sub.add_parser("weights", parents=[common], help="skin-weight tools: auto, export, edit, drag, spline")
    ws = w.add_subparsers(dest="weights_command", metavar="TOOL", parser_class=ArgumentParser, required=True)
    p = ws.add_parser("auto", parents=[common], help="automatic weights (bone heat diffusion or bounded biharmonic)")
    p.add_argument("asset", help="glTF / GLB file with a skin")
    p.add_argument("--method", required=True, choices=("heat", "bbw"), help="heat (Blender's bone heat) or bbw")
    p.add_argument("--out", required=True, metavar="OUT.glb", help="the asset with the new weights")
    p.add_argument("--max-influences", type=int, default=4, metavar="N", help="influences per vertex (default 4)")
    p.add_argument("--seed-clip", default=None, metavar="NAME_OR_INDEX", help="seed from the joints' co-movement "
                   "regions over this clip: a vertex takes only joints whose region holds it")
    p.add_argument("--seed-frames", type=int, default=30, metavar="N", help="frames over the seed clip (default 30)")
    p.add_argument("--seed-threshold", type=float, default=0.75, metavar="T",
                   help="co-movement score of a joint's region (default 0.75)")
    p = ws.add_parser("export", parents=[common], help="write every skinned primitive's joints and weights (.npz)")
    p.add_argument("asset", help="glTF / GLB file with a skin")
    p.add_argument("--out", required=True, metavar="W.npz", help="K_joints uint16 (V,M), K_weights float32 (V,M)")
    p = ws.add_parser("edit", parents=[common], help="paint, smooth, normalize, mirror, limit, prune (OPS.json)")
    p.add_argument("asset", help="glTF / GLB file with a skin")
    p.add_argument("--ops", required=True, metavar="OPS.json", help='{"version": 1, "ops": [...]} (see the README)')
    p.add_argument("--out", required=True, metavar="OUT.glb", help="the asset with the edited weights")
    p = ws.add_parser("drag", parents=[common], help="drag a posed vertex; its weights follow (Mohr 2003)")
    p.add_argument("asset", help="glTF / GLB file with a skin")
    _add_clip_time(p, clip_default="0")
    p.add_argument("--vertex", required=True, metavar="KEY:I", help="primitive key and vertex index")
    p.add_argument("--target", default=None, metavar="X,Y,Z", help="world point to drag the vertex to")
    p.add_argument("--poses", default=None, metavar="P.json", help='several poses instead of --clip/--time/--target: '
                   '{"version": 1, "poses": [{"clip": C, "time": T, "target": [x, y, z]}, ...]}')
    p.add_argument("--joints", default=None, metavar="NAMES", help="influencing joints, comma separated "
                   "(default: the vertex's current ones)")
    p.add_argument("--out", required=True, metavar="OUT.glb", help="the asset with the vertex's new weights")
    p = ws.add_parser("spline", parents=[common], help="a joint's weights from isoline splines (Bang and Lee 2018)")
    p.add_argument("asset", help="glTF / GLB file with a skin")
    p.add_argument("--joint", required=True, metavar="NAME", help="the joint whose weights the splines shape")
    p.add_argument("--splines", required=True, metavar="S.json", help="strokes file with role isoline and iso")
    p.add_argument("--local", action="store_true", help="solve only near the joint (w > 0.05 plus 4 rings)")
    p.add_argument("--out", required=True, metavar="OUT.glb", help="the asset with the new weights")
    p = sub.add_parser("influence", parents=[common],
                       help="co-movement region of a vertex over a clip (Lewis and Anjyo)")
    p.add_argument("asset", help="glTF / GLB file with a skin")
    p.add_argument("--clip", default="0", metavar="NAME_OR_INDEX", help="clip name or index (default 0)")
    p.add_argument("--vertex", required=True, metavar="KEY:I", help="primitive key and vertex index")
    p.add_argument("--frames", type=int, default=30, metavar="N", help="frames over the clip (default 30)")
    p.add_argument("--threshold", type=float, default=0.75, metavar="T", help="region score (default 0.75)")
    p.add_argument("--out", required=True, metavar="R.npz", help="K_score (V,), K_region vertex indices")


def _demo_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def parse(argv: Sequence[str] | None = None, *, prog: str = "main.py") -> argparse.Namespace:
    """Parse ``argv`` (default sys.argv[1:]) into the namespace the commands take; UsageError on a rejected
    parameter, including a demo option next to another sub-command."""
    parser = build_parser(prog)
    args, extra = parser.parse_known_args(argv)
    top = {k[len(_TOP):]: v for k, v in vars(args).items() if k.startswith(_TOP)}
    for k in list(vars(args)):
        if k.startswith(_TOP):
            delattr(args, k)
    command = args.command
    if command not in (None, "demo", "editor"):
        stray = [_demo_flag(k) for k in top] + [a.split("=")[0] for a in extra
                                                 if a.split("=")[0] in {_demo_flag(k) for k in DEMO_DEFAULTS}]
        if stray:
            raise UsageError(f"{stray[0]} is a demo option and cannot be combined with `{command}` "
                             f"(use `{prog} demo {stray[0]} ...`)")
    if extra:
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}")
    if command in (None, "demo", "editor"):
        for name, default in DEMO_DEFAULTS.items():
            if not hasattr(args, name):  # the sub-command's own value wins over one given before it
                setattr(args, name, top.get(name, default))
        args.command = command
        #: the demo options given with no sub-command (default_command reads them)
        args.top_options = tuple(top) if command is None else ()
    args.verbose = int(args.verbose or 0)
    args.quiet = bool(args.quiet)
    args.progress = bool(getattr(args, "progress", False))
    return args


# ----------------------------------------------------------------------------------------------------- run
def _cli_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    """Warnings at the command line read as one line each, like errors (no source lines); -q hides them.

    A SyntaxWarning comes from compiling some module's source (Python 3.12 warns about an invalid escape such as
    '\\ ' in a third-party package installed without compiled files), never from the user's input: debug only."""
    if issubclass(category, SyntaxWarning):
        logging.getLogger("py.warnings").debug("%s:%s: %s", filename, lineno, message)
        return
    logging.getLogger("py.warnings").warning("%s", message)


#: Output files per command: (attribute, flag, whether the command creates missing parent folders).
_OUTPUTS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "export-frame": (("out", "--out", False),),
    "render": (("out", "--out", True), ("gbuffer", "--gbuffer", True)),
    "compare": (("out", "--out", True),),
    "weights": (("out", "--out", False),),
    "influence": (("out", "--out", False),),
}


def _check_outputs(args: argparse.Namespace) -> None:
    for attr, flag, makes_parents in _OUTPUTS.get(args.command or "", ()):
        value = getattr(args, attr, None)
        if value:
            check_writable(flag, str(value), makes_parents=makes_parents)


#: input files a command reads that may name a shipped file (``examples/...``, ``assets/sessions/...``)
_SHIPPED_INPUTS = ("strokes", "load", "file", "script", "ops", "splines")


def _shipped_inputs(args: argparse.Namespace) -> None:
    """The README's examples name files of the checkout (``examples/pose_arm.json``); from an installed tool
    that path is not in the current folder, so it is read from the installed copy (engine.paths.shipped_file).
    A path that exists as given is always read as given."""
    for attr in _SHIPPED_INPUTS:
        value = getattr(args, attr, None)
        if isinstance(value, str) and value:
            setattr(args, attr, str(shipped_file(value)))


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "doctor":
        from game.commands.doctor import doctor
        return doctor()
    if args.command == "inspect":
        from game.commands.inspect_asset import inspect_command
        return inspect_command(args.asset)
    if args.command == "export-frame":
        from game.commands.export_frame import export_frame
        return export_frame(args)
    if args.command == "render":
        from game.commands.render_frame import render_frame
        return render_frame(args)
    if args.command == "compare":
        from game.commands.compare import compare
        return compare(args)
    if args.command == "pose":
        from game.commands.pose import pose_command
        return pose_command(args)
    if args.command == "edit":
        from game.commands.edit import edit_command
        return edit_command(args)
    if args.command == "cutscene":
        from game.commands.cutscene import cutscene_command
        return cutscene_command(args)
    if args.command == "weights":
        from game.commands.weights import weights_command
        return weights_command(args)
    if args.command == "influence":
        from game.commands.influence import influence_command
        return influence_command(args)
    if args.command == "bench":
        from game.commands.bench import run_bench
        return run_bench(args.which, args.rest)
    if args.command == "replay":
        from game.commands.replay import replay_command
        return replay_command(args)
    if args.command == "vr":
        from game.commands.vr import vr_command
        return vr_command(args)
    if args.command is None:
        from engine.gpu.context import display_present

        args.command, why = default_command(getattr(args, "top_options", ()), display=display_present(),
                                            record=args.record is not None)
        if why is not None:
            (log.warning if why.startswith("no display") else log.info)(
                "%s: playing the demo (`main.py editor` opens the editor, `main.py demo` the demo)", why)
    if args.command == "editor" or args.record is not None:
        from game.editor.window import run_editor
        return run_editor(args)
    from game.demo import run_demo
    return run_demo(args)


def default_command(given: Sequence[str], *, display: bool, record: bool = False) -> tuple[str, str | None]:
    """What a command line with no sub-command runs: ``("editor", None)``, or ``("demo", why)`` when one of
    the options ``given`` (demo option names, e.g. ``("headless", "frames")``) belongs to the demo only (the
    headless contract ``main.py --headless --frames N --screenshot out.png`` keeps running the demo) or when
    there is no ``display`` (the editor needs a window). ``--record`` always means the editor."""
    if record:
        return "editor", None
    demo_only = [name for name in DEMO_DEFAULTS if name in given and name not in EDITOR_OPTIONS]
    if demo_only:
        return "demo", f"{_demo_flag(demo_only[0])} is a demo option"
    if not display:
        return "demo", "no display for the editor window"
    return "editor", None


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush stays silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def run(argv: Sequence[str] | None = None, *, prog: str = "main.py") -> int:
    """Run one command line; returns the exit status (0 ok, 2 user error, 1 engine bug, 141 closed pipe)."""
    from engine.assets.errors import AssetError
    from engine.log import configure

    try:
        args = parse(argv, prog=prog)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    configure(-1 if args.quiet else args.verbose, force_progress=args.progress)
    warnings.showwarning = _cli_warning
    try:
        _check_outputs(args)
        _shipped_inputs(args)
        status = _dispatch(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return status
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except (UsageError, AssetError, ValueError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
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


def main() -> NoReturn:
    """Entry point of the ``skinengine`` console script."""
    sys.exit(run(prog="skinengine"))
