"""The editor on a :class:`engine.Session`: its resources (EventQueue, EditorState, CommandStack), its INPUT and
TOOLS systems, the characters it spawned, recording and replay.

    from engine import Session
    from game.editor import Editor

    with Session(width=960, height=540) as s:
        ed = Editor(s)
        ed.spawn("humanoid", clip="idle")
        ed.frame_camera()
        ed.queue.push(...)                  # events (a window adapter or a replay pushes them)
        s.step()

A recording (engine/input/record.py) holds the header :meth:`Editor.header` writes and each frame's events;
:func:`open_recording` builds the same session from a header and :func:`replay` runs the frames through
it, so the result is the recorded one, bit for bit (frame dts are stored exactly).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engine.ecs import Clock, Phase, World
from engine.input.events import Action
from engine.input.record import Recorder, RecordHeader, Recording, file_identity, resolve_source
from game.editor.posing import PosingTool
from game.editor.state import EditorSettings, EditorState
from game.editor.surface import SurfaceTool
from game.editor.systems import CHARACTER_ACTIONS, camera_system, shortcut_system, stroke_input_system
from game.editor.undo import CommandStack, SnapshotCommand

__all__ = ["Editor", "camera_to_header", "camera_from_header", "open_recording", "replay", "spawn_recorded",
           "INPUT_SYSTEMS"]

#: The editor's INPUT-phase systems in run order (name, function).
INPUT_SYSTEMS: tuple[tuple[str, Callable[[World], None]], ...] = (
    ("editor_shortcuts", shortcut_system),
    ("editor_camera", camera_system),
    ("editor_strokes", stroke_input_system),
)


def camera_to_header(cam: Any) -> dict[str, Any]:
    """An orbit camera as the recording header's ``camera`` object (orbit parameters plus eye and up)."""
    return {"target": [float(x) for x in cam.target], "yaw": float(cam.yaw), "pitch": float(cam.pitch),
            "distance": float(cam.distance), "fov": float(cam.fov_y), "near": float(cam.near),
            "far": float(cam.far), "eye": [float(x) for x in cam.eye], "up": [0.0, 1.0, 0.0]}


def camera_from_header(d: dict[str, Any], aspect: float) -> Any:
    """The orbit camera of a header ``camera`` object (from eye and target when it has no orbit angles)."""
    from engine.render.camera import OrbitCamera

    target = np.asarray(d["target"], np.float64)
    if "yaw" in d:
        yaw, pitch, dist = float(d["yaw"]), float(d["pitch"]), float(d["distance"])
    else:
        off = np.asarray(d["eye"], np.float64) - target
        dist = float(np.linalg.norm(off))
        if not dist > 0:
            raise ValueError("header.camera: eye and target coincide")
        yaw = math.degrees(math.atan2(off[0], off[2]))
        pitch = math.degrees(math.asin(max(-1.0, min(1.0, off[1] / dist))))
    kw: dict[str, Any] = {}
    for k in ("near", "far"):
        if k in d:
            kw[k] = float(d[k])
    return OrbitCamera(target=target, yaw=yaw, pitch=pitch, distance=dist, fov_y=float(d.get("fov", 45.0)),
                       aspect=aspect, **kw)


class Editor:
    """The editor's resources and systems on ``session``: ``queue`` (events in), ``state`` (tool, strokes,
    messages), ``undo`` (the command stack), the TOOLS-phase tools ``posing`` (line of action) and ``surface``
    (bulge and silhouette edits). ``settings``: EditorSettings or a dict of them."""

    def __init__(self, session: Any, *, settings: EditorSettings | dict[str, Any] | None = None,
                 undo_limit: int = 200) -> None:
        if isinstance(settings, dict):
            settings = EditorSettings.from_dict(settings)
        self.session = session
        self.queue = session.events  # the session's one event queue
        self.state = EditorState(settings if settings is not None else EditorSettings())
        self.undo = CommandStack(limit=undo_limit)
        self.saved_mark = self.undo.mark()  # the state of the last save (unsaved: the stack moved since)
        self.save_path: Path | None = None
        w = session.world
        for r in (self.state, self.undo):
            w.insert_resource(r)
        prev = "input_begin_system"  # the engine's first INPUT system
        for name, fn in INPUT_SYSTEMS:
            session.add_system(Phase.INPUT, fn, name=name, after=prev)
            prev = name
        session.add_system(Phase.INPUT, self._character_actions, name="editor_character_actions",
                           after="editor_shortcuts", before="editor_camera")
        self.posing = PosingTool(lambda: self.selected)
        session.add_system(Phase.TOOLS, self.posing, name=PosingTool.name)
        self.surface = SurfaceTool(session, lambda: self.selected)
        session.add_system(Phase.TOOLS, self.surface, name=SurfaceTool.name, after=PosingTool.name)
        from game.editor.weights_edit import WeightsEditing

        #: the Weights tool (Shift+W): brush, Mohr's drag and influence regions on the selected character
        self.weights = WeightsEditing(self)
        session.add_system(Phase.TOOLS, self.weights, name=WeightsEditing.name, after=SurfaceTool.name)
        self.spawned: list[dict[str, Any]] = []
        self.recorder: Recorder | None = None
        self.autosaver: Recorder | None = None
        self._orbit()

    # -- scene ---------------------------------------------------------------------------------------------
    def _orbit(self) -> Any:
        """Make the session's camera an orbit camera (the editor's controls move it)."""
        from engine.render.camera import OrbitCamera

        cam = self.session.camera
        if not isinstance(cam, OrbitCamera):
            r = self.session.renderer
            aspect = r.width / r.height if r is not None else 16 / 9
            d = {"eye": [float(x) for x in cam.eye], "target": [float(x) for x in cam.target],
                 "fov": float(cam.fov_y)}
            self.session.camera = camera_from_header(d, aspect)
        return self.session.camera

    def spawn(self, source: str, *, clip: str | int | None = 0, time: float = 0.0, speed: float = 1.0,
              position: tuple[float, float, float] = (0.0, 0.0, 0.0), yaw: float = 0.0,
              deformer: str | None = None) -> Any:
        """Spawn a character (a generated name or a .gltf/.glb path) and remember how, for the recording."""
        ch = self.session.spawn(source, clip=clip, time=time, speed=speed, position=position, yaw=yaw,
                                deformer=deformer)
        spec: dict[str, Any] = {"source": str(source), "clip": clip, "time": float(time), "speed": float(speed),
                                "position": [float(x) for x in position], "yaw": float(yaw)}
        spec.update(file_identity(source))
        if deformer is not None:
            spec["deformer"] = deformer
        self.spawned.append(spec)
        return ch

    def frame_camera(self, margin: float = 1.2) -> Any:
        """Fit the orbit camera on every character's deformed bounds."""
        cam = self._orbit()
        b = self.session.bounds()
        if b is not None:
            cam.fit(*b, margin=margin)
        return cam

    @property
    def selected(self) -> Any:
        """The Character the tools act on: the selected entity's, else the first one (None: no character)."""
        chars = self.session.characters
        for ch in chars:
            if ch.entity == self.state.selected:
                return ch
        return chars[0] if chars else None

    @property
    def selected_name(self) -> str:
        """The selected character's name ("" with none): the window title shows it."""
        ch = self.selected
        return "" if ch is None else str(ch.name)

    @property
    def unsaved(self) -> bool:
        """Edits were done (or undone) since the last :meth:`save` (or since the editor opened)."""
        return self.undo.mark() != self.saved_mark

    def save(self, path: str | Path | None = None) -> list[Path]:
        """Save the work on the selected character: its asset with the current pose keyed into the clip
        ``pose`` as .glb at ``path`` (default: the last path saved to, else ``<name>_edited.glb`` in the current
        folder), and its surface edits, when it has any, beside it as ``<stem>.edits.json``. The undo stack's
        state becomes the saved one. Returns the files written; ValueError (nothing written) for a bad path."""
        from engine.paths import check_writable

        ch = self.selected
        if ch is None:
            raise ValueError("no character to save")
        target = Path(path) if path is not None else (self.save_path or Path.cwd() / f"{ch.name}_edited.glb")
        check_writable("save", target, suffix=".glb", makes_parents=True)
        written = [self.save_asset(target)]
        if any(len(st) for st in ch.edits.values()):
            written.append(ch.save_edits(target.with_suffix(".edits.json"), clip="pose", time=0.0))
        self.save_path = target
        self.saved_mark = self.undo.mark()
        self.state.say(f"saved {', '.join(p.name for p in written)}")
        return written

    def open(self, path: str | Path) -> Any:
        """Open a .gltf/.glb in place of the characters: it is loaded first (a refusal leaves the scene and the
        edits as they are), then replaces them; a saved file's ``pose`` clip is played held at
        0 s (the pose as saved) and its ``<stem>.edits.json`` beside it loaded (on the spring deformer, which
        edits need). The undo history starts again and the file becomes the save target. A refusal
        of the file (ValueError, or the loader's engine.assets.errors.AssetError naming the file and why) changes
        nothing; a refused edits file beside it is said in a message, the character opened without them."""
        p = Path(path)
        if self.recorder is not None:
            raise ValueError("a --record recording holds the characters it started with: "
                             "stop recording before opening another file")
        if not p.is_file():
            raise ValueError(f"{p}: no such file")
        # the loader refuses a non-glTF or broken file in one line, before anything changes
        clips = [c.name for c in self.session.load(str(p)).asset.clips]
        edits = p.with_suffix(".edits.json")
        self.clear_scene()
        posed = "pose" in clips
        ch = self.spawn(str(p), clip="pose" if posed else (0 if clips else None), speed=0.0 if posed else 1.0,
                        deformer="spring" if edits.is_file() else None)
        with_edits = edits.is_file()
        if with_edits:
            try:
                ch.load_edits(edits)
            except ValueError as exc:  # the character is open; its edits file is refused on its own
                with_edits = False
                self.state.say(f"{edits.name} refused: {exc}")
        self.state.selected = ch.entity
        self.save_path = p if p.suffix.lower() == ".glb" else None
        self.saved_mark = self.undo.mark()
        self.frame_camera()
        if self.autosaver is not None:  # the autosave's header names the characters: start it again
            self.start_autosave(self.autosaver.path)
        self.state.say(f"opened {p.name}" + (" with its edits" if with_edits else ""))
        return ch

    def clear_scene(self) -> None:
        """Remove every character and start the editing state and the undo history again (before opening a
        file or restoring an autosave)."""
        for ch in list(self.session.characters):
            ch.remove()
        self.spawned.clear()
        st = self.state
        st.selected = st.joint = None
        st.strokes.clear()
        st.editable.clear()
        st.finished.clear()
        st.drawing, st.knot_drag = None, None
        self.posing.last = self.posing.last_pair = self.posing.base = self.posing.world = None
        self.surface.reset()
        self.weights.reset()
        self.undo.clear()
        self.saved_mark = self.undo.mark()
        self.save_path = None

    def save_asset(self, path: str | Path, *, clip: str = "pose") -> Path:
        """Key the selected character's current pose at t = 0 into ``clip`` and write its asset as .glb, with
        the weights the Weights tool edited (the source file's weights otherwise)."""
        ch = self.selected
        if ch is None:
            raise ValueError("no character to save")
        ch.key_pose(clip, time=0.0)
        out = Path(ch.save_glb(path))
        self.weights.write_into(out, ch)
        return out

    # -- actions on the selected character ---------------------------------------------------------------
    def _character_actions(self, world: World) -> None:
        """The actions that act on the selected character (panels emit them; a recording replays them):
        ``deformer`` {"name"} and ``config`` {"<section>_<field>": value, ...} (undoable; a slider drag is
        one step), ``clip`` {"name"}, ``scrub`` {"time"}, ``speed`` {"value"} (transport, not edits); the
        joint actions of game/editor/joints.py: ``select_joint`` {"joint"}, ``rotate_joint`` {"joint",
        "rotation"} (the gizmo; undoable, one drag one step) and ``key_pose`` {"clip"?, "time"?}."""
        for e in self.queue.frame:
            if isinstance(e, Action) and e.name in CHARACTER_ACTIONS:
                try:
                    self.character_action(e.name, e.args)
                except (ValueError, TypeError, KeyError) as exc:
                    self.state.say(f"{e.name}: {exc}")

    def character_action(self, name: str, args: dict[str, Any]) -> None:
        """Run one character action now (see :meth:`_character_actions`); ValueError when refused."""
        ch = self.selected
        if ch is None:
            raise ValueError("no character selected")
        if name in ("deformer", "config"):
            before = (ch.deformer, ch.config)
            if name == "deformer":
                ch.set_deformer(str(args["name"]))
                key = None
            else:
                ch.set_deformer(config=ch.config.with_overrides(**args))
                key = ("config", ch.entity, tuple(sorted(args)))
            after = (ch.deformer, ch.config)

            def apply(state: tuple[str, Any], ch: Any = ch) -> None:
                ch.set_deformer(state[0], config=state[1])

            self.undo.push(SnapshotCommand(f"{name} of {ch.name}: {after[0] if key is None else args}", apply,
                                           before, after, merge_key=key), execute=False)
        elif name == "clip":
            ch.play(args["name"], speed=args.get("speed"))
        elif name == "scrub":
            pb = ch.playback()
            ch.play(pb.clip, time=float(args["time"]))
        elif name == "speed":
            ch.speed = float(args["value"])
        elif name in ("select_joint", "rotate_joint", "key_pose"):
            from game.editor.joints import joint_action

            joint_action(self, ch, name, args)

    # -- recording -----------------------------------------------------------------------------------------
    def header(self) -> RecordHeader:
        """The recording header of the session as it stands now."""
        from engine import __version__ as version

        s = self.session
        r = s.renderer
        width, height = (r.width, r.height) if r is not None else (1280, 720)
        return RecordHeader(width=int(width), height=int(height), camera=camera_to_header(self._orbit()),
                            assets=[dict(a) for a in self.spawned], step=float(s.clock.step),
                            editor=self.state.settings.to_dict(), engine=version)

    def record(self, path: str | Path) -> Recorder:
        """Start recording to ``path``: the header now, then every frame's events and dt (a UI-phase system);
        :meth:`stop_recording` (or the session's end) writes the end line."""
        if self.recorder is not None:
            raise ValueError(f"already recording to {str(self.recorder.path)!r}")
        self.recorder = self._recorder(path, "editor_record", lambda: self.recorder)
        return self.recorder

    def start_autosave(self, path: str | Path) -> Recorder:
        """Record the session to ``path`` as well (the window's autosave, game/editor/autosave.py: a crash
        leaves the recording so far); a running autosave is closed first."""
        self.stop_autosave()
        self.autosaver = self._recorder(path, "editor_autosave", lambda: self.autosaver)
        return self.autosaver

    def stop_autosave(self) -> Path | None:
        """Close the autosave recording (its end line written); its path (None when none ran)."""
        rec, self.autosaver = self.autosaver, None
        if rec is None:
            return None
        rec.close()
        return rec.path

    def _recorder(self, path: str | Path, name: str, current: Callable[[], Recorder | None]) -> Recorder:
        if not self.spawned:
            raise ValueError("nothing to record: spawn a character with Editor.spawn first")
        rec, queue = Recorder(path, self.header()), self.queue

        def record_frame(world: World) -> None:
            if rec is current():
                rec.frame(queue.frame, world.resource(Clock).real_dt)

        if name in self.session.schedule:
            self.session.schedule.remove_system(name)
        self.session.add_system(Phase.UI, record_frame, name=name)
        return rec

    def stop_recording(self) -> Path | None:
        """Write the end line and close the file; returns its path (None when not recording)."""
        rec, self.recorder = self.recorder, None
        if rec is None:
            return None
        rec.close()
        return rec.path


def open_recording(rec: Recording, *, headless: bool = True, window: bool = False, device: str = "gpu",
                   strict: bool = True, render: bool = True) -> Editor:
    """A session (and its editor) as the recording's header describes: frame size, fixed step, characters
    in spawn order, camera and editor settings."""
    from engine import Session

    h = rec.header
    session = Session(width=h.width, height=h.height, step=h.step, headless=headless, window=window,
                      device=device, strict=strict, render=render)
    try:
        ed = Editor(session, settings=h.editor)
        spawn_recorded(ed, rec)
    except BaseException:
        session.release()
        raise
    return ed


def spawn_recorded(ed: Editor, rec: Recording) -> None:
    """Spawn the recording header's characters into ``ed`` in order and set its camera (ValueError naming the
    asset that cannot be found or loaded)."""
    h = rec.header
    base = rec.path.parent if rec.path is not None else None
    for i, a in enumerate(h.assets):
        try:
            ed.spawn(resolve_source(a, base), clip=a.get("clip", 0), time=a.get("time", 0.0),
                     speed=a.get("speed", 1.0), position=tuple(a.get("position", (0.0, 0.0, 0.0))),
                     yaw=a.get("yaw", 0.0), deformer=a.get("deformer"))
        except ValueError as exc:
            raise ValueError(f"header.assets[{i}]: {exc}") from None
    ed.session.camera = camera_from_header(h.camera, h.width / h.height)


def replay(rec: Recording, editor: Editor, *, interpolate: bool = False,
           on_frame: Callable[[int], None] | None = None) -> int:
    """Run every recorded frame through the editor's session: its events into the queue, then one frame of
    its recorded dt (drawn as of its last fixed step unless ``interpolate``). Returns the frame count."""
    from engine.log import progress

    s = editor.session
    for i, f in enumerate(progress(rec.frames, desc="replaying", unit="frame", enabled=len(rec.frames) > 120)):
        editor.queue.extend(f.events)
        s.frame(f.dt, interpolate=interpolate)
        if on_frame is not None:
            on_frame(i)
    return len(rec.frames)
