"""The editor's cutscene timeline (issue 23, item 4): the document open in the editor's session, a playhead to
scrub, play and loop a range, and the edits a timeline panel makes, each undoable on the editor's command stack.

:class:`CutsceneTimeline` is the model: the cutscene's characters are spawned into the editor's session by a
:class:`game.cutscene.player.CutscenePlayer` and every scrub applies the tracks at the playhead (immediate for
frame-independent deformers; frame-dependent springs re-simulate from the shot's start, and the status line says
so). Edits (move a key, move a segment's ends, add a pose key from the character's pose layer, add an edit-weight
key, add a cut) change the document as plain data: each is a :class:`SnapshotCommand` of the document's dict,
checked by the document's own parser before it is applied, so a refused edit leaves the document and the scene
as they were and says why. :meth:`save` writes the TOML.

:func:`draw_timeline` is the panel (imgui): tracks as rows of segments and keys, shots, the playhead slider,
play / loop, the selected key's time as a drag field, pose / weight key buttons at the playhead and save.
:func:`attach_timeline` hooks both onto an editor window's UI list (see the lead's wiring note in the function).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from game.cutscene.document import Cutscene, CutsceneError, parse
from game.editor.undo import CommandStack, SnapshotCommand

__all__ = ["CutsceneTimeline", "draw_timeline", "attach_timeline"]


class CutsceneTimeline:
    """A cutscene open in an editor session: ``doc``, the ``playhead`` (frame), ``playing``, ``loop`` (first,
    last frame), ``selected`` ((kind, index, key) of the selected key or segment end) and ``status`` (the last
    message for the user)."""

    def __init__(self, doc: Cutscene, session: Any, undo: CommandStack, *, device: str = "gpu") -> None:
        from game.cutscene.player import CutscenePlayer, check_assets

        self.doc = doc
        self.session = session
        self.undo = undo
        self.device = device
        self.loaded = check_assets(doc)
        self.player = CutscenePlayer(doc, session=session, loaded=self.loaded)
        self.playhead = 0
        self.playing = False
        self.loop: tuple[int, int] = (0, doc.frames - 1)
        self.selected: tuple[str, int, int] | None = None
        #: the value a drag in the panel is editing (applied when the drag ends)
        self.pending: Any = None
        self.status = ""
        self.scrub(0)

    # -- playback --------------------------------------------------------------------------------------------
    @property
    def frame_dependent(self) -> bool:
        return self.player.frame_dependent

    def scrub(self, frame: int) -> None:
        """Move the playhead to ``frame`` and show it: tracks applied at once (frame-independent), or the shot
        re-simulated from its start (frame-dependent springs; the status says so)."""
        k = max(0, min(int(frame), self.doc.frames - 1))
        self.playhead = k
        if self.frame_dependent:
            shot = self.doc.shot_of(k)
            p = self.player
            sub = p.sub
            p.seek(shot.first)
            for n in range(shot.first * sub + 1, k * sub + 1):
                p.seek(n / sub)
                self.session.step(1, render=False)
            self.status = (f"frame {k}: springs are frame-dependent, re-simulated from the shot's start "
                           f"(frame {shot.first})")
        else:
            self.player.seek(k)
            self.status = f"frame {k} ({k / self.doc.fps:.3f} s), camera {self.doc.shot_of(k).camera}"
        self.session.mark_pose_changed()

    def tick(self) -> None:
        """One displayed frame while playing: the next frame of the loop range."""
        if not self.playing:
            return
        a, b = self.loop
        self.scrub(a if self.playhead >= b or self.playhead < a else self.playhead + 1)

    def set_loop(self, first: int, last: int) -> None:
        if not 0 <= first <= last < self.doc.frames:
            raise ValueError(f"loop range must be 0 <= first <= last < {self.doc.frames}, got {first}..{last}")
        self.loop = (first, last)

    def live_camera(self) -> Any:
        """The live camera at the playhead (fitted to the scene), to look through it."""
        box = self.session.bounds()
        if box is None:
            raise ValueError("no characters to frame")
        return self.player.camera(self.playhead, *box)

    # -- edits -------------------------------------------------------------------------------------------------
    def _apply(self, data: dict[str, Any]) -> None:
        new = parse(copy.deepcopy(data), name=self.doc.name)
        new.path = self.doc.path
        # the document object stays the player's: its tables are replaced in place
        for f in ("fps", "duration", "width", "height", "characters", "tracks", "cameras", "cuts", "events"):
            setattr(self.doc, f, getattr(new, f))
        self._rebuild()

    def _rebuild(self) -> None:
        from game.cutscene.player import CutscenePlayer

        self.player.release()
        self.player = CutscenePlayer(self.doc, session=self.session, loaded=self.loaded)
        self.scrub(self.playhead)

    def edit(self, label: str, change: Any) -> bool:
        """Apply ``change(data)`` (it edits the document's dict in place) as one undoable step; a change the
        document refuses is not applied: False, with the reason in ``status``."""
        before = self.doc.to_dict()
        after = copy.deepcopy(before)
        try:
            change(after)
            parse(copy.deepcopy(after), name=self.doc.name)
        except (CutsceneError, ValueError, KeyError, IndexError) as exc:
            self.status = f"refused: {exc}"
            return False
        self.undo.push(SnapshotCommand(label, self._apply, before, after))
        self.status = label
        return True

    def move_key(self, track: int, key: int, time: float) -> bool:
        """Move key ``key`` of pose/edits track ``track`` to ``time`` (kept between its neighbours)."""
        def change(d: dict[str, Any]) -> None:
            d["tracks"][track]["keys"][key]["time"] = float(time)
        return self.edit(f"move key {key} of track {track} to {time:.3f} s", change)

    def move_camera_key(self, camera: int, key: int, time: float) -> bool:
        def change(d: dict[str, Any]) -> None:
            d["cameras"][camera]["keys"][key]["time"] = float(time)
        return self.edit(f"move key {key} of camera {self.doc.cameras[camera].name} to {time:.3f} s", change)

    def move_segment(self, track: int, segment: int, *, start: float | None = None, end: float | None = None) -> bool:
        """Drag a clip segment's ends (timeline seconds)."""
        def change(d: dict[str, Any]) -> None:
            seg = d["tracks"][track]["clips"][segment]
            if start is not None:
                seg["start"] = float(start)
            if end is not None:
                seg["end"] = float(end)
        return self.edit(f"trim segment {segment} of track {track}", change)

    def add_pose_key(self, character: str) -> bool:
        """Key the character's current pose layer (what the pose tool made) at the playhead into its pose track
        (made when it has none); joints without a rotation are left out."""
        import numpy as np

        ch = self.player.characters[character]
        layer = ch.pose_layer
        if layer is None:
            self.status = f"refused: {character} has no pose layer; pose it with the pose tool first"
            return False
        names = self.loaded[character].rig.names
        joints = {names[j]: [float(x) for x in q] for j, q in enumerate(np.asarray(layer.rotation, np.float64))
                  if abs(float(q[3])) < 1.0 - 1e-7 and names[j]}
        t = self.playhead / self.doc.fps

        def change(d: dict[str, Any]) -> None:
            tracks = d["tracks"]
            mine = [x for x in tracks if x["character"] == character and x["type"] == "pose"]
            if not mine:
                tracks.append({"character": character, "type": "pose", "keys": []})
                mine = [tracks[-1]]
            keys = [k for k in mine[0]["keys"] if abs(k["time"] - t) > 1e-9]
            keys.append({"time": t, "joints": joints, "ease": "linear"})
            mine[0]["keys"] = sorted(keys, key=lambda k: k["time"])
        return self.edit(f"pose key of {character} at {t:.3f} s", change)

    def add_weight_key(self, track: int, weight: float) -> bool:
        """Key an edits track's weight at the playhead (replacing a key at the same time)."""
        t = self.playhead / self.doc.fps

        def change(d: dict[str, Any]) -> None:
            tr = d["tracks"][track]
            if tr["type"] != "edits":
                raise ValueError(f"track {track} is a {tr['type']} track, not an edits track")
            keys = [k for k in tr["keys"] if abs(k["time"] - t) > 1e-9]
            keys.append({"time": t, "weight": float(weight), "ease": "linear"})
            tr["keys"] = sorted(keys, key=lambda k: k["time"])
        return self.edit(f"weight {weight:g} of track {track} at {t:.3f} s", change)

    def save(self, path: str | Path | None = None) -> Path:
        """Write the document (to its own file by default)."""
        target = Path(path) if path is not None else self.doc.path
        if target is None:
            raise ValueError("the cutscene has no file yet: give a path")
        out = self.doc.save(target)
        self.status = f"saved {out}"
        return out

    def release(self) -> None:
        self.player.release()


# ------------------------------------------------------------------------------------------------------ the panel
def draw_timeline(tl: CutsceneTimeline, imgui: Any) -> None:
    """The timeline panel (imgui_bundle's ``imgui``): called between a frame's ``new_frame`` and ``render``."""
    doc = tl.doc
    imgui.begin("Timeline")
    changed, k = imgui.slider_int("frame", tl.playhead, 0, doc.frames - 1)
    if changed:
        tl.scrub(k)
    if imgui.button("pause" if tl.playing else "play"):
        tl.playing = not tl.playing
    imgui.same_line()
    changed, rng = imgui.input_int2("loop", list(tl.loop))
    if changed:
        try:
            tl.set_loop(int(rng[0]), int(rng[1]))
        except ValueError as exc:
            tl.status = str(exc)
    imgui.same_line()
    if imgui.button("save"):
        tl.save()
    imgui.text(" | ".join(f"{s.camera} {s.first}-{s.last}" for s in doc.shots()))
    for ti, t in enumerate(doc.tracks):
        imgui.push_id(ti)
        imgui.text(f"{t.character} {t.type}")
        if t.type == "animation":
            for si, s in enumerate(t.clips):
                imgui.same_line()
                if imgui.small_button(f"{s.clip} {s.start:g}-{s.end:g}##{si}"):
                    tl.selected = ("segment", ti, si)
        elif t.type in ("pose", "edits"):
            for ki, key in enumerate(t.keys):
                imgui.same_line()
                if imgui.small_button(f"{key['time']:.2f}##{ki}"):
                    tl.selected = ("key", ti, ki)
            if t.type == "pose":
                imgui.same_line()
                if imgui.small_button("+ pose key"):
                    tl.add_pose_key(t.character)
            else:
                imgui.same_line()
                if imgui.small_button("+ weight 1"):
                    tl.add_weight_key(ti, 1.0)
                imgui.same_line()
                if imgui.small_button("+ weight 0"):
                    tl.add_weight_key(ti, 0.0)
        imgui.pop_id()
    sel = tl.selected
    if sel is not None:
        # a drag edits a pending value; the document changes once, when the drag ends (one undo step)
        kind, ti, i = sel
        if kind == "key":
            value = tl.pending if tl.pending is not None else doc.tracks[ti].keys[i]["time"]
            changed, v = imgui.drag_float("key time", float(value), 0.01, 0.0, float(doc.duration))
            if changed:
                tl.pending = v
            if imgui.is_item_deactivated_after_edit() and tl.pending is not None:
                tl.move_key(ti, i, float(tl.pending))
                tl.pending = None
        else:
            seg = doc.tracks[ti].clips[i]
            value = tl.pending if tl.pending is not None else [seg.start, seg.end]
            changed, v2 = imgui.drag_float2("segment start/end", list(value), 0.01, 0.0, float(doc.duration))
            if changed:
                tl.pending = list(v2)
            if imgui.is_item_deactivated_after_edit() and tl.pending is not None:
                tl.move_segment(ti, i, start=float(tl.pending[0]), end=float(tl.pending[1]))
                tl.pending = None
    imgui.text_wrapped(tl.status)
    imgui.end()


def attach_timeline(editor: Any, path: str | Path, *, device: str = "gpu") -> CutsceneTimeline:
    """Open the cutscene at ``path`` in ``editor`` (its session and undo stack).

    Wiring for the editor window (game/editor/window.py, not changed here): ``python main.py editor --cutscene
    FILE`` should call this after the editor is made, draw :func:`draw_timeline` inside the window's imgui frame
    (next to the other panels of ``EditorUI.draw``), call :meth:`CutsceneTimeline.tick` once per displayed frame,
    and offer ``look through the live camera`` by setting ``session.camera = timeline.live_camera()``."""
    from game.cutscene.document import load

    return CutsceneTimeline(load(path), editor.session, editor.undo, device=device)
