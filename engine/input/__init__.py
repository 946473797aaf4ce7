"""engine.input: input devices (desktop mouse/stylus, OpenVR controllers, replay) and strokes.

Not built yet: stroke input (Ramer-Douglas-Peucker reduction, composite Bezier fitting, Frenet frames) arrives
with the stroke-tools issue. The demo reads the mouse and keyboard through its pyglet window (game/demo.py);
surface queries for strokes already exist in the renderer (engine.render.renderer.SceneRenderer.query*).
"""
