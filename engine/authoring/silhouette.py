"""Silhouette edits (research 7.3, after SilSketch): the silhouette pixels of a character in the session's last
frame (a Laplacian edge filter of a G-buffer channel, on the GPU or with the numpy reference) and the edit an
accent stroke drawn beside an outline makes of them: the silhouette chain between the outline vertices nearest
the stroke's ends moved onto it by parameter, the region grown around the chain.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.authoring import view
from engine.authoring.surface import DEFAULT_STIFFNESS, plane_points
from engine.components import PrimitiveKey

__all__ = ["silhouette_pixels", "silhouette_edit"]


def silhouette_pixels(session: Any, character: Any, channel: str = "normal", threshold: float | None = None, *,
                      gpu: bool | None = None) -> dict[PrimitiveKey, tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                            np.ndarray]]:
    """Per skinned primitive of ``character`` with a silhouette in the session's last frame: (rows, cols,
    triangles, barycentrics) of its silhouette pixels (row-major, rows from the top), from the Laplacian filter
    of G-buffer ``channel`` above ``threshold`` (None: the channel's default). ``gpu`` (None: on the gpu
    device) runs the filter on the GPU (engine/render/silhouette.py: only these pixels are read back); else the
    numpy reference over the whole G-buffer (engine.skinning.roi)."""
    from engine.render.silhouette import check_filter
    from engine.skinning import roi

    _, thr = check_filter(channel, threshold)
    out = {}
    if gpu if gpu is not None else session.device == "gpu":
        ids = {i.handle.id: i.key for i in session.meshes.instances.get(character.entity, ())
               if i.skinned is not None and i.handle is not None}
        found = session.renderer.silhouette_pixels(channel, thr, mesh_ids=list(ids))
        for mesh_id, key in ids.items():
            px = found.of(mesh_id)
            if len(px):
                out[key] = (px.rows, px.cols, px.triangle, px.barycentric)
        return out
    gb = session.gbuffer()
    for key in character.skinned_primitives:
        surface = (gb["node"] == key.node) & (gb["mesh"] == key.mesh) & (gb["primitive"] == key.primitive)
        mask = roi.silhouette_pixels(gb[channel], surface, threshold=thr)
        if mask.any():
            rows, cols = np.nonzero(mask)
            out[key] = (rows, cols, gb["triangle"][mask], gb["barycentric"][mask])
    return out


def silhouette_edit(session: Any, character: Any, window_points: np.ndarray, *, channel: str = "normal",
                    threshold: float | None = None, rings: int | None = None, radius: float | None = None,
                    geodesic: bool = False, stiffness: float = DEFAULT_STIFFNESS, keys: Any = None,
                    name: str = "", gpu: bool | None = None, smooth: bool = False) -> tuple[PrimitiveKey, Any]:
    """Silhouette editing (research 7.3, after SilSketch): an accent stroke (window points, drawn near an
    outline of ``character`` in the session's last frame) moves the silhouette chain between the silhouette
    vertices nearest its ends onto itself, by parameter; the region grows from the chain by rings or radius.
    The silhouette comes from a Laplacian filter of the G-buffer ``channel`` (normal, depth or position) masked
    by each skinned primitive's id (:func:`silhouette_pixels`: on the GPU on the gpu device, or with ``gpu``).
    Returns (primitive, SurfaceEdit), not added.

    ``smooth``: the passive vertices get targets too, the chain's displacement spread over the region by
    Laplacian surface editing (engine.skinning.laplacian, solved once here, encoded like every target so it
    follows the pose); the edit's kinematic set is then the chain and the grown region, its passive set empty.
    Why: pulled by a one-vertex-wide chain of handles, the springs answer with a ridge, not a bulge. The bone
    and length springs anchor every passive vertex to its own bone, so the displacement decays about threefold
    per ring (the humanoid's belly example: 28 mm on the chain, 10, 2.8 and 0.7 mm on rings 1 to 3), which
    shades as ripples along the outline; with the smooth field the springs only hold the surface near it
    (roughness over the region, engine.skinning.metrics, 0.150 -> 0.035 on that example; the Laplacian
    solver alone: 0.047)."""
    from engine.input.strokes import Stroke
    from engine.skinning import roi
    from engine.skinning.edits import SurfaceEdit

    stroke_px = np.asarray(window_points, np.float64)
    best: tuple[float, PrimitiveKey, np.ndarray, np.ndarray] | None = None
    for key, (rows, cols, tri, bary) in silhouette_pixels(session, character, channel, threshold, gpu=gpu).items():
        near = float(np.min(np.hypot(cols + 0.5 - stroke_px[0, 0], rows + 0.5 - stroke_px[0, 1])))
        if best is None or near < best[0]:
            best = (near, key, tri, bary)
    if best is None:
        raise ValueError("no silhouette of the character in view: nothing for the accent stroke to move")
    _, key, tri, bary = best
    topo = character.topology(key)
    x = np.asarray(character.vertices()[key], np.float64)[np.asarray(topo.display_of_control)]
    sil = roi.silhouette_vertices(topo, tri, bary, positions=x, eye=np.asarray(session.camera.eye, np.float64))
    r = session.renderer
    px = view.window_points(session.camera, r.width, r.height, x[sil])
    start = int(sil[np.argmin(np.linalg.norm(px - stroke_px[0], axis=1))])
    end = int(sil[np.argmin(np.linalg.norm(px - stroke_px[-1], axis=1))])
    if start == end:
        raise ValueError("the accent stroke's ends are nearest the same silhouette vertex: draw it along the outline")
    chain = roi.silhouette_chain(topo, sil, start, end, positions=x)
    seg = np.linalg.norm(np.diff(x[chain], axis=0), axis=1)
    s = np.r_[0.0, np.cumsum(seg)] / max(float(seg.sum()), 1e-12)
    accent = Stroke.fit(stroke_px, epsilon=0.5)
    targets = np.array([plane_points(session, accent.point(si)[None], x[v])[0] for si, v in zip(s, chain)])
    region = roi.region_around(topo, chain, rings=rings, radius=radius, geodesic=geodesic, positions=x)
    kin, passive = chain, region.passive
    if smooth and passive.size:  # targets for the whole region: the chain's spread smoothly (see the docstring)
        from engine.skinning.laplacian import LaplacianEditor

        field = LaplacianEditor(x, topo.triangles, kinematic=chain, passive=passive,
                                static=region.static).solve(targets, base=x)
        kin, passive = np.concatenate([chain, passive]), np.zeros(0, np.int32)
        targets = np.concatenate([targets, field[region.passive]])
    attach, rot = character.edit_frame(key)
    edit = SurfaceEdit.from_world(kin, targets, attach, rot, passive=passive, static=region.static,
                                  stiffness=stiffness, name=name,
                                  keys=np.asarray(keys if keys is not None else np.zeros((0, 2)), np.float64))
    return key, edit
