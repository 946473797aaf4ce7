"""The authoring kit: what turns strokes into poses and surface edits, shared by the commands (game/commands),
the editor (game/editor), the demo and, next, VR and cutscenes. Nothing here knows a window library or a
command line: inputs are strokes, window points, cameras and characters of a :class:`engine.Session`.

* :mod:`engine.authoring.view`: window <-> world: world points to window pixels, window points unprojected
  onto a plane (the one ray-plane unprojection), pixels to metres at a depth.
* :mod:`engine.authoring.posing`: the posing plane (through the skeleton's root, parallel to the image plane,
  moved and turned by the editor's settings), the skeleton's root, window strokes lifted onto the plane.
* :mod:`engine.authoring.surface`: surface samples from window points (G-buffer queries), the surface-edit
  builder (region of interest + profile or offset stroke).
* :mod:`engine.authoring.silhouette`: silhouette pixels of a character and the silhouette-edit builder.
* :mod:`engine.authoring.laplacian`: edits solved by Laplacian surface editing (the research's baseline).
* :mod:`engine.authoring.stage`: staging a still as ``render`` draws it (the ground at the deformed bounds; the
  cutscene frames use the same rule) and every character's deformed vertices under their export-frame keys.

Builders return plain data (``SurfaceEdit``, 3D ``Stroke``); the caller adds them (``Character.add_edit``,
``Character.apply_line_of_action``), keeps the undo step and writes files.
"""
from __future__ import annotations
