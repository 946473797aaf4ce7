"""The shared material mapping: a glTF primitive's material as the renderer's ``add_mesh`` keywords.

One place for it: the Session's scene glue, the commands and the benchmarks all draw materials through here.
"""
from __future__ import annotations

from typing import Any

from engine.assets.model import Asset, Primitive

__all__ = ["DEFAULT_BASE_COLOR", "material_kwargs"]

DEFAULT_BASE_COLOR = (0.8, 0.8, 0.8, 1.0)


def material_kwargs(asset: Asset, prim: Primitive) -> dict[str, Any]:
    """Renderer ``add_mesh`` keywords for ``prim``'s glTF material: base colour factor, double-sidedness and
    the base-colour texture (with the primitive's texcoords). No material: a light grey, back faces culled."""
    if prim.material is None or prim.material >= len(asset.materials):
        return dict(base_color=DEFAULT_BASE_COLOR)
    mat = asset.materials[prim.material]
    kw: dict[str, Any] = dict(base_color=tuple(float(c) for c in mat.base_color_factor),
                              double_sided=bool(mat.double_sided))
    if mat.base_color_image is not None and prim.texcoords is not None:
        kw.update(texcoords=prim.texcoords, image=asset.images[mat.base_color_image].rgba)
    return kw
