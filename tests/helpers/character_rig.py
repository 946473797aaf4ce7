"""A generated character's first skinned primitive as rig arrays (the deform benchmark and the spring tests)."""
from __future__ import annotations

import numpy as np


def load_character(name: str):
    """(topology, binding, joints, weights, inverse_bind, parents, bind_joints) of the character ``name``
    (engine.assets.library.character_path), bound by its glTF weights."""
    from engine.assets.gltf import load
    from engine.assets.library import character_path
    from engine.skinning.binding import bind
    from engine.skinning.meshprep import prepare_mesh

    asset = load(character_path(name))
    for node in asset.nodes:
        if node.mesh is None or node.skin is None:
            continue
        for prim in asset.meshes[node.mesh].primitives:
            if not prim.is_skinned:
                continue
            skin = asset.skins[node.skin]
            index = {int(n): k for k, n in enumerate(skin.joints)}
            parents = np.array([index.get(asset.nodes[int(n)].parent, -1) for n in skin.joints], np.int32)
            topo = prepare_mesh(prim.positions, prim.indices.astype(np.int64))
            ib = np.asarray(skin.inverse_bind, np.float64)
            bj = np.linalg.inv(ib)
            binding = bind(topo, bj, parents, method="weights", joints=prim.joints, weights=prim.weights)
            return topo, binding, prim.joints, prim.weights, ib, parents, bj
    raise ValueError(f"character {name!r} has no skinned primitive")
