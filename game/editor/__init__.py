"""game.editor: the desktop editor, as world resources and systems on a Session, and its window.

* ``undo``: the command stack (do/undo/redo, merged drags, a limit).
* ``state``: editor settings (tool, brush radius, RDP epsilon) and state (strokes, messages, selection).
* ``systems``: the INPUT-phase systems (shortcuts and actions, camera, stroke input); tools run in TOOLS.
* ``editor``: :class:`Editor`, which puts them on a Session, spawns characters, records and replays.
* ``posing``, ``surface``: the TOOLS-phase pose and surface tools, over the authoring kit (engine/authoring/).
* ``window``: the editor window (engine.runloop.window_loop) and its imgui panels.

Tools read events only from the session's EventQueue (engine/input/events.py), never from a window library;
the window (game/editor/window.py) and a replay file feed the same queue.
"""
from game.editor.editor import Editor, open_recording, replay
from game.editor.state import EditorSettings, EditorState
from game.editor.undo import CommandStack, SnapshotCommand

__all__ = ["Editor", "open_recording", "replay", "EditorSettings", "EditorState", "CommandStack",
           "SnapshotCommand"]
