"""Surface edits solved by Laplacian surface editing instead of the springs (the research's baseline for
silhouette edits; engine.skinning.laplacian, prefactorised, on the CPU)."""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.components import PrimitiveKey

__all__ = ["laplacian_positions"]


def laplacian_positions(character: Any, stacks: dict[PrimitiveKey, Any], time: float = 0.0
                        ) -> dict[PrimitiveKey, np.ndarray]:
    """The edits solved by Laplacian surface editing instead of the springs (the research's baseline for
    silhouette edits; engine.skinning.laplacian, prefactorised, CPU): per primitive, display positions (D,3)
    float32 with the kinematic vertices at their targets (overlapping edits averaged; each displacement scaled
    by its edit's keyed weight), the static and outside vertices where the character's deformer put them, and
    the passive ones solved."""
    from engine.skinning.laplacian import LaplacianEditor
    from engine.skinning.meshprep import copy_to_display

    out = {}
    current = character.vertices()
    for key, stack in stacks.items():
        if not len(stack):
            continue
        topo = character.topology(key)
        n = topo.n_control
        base = np.asarray(current[key], np.float64)[np.asarray(topo.display_of_control)]
        attach, rot = character.edit_frame(key)
        total, count = np.zeros((n, 3)), np.zeros(n)
        passive = np.zeros(n, bool)
        for e in stack:
            w = e.weight(time)
            total[e.kinematic] += base[e.kinematic] + w * (e.targets(attach, rot, time) - base[e.kinematic])
            count[e.kinematic] += 1
            passive[e.passive] = True
        kin = np.flatnonzero(count > 0)
        passive &= count == 0
        static = stack.held(n)
        solver = LaplacianEditor(base, topo.triangles, kinematic=kin, passive=np.flatnonzero(passive),
                                 static=np.flatnonzero(static))
        x = solver.solve(total[kin] / count[kin, None], base=base)
        out[key] = copy_to_display(topo, x).astype(np.float32)
    return out
