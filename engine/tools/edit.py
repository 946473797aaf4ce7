"""`python main.py edit ASSET --strokes FILE.json`: surface edits from strokes drawn on the skin (issue 12, research
5.2 and 7.4), applied by the spring deformer, exported in the `export-frame` contract.

    python main.py edit ASSET --strokes FILE.json [--clip C --time T] [--deformer spring]
                   --export-frame OUT.npz [--screenshot S.png] [--save EDITS.json] [--load EDITS.json]
                   [--device gpu|cpu] [--debug-silhouette PNG]

FILE.json is the `pose` command's strokes file (engine/input/strokefile.py: version, camera) with strokes of
role "surface" or "silhouette" (below). A surface stroke's points are window pixels (row 0 at the
top) or world points (projected through the file's camera); either way they are densified to one sample per
pixel and queried through the G-buffer rendered with the file's camera at that clip time: the samples are
(mesh, triangle, barycentric) points of one skinned primitive. Its other keys:

  "rings": N                       passive set N edges around the kinematic one (default 4), or
  "radius": METRES [, "geodesic": true]   passive set within a Euclidean (or along-edge) distance
  "profile": {"type": "bulge", "height": METRES [, "ease": NAME, "ramp": false, "direction": "normal"]}
             {"type": "sine", "height": METRES [, "waves": W, "speed": WAVES_PER_S, "direction": ...]}
             {"type": "offset", "points": [[px, py], ...]}   (the offset stroke, same space as the stroke)
  "stiffness": K (default 5), "keys": [[t, w], ...] (weight over clip time), "name": "..."

A "silhouette" stroke is an accent stroke drawn near an outline of the character (research 7.3): the silhouette
chain between the outline vertices nearest its two ends is moved onto it by parameter (each vertex keeps its
depth), the region grows from the chain by "rings"/"radius" as above; optional "channel" ("normal", the default,
"depth" or "position": the G-buffer channel the Laplacian edge filter runs on), "threshold" and "smooth" (true:
the whole region gets targets, the chain's displacement spread smoothly, see :func:`silhouette_edit`: no ridge
along the outline). The filter runs
on the GPU on the gpu device (engine/render/silhouette.py, only the silhouette pixels read back), with the numpy
reference (engine.skinning.roi) on the cpu device. ``--debug-silhouette PNG`` writes the filter's output over
the unedited frame (the renderer's "silhouette" view; the first silhouette stroke's channel and threshold).

``--device cpu`` applies the edits with the numpy spring reference instead of the GPU spring stage (the same
edit forces; the vertices agree within float32 precision).

A bulge's height is along the surface normal at the stroke's middle (outward by the triangle's winding); an
offset stroke is drawn on the plane through the stroke's middle facing the camera and carries the kinematic
vertices as posing carries joints. Misses at the stroke's ends are trimmed; a stroke that hits no surface,
leaves the surface in its middle or crosses to another mesh is refused, as are an unknown profile type and a
non-finite height (exit 2, one `error:` line).

``--solver laplacian`` solves the edits once by Laplacian surface editing on the CPU (the research's baseline,
engine.skinning.laplacian) instead of the spring edit forces (``springs``, the default): the session then runs
on the cpu device and shows the solved vertices.

OUT.npz: the deformed world-space positions of every skinned primitive, float32 (N,3) under
``node{n}_mesh{m}_prim{p}`` (the `export-frame` contract), and per such key K the int32 glTF vertex indices of
the regions of interest of its edits: ``K_kinematic``, ``K_passive``, ``K_static`` (the union over its edits;
static = the vertices held, empty arrays for a primitive without edits). ``--save`` writes the edits as a
versioned JSON file (engine.skinning.edits.edits_document), which ``--load`` (here) or
``Character.load_edits`` reads back.
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.components import PrimitiveKey
from engine.render.camera import Camera
from engine.render.silhouette import SILHOUETTE_CHANNELS

__all__ = ["edit_command", "EDIT_ROLES", "SILHOUETTE_CHANNELS", "SurfaceSamples", "stroke_samples", "surface_edit",
           "silhouette_edit", "silhouette_pixels"]

EDIT_ROLES = ("surface", "silhouette")
_STROKE_KEYS = ("rings", "radius", "geodesic", "profile", "stiffness", "keys", "name")
_SILHOUETTE_KEYS = ("rings", "radius", "geodesic", "channel", "threshold", "stiffness", "keys", "name", "smooth")
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


def _plane_points(session: Any, window_points: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Window points unprojected onto the plane through ``point`` facing the camera."""
    from engine.input.rays import facing_plane, ray_plane_hit

    plane = facing_plane(point, np.asarray(session.camera.eye, np.float64))
    out = []
    for x, y in np.asarray(window_points, np.float64):
        hit = ray_plane_hit(session.ray(x, y), plane)
        if hit is None:
            raise ValueError(f"offset point ({x:g}, {y:g}) does not reach the plane facing the camera")
        out.append(hit)
    return np.asarray(out)


def surface_edit(character: Any, samples: SurfaceSamples, *, rings: int | None = None, radius: float | None = None,
                 geodesic: bool = False, profile: Any = None, offset_window: np.ndarray | None = None,
                 session: Any = None, stiffness: float = DEFAULT_STIFFNESS, keys: Any = None,
                 name: str = "") -> Any:
    """Build (not add) the SurfaceEdit of a surface stroke on ``character`` in its current pose: the region of
    interest of the samples (measured on the current deformed surface), the stroke fitted through their 3D
    places, and the kinematic targets from ``profile`` (engine.skinning.edits.Profile; "offset" needs
    ``offset_window``, the offset stroke's window points, and the ``session`` whose camera they were drawn
    with)."""
    from engine.input.strokes import Stroke, StrokeError
    from engine.skinning import roi
    from engine.skinning.edits import SurfaceEdit, offset_targets

    key = samples.key
    topo = character.topology(key)
    tri = np.asarray(topo.triangles, np.int64)
    x = np.asarray(character.vertices()[key], np.float64)[np.asarray(topo.display_of_control)]
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
    t = np.full(kin.size, 0.5) if stroke is None else np.array([stroke.closest(p)[0] for p in x[kin]])
    mid = pts[len(pts) // 2] if stroke is None else stroke.point(0.5)
    if profile is not None and profile.type == "offset":
        if stroke is None:
            raise ValueError("an offset profile needs a stroke with a length, not a single point")
        if session is None or offset_window is None:
            raise ValueError("an offset profile needs offset_window (window points) and the session drawn in")
        view = np.asarray(session.camera.target, np.float64) - np.asarray(session.camera.eye, np.float64)
        offset = Stroke.fit(_plane_points(session, np.asarray(offset_window), mid), epsilon=1e-3)
        targets = offset_targets(x[kin], t, stroke, offset, reference=view)
        return SurfaceEdit.from_world(kin, targets, attach, rot, **common)
    face = int(samples.faces[len(samples.faces) // 2])
    if stroke is not None:  # the sample nearest the stroke's middle names the face whose normal lifts it
        face = int(samples.faces[int(np.argmin(np.linalg.norm(pts - mid, axis=1)))])
    a, b, c = x[tri[face]]
    normal = np.cross(b - a, c - a)
    return SurfaceEdit.from_profile(kin, x[kin], t, profile, attach, rot, normal=normal, **common)


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
    px = _window(session, x[sil], "world")
    start = int(sil[np.argmin(np.linalg.norm(px - stroke_px[0], axis=1))])
    end = int(sil[np.argmin(np.linalg.norm(px - stroke_px[-1], axis=1))])
    if start == end:
        raise ValueError("the accent stroke's ends are nearest the same silhouette vertex: draw it along the outline")
    chain = roi.silhouette_chain(topo, sil, start, end, positions=x)
    seg = np.linalg.norm(np.diff(x[chain], axis=0), axis=1)
    s = np.r_[0.0, np.cumsum(seg)] / max(float(seg.sum()), 1e-12)
    accent = Stroke.fit(stroke_px, epsilon=0.5)
    targets = np.array([_plane_points(session, accent.point(si)[None], x[v])[0] for si, v in zip(s, chain)])
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


# ---- the command ---------------------------------------------------------------------------------------------
def _stroke_options(spec: Any) -> dict[str, Any]:
    """The surface stroke's own keys, validated (ValueError naming ``strokes[i].key``)."""
    from engine.skinning.edits import Profile

    where, extra = spec.where, dict(spec.extra)
    allowed = _SILHOUETTE_KEYS if spec.role == "silhouette" else _STROKE_KEYS
    unknown = sorted(set(extra) - set(allowed))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (a {spec.role} stroke takes {', '.join(allowed)})")
    opts: dict[str, Any] = {}
    if "rings" in extra:
        r = extra["rings"]
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= 1000:
            raise ValueError(f"{where}.rings: expected a whole number of edges in [0, 1000], got {r!r}")
        opts["rings"] = r
    if "radius" in extra:
        r = extra["radius"]
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not (math.isfinite(r) and r > 0):
            raise ValueError(f"{where}.radius: expected a finite number of metres > 0, got {r!r}")
        opts["radius"] = float(r)
    if "rings" in opts and "radius" in opts:
        raise ValueError(f"{where}: give rings or radius, not both")
    if "geodesic" in extra:
        if not isinstance(extra["geodesic"], bool):
            raise ValueError(f"{where}.geodesic: expected true or false, got {extra['geodesic']!r}")
        if extra["geodesic"] and "radius" not in opts:
            raise ValueError(f"{where}.geodesic: a geodesic region needs a radius")
        opts["geodesic"] = extra["geodesic"]
    if "stiffness" in extra:
        k = extra["stiffness"]
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not (math.isfinite(k) and k >= 0):
            raise ValueError(f"{where}.stiffness: expected a finite number >= 0, got {k!r}")
        opts["stiffness"] = float(k)
    if "keys" in extra:
        opts["keys"] = extra["keys"]
    if "name" in extra:
        opts["name"] = str(extra["name"])
    if spec.role == "silhouette":
        if "channel" in extra:
            if extra["channel"] not in SILHOUETTE_CHANNELS:
                raise ValueError(f"{where}.channel: unknown channel {extra['channel']!r}; valid: "
                                 f"{', '.join(SILHOUETTE_CHANNELS)}")
            opts["channel"] = extra["channel"]
        if "threshold" in extra:
            t = extra["threshold"]
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not (math.isfinite(t) and t > 0):
                raise ValueError(f"{where}.threshold: expected a finite number > 0, got {t!r}")
            opts["threshold"] = float(t)
        if "smooth" in extra:
            if not isinstance(extra["smooth"], bool):
                raise ValueError(f"{where}.smooth: expected true or false, got {extra['smooth']!r}")
            opts["smooth"] = extra["smooth"]
        return opts
    raw = extra.get("profile")
    if raw is None:
        raise ValueError(f"{where}: missing 'profile' (an object with type bulge, sine or offset)")
    if isinstance(raw, dict) and raw.get("type") == "offset":
        if set(raw) - {"type", "points"}:
            bad = sorted(set(raw) - {"type", "points"})[0]
            raise ValueError(f"{where}.profile: unknown key {bad!r} for an offset profile; valid: points, type")
        pts = raw.get("points")
        dim = 2 if spec.space == "window" else 3
        arr = np.asarray(pts, np.float64) if isinstance(pts, list) else np.zeros((0,))
        if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] != dim or not np.isfinite(arr).all():
            raise ValueError(f"{where}.profile.points: expected at least two points of {dim} finite numbers "
                             f"({spec.space} space, as the stroke), got {pts!r}")
        opts["offset_points"] = arr
        opts["profile"] = Profile("offset")
    else:
        opts["profile"] = Profile.from_dict(raw, f"{where}.profile")
    return opts


def _window(session: Any, points: np.ndarray, space: str) -> np.ndarray:
    """Stroke points as window pixels: as given, or world points projected through the session's camera."""
    if space == "window":
        return np.asarray(points, np.float64)
    cam, r = session.camera, session.renderer
    p = np.c_[np.asarray(points, np.float64), np.ones(len(points))]
    clip = p @ (np.asarray(cam.projection_for(r.width / r.height), np.float64) @ np.asarray(cam.view)).T
    if np.any(clip[:, 3] <= 0):
        raise ValueError("a world-space stroke point is behind the camera")
    ndc = clip[:, :2] / clip[:, 3:4]
    return np.c_[(ndc[:, 0] + 1) * 0.5 * r.width, (1 - ndc[:, 1]) * 0.5 * r.height]


def _camera(spec: Any, lo: np.ndarray, hi: np.ndarray) -> Any:
    """The strokes file's camera with near/far fitted to the deformed bounds (depth precision)."""
    centre = (lo + hi) / 2
    radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
    dist = float(np.linalg.norm(spec.eye - centre))
    near = max(1e-3, 0.5 * (dist - radius)) if dist > 2 * radius else max(1e-3, 0.01 * radius)
    return Camera.from_spec(spec, near=near, far=max(near * 10, 3.0 * (dist + radius)))


def _region_indices(character: Any, stacks: dict[PrimitiveKey, Any]) -> dict[str, np.ndarray]:
    """Per skinned primitive, the export keys K_kinematic / K_passive / K_static (int32 glTF vertex indices)."""
    out: dict[str, np.ndarray] = {}
    for key in character.skinned_primitives:
        topo = character.topology(key)
        n = topo.n_control
        sets = {name: np.zeros(n, bool) for name in ("kinematic", "passive", "static")}
        stack = stacks.get(key)
        if stack is not None and len(stack):
            for e in stack:
                sets["kinematic"][e.kinematic] = True
                sets["passive"][e.passive] = True
            sets["passive"] &= ~sets["kinematic"]
            sets["static"] = stack.held(n)
        cod = np.asarray(topo.control_of_display)
        for name, mask in sets.items():
            out[f"{key.export_key}_{name}"] = np.flatnonzero(mask[cod]).astype(np.int32)
    return out


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


def edit_command(args: argparse.Namespace) -> int:
    from engine import Session
    from engine.input.strokefile import load_stroke_file
    from engine.scene import quiet_load, require_finite
    from engine.skinning.edits import EditStack, edits_document
    from engine.tools.export_frame import check_time, deformer_config

    out = Path(args.export_frame)
    if out.suffix.lower() != ".npz":
        raise ValueError(f"--export-frame must end in .npz, got {out.name!r}")
    for opt, suffix in (("screenshot", ".png"), ("save", ".json"), ("load", ".json"), ("debug_silhouette", ".png")):
        v = getattr(args, opt, None)
        if v is not None and Path(v).suffix.lower() != suffix:
            raise ValueError(f"--{opt.replace('_', '-')} must end in {suffix}, got {Path(v).name!r}")
    if args.strokes is None and args.load is None:
        raise ValueError("give --strokes FILE.json (strokes to turn into edits) or --load EDITS.json")
    laplacian = args.solver == "laplacian"
    if laplacian and args.load is not None:
        raise ValueError("--load replays edits through the springs; it cannot be combined with --solver laplacian")
    check_time(args.time)
    sf = None
    if args.strokes is not None:
        sf = load_stroke_file(args.strokes, roles=EDIT_ROLES, brush_radius=False)
        if not sf.strokes:
            raise ValueError(f"{Path(args.strokes).name}: strokes: no surface or silhouette stroke")
        if sf.camera is None:
            raise ValueError(f"{Path(args.strokes).name}: surface strokes are queried through the G-buffer: "
                             "the file needs a 'camera'")
        options = [_stroke_options(spec) for spec in sf.strokes]
    loaded = quiet_load(args.asset)
    w, h = (sf.camera.width, sf.camera.height) if sf is not None and sf.camera is not None else (1280, 720)
    with Session(device="cpu" if laplacian else args.device, width=w, height=h, deformer=args.deformer,
                 config=deformer_config(args), strict=True) as s:
        ch = s.spawn(loaded, clip=args.clip, time=args.time, speed=0.0, mode="clamp")
        require_finite(ch.vertices())
        bounds, renderer = s.bounds(), s.renderer
        if bounds is None or renderer is None:
            raise ValueError("the asset's default scene has no meshes to edit")
        lo, hi = bounds
        renderer.look.ground_height = float(lo[1])
        renderer.invalidate()
        if sf is not None and sf.camera is not None:
            s.camera = _camera(sf.camera, lo, hi)
        else:
            s.fit_camera()
        s.render()
        made = []
        if sf is not None:
            # every stroke sees the same unedited frame: the G-buffer queries first, then the edits
            surface = [(spec, opts) for spec, opts in zip(sf.strokes, options) if spec.role == "surface"]
            found = [stroke_samples(s, _window(s, spec.points, spec.space), spec.where) for spec, _ in surface]
            for spec, opts in zip(sf.strokes, options):
                if spec.role != "silhouette":
                    continue
                try:
                    made.append(silhouette_edit(s, ch, _window(s, spec.points, spec.space), **opts))
                except ValueError as e:
                    raise ValueError(f"{spec.where}: {e}") from None
            for (spec, opts), smp in zip(surface, found):
                if smp.entity != ch.entity:
                    raise ValueError(f"{spec.where}: the stroke is not on the character")
                offset = opts.pop("offset_points", None)
                if offset is not None:
                    offset = _window(s, offset, spec.space)
                try:
                    made.append((smp.key, surface_edit(ch, smp, offset_window=offset, session=s, **opts)))
                except ValueError as e:
                    raise ValueError(f"{spec.where}: {e}") from None
        debug_png = getattr(args, "debug_silhouette", None)
        if debug_png is not None:  # the filter of the frame the strokes were drawn on (the first silhouette's)
            sil = [o for spec, o in zip(sf.strokes, options) if spec.role == "silhouette"] if sf is not None else []
            first = sil[0] if sil else {}
            img = s.silhouette_image(first.get("channel", "normal"), first.get("threshold"))
            from PIL import Image

            Path(debug_png).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(img, "RGBA").save(debug_png)
        stacks: dict[PrimitiveKey, EditStack] = {}
        if laplacian:  # the CPU baseline: solved once, shown instead of the deformer's output
            for key, edit in made:
                stacks.setdefault(key, EditStack()).add(edit)
            ch.show_vertices(laplacian_positions(ch, stacks, float(args.time)))
        else:
            for key, edit in made:
                ch.add_edit(key, edit)
            if args.load is not None:
                ch.load_edits(args.load)
            stacks = ch.edits
        s.render()
        frames = {k: v for k, v in ch.vertices().items() if k in set(ch.skinned_primitives)}
        require_finite(frames)
        arrays: dict[str, Any] = {k.export_key: np.asarray(v, np.float32) for k, v in frames.items()}
        arrays.update(_region_indices(ch, stacks))
        out.parent.mkdir(parents=True, exist_ok=True)
        np.savez(out, **arrays)
        if args.screenshot is not None:
            s.save_png(args.screenshot)
        if args.save is not None:
            doc = edits_document({k.export_key: st for k, st in stacks.items() if len(st)}, asset=ch.name,
                                 clip=str(args.clip), time=float(args.time))
            Path(args.save).parent.mkdir(parents=True, exist_ok=True)
            Path(args.save).write_text(json.dumps(doc, indent=1) + "\n")
        n_edits = sum(len(st) for st in stacks.values())
    extra = "".join(f" and {v}" for v in (args.screenshot, args.save, getattr(args, "debug_silhouette", None))
                    if v is not None)
    print(f"wrote {out}{extra}: {n_edits} surface edit(s) on {len(frames)} skinned primitive instance(s)")
    return 0
