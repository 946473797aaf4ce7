"""`python main.py cutscene validate|info|frame|render|export-otio FILE`: cutscene documents (game/cutscene/).

* ``validate FILE``: exit 0, or one ``error:`` line naming the key (exit 2);
* ``info FILE --json``: ``{"frames", "fps", "duration", "shots": [{"camera", "first", "last"}], "characters"}``;
* ``frame FILE --frame K --out F.png [--gbuffer G.npz] [--export-frame V.npz]``: frame K through the live camera,
  with the renderer and look of ``render``;
* ``render FILE --out MOVIE.mp4|DIR/ [--codec h264|ffv1|png] [--range A:B] [--workers N]
  [--backend serial|process|ray] [--address RAY_ADDRESS] [--preroll SECONDS]``;
* ``export-otio FILE --out CUTS.otio [--frames DIR]``.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from engine.paths import check_writable

__all__ = ["cutscene_command", "add_cutscene_parser"]


def add_cutscene_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``cutscene`` sub-command and its own sub-commands (registered by game/cli.py)."""
    from game.cutscene.backends import BACKENDS
    from game.cutscene.render import CODECS

    p = sub.add_parser("cutscene", parents=[common], help="cutscene documents: validate, info, render a frame or a "
                                                          "movie, export the shots to OpenTimelineIO")
    cs = p.add_subparsers(dest="cutscene_command", metavar="ACTION", required=True)

    q = cs.add_parser("validate", parents=[common], help="check a cutscene file (exit 0, or one error line)")
    q.add_argument("file", help="cutscene .toml")

    q = cs.add_parser("info", parents=[common], help="frames, shots and characters of a cutscene")
    q.add_argument("file", help="cutscene .toml")
    q.add_argument("--json", action="store_true", help="print one JSON object")

    def device(q: argparse.ArgumentParser) -> None:
        q.add_argument("--device", default="gpu", choices=("gpu", "cpu"),
                       help="gpu = compute shaders, cpu = numpy reference (default gpu)")
        q.add_argument("--preroll", type=float, default=1.0, metavar="SECONDS",
                       help="frame-dependent deformers: seconds simulated before a shot's first frame (default 1)")

    q = cs.add_parser("frame", parents=[common], help="render one frame of a cutscene to PNG")
    q.add_argument("file", help="cutscene .toml")
    q.add_argument("--frame", type=int, required=True, metavar="K", help="frame number (0 .. frames - 1)")
    q.add_argument("--out", required=True, metavar="F.png", help="output PNG")
    q.add_argument("--gbuffer", default=None, metavar="G.npz", help="also write the G-buffer (render's npz)")
    q.add_argument("--export-frame", default=None, metavar="V.npz",
                   help="also write the deformed vertices (export-frame keys; char{i}_ prefixes for several)")
    device(q)

    q = cs.add_parser("render", parents=[common], help="render a cutscene to a movie (PyAV) or a PNG sequence")
    q.add_argument("file", help="cutscene .toml")
    q.add_argument("--out", required=True, metavar="MOVIE.mp4|DIR/", help="movie file, or a folder ending in /")
    q.add_argument("--codec", default=None, choices=CODECS,
                   help="h264 (default for a movie), ffv1 (lossless), png (default for a folder)")
    q.add_argument("--range", default=None, metavar="A:B", help="frames A to B, inclusive (default all)")
    q.add_argument("--workers", type=int, default=None, metavar="N",
                   help="parallel workers for process/ray (default 2; serial: 1)")
    q.add_argument("--backend", default="serial", choices=BACKENDS, help="where frames are drawn (default serial)")
    q.add_argument("--address", default=None, metavar="RAY_ADDRESS",
                   help="join this Ray cluster (ray://HOST:10001 or HOST:6379); default: start a local one")
    device(q)

    q = cs.add_parser("export-otio", parents=[common], help="write the shots as an OpenTimelineIO timeline")
    q.add_argument("file", help="cutscene .toml")
    q.add_argument("--out", required=True, metavar="CUTS.otio", help="output .otio")
    q.add_argument("--frames", default=None, metavar="DIR",
                   help="the rendered PNG sequence the clips point at (default: missing media)")


def cutscene_command(args: argparse.Namespace) -> int:
    from game.cutscene.document import load

    doc = load(args.file)
    action = args.cutscene_command
    if action == "validate":
        from game.cutscene.player import check_assets

        check_assets(doc)
        print(f"ok: {args.file}: {doc.frames} frames at {doc.fps:g} fps, {len(doc.characters)} character(s), "
              f"{len(doc.tracks)} track(s), {len(doc.shots())} shot(s)")
        return 0
    if action == "info":
        return _info(doc, as_json=args.json)
    if action == "frame":
        return _frame(doc, args)
    if action == "render":
        return _render(doc, args)
    if action == "export-otio":
        from game.cutscene.otio import write_otio

        out = check_writable("--out", args.out, suffix=".otio", makes_parents=True)
        write_otio(doc, out, frames_dir=args.frames)
        print(f"wrote {out} ({len(doc.shots())} shot(s), {len(doc.events)} marker(s))")
        return 0
    raise ValueError(f"unknown cutscene action {action!r}")


def _info(doc, *, as_json: bool) -> int:
    info = {"frames": doc.frames, "fps": doc.fps, "duration": doc.duration,
            "shots": [{"camera": s.camera, "first": s.first, "last": s.last} for s in doc.shots()],
            "characters": [c.name for c in doc.characters]}
    if as_json:
        print(json.dumps(info))
        return 0
    print(f"{doc.name}: {doc.frames} frames at {doc.fps:g} fps ({doc.duration:g} s), {doc.width}x{doc.height}")
    for c in doc.characters:
        print(f"  character {c.name}: {c.asset} ({c.deformer})")
    for s in doc.shots():
        print(f"  shot {s.camera}: frames {s.first}..{s.last}")
    for e in doc.event_frames():
        print(f"  event {e['name']}: {e['time']:g} s, frame {e['frame']}")
    return 0


def _frame(doc, args: argparse.Namespace) -> int:
    from engine.authoring.stage import export_vertices
    from engine.render.targets import check_render_memory
    from game.commands.render_frame import write_gbuffer
    from game.cutscene.player import CutscenePlayer, check_assets

    out = check_writable("--out", args.out, suffix=".png", makes_parents=True)
    if args.gbuffer is not None:
        check_writable("--gbuffer", args.gbuffer, suffix=".npz", makes_parents=True)
    if args.export_frame is not None:
        check_writable("--export-frame", args.export_frame, suffix=".npz", makes_parents=True)
    k = args.frame
    if not 0 <= k < doc.frames:
        raise ValueError(f"--frame must be an integer in [0, {doc.frames - 1}] ({doc.frames} frames), got {k}")
    check_render_memory(doc.width, doc.height, gbuffer_readback=args.gbuffer is not None)
    loaded = check_assets(doc)
    with CutscenePlayer(doc, device=args.device, loaded=loaded) as p:
        if p.frame_dependent:
            for _k, _img in p.render_shot(doc.shot_of(k), [k], _preroll(args.preroll)):
                pass
        else:
            p.render(k)
        s = p.session
        s.save_png(out)
        msg = f"wrote {out} (frame {k}, {doc.width}x{doc.height}, camera {doc.shot_of(k).camera})"
        if args.gbuffer is not None:
            write_gbuffer(Path(args.gbuffer), s.gbuffer())
            msg += f" and {args.gbuffer}"
        if args.export_frame is not None:
            arrays = export_vertices(s)
            np.savez(args.export_frame, **arrays)  # type: ignore[arg-type]
            msg += f" and {args.export_frame}"
    print(msg)
    return 0


def _preroll(value: float) -> float:
    if not (np.isfinite(value) and 0 <= value <= 600):
        raise ValueError(f"--preroll must be in [0, 600] seconds, got {value}")
    return float(value)


def _render(doc, args: argparse.Namespace) -> int:
    from engine.log import progress
    from game.cutscene.render import parse_range, plan_output, render_cutscene

    output = plan_output(args.out, args.codec, doc.width, doc.height)
    if output.movie is not None:
        check_writable("--out", str(output.movie), makes_parents=True)
    frames = parse_range(args.range, doc.frames)
    workers = args.workers if args.workers is not None else (1 if args.backend == "serial" else 2)
    if args.backend == "ray":
        from game.cutscene.backends import ray_available

        if not ray_available():
            raise ValueError("--backend ray needs Ray: pip install \"skinengine[ray]\" (or \"ray>=2.9\") here and "
                             "on every node of the cluster")
    res = render_cutscene(doc, output, frames, backend=args.backend, workers=workers, address=args.address,
                          preroll=_preroll(args.preroll), device=args.device, bar=progress)
    rate = len(res.drawn) / res.seconds if res.drawn and res.seconds > 0 else 0.0
    what = output.movie if output.movie is not None else output.frames
    print(f"wrote {what} ({len(frames)} frames, {doc.width}x{doc.height}, {output.codec}; {len(res.drawn)} drawn "
          f"at {rate:.2f} frames/s on {args.backend} x{workers}, {len(res.kept)} kept) and {output.events}")
    return 0
