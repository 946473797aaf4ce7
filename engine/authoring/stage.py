"""Staging a still: the ground put under the deformed characters, as the ``render`` command and the cutscene
frames both draw it (one rule, so a cutscene frame equals ``render`` of the same pose and camera), and the
deformed vertices of every character under their ``export-frame`` keys (``replay`` and ``cutscene frame``)."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ground_at_bounds", "export_vertices"]


def ground_at_bounds(session: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Read the deformed bounds of every character (deforming first when a pose changed), put the renderer's
    ground plane at their lowest point and return the (min, max) box; None without characters or meshes."""
    box = session.bounds()
    if box is None:
        return None
    r = session.require_renderer()
    r.look.ground_height = float(box[0][1])
    r.invalidate()
    return box


def export_vertices(session: Any) -> dict[str, np.ndarray]:
    """Every character's deformed skinned vertices under their ``export-frame`` keys (prefixed by
    ``char{i}_`` when there are several characters)."""
    out: dict[str, np.ndarray] = {}
    chars = session.characters
    for i, ch in enumerate(chars):
        skinned = set(ch.skinned_primitives)
        prefix = f"char{i}_" if len(chars) > 1 else ""
        for key, pos in ch.vertices().items():
            if key in skinned:
                out[prefix + key.export_key] = np.asarray(pos, np.float32)
    return out
