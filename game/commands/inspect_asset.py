"""`python main.py inspect ASSET`: what an asset holds, one block per meshes / skins / clips (morph targets under
their mesh, weights channels under their clip)."""
from __future__ import annotations

import os
import warnings

from engine.assets.model import Asset


def inspect_command(path: str | os.PathLike[str]) -> int:
    """Load ``path`` (a .gltf/.glb file or a generated character's name, as every command takes) and print
    describe() of it (loader warnings are listed there, not shown twice)."""
    from engine.assets import load
    from engine.assets.library import source_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warnings are listed by describe()
        asset = load(source_path(path))
    print(describe(asset))
    return 0


def _numbers(w) -> str:
    return "[" + ", ".join(f"{float(x):g}" for x in w) + "]"


def morph_line(asset: Asset, m: int) -> str:
    """``morph targets: M ['name', ...], default weights [...]`` for mesh ``m`` (names from
    mesh.extras.targetNames when the file gives them), then the nodes whose own weights override them."""
    mesh = asset.meshes[m]
    names = f" {mesh.target_names!r}" if mesh.target_names else ""
    text = f"morph targets: {mesh.target_count}{names}, default weights {_numbers(mesh.weights)}"
    for n, node in enumerate(asset.nodes):
        if node.mesh == m and node.weights is not None:
            text += f"; node {n} {node.name!r} weights {_numbers(node.weights)}"
    return text


def describe(asset: Asset) -> str:
    name = asset.path.name if asset.path else "<memory>"
    lines = [f"asset {name}: {len(asset.nodes)} nodes, {len(asset.scenes)} scenes (default {asset.scene})"]
    lines.append(f"meshes: {len(asset.meshes)}")
    for m, mesh in enumerate(asset.meshes):
        for p, prim in enumerate(mesh.primitives):
            tags = []
            if prim.is_skinned:
                assert prim.weights is not None
                used = int((prim.weights > 0).sum(axis=1).max(initial=0))
                slots = prim.weights.shape[1]
                tags.append(f"skinned, {slots} influence slots ({slots // 4} JOINTS/WEIGHTS set"
                            f"{'s' if slots > 4 else ''}), at most {used} used")
            if prim.normals is not None:
                tags.append("normals")
            if prim.texcoords is not None:
                tags.append("uv")
            lines.append(f"  mesh {m} {mesh.name!r} prim {p}: {prim.vertex_count} vertices, "
                         f"{prim.triangle_count} triangles" + (f" ({', '.join(tags)})" if tags else ""))
        if mesh.target_count:
            lines.append("    " + morph_line(asset, m))
    lines.append(f"skins: {len(asset.skins)}")
    for s, skin in enumerate(asset.skins):
        users = [n for n, node in enumerate(asset.nodes) if node.skin == s]
        lines.append(f"  skin {s} {skin.name!r}: {len(skin.joints)} joints, used by nodes {users}")
    lines.append(f"clips: {len(asset.clips)}")
    for c, clip in enumerate(asset.clips):
        interps = sorted({ch.interpolation for ch in clip.channels})
        paths = sorted({ch.path for ch in clip.channels})
        lines.append(f"  clip {c} {clip.name!r}: {clip.duration:.3f} s, {len(clip.channels)} channels, "
                     f"{'/'.join(interps) or '-'} on {'/'.join(paths) or '-'}")
        for ch in clip.channels:
            if ch.path == "weights":
                node = asset.nodes[ch.node]
                lines.append(f"    weights channel: node {ch.node} {node.name!r} (mesh {node.mesh}, "
                             f"{ch.values.shape[-1]} targets), {ch.interpolation}, {ch.times.shape[0]} keys")
    lines.append(f"materials: {len(asset.materials)}, images: {len(asset.images)}")
    for w in asset.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines)
