"""Surface edits from strokes drawn on the skin (research 5.2 and 7.4): window points become surface samples
through the G-buffer (each a mesh, triangle and barycentric that stays on the skin while the character moves),
and a stroke's samples become a :class:`engine.skinning.edits.SurfaceEdit`: the region of interest (kinematic,
passive, static), the stroke fitted through the samples' 3D places, and the kinematic targets from a profile
(bulge, sine) or an offset stroke. Builders return the edit; the caller adds it (``Character.add_edit``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.authoring.view import unproject_points
from engine.components import PrimitiveKey
from engine.input.rays import facing_plane

__all__ = ["DEFAULT_STIFFNESS", "SurfaceSamples", "densify", "stroke_samples", "plane_points", "surface_edit",
           "region_params", "profile_spread"]

#: the edit stiffness of a stroke that gives none
DEFAULT_STIFFNESS = 5.0


@dataclass(frozen=True)
class SurfaceSamples:
    """A surface stroke as the G-buffer saw it: one skinned primitive of one character, and per sample its
    triangle (glTF order) and barycentric coordinates."""

    entity: int
    key: PrimitiveKey
    faces: np.ndarray        # (N,) int
    barycentrics: np.ndarray  # (N,3) float64, rows sum to 1
    mesh_id: int = -1        # the renderer's mesh id of the primitive (engine.input.picking.SurfacePoint)

    def positions(self, character: Any) -> np.ndarray:
        """World positions (N,3) of the samples on the character's current deformed mesh: the stroke stays on
        the skin while the character moves (research 7.4)."""
        from engine.skinning.roi import surface_positions

        topo = character.topology(self.key)
        x = np.asarray(character.vertices()[self.key], np.float64)[np.asarray(topo.display_of_control)]
        return surface_positions(x, topo.triangles, self.faces, self.barycentrics)

    def surface_points(self) -> list[Any]:
        """The samples as renderer-independent SurfacePoints (mesh id, triangle, barycentric)."""
        from engine.input.picking import SurfacePoint

        return [SurfacePoint(self.mesh_id, int(f), tuple(b)) for f, b in zip(self.faces, self.barycentrics)]


def densify(points: np.ndarray, step: float = 1.0) -> np.ndarray:
    """Window points (N,2) with points inserted so consecutive ones are at most ``step`` pixels apart."""
    p = np.asarray(points, np.float64)
    out = [p[:1]]
    for a, b in zip(p[:-1], p[1:]):
        n = max(1, math.ceil(float(np.linalg.norm(b - a)) / step))
        out.append(a + (b - a) * (np.arange(1, n + 1) / n)[:, None])
    return np.concatenate(out)


def stroke_samples(session: Any, window_points: np.ndarray, where: str = "stroke", *,
                   layer: str | None = None) -> SurfaceSamples:
    """Query a window-space stroke (N,2) through the session's last frame (or one renderer ``layer``, so a skin
    under another mesh can be edited: research 7.4's layered meshes): its samples on one skinned primitive.
    ValueError (naming ``where``) when it hits no surface, leaves it in its middle, or crosses meshes."""
    w, h = session.renderer.width, session.renderer.height
    given = np.asarray(window_points, np.float64).reshape(-1, 2)
    outside = ~np.isfinite(given).all(1) | (given[:, 0] < 0) | (given[:, 0] >= w) | (given[:, 1] < 0) | \
        (given[:, 1] >= h)
    if outside.any():
        x, y = given[np.argmax(outside)]
        raise ValueError(f"{where}: window point ({x:g}, {y:g}) is outside the {w}x{h} frame")
    pts = densify(given)
    hits = session.pick_many(pts, layer=layer)
    got = [i for i, hit in enumerate(hits) if hit is not None]
    if not got:
        raise ValueError(f"{where}: the stroke hits no surface (nothing under any of its window points)")
    first, last = got[0], got[-1]
    gap = [i for i in range(first, last + 1) if hits[i] is None]
    if gap:
        x, y = pts[gap[0]]
        raise ValueError(f"{where}: the stroke leaves the surface at window point ({x:g}, {y:g})")
    used = hits[first:last + 1]
    ids = {(hit.entity, hit.node, hit.mesh_index, hit.primitive) for hit in used}
    if len(ids) > 1:
        names = ", ".join(f"node{n}_mesh{m}_prim{p}" for _, n, m, p in sorted(ids))
        raise ValueError(f"{where}: the stroke crosses from one mesh to another ({names}); draw one stroke per mesh")
    entity, node, mesh, prim = ids.pop()
    key = PrimitiveKey(node, mesh, prim)
    rows = {i.key: i for i in session.meshes.instances.get(entity, ())}
    if key not in rows or rows[key].skinned is None:
        raise ValueError(f"{where}: the stroke is on {key.export_key}, which is not skinned (edits need springs)")
    bary = np.array([hit.barycentric for hit in used], np.float64)
    bary = np.clip(bary, 0.0, None)
    bary /= np.maximum(bary.sum(1, keepdims=True), 1e-12)
    return SurfaceSamples(entity, key, np.array([hit.triangle for hit in used], np.int64), bary, used[0].mesh_id)


def plane_points(session: Any, window_points: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Window points of ``session``'s view unprojected onto the plane through ``point`` facing its camera."""
    r = session.renderer
    plane = facing_plane(point, np.asarray(session.camera.eye, np.float64))
    return unproject_points(window_points, session.camera, r.width, r.height, plane, what="offset point",
                            plane_name="the plane facing the camera")


def surface_edit(character: Any, samples: SurfaceSamples, *, rings: int | None = None, radius: float | None = None,
                 geodesic: bool = False, profile: Any = None, offset_window: np.ndarray | None = None,
                 session: Any = None, stiffness: float = DEFAULT_STIFFNESS, keys: Any = None,
                 name: str = "", rest: np.ndarray | None = None) -> Any:
    """Build (not add) the SurfaceEdit of a surface stroke on ``character`` in its current pose: the region of
    interest of the samples (measured on the current deformed surface), the stroke fitted through their 3D
    places, and the kinematic targets from ``profile`` (engine.skinning.edits.Profile; "offset" needs
    ``offset_window``, the offset stroke's window points, and the ``session`` whose camera they were drawn
    with). ``rest`` (V,3): the control points to build on instead of the current deformed surface (the editor
    gives the surface without the edit when it changes the edit's region, `SurfaceEdit.rest_places`)."""
    from engine.input.strokes import Stroke, StrokeError
    from engine.skinning import roi
    from engine.skinning.edits import SurfaceEdit, offset_targets

    key = samples.key
    topo = character.topology(key)
    tri = np.asarray(topo.triangles, np.int64)
    x = np.asarray(character.vertices()[key], np.float64)[np.asarray(topo.display_of_control)] if rest is None \
        else np.asarray(rest, np.float64)
    region = roi.region_of_interest(topo, samples.faces, samples.barycentrics, rings=rings, radius=radius,
                                    geodesic=geodesic, positions=x)
    kin = region.kinematic
    pts = roi.surface_positions(x, tri, samples.faces, samples.barycentrics)
    attach, rot = character.edit_frame(key)
    common: dict[str, Any] = dict(passive=region.passive, static=region.static, stiffness=stiffness,
                  keys=np.asarray(keys if keys is not None else np.zeros((0, 2)), np.float64), name=name)
    try:
        stroke = Stroke.fit(pts, epsilon=1e-3)
    except StrokeError:  # every sample at one place (a click): the stroke's middle is everywhere
        stroke = None
    mid = pts[len(pts) // 2] if stroke is None else stroke.point(0.5)
    if profile is not None and profile.type == "offset":
        t = np.full(kin.size, 0.5) if stroke is None else np.array([stroke.closest(p)[0] for p in x[kin]])
        if stroke is None:
            raise ValueError("an offset profile needs a stroke with a length, not a single point")
        if session is None or offset_window is None:
            raise ValueError("an offset profile needs offset_window (window points) and the session drawn in")
        view = np.asarray(session.camera.target, np.float64) - np.asarray(session.camera.eye, np.float64)
        offset = Stroke.fit(plane_points(session, np.asarray(offset_window), mid), epsilon=1e-3)
        targets = offset_targets(x[kin], t, stroke, offset, reference=view)
        return SurfaceEdit.from_world(kin, targets, attach, rot, **common)
    face = int(samples.faces[len(samples.faces) // 2])
    if stroke is not None:  # the sample nearest the stroke's middle names the face whose normal lifts it
        face = int(samples.faces[int(np.argmin(np.linalg.norm(pts - mid, axis=1)))])
    a, b, c = x[tri[face]]
    normal = np.cross(b - a, c - a)
    # the profile spreads over the passive region (edits.py "Spread"): each passive vertex takes the stroke
    # parameter of the kinematic vertex nearest it and the smooth falloff to the static ring
    t, t_passive = region_params(stroke, x, region)
    return SurfaceEdit.from_profile(kin, x[kin], t, profile, attach, rot, normal=normal, **common,
                                    **profile_spread(topo, region, x, t_passive))


def region_params(stroke: Any, positions: np.ndarray, region: Any) -> tuple[np.ndarray, np.ndarray]:
    """Stroke parameters in [0, 1] of the kinematic and passive vertices of ``region`` on ``positions`` (V,3),
    measured along the stroke extended at both ends to the region's held ring: the arc position of each
    vertex's closest stroke point, past an end by its distance along the end's tangent, mapped so the static
    ring's extent along the stroke is [0, 1]. A profile (0 at t = 0 and 1) so rises from the region's border,
    not from the stroke's ends, where the handles would stand on a kink of its slope. ``stroke`` None (a click):
    0.5 everywhere."""
    kin = np.asarray(region.kinematic, np.int64)
    pas = np.asarray(region.passive, np.int64)
    if stroke is None:
        return np.full(kin.size, 0.5), np.full(pas.size, 0.5)
    x = np.asarray(positions, np.float64)
    length = max(float(stroke.length), 1e-300)
    p0, p1 = stroke.point(0.0), stroke.point(1.0)
    d0, d1 = stroke.tangent(0.0), stroke.tangent(1.0)

    table = np.linspace(0.0, 1.0, 257)
    table_pts = np.asarray(stroke.point(table), np.float64)

    def arc(idx: np.ndarray) -> np.ndarray:
        """Arc positions of vertices ``idx`` (the closest stroke point, as Stroke.closest: a dense table,
        then 33 samples between its neighbours; vectorised over the vertices)."""
        q = x[idx]
        i = np.concatenate([np.argmin(((c[:, None, :] - table_pts[None]) ** 2).sum(-1), axis=1)  # in chunks:
                            for c in np.array_split(q, max(1, -(-q.shape[0] // 2048)))])  # bounded memory
        lo, hi = table[np.maximum(i - 1, 0)], table[np.minimum(i + 1, table.size - 1)]
        fine = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, 33)[None]
        pts = np.asarray(stroke.point(fine.reshape(-1)), np.float64).reshape(idx.size, 33, 3)
        t = fine[np.arange(idx.size), np.argmin(((pts - q[:, None, :]) ** 2).sum(-1), axis=1)]
        before = np.maximum((q - p0) @ -d0, 0.0) * (t <= 0.0)
        after = np.maximum((q - p1) @ d1, 0.0) * (t >= 1.0)
        return t * length - before + after

    static = np.asarray(region.static, np.int64)
    ends = arc(static) if static.size else arc(np.concatenate([kin, pas]))
    lo, hi = min(float(ends.min()), 0.0), max(float(ends.max()), length)
    span = hi - lo

    def param(idx: np.ndarray) -> np.ndarray:
        return np.clip((arc(idx) - lo) / span, 0.0, 1.0) if idx.size else np.zeros(0)

    return param(kin), param(pas)


def profile_spread(topology: Any, region: Any, positions: np.ndarray, param: np.ndarray) -> dict[str, Any]:
    """The keyword arguments of ``SurfaceEdit.from_profile`` that spread a profile over the passive region of
    ``region`` (engine.skinning.roi.Region) measured on ``positions`` (V,3), for passive stroke parameters
    ``param`` (P,) (`region_params`): each passive vertex's place and the smooth falloff to the static ring
    (roi.passive_falloff). Empty without passive or kinematic vertices."""
    from engine.skinning import roi

    kin, pas = np.asarray(region.kinematic), np.asarray(region.passive)
    if pas.size == 0 or kin.size == 0:
        return {}
    x = np.asarray(positions, np.float64)
    return dict(passive_rest=x[pas], passive_param=np.asarray(param, np.float64),
                passive_weight=roi.passive_falloff(topology, region, positions=x))
