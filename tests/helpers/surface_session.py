"""Records ``assets/sessions/surface_edit.jsonl``: the surface tools driven through the editor's event model, as
the window feeds them (pointer, key and panel events, one displayed frame of 1/60 s each).

The humanoid plays ``idle``; the user picks the bulge tool (B), sets the spring iterations in the character
panel, draws a stroke along the left forearm, raises the bulge (``=`` twice) and widens its region (R), undoes
and redoes the last change, orbits to the side (right-drag), picks the silhouette tool (S) with the Laplacian
solver (the panel's combo box), draws an accent stroke in front of the belly, then sets the clip to ``walk``:
the bulge and the new outline stay while the character walks.

    PYTHONPATH=. python tests/helpers/surface_session.py [OUT.jsonl]     # default: the shipped file
    PYTHONPATH=. python tests/helpers/surface_session.py --pictures docs/

``--pictures`` replays the shipped file with the editor's panels drawn offscreen and writes docs/surface-editing.md's
pictures: ``surface_tools.png``, the editor once the bulge is raised (its region in colour: kinematic green,
passive blue, static red), and ``surface_before_after.png``, the humanoid walking at the session's last clip
time without and with the session's edits, seen from its left (the forearm and the belly in outline).

The window points are computed from the character's joints and rest surface with the session's own camera,
so the strokes land on the forearm and beside the belly.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "sessions" / "surface_edit.jsonl"
W, H = 960, 600
DT = 1.0 / 60.0


def _px(cam: Any, p: np.ndarray) -> tuple[float, float]:
    c = cam.projection_for(W / H) @ cam.view @ np.r_[np.asarray(p, np.float64), 1.0]
    return round(float((c[0] / c[3] + 1) * 0.5 * W), 1), round(float((1 - c[1] / c[3]) * 0.5 * H), 1)


def record(path: str | Path = SHIPPED) -> Path:
    """Drive the editor and record the session to ``path``; returns the path."""
    from engine import Session
    from engine.input.events import Action, Buttons, KeyDown, Modifiers, PointerDown, PointerMove, PointerUp
    from engine.render.camera import OrbitCamera
    from game.editor import Editor

    with Session(width=W, height=H, strict=True) as s:
        ed = Editor(s, settings={"tool": "orbit"})
        ch = ed.spawn("humanoid", clip="idle")
        names = [n.name for n in ch.asset.nodes]
        g = ch.joints()[:, :3, 3].astype(np.float64)
        elbow, hand = g[names.index("forearm_L")], g[names.index("hand_L")]
        s.camera = OrbitCamera(target=np.array([0.12, 1.08, 0.0]), yaw=0.0, pitch=5.0, distance=2.2, fov_y=45.0,
                               aspect=W / H)
        ed.record(path)
        clock = {"t": 0.0}

        def frame(*events: Any, n: int = 1) -> None:
            ed.queue.extend(events)
            for _ in range(n):
                s.frame(DT, interpolate=False)
                clock["t"] += DT

        def now() -> float:
            return round(clock["t"], 4)

        def drag(points: list[tuple[float, float]], button: Buttons) -> None:
            frame(PointerDown(now(), *points[0], button=button))
            for p in points[1:]:
                frame(PointerMove(now(), *p, buttons=button))
            frame(PointerUp(now(), *points[-1], button=button))

        frame(n=3)
        frame(KeyDown(now(), "b", Modifiers.NONE), Action(now(), "config", {"spring_max_iterations": 20}))
        a, b = _px(s.camera, elbow + 0.2 * (hand - elbow)), _px(s.camera, elbow + 0.85 * (hand - elbow))
        drag([(round(a[0] + (b[0] - a[0]) * i / 10, 1), round(a[1] + (b[1] - a[1]) * i / 10, 1)) for i in range(11)],
             Buttons.LEFT)
        frame(n=3)  # the last answers of the G-buffer, the spring deformer, the edit
        frame(KeyDown(now(), "equal", Modifiers.NONE))
        frame(KeyDown(now(), "equal", Modifiers.NONE))
        frame(KeyDown(now(), "r", Modifiers.NONE))
        frame(KeyDown(now(), "z", Modifiers.CTRL))
        frame(KeyDown(now(), "z", Modifiers.CTRL | Modifiers.SHIFT))
        # orbit to the side: 300 px left at 0.3 deg per pixel
        drag([(500.0 - 30.0 * i, 240.0) for i in range(11)], Buttons.RIGHT)
        frame(KeyDown(now(), "s", Modifiers.NONE), Action(now(), "set", {"surface_solver": "laplacian"}),
              Action(now(), "end_edit", {}))
        # an accent stroke in front of the belly (the body faces +z, seen from +x: to the left of it)
        x = np.asarray(ch.vertices()[ch.skinned_primitives[0]], np.float64)
        ys = np.linspace(0.98, 1.26, 9)
        front = []
        for y in ys:
            band = x[(np.abs(x[:, 1] - y) < 0.02) & (np.abs(x[:, 0]) < 0.12)]
            front.append(band[:, 2].max())
        bulge = 0.045 * np.sin(np.pi * (ys - ys[0]) / (ys[-1] - ys[0]))
        accent = [_px(s.camera, np.array([0.0, y, z + 0.006 + d])) for y, z, d in zip(ys, front, bulge)]
        drag(accent[::-1], Buttons.LEFT)
        frame(n=3)
        frame(Action(now(), "clip", {"name": "walk"}))
        frame(n=12)
        ed.stop_recording()
        print("\n".join(ed.state.messages))
        print(ed.undo.history)
    return Path(path)


#: The frame of the shipped session the editor picture shows (the bulge raised, its region in colour).
EDITOR_FRAME = 23


def _closeups(edits: Path, time: float) -> list[np.ndarray]:
    """The humanoid walking at clip ``time`` seen from its left, without and with the ``edits`` file, framing
    the forearm's bulge and the belly's outline (both raised towards the front, so both show in outline):
    [before, after], each (H, W/2, 3) uint8."""
    from engine import Session
    from engine.render.camera import Camera
    from engine.skinning.config import DeformerConfig
    from engine.skinning.edits import parse_edits_document

    cfg = DeformerConfig().with_overrides(spring_max_iterations=20)
    w, h = W // 2, H
    out = []
    with Session(width=w, height=h, deformer="spring", config=cfg, strict=True) as s:
        ch = s.spawn("humanoid", clip="walk", time=time, speed=0.0)
        key = ch.skinned_primitives[0]
        x = np.asarray(ch.vertices()[key], np.float64)[np.asarray(ch.topology(key).display_of_control)]
        stacks = parse_edits_document(json.loads(Path(edits).read_text()))
        bulge, outline = stacks[key.export_key].edits
        target = (x[bulge.kinematic].mean(0) + x[outline.kinematic].mean(0)) / 2
        s.camera = Camera(eye=target + [1.05, 0.05, 0.0], target=target, aspect=w / h, near=0.05, far=20.0)
        out.append(s.render()[..., :3].copy())
        ch.load_edits(edits)
        out.append(s.render()[..., :3].copy())
    return out


def pictures(out_dir: str | Path) -> list[Path]:
    """Replay the shipped session with the editor's panels (offscreen): ``surface_tools.png`` (the editor
    after the bulge) and ``surface_before_after.png`` (the final edits on the walking humanoid, close up)."""
    import tempfile

    from PIL import Image, ImageDraw

    from engine.input.record import read_recording
    from game.editor import open_recording, replay
    from game.editor.window import EditorUI

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rec = read_recording(SHIPPED)
    ed = open_recording(rec)
    shot: list[np.ndarray] = []
    ui = EditorUI(ed, show_help=False)
    tmp = Path(tempfile.mkdtemp()) / "edits.json"
    try:
        def grab(i: int) -> None:
            if i == EDITOR_FRAME:
                shot.append(ed.session.renderer.read_pixels()[..., :3].copy())

        replay(rec, ed, on_frame=grab)
        ch = ed.session.characters[0]
        ch.save_edits(tmp)
        time = float(ch.time)
    finally:
        ui.release()
        ed.session.release()
    tools = out / "surface_tools.png"
    Image.fromarray(shot[0]).save(tools)
    captions = ("before", "after: the forearm's bulge and the belly's new outline")
    sheet = Image.new("RGB", (W, H), "white")
    for n, (img, caption) in enumerate(zip(_closeups(tmp, time), captions)):
        tile = Image.fromarray(img)
        draw = ImageDraw.Draw(tile)
        draw.rectangle((0, tile.height - 20, tile.width, tile.height), fill=(0, 0, 0))
        draw.text((8, tile.height - 16), caption, fill=(255, 255, 255))
        sheet.paste(tile, (n * (W // 2), 0))
    sheet_path = out / "surface_before_after.png"
    sheet.save(sheet_path)
    return [tools, sheet_path]


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--pictures":
        print("wrote " + ", ".join(str(p) for p in pictures(sys.argv[2])))
    else:
        print(f"wrote {record(sys.argv[1] if len(sys.argv) > 1 else SHIPPED)}")
