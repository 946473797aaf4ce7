"""engine.editor: the desktop editor's game-side half, as world resources and systems on a Session.

``undo`` (the command stack) for now; the editor state, the stroke-input INPUT-phase system and the posing
tool follow.
"""
