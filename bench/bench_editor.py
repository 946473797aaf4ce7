"""Editor benchmark: what the editor's UI (imgui panels, help, strokes overlay) adds to a frame.

A headless Session at ``--width`` x ``--height`` with ``--characters`` humanoids playing ``idle`` (the issue's
case: 1280x720, 6), the editor on it, the first one selected (so the character panel shows, its clip time
ticking every frame) and its docked panels (game/editor/window.py EditorUI: menu bar, tool palette, character
and joint panels, messages, undo history, help, the posing plane's outline) drawn into the frame offscreen. Two
measurements, each in interleaved rounds (the machine's drift lands on every case alike):

* **the UI alone**: each sample runs a frame without the UI (untimed), waits for the GPU, then times the UI's
  draw callback (imgui building, our renderer's upload and draws) and a ``ctx.finish`` (the rasteriser's work
  for it), once through the cached layer (game/ui/ui_cache.py, the default) and once drawn straight into the
  frame (``cached=False``). The scene's cost never enters these numbers, so they hold still on a loaded machine.
  ``cpu`` is the callback's own time, ``+ raster`` adds the wait for the GPU / llvmpipe.
* **whole frames**: the frame with and without the UI (``ctx.finish`` each), as a user sees it; on llvmpipe
  the frame is ~100 ms of CPU rasterising, so the difference drowns in the scene's own spread there.

Run: ``python main.py bench editor [--width 1280 --height 720 --characters 6 --frames 10 --rounds 5]``.
Asserts nothing; on llvmpipe the UI's pixels are rasterised on the CPU.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from bench.common import Spread, device_line

#: how the UI is drawn in the "UI alone" cases: the layer's ``cached`` setting and whether the cache copies the
#: opaque panels (game/ui/ui_cache.py ``UICache.blit``) or blends them like the rest
UI_CASES = {"cached layer": (True, True), "cached, blended": (True, False), "direct": (False, False)}


def _ui_alone(s: Any, draw: Any, layer: Any, case: tuple[bool, bool], frames: int,
              out: dict[str, list[float]]) -> None:
    """``frames`` samples of the UI callback on its own (see the module docstring)."""
    assert s.ctx is not None
    cached, blit = case
    layer.cached = cached
    if layer.cache is not None:
        layer.cache.blit = blit
    r = s.renderer
    for _ in range(frames):
        s.view.ui.remove(draw)
        try:
            s.step()
        finally:
            s.view.ui.append(draw)
        s.ctx.finish()
        c0, t0 = time.process_time(), time.perf_counter()
        draw(r)
        t1 = time.perf_counter()
        s.ctx.finish()
        t2, c2 = time.perf_counter(), time.process_time()
        out["cpu"].append((t1 - t0) * 1e3)
        out["total"].append((t2 - t0) * 1e3)
        out["process"].append((c2 - c0) * 1e3)
        out["redrawn"].append(float(layer.last_redrawn_commands))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=1280, help="frame width in pixels (default 1280)")
    ap.add_argument("--height", type=int, default=720, help="frame height in pixels (default 720)")
    ap.add_argument("--characters", type=int, default=6, help="humanoids in the scene (default 6)")
    ap.add_argument("--frames", type=int, default=10, help="frames per round and case (default 10)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--no-frames", action="store_true", help="only the UI alone, not the whole-frame comparison")
    ap.add_argument("--quick", action="store_true", help="320x180, 2 characters, 3 frames x 2 rounds (CI)")
    args = ap.parse_args(argv)
    if args.quick:
        args.width, args.height, args.characters, args.frames, args.rounds = 320, 180, 2, 3, 2
    if min(args.width, args.height, args.characters, args.frames, args.rounds) < 1:
        ap.error("--width, --height, --characters, --frames and --rounds must be >= 1")

    from engine import Session
    from game.editor import Editor
    from game.editor.window import EditorUI

    with Session(width=args.width, height=args.height, headless=True) as s:
        ed = Editor(s)
        for i in range(args.characters):
            ch = ed.spawn("humanoid", clip="idle", deformer="lbs")
            ch.place((1.2 * (i - (args.characters - 1) / 2), 0.0, 0.0))
        ed.frame_camera()
        ui = EditorUI(ed, show_help=True)
        layer = ui.overlay.layer
        draw = s.view.ui[-1]  # the overlay's draw callback (removed/added to switch the UI off/on)
        for _ in range(2):  # warm-up: programs, font atlas
            s.step()
        assert s.ctx is not None
        print(device_line(s.ctx, f"{args.width}x{args.height}, {args.characters} humanoids (lbs), "
                                 f"{args.rounds} interleaved rounds x {args.frames} samples per case"))
        print(f"selected: {ed.selected.name if ed.selected is not None else 'none'}; docked panels: menu bar, "
              f"Tools, Character, Joint, Messages, Undo history, Help")
        alone: dict[str, dict[str, list[float]]] = {c: {"cpu": [], "total": [], "process": [], "redrawn": []}
                                                    for c in UI_CASES}
        frames: dict[str, list[float]] = {"without UI": [], "with UI": []}
        for _ in range(args.rounds):
            for case, how in UI_CASES.items():
                _ui_alone(s, draw, layer, how, args.frames, alone[case])
            if args.no_frames:
                continue
            layer.cached = True
            for case in frames:
                on = case == "with UI"
                if on and draw not in s.view.ui:
                    s.view.ui.append(draw)
                elif not on and draw in s.view.ui:
                    s.view.ui.remove(draw)
                for _ in range(args.frames):
                    t0 = time.perf_counter()
                    s.step()
                    s.ctx.finish()
                    frames[case].append((time.perf_counter() - t0) * 1e3)
            if draw not in s.view.ui:
                s.view.ui.append(draw)
        ui.release()
    print("the UI alone (ms per frame; spread = IQR / median):")
    print(f"{'case':>14} {'cpu':>8} {'spread':>7} {'+ raster':>9} {'spread':>7} {'cpu-time':>9} {'spread':>7} "
          f"{'draw calls':>11}")
    for case, v in alone.items():
        cpu, total, proc = Spread.of(v["cpu"]), Spread.of(v["total"]), Spread.of(v["process"])
        print(f"{case:>14} {cpu.median:8.2f} {cpu.pct:6.0f}% {total.median:9.2f} {total.pct:6.0f}% "
              f"{proc.median:9.2f} {proc.pct:6.0f}% {statistics.median(v['redrawn']):11.0f}")
    if not args.no_frames:
        print("whole frames (ms, the cached layer):")
        print(f"{'case':>14} {'median':>8} {'spread':>7}")
        for case, t in frames.items():
            sp = Spread.of(t)
            print(f"{case:>14} {sp.median:8.2f} {sp.pct:6.0f}%")
        diff = statistics.median(frames["with UI"]) - statistics.median(frames["without UI"])
        print(f"whole-frame difference {diff:.2f} ms (within the frames' spread on llvmpipe)")
    ui_ms = Spread.of(alone["cached layer"]["total"]).median
    print(f"the UI adds {ui_ms:.2f} ms per frame (target 2 ms at 1280x720 with 6 characters; drawn straight "
          f"into the frame: {Spread.of(alone['direct']['total']).median:.2f} ms)")


if __name__ == "__main__":
    main()
