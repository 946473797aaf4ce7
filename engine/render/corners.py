"""Corner vertices: an indexed draw whose fragments still know their triangle and barycentrics.

The G-buffer needs, per pixel, the index of the triangle (in the mesh's own index buffer) and the
barycentrics in it. ``gl_PrimitiveID`` in a fragment shader is slow on Mesa's llvmpipe (its draw module
then assembles primitives on a slower path: ~10 ms more for 32 CesiumMen at 720p), and a non-indexed
"expanded" draw of 3 vertices per triangle shades every triangle's corners anew. This module builds,
once per topology, a set of *corner vertices* that an ordinary indexed draw can use instead:

* every corner vertex is a display vertex (``corners[:, 0]``, the index the shader pulls positions,
  normals and texcoords with) plus a **colour** 0, 1 or 2, chosen so that the three corners of every
  triangle have three different colours. A vertex shader that outputs the unit vector of its colour
  thus gives the fragment, after (perspective-correct) interpolation, the barycentrics of its triangle
  in colour order: ``w[c]`` = weight of the corner whose colour is c;
* the **provoking** corner of every triangle (the last one of its row in :attr:`CornerTopology.indices`:
  OpenGL's default ``GL_LAST_VERTEX_CONVENTION``) belongs to that triangle alone and carries, in a flat
  output, the triangle's input index and the colours of its input corners 1 and 2 (``sel1``, ``sel2``),
  so the fragment un-permutes: ``b1 = w[sel1]``, ``b2 = w[sel2]``, ``b0 = 1 - b1 - b2``;
* the triangles are drawn in :func:`strip_order` (a vertex-cache friendly order; the info word keeps
  the input index) with their winding (each only rotated so that its provoking corner comes last).

A display vertex gets one corner vertex per colour it needs, plus a copy for a triangle whose provoking
corner would otherwise be the provoking corner of another triangle. Colours are chosen greedily in draw
order (each triangle takes the permutation that reuses the most existing (vertex, colour) pairs: along
a strip the shared corners keep their colours and the new one takes the third) and provoking corners by
a greedy matching that serves the least shared pairs first; corner vertices are numbered in order of
first use. CesiumMan: 4672 triangles over 3273 vertices give 5091 corner vertices (T is the least
possible: one provoking corner per triangle), against 14016 vertices for an expanded draw.

Packing of ``corners[:, 1]`` (``info``), the layout ``shaders/include/mesh_buffers.glsl`` decodes:
bits 0-1 the corner's colour; for a provoking corner bits 2-3 ``sel1``, bits 4-5 ``sel2`` and the bits from
``layouts.CORNER_TRIANGLE_SHIFT`` (6) up the input triangle index (so at most :data:`MAX_TRIANGLES`
triangles); zero there for other corners.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import permutations

import numpy as np

from engine.gpu.layouts import CORNER_TRIANGLE_SHIFT

__all__ = ["CornerTopology", "build_corner_topology", "strip_order", "MAX_TRIANGLES", "INFO_TRIANGLE_SHIFT"]

INFO_TRIANGLE_SHIFT = CORNER_TRIANGLE_SHIFT
MAX_TRIANGLES = 1 << (32 - INFO_TRIANGLE_SHIFT)
"""Most triangles one mesh may have on the corner-vertex path (the index shares a uint with 6 bits)."""

_PERMS = np.array(list(permutations(range(3))), np.int64)  # (6,3): colour of corner k under perm p


def _best_perm_table() -> np.ndarray:
    """(512,) perm index that reuses the most existing colours, for the three corners' colour masks
    (3 bits each, packed mask0 * 64 + mask1 * 8 + mask2); ties take the lowest perm index."""
    masks = np.arange(512)
    m = np.stack([masks >> 6, (masks >> 3) & 7, masks & 7], axis=1)  # (512,3)
    hits = (m[:, None, :] >> _PERMS[None, :, :]) & 1  # (512,6,3)
    return np.argmax(hits.sum(axis=2), axis=1).astype(np.int64)


_BEST_PERM = _best_perm_table()


@dataclass(frozen=True, eq=False)
class CornerTopology:
    """Corner vertices of one triangle list (see the module doc). ``indices`` (T,3) uint32: the
    triangles over corner vertices in draw order (row t is input triangle ``order[t]``, same winding,
    provoking corner last); ``corners`` (C,2) uint32: (display vertex, info) per corner vertex;
    ``rotation`` (T,) int8: the input corner that became corner 0 of row t (``indices[t, j]`` is input
    corner ``(rotation[t] + j) % 3`` of triangle ``order[t]``); ``order`` (T,) int64."""

    indices: np.ndarray = field(repr=False)
    corners: np.ndarray = field(repr=False)
    rotation: np.ndarray = field(repr=False)
    order: np.ndarray = field(repr=False)
    vertex_count: int

    @property
    def triangle_count(self) -> int:
        return int(self.indices.shape[0])

    @property
    def corner_count(self) -> int:
        return int(self.corners.shape[0])

    def colors(self) -> np.ndarray:
        """(C,) colour (0, 1, 2) of every corner vertex."""
        return (self.corners[:, 1] & 3).astype(np.int64)

    def fragment(self, row: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Numpy model of the fragment stage: for fragments of draw rows ``row`` (...,) with
        colour-space weights ``w`` (..., 3) (what the interpolated colour vectors give), the input
        triangle index (...,) and the barycentrics (..., 3) in its input corner order, read from the
        provoking corner's info word as gbuffer.frag does."""
        info = self.corners[self.indices[np.asarray(row), 2], 1].astype(np.int64)
        w = np.asarray(w, np.float64)
        sel1, sel2 = (info >> 2) & 3, (info >> 4) & 3
        b1 = np.take_along_axis(w, sel1[..., None], axis=-1)[..., 0]
        b2 = np.take_along_axis(w, sel2[..., None], axis=-1)[..., 0]
        return info >> INFO_TRIANGLE_SHIFT, np.stack([1.0 - b1 - b2, b1, b2], axis=-1)


def strip_order(triangles: np.ndarray, vertex_count: int) -> np.ndarray:
    """A draw order (T,) of the triangles in which consecutive triangles mostly share an edge: a greedy
    walk over the edge adjacency that steps to the unvisited neighbour with the fewest unvisited
    neighbours of its own (the classic stripifier heuristic: the walk does not strand triangles) and,
    when stuck, resumes next to the most recent triangles (else at the least connected unvisited one).
    Each step then brings about one new vertex and reuses the rest soon after their first use, which is
    what a small vertex cache needs: llvmpipe's draw module shades an indexed draw in segments of 1023
    indices, each through a direct-mapped cache of 256 entries (index % 256), cleared per segment; with
    corner vertices numbered by first use this order shades CesiumMan's 4672 triangles with ~5.7k vertex
    shader invocations, against ~10.7k in the glTF order and 14k for an expanded draw."""
    tri = np.asarray(triangles, np.int64)
    n_tri = tri.shape[0]
    edges = np.sort(tri[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    key = edges[:, 0] * int(vertex_count) + edges[:, 1]
    owner = np.repeat(np.arange(n_tri), 3)
    o = np.argsort(key, kind="stable")
    ks, ow = key[o], owner[o]
    same = ks[1:] == ks[:-1]  # consecutive sides on one edge: neighbours (a non-manifold edge links a chain)
    a, b = ow[:-1][same], ow[1:][same]
    keep = a != b
    src = np.concatenate([a[keep], b[keep]])
    dst = np.concatenate([b[keep], a[keep]])
    o = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[o], np.arange(n_tri + 1)).tolist()
    dst_l = dst[o].tolist()
    nbrs = [dst_l[bounds[i]:bounds[i + 1]] for i in range(n_tri)]
    deg = np.diff(bounds).tolist()
    seeds = np.argsort(np.asarray(deg), kind="stable").tolist()
    visited = [False] * n_tri
    order: list[int] = []
    si, cur = 0, -1
    for _ in range(n_tri):
        if cur < 0:  # stuck: resume next to the most recent triangles, else at the least connected one
            for back in order[-1:-65:-1]:
                for n in nbrs[back]:
                    if not visited[n] and (cur < 0 or deg[n] < deg[cur]):
                        cur = n
                if cur >= 0:
                    break
        if cur < 0:
            while visited[seeds[si]]:
                si += 1
            cur = seeds[si]
        visited[cur] = True
        order.append(cur)
        nxt, best = -1, 1 << 30
        for n in nbrs[cur]:
            if not visited[n]:
                deg[n] -= 1
                if deg[n] < best:
                    nxt, best = n, deg[n]
        cur = nxt
    return np.asarray(order, np.int64)


def build_corner_topology(triangles: np.ndarray, vertex_count: int, *, reorder: bool = True) -> CornerTopology:
    """Corner vertices for a (T,3) triangle list over ``vertex_count`` display vertices (set-up work,
    about linear in T; cache the result per topology). ``reorder``: draw the triangles in
    :func:`strip_order` (the info words keep the input triangle indices), else in input order."""
    tri_in = np.asarray(triangles)
    if tri_in.ndim != 2 or tri_in.shape[1] != 3 or tri_in.shape[0] < 1 or not np.issubdtype(tri_in.dtype, np.integer):
        raise ValueError(f"triangles must be a non-empty (T,3) integer array, got shape {tri_in.shape} {tri_in.dtype}")
    v = int(vertex_count)
    if tri_in.min() < 0 or tri_in.max() >= v:
        raise ValueError(f"triangle indices must be in [0, {v - 1}], got [{tri_in.min()}, {tri_in.max()}]")
    n_tri = tri_in.shape[0]
    if n_tri > MAX_TRIANGLES:
        raise ValueError(f"at most {MAX_TRIANGLES} triangles per mesh on the corner path, got {n_tri}")
    order = strip_order(tri_in, v) if reorder else np.arange(n_tri)
    tri = tri_in.astype(np.int64)[order]  # in draw order from here on

    # 1. colours: each triangle takes the permutation that reuses the most (vertex, colour) pairs; along
    #    a strip the two shared corners keep their colours and the new one takes the third
    used = [0] * v  # colour bitmask per display vertex
    perm = [0] * n_tri
    best = _BEST_PERM.tolist()
    plist = _PERMS.tolist()
    for t, (a, b, c) in enumerate(tri.tolist()):
        p = best[(used[a] << 6) | (used[b] << 3) | used[c]]
        perm[t] = p
        ca, cb, cc = plist[p]
        used[a] |= 1 << ca
        used[b] |= 1 << cb
        used[c] |= 1 << cc
    color = _PERMS[np.asarray(perm, np.int64)]  # (T,3) colour of each corner
    pair = tri * 3 + color  # (T,3) id of the (vertex, colour) pair of each corner

    # 2. provoking corners: greedy matching triangle -> pair, the least shared pairs served first
    uses = np.bincount(pair.ravel(), minlength=3 * v)
    pref = np.argsort(uses[pair], axis=1, kind="stable")  # corners by how many triangles share their pair
    prov = np.full(n_tri, -1, np.int64)
    pair_l, pref_l = pair.tolist(), pref.tolist()
    claimed = [False] * (3 * v)
    for t in range(n_tri):
        pt = pair_l[t]
        for k in pref_l[t]:
            if not claimed[pt[k]]:
                claimed[pt[k]] = True
                prov[t] = k
                break
    unmatched = prov < 0
    prov[unmatched] = 2  # these get a private copy of their last corner's pair

    # 3. rotate so the provoking corner is last (keeps the winding), number corner vertices by first use
    rot = (prov + 1) % 3  # corner that becomes corner 0
    j = (rot[:, None] + np.arange(3)[None, :]) % 3  # (T,3) corner at rotated position
    rpair = np.take_along_axis(pair, j, axis=1)
    key = rpair.copy()  # the pair id, or for an unmatched triangle's provoking corner a private id
    key[unmatched, 2] = 3 * v + np.nonzero(unmatched)[0]
    flat = key.ravel()
    uniq, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    rank = np.empty(len(uniq), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))  # number by first use
    indices = rank[inverse].reshape(n_tri, 3)
    n_corners = len(uniq)
    src_pair = np.empty(n_corners, np.int64)
    src_pair[indices.ravel()] = np.where(flat >= 3 * v, rpair.ravel(), flat)
    info = (src_pair % 3).astype(np.int64)
    # provoking corner of a triangle: its input index and the colours of its input corners 1 and 2
    # (input corner k of triangle order[t] is row t's corner k: the order only permutes rows)
    info[indices[:, 2]] |= (color[:, 1] << 2) | (color[:, 2] << 4) | (order << INFO_TRIANGLE_SHIFT)
    corners = np.stack([src_pair // 3, info], axis=1).astype(np.uint32)
    return CornerTopology(indices=indices.astype(np.uint32), corners=corners, rotation=rot.astype(np.int8),
                          order=order.astype(np.int64), vertex_count=v)
