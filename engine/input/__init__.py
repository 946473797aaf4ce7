"""engine.input: input devices (desktop mouse/stylus, OpenVR controllers, replay), strokes and picking.

``rays`` turns window points into world rays and tests them against planes and boxes (pyrr, the one place its
row-vector convention is converted). Stroke input (Ramer-Douglas-Peucker reduction, composite Bezier fitting,
Frenet frames) arrives with the editor issue. input never imports render: the renderer implements the query
interface surface strokes use.
"""
