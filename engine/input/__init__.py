"""engine.input: the one event model for every device, recorded sessions, strokes, rays and picking.

``events`` is the event model (pointer, wheel, keys, text, tracked 3D samples, actions, resize; one monotonic
clock), the EventQueue world resource and the pyglet adapter (the only place that knows pyglet). ``record``
reads and writes recorded editor sessions (versioned JSON lines). ``strokes`` fits strokes (Ramer-Douglas-Peucker
reduction, composite Bezier, arc length, rotation-minimising frames). ``rays`` turns window points into world
rays and tests them against planes and boxes (pyrr, the one place its row-vector convention is converted).
input never imports render: the renderer implements the query interface (``picking``) surface strokes use.
"""
