"""Contact term of the spring deformer (research 8.2, "collisions" as future work): numpy reference.

Past about 135 deg the straight parts of a bent limb meet beyond the joint blend (docs/springs.md, "Joint blending
and why") and their inner sides pass through each other. The contact term pushes such surface points apart
after the spring iterations (`SpringParams.contact`), in Jacobi passes (every pass reads the last pass's
positions only):

1. `contact_passes` *smoothed* passes: each point's push (below) is replaced CONTACT_SMOOTH times by the mean
   push of its mesh neighbours before it is applied, so a crossing is opened by a smooth dent over a few rings
   instead of a step at the edge of the contact patch (the plain push alone creased the 150 deg bends of the
   family more than LBS does);
2. `contact_passes` *plain* passes: the pushes as they are, which leave the facing sheets the full thickness
   apart where the smoothed passes left them closer.

Passes stop at the first one that finds no pair (every later pass would leave the points as they are), so a
pose where nothing meets costs one pass and leaves the springs' result unchanged. When a pass moved points:

3. the *volume restore* (`restore_volume`, issue 26 item 3): the passes press the inner sides flat and run after
   the spring iterations, so no pressure answers them (a 150 deg bend of the family lost up to 7.6 % of its volume
   to them); the volume their total displacement took is handed over the mesh edges to the points that face no
   other sheet and do not face the way the dents pushed (the flanks and the outer side of the bend), which move out
   along their scale-vector directions: to first order the enclosed volume is kept, like flesh pressed at the
   inside of an elbow.

Everything is measured in the mesh's own unit, the mean bind edge length e (`mean_edge_length`), so no number
is tuned to one tube. Positions and attachments handed in must be in the bind mesh's units: for a mesh given in
other units than its joints are posed in (a mesh under a scaled armature) `SpringDeformer.solve` runs the passes
in bind units, before its result is scaled back by the pose unit (`springs.pose_unit`; the GPU stage alike):

* thickness h = `SpringParams.contact_thickness` x e: the gap kept between two facing sheets;
* reach = max(CONTACT_REACH, contact_thickness + CONTACT_LATERAL) x e: the search radius (and the hashed grid's
  cell on the GPU: every point within reach lies in the 27 cells around a point's own cell);
* lateral L = CONTACT_LATERAL x e: how far sideways two points may sit and still count as facing each other;
* exclusion X = CONTACT_EXCLUDE x e: points closer than this at bind are the same sheet (the n-ring
  neighbourhood measured at bind, which also keeps apart nothing that touched at bind: those surfaces may
  stay as close as they were).

For a pair (i, j) within reach, with scale-vector directions n_i = unit(x_i - a_i) (a: the posed attachments of
the spring frame, the spring model's own outward direction, reliable even after a point went through the
other sheet) the separating direction is m = unit(n_j - n_i) (from j's sheet towards i's), the signed gap
g = (x_i - x_j) . m (negative: the sheets crossed) and the lateral offset l = |x_i - x_j - g m|. The pair pushes
i by c = (h - g)+ / 2 m and j by -c (symmetric: the contact plane stays midway) with the weight

    w = w_face * w_side * w_lat * w_bind * w_reach, all continuous in the positions:
    w_face  = clamp(-2 n_i . n_j, 0, 1)        the sheets face each other (not the two sides of one tube)
    w_side  = clamp(min(u_i, u_j) / e, 0, 1)   u_i = (x_j - a_i) . n_i: j lies on i's side of i's bone (and
                                               back), so points on the far side of a limb are never pulled in
    w_lat   = clamp(1 - (l / L)^2, 0, 1)
    w_bind  = clamp((|X_i - X_j| - X) / e, 0, 1)   X: bind positions
    w_reach = clamp((reach - |x_i - x_j|) / e, 0, 1)

and a point's push is sum_pairs w c / max(sum w, 1) (a weighted mean where several pairs act, the full push of
a lone pair). The bind pose is a fixed point (no two points closer than X at bind are paired, and facing
sheets further apart keep g >= h). The GPU stage (`engine.skinning.gpu.stages.contact`, shaders
`deform/contact_grid.comp`, `deform/contact.comp`, `deform/contact_smooth.comp`) finds the pairs with a hashed
uniform grid of the deformed points (cell = reach) and computes the same sums in float32; the restore is its last
pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from engine.skinning.types import MeshTopology

__all__ = ["CONTACT_MAX_PASSES", "CONTACT_REACH", "CONTACT_LATERAL", "CONTACT_EXCLUDE", "CONTACT_SMOOTH",
           "CONTACT_SPREAD", "ContactRest", "mean_edge_length", "contact_rest", "contact_pairs", "smooth_pushes",
           "CONTACT_ROUNDS", "RESTORE_FADE", "point_areas", "facing_share", "restore_volume", "contact_pass",
           "resolve_contacts"]

CONTACT_MAX_PASSES = 64
"""Upper bound of `SpringParams.contact_passes` (the GPU stage sizes its per-pass flags for it)."""
CONTACT_REACH = 3.0
"""Search radius in mean edge lengths (at least thickness + CONTACT_LATERAL): how deep a crossing is found."""
CONTACT_LATERAL = 1.0
"""Largest sideways offset of a facing pair, in mean edge lengths (one edge: the nearest points across)."""
CONTACT_EXCLUDE = 3.0
"""Points closer than this many mean edge lengths at bind never push each other (their n-ring at bind)."""
CONTACT_SMOOTH = 3
"""Neighbour-mean smoothings of the pushes in a smoothed pass (the dent spreads over about this many rings)."""
CONTACT_SPREAD = 12
"""Edge steps over which the volume the contact passes took is given back (`restore_volume`): the flesh pushed in
comes back out as a bulge within about this many rings of the dent."""
CONTACT_ROUNDS = 2
"""Rounds of `restore_volume`'s hand-out (the second evens out the ridges the first leaves nearest the dent)."""
RESTORE_FADE = 1e-3
"""The restore's dent direction fades out below this share of the thickness (`restore_volume`)."""


@dataclass(frozen=True)
class ContactRest:
    """What the contact term needs from the bind pose: bind points (V,3), the mesh's edges (E,2) (the neighbours
    the smoothed passes average over), per point the number of those edges (V,) and the area proxy (V,) of
    `point_areas`, and the lengths (bind units) of the module docstring: mean edge length, thickness, reach,
    lateral offset and exclusion distance; passes per phase."""

    bind: np.ndarray
    edges: np.ndarray
    degree: np.ndarray
    area: np.ndarray
    edge: float
    thickness: float
    reach: float
    lateral: float
    exclude: float
    passes: int

    @property
    def n_vertices(self) -> int:
        return int(self.bind.shape[0])


def mean_edge_length(topology: MeshTopology) -> float:
    """Mean bind length of the control mesh's edges (1 for a mesh without edges of positive length)."""
    x = np.asarray(topology.positions, np.float64)
    e = np.asarray(topology.edges, np.int64).reshape(-1, 2)
    if e.shape[0] == 0:
        return 1.0
    length = np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1)
    length = length[length > 0.0]
    return float(length.mean()) if length.size else 1.0


def contact_rest(topology: MeshTopology, thickness: float, passes: int) -> ContactRest:
    """The contact rest state of a control mesh for `thickness` (in mean edge lengths, > 0) and `passes`."""
    if isinstance(thickness, bool) or not isinstance(thickness, (int, float)) or not thickness > 0:
        raise ValueError(f"contact thickness = {thickness!r}; valid: a number > 0 (mean edge lengths)")
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 1:
        raise ValueError(f"contact passes = {passes!r}; valid: an integer >= 1")
    e = mean_edge_length(topology)
    t = float(thickness)
    edges = np.asarray(topology.edges, np.int64).reshape(-1, 2)
    bind = np.asarray(topology.positions, np.float64)
    degree = np.bincount(edges.ravel(), minlength=bind.shape[0]).astype(np.float64)
    return ContactRest(bind=bind, edges=edges, degree=degree, area=point_areas(bind, edges), edge=e, thickness=t * e,
                       reach=max(CONTACT_REACH, t + CONTACT_LATERAL) * e, lateral=CONTACT_LATERAL * e,
                       exclude=CONTACT_EXCLUDE * e, passes=int(passes))


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.sqrt(np.einsum("ij,ij->i", v, v))
    ok = n > 0.0
    return v * (ok / np.where(ok, n, 1.0))[:, None]


def contact_pairs(x: np.ndarray, attach: np.ndarray, rest: ContactRest, *, facing: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pairs (K,2) i < j, weights (K,), pushes c (K,3) on the first point of each pair; the second gets -c) of
    the pairs with a positive weight and a positive push at positions x (V,3) and posed attachments (V,3);
    facing: every pair with a positive weight, pushing or not (`facing_share`)."""
    x = np.asarray(x, np.float64)
    attach = np.asarray(attach, np.float64)
    none = (np.zeros((0, 2), np.int64), np.zeros(0), np.zeros((0, 3)))
    if x.shape[0] < 2:
        return none
    pr = cKDTree(x).query_pairs(rest.reach, output_type="ndarray").astype(np.int64)
    if pr.shape[0] == 0:
        return none
    i, j = pr[:, 0], pr[:, 1]
    e = rest.edge
    d = x[i] - x[j]
    dist = np.sqrt(np.einsum("ij,ij->i", d, d))
    w = np.clip((rest.reach - dist) / e, 0.0, 1.0)
    d0 = rest.bind[i] - rest.bind[j]
    w *= np.clip((np.sqrt(np.einsum("ij,ij->i", d0, d0)) - rest.exclude) / e, 0.0, 1.0)
    n = _unit(x - attach)
    ni, nj = n[i], n[j]
    w *= np.clip(-2.0 * np.einsum("ij,ij->i", ni, nj), 0.0, 1.0)
    u_i = np.einsum("ij,ij->i", x[j] - attach[i], ni)
    u_j = np.einsum("ij,ij->i", x[i] - attach[j], nj)
    w *= np.clip(np.minimum(u_i, u_j) / e, 0.0, 1.0)
    m = _unit(nj - ni)
    g = np.einsum("ij,ij->i", d, m)
    lat = d - g[:, None] * m
    w *= np.clip(1.0 - np.einsum("ij,ij->i", lat, lat) / rest.lateral ** 2, 0.0, 1.0)
    push = 0.5 * np.maximum(rest.thickness - g, 0.0)
    keep = (w > 0.0) & ((push > 0.0) | facing)
    return pr[keep], w[keep], push[keep, None] * m[keep]


def facing_share(x: np.ndarray, attach: np.ndarray, rest: ContactRest) -> np.ndarray:
    """(V,) how much each point faces another sheet within reach: min(sum of its pairs' weights, 1), pairs that
    push and pairs whose gap is already wider than the thickness alike (0: nothing faces it)."""
    pr, w, _ = contact_pairs(x, attach, rest, facing=True)
    return np.minimum(np.bincount(pr.ravel(), weights=np.repeat(w, 2), minlength=x.shape[0]), 1.0)


def smooth_pushes(push: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """One smoothing of per-point pushes (V,C) (C = 3: vectors; 1: `spread_volume`'s shares): each point takes
    the mean push of its edge neighbours (a point without neighbours keeps its own)."""
    n = push.shape[0]
    e = np.asarray(edges, np.int64).reshape(-1, 2)
    deg = np.bincount(e.ravel(), minlength=n).astype(np.float64)
    acc = np.empty_like(push)
    for a in range(push.shape[1]):
        acc[:, a] = (np.bincount(e[:, 0], weights=push[e[:, 1], a], minlength=n)
                     + np.bincount(e[:, 1], weights=push[e[:, 0], a], minlength=n))
    return np.where(deg[:, None] > 0, acc / np.maximum(deg, 1.0)[:, None], push)


def point_areas(bind: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(V,) area proxy of every point: the mean squared bind length of its edges (0 for a point without edges).
    Only ratios between neighbouring points matter (`spread_volume`), so no constant factor is needed."""
    n = bind.shape[0]
    e = np.asarray(edges, np.int64).reshape(-1, 2)
    sq = np.einsum("ij,ij->i", bind[e[:, 0]] - bind[e[:, 1]], bind[e[:, 0]] - bind[e[:, 1]])
    deg = np.bincount(e.ravel(), minlength=n).astype(np.float64)
    tot = np.bincount(e[:, 0], weights=sq, minlength=n) + np.bincount(e[:, 1], weights=sq, minlength=n)
    return tot / np.maximum(deg, 1.0)


def restore_volume(dent: np.ndarray, x: np.ndarray, attach: np.ndarray, rest: ContactRest) -> np.ndarray:
    """(V,3) outward offsets (along n = unit(x - a)) that give back, around it, the volume the contact passes
    took: dent (V,3) is their total displacement, x (V,3) the positions after them. Point i's dent took the
    volume q_i = A_i delta_i (delta_i = -dent_i . n_i; A: `point_areas`). The receivers

        c = S^CONTACT_SMOOTH (1 - facing) * clamp(1 + 2 n . D / max(|D|, RESTORE_FADE h), 0, 1),
        D = S^CONTACT_SPREAD dent

    (S: the neighbour mean of `smooth_pushes`; facing: `facing_share`) are the points that face no other sheet
    and whose normal does not point the way the dents around them pushed (the flanks and the outer side of a
    bend, not the inner side next to the contact). CONTACT_ROUNDS times the volume is handed out to them: with
    P = (A D^-1)^CONTACT_SPREAD the mass-preserving spread over the edges (adjacency A, degrees D; its
    transpose is S^CONTACT_SPREAD), point i hands q_i to receiver k in proportion to P_ki c_k, that is
    q_k <- c_k (P u)_k with u_i = q_i / (S^CONTACT_SPREAD c)_i, which keeps sum q exactly (a dent with no
    receiver within reach keeps its volume away); the second round evens the first's ridges out. Receiver k then
    moves out by q_k / A_k: to first order the dents and the offsets keep the enclosed volume. Zero dents give
    exactly zero offsets; points without edges (or area) take part in nothing."""
    x = np.asarray(x, np.float64)
    dent = np.asarray(dent, np.float64)
    n = _unit(x - np.asarray(attach, np.float64))
    deg, area = rest.degree, rest.area
    ok = (deg > 0) & (area > 0)
    inv_deg = np.where(ok, 1.0 / np.maximum(deg, 1.0), 0.0)
    inv_area = np.where(ok, 1.0 / np.where(ok, area, 1.0), 0.0)

    def mean(v: np.ndarray) -> np.ndarray:
        return smooth_pushes(v[:, None], rest.edges)[:, 0]

    c = 1.0 - facing_share(x, attach, rest)
    for _ in range(CONTACT_SMOOTH):
        c = mean(c)
    side = dent
    for _ in range(CONTACT_SPREAD):
        side = smooth_pushes(side, rest.edges)
    # the dents' direction, faded out where they are tinier than RESTORE_FADE x the thickness: continuous where
    # opposite dents cancel (float32 and float64 may disagree there on the sign of what is left)
    fade = np.maximum(np.sqrt(np.einsum("ij,ij->i", side, side)), RESTORE_FADE * rest.thickness)
    c = c * np.clip(1.0 + 2.0 * np.einsum("ij,ij->i", n, side) / fade, 0.0, 1.0)
    z = c
    for _ in range(CONTACT_SPREAD):
        z = mean(z)
    q = np.where(ok, area * -np.einsum("ij,ij->i", dent, n), 0.0)
    for _ in range(CONTACT_ROUNDS):
        share = np.where(z > 0.0, q / np.where(z > 0.0, z, 1.0), 0.0) * inv_deg  # u_i / degree_i
        for _ in range(CONTACT_SPREAD):
            share = mean(share)
        q = c * share * deg
    return (q * inv_area)[:, None] * n


def contact_pass(x: np.ndarray, attach: np.ndarray, rest: ContactRest, *, smooth: bool = False
                 ) -> tuple[np.ndarray, int]:
    """One Jacobi pass: (new positions (V,3) float64, number of acting pairs); smooth: the pushes smoothed
    CONTACT_SMOOTH times (`smooth_pushes`) before they are applied."""
    x = np.asarray(x, np.float64)
    pr, w, c = contact_pairs(x, attach, rest)
    if pr.shape[0] == 0:
        return x.copy(), 0
    n = x.shape[0]
    acc = np.zeros((n, 3))
    for a in range(3):
        acc[:, a] = (np.bincount(pr[:, 0], weights=w * c[:, a], minlength=n)
                     - np.bincount(pr[:, 1], weights=w * c[:, a], minlength=n))
    ws = np.bincount(pr.ravel(), weights=np.repeat(w, 2), minlength=n)
    push = acc / np.maximum(ws, 1.0)[:, None]
    if smooth:
        for _ in range(CONTACT_SMOOTH):
            push = smooth_pushes(push, rest.edges)
    return x + push, int(pr.shape[0])


def resolve_contacts(x: np.ndarray, attach: np.ndarray, rest: ContactRest) -> tuple[np.ndarray, int]:
    """`rest.passes` smoothed then `rest.passes` plain contact passes from x, stopping at the first pass that
    finds no pair, then (when a pass moved points) the volume they took given back (`restore_volume`):
    (positions (V,3) float64, passes that moved points)."""
    y = np.asarray(x, np.float64)
    if y.shape != (rest.n_vertices, 3) or np.shape(attach) != y.shape:
        raise ValueError(f"positions {y.shape} and attachments {np.shape(attach)}; valid: ({rest.n_vertices}, 3)")
    moved = 0
    for k in range(2 * rest.passes):
        y, found = contact_pass(y, attach, rest, smooth=k < rest.passes)
        if found == 0:
            break
        moved += 1
    if moved:
        y = y + restore_volume(y - np.asarray(x, np.float64), y, attach, rest)
    return y, moved
