"""game.ui: the imgui layer (game/ui/imgui_layer.py: context, moderngl renderer, pyglet input, offscreen) and
the panels drawn with it (game/ui/profiler.py: the frame-time profiler; game/ui/overlay.py: the overlay a
Session draws over its frame, with the controls help)."""
