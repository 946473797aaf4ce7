"""Editor benchmark: what the editor's UI (imgui panels, help, strokes overlay) adds to a frame.

A headless Session at ``--width`` x ``--height`` with ``--characters`` humanoids (the issue's case: 1280x720, 6),
the editor on it and its panels (game/editor.py EditorUI: tool palette, character panel, undo history, help)
drawn into the frame offscreen (no strokes are drawn: the strokes overlay is a few lines). Frames with and
without the UI are taken in interleaved rounds (the machine's drift lands on both alike); each frame is finished
(``ctx.finish``) so the GPU / rasteriser work of the UI counts. Prints the median frame time of each, the
difference (what the UI costs) and the CPU time of the UI's own scope (imgui building + our renderer's submission).

Run: ``python main.py bench editor [--width 1280 --height 720 --characters 6 --frames 10 --rounds 5]``.
Asserts nothing; on llvmpipe the UI's pixels are rasterised on the CPU.
"""
from __future__ import annotations

import argparse
import statistics
import time

from bench.common import Spread, device_line


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=1280, help="frame width in pixels (default 1280)")
    ap.add_argument("--height", type=int, default=720, help="frame height in pixels (default 720)")
    ap.add_argument("--characters", type=int, default=6, help="humanoids in the scene (default 6)")
    ap.add_argument("--frames", type=int, default=10, help="frames per round and case (default 10)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--quick", action="store_true", help="320x180, 2 characters, 3 frames x 2 rounds (CI)")
    args = ap.parse_args(argv)
    if args.quick:
        args.width, args.height, args.characters, args.frames, args.rounds = 320, 180, 2, 3, 2
    if min(args.width, args.height, args.characters, args.frames, args.rounds) < 1:
        ap.error("--width, --height, --characters, --frames and --rounds must be >= 1")

    from engine import Session
    from engine.editor import Editor
    from game.editor import EditorUI

    with Session(width=args.width, height=args.height, headless=True) as s:
        ed = Editor(s)
        for i in range(args.characters):
            ch = ed.spawn("humanoid", clip="idle", deformer="lbs")
            ch.place((1.2 * (i - (args.characters - 1) / 2), 0.0, 0.0))
        ed.frame_camera()
        ui = EditorUI(ed, show_help=True)
        draw = s.view.ui[-1]  # the overlay's draw callback (removed/added to switch the UI off/on)
        times: dict[str, list[float]] = {"without UI": [], "with UI": []}
        for _ in range(2):  # warm-up: programs, font atlas
            s.step()
        assert s.ctx is not None
        print(device_line(s.ctx, f"{args.width}x{args.height}, {args.characters} humanoids (lbs), "
                                 f"{args.rounds} interleaved rounds x {args.frames} finished frames per case"))
        for _ in range(args.rounds):
            for case in ("without UI", "with UI"):
                on = case == "with UI"
                if on and draw not in s.view.ui:
                    s.view.ui.append(draw)
                elif not on and draw in s.view.ui:
                    s.view.ui.remove(draw)
                for _ in range(args.frames):
                    t0 = time.perf_counter()
                    s.step()
                    s.ctx.finish()
                    times[case].append((time.perf_counter() - t0) * 1e3)
        ui_cpu = [f.scope_ms("ui overlay") for f in s.schedule.history if f.scope_ms("ui overlay") > 0]
        ui.overlay.release()
    print(f"{'case':>12} {'median ms':>10} {'spread':>8}")
    for case, v in times.items():
        sp = Spread.of(v)
        print(f"{case:>12} {sp.median:10.2f} {sp.pct:7.0f}%")
    diff = statistics.median(times["with UI"]) - statistics.median(times["without UI"])
    cpu = statistics.median(ui_cpu) if ui_cpu else float("nan")
    print(f"the UI adds {diff:.2f} ms per frame (target 2 ms at 1280x720 with 6 characters); its CPU scope "
          f"(imgui + submission) {cpu:.2f} ms")


if __name__ == "__main__":
    main()
