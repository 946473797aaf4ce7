"""Surface queries on the last frame: synchronous, asynchronous (one frame late), whole-frame arrays, and the
re-evaluation of surface points on the current deformed vertices.

A query reads the id and depth texels (``engine/render/surface.py`` decodes them) of the composited frame,
of the scene G-buffer ("gbuffer") or of one layer. A batch reads only the bounding region of its pixels,
once. Without layers (and without a shadow map) the compositor writes no frame id targets: the scene
G-buffer is the frame's id buffer, tested against the backdrop depth as compose.frag does
(:meth:`QueryReader.region_reads`). The asynchronous form (:class:`PendingQuery`) only records the query;
the copy into pixel-pack buffers is queued at the start of the next frame (before anything overwrites the
texels) and mapped after it, so a query never stalls the frame it is issued in. A hit's (mesh id, triangle,
barycentric) is a :class:`~engine.input.picking.SurfacePoint`; :meth:`QueryReader.evaluate` re-evaluates
such points on the meshes' current vertices.
"""
from __future__ import annotations

from collections.abc import Sequence

import moderngl
import numpy as np

from engine.input.picking import SurfacePoint
from engine.render.framegraph import HOST, STORAGE, barrier_bits
from engine.render.state import RenderState
from engine.render.surface import SurfaceHit, decode_ids, interpolate_surface, unproject
from engine.render.targets import RESERVED_SOURCES

__all__ = ["QueryReader", "PendingQuery", "masked_ids"]

#: reading deformed vertices back on the CPU after the deformer's shader writes
_READBACK_BARRIER = barrier_bits(STORAGE, HOST)


def masked_ids(ids: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Id texels with those of pixels without a surface (depth texel 0) zeroed: the renderer clears
    only depth targets, so an id texel is stale wherever its depth texel is 0."""
    return np.where((depth != 0.0)[..., None], ids, np.uint32(0))


def _array(raw: bytes, w: int, h: int, comps: int, dtype: str) -> np.ndarray:
    a = np.frombuffer(raw, np.uint32 if dtype == "u4" else np.float32)
    return a.reshape((h, w, comps) if comps > 1 else (h, w))


class PendingQuery:
    """An asynchronous batched query of the frame it was issued after. Issuing only records it; the
    renderer queues the copy of the id and depth texels of the pixels' bounding region into pixel-pack
    buffers at the start of its next ``render`` (before anything overwrites them), so the issuing frame
    never waits for the GPU, not even on a software rasteriser, where a read-back waits for the frame's
    rasterisation. :attr:`ready` once that next frame has been rendered; :meth:`result` then maps the
    buffers. Obtain from ``SceneRenderer.query_async``."""

    def __init__(self, reader: QueryReader, points: np.ndarray, region: tuple[int, int, int, int],
                 source: str, inv_vp: np.ndarray, frame: int) -> None:
        self._r = reader
        self.points = points
        self.region = region
        self.source = source
        self._buffers: tuple[moderngl.Buffer, ...] = ()
        self._reads: list[tuple[int, str]] = []
        self._copied = False
        self._size = (reader.state.width, reader.state.height)  # of the frame it asks about
        self._cancelled = False
        self._inv_vp = inv_vp
        self.frame = frame
        self._result: list[SurfaceHit | None] | None = None

    def copy(self) -> None:
        """Queue the region's copy into pixel-pack buffers (the renderer calls this before it next
        writes the source's targets)."""
        if self._copied:
            return
        self._copied = True
        r = self._r
        _, _, w, h = self.region
        reads = r.region_reads(self.source)
        self._reads = [(comps, dtype) for _, _, comps, dtype in reads]
        buffers = []
        for fbo, attachment, comps, dtype in reads:
            buf = r.pbo(w * h * 4 * comps)
            fbo.read_into(buf, viewport=self.region, components=comps, attachment=attachment, dtype=dtype,
                          alignment=1)
            buffers.append(buf)
        self._buffers = tuple(buffers)

    def cancel(self) -> None:
        """The renderer goes before the copy was queued: :meth:`result` raises."""
        self._cancelled = True

    @property
    def ready(self) -> bool:
        """True once a frame has been rendered since the query was issued (mapping will not wait)."""
        return self._result is not None or self._r.state.frame_index > self.frame

    def result(self) -> list[SurfaceHit | None]:
        """The hits (None where no surface), in the order of the points; releases the buffers. Called
        before :attr:`ready`, it copies and maps now (waiting for the GPU)."""
        if self._result is None:
            if self._cancelled:
                raise RuntimeError("the renderer was released before this query's texels were copied")
            self._r.forget(self)
            self.copy()
            _, _, w, h = self.region
            arrays = [_array(buf.read(size=w * h * 4 * comps), w, h, comps, dtype)
                      for buf, (comps, dtype) in zip(self._buffers, self._reads)]
            ids, depth = self._r.combine_reads(arrays)
            self._result = self._r.hits_from_region(self.points, self.region, ids, depth, self.source,
                                                    self._inv_vp, self._size)
            self._r.recycle(self._buffers)
            self._buffers = ()
        return self._result


class QueryReader:
    """The renderer's query side: reads of the last frame's targets, the pending asynchronous queries and
    the pool of pixel-pack buffers they copy into."""

    def __init__(self, state: RenderState) -> None:
        self.state = state
        self._pbo_pool: list[moderngl.Buffer] = []
        self._pending: list[PendingQuery] = []  # asynchronous queries whose copy is not queued yet

    # -- sources and regions -------------------------------------------------------------------
    def source(self, source: str | None) -> str:
        """The validated source name: "frame" (composited, the default), "gbuffer" (the scene
        G-buffer) or a layer."""
        src = "frame" if source is None else source
        layers = self.state.targets.layers
        if src not in RESERVED_SOURCES and src not in layers:
            raise ValueError(f"source must be 'frame', 'gbuffer' or a layer {list(layers)}, got {source!r}")
        return src

    def region_reads(self, src: str) -> list[tuple[moderngl.Framebuffer, int, int, str]]:
        """What reading a region of ``src`` reads, as (framebuffer, attachment, components, dtype): its
        ids (RGBA32UI), its depth (R32F, 0 = no surface) and, for a frame whose compositor wrote no id
        targets (no layers), the backdrop depth: there the scene G-buffer's surfaces are the frame's
        except where the ground is in front, which :meth:`combine_reads` applies as compose.frag does."""
        t = self.state.targets
        if src == "frame" and t.frame_ids_written:
            return [(t.frame, 1, 4, "u4"), (t.frame, 2, 1, "f4")]
        gb = t.gbuffer(src)
        reads = [(gb.fbo, 1, 4, "u4"), (gb.fbo, 2, 1, "f4")]
        if src == "frame":
            reads.append((t.backdrop_fbo, 1, 1, "f4"))
        return reads

    @staticmethod
    def combine_reads(arrays: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(ids (h,w,4) uint32, depth (h,w) float32 with 0 = no surface) from the arrays of
        :meth:`region_reads`."""
        ids, depth = arrays[0], arrays[1]
        if len(arrays) == 3:  # the ground in front wins (compose.frag: back < depth)
            depth = np.where(depth <= arrays[2], depth, np.float32(0.0))
        return ids, depth

    def read_region(self, src: str, region: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Synchronous (ids, depth) of GL viewport ``region`` (x, y from the bottom, w, h) of ``src``."""
        _, _, w, h = region
        arrays = [_array(fbo.read(viewport=region, components=comps, attachment=attachment, dtype=dtype,
                                  alignment=1), w, h, comps, dtype)
                  for fbo, attachment, comps, dtype in self.region_reads(src)]
        return self.combine_reads(arrays)

    def check_pixels(self, points) -> np.ndarray:
        """(N,2) int64 pixels (x, y from the top), floored; ValueError for a bad shape or one outside."""
        p = np.asarray(points)
        if p.ndim != 2 or p.shape[1] != 2 or len(p) == 0:
            raise ValueError(f"points must be a non-empty (N,2) array of (x, y) pixels, got shape {p.shape}")
        p = np.floor(p).astype(np.int64)
        w, h = self.state.width, self.state.height
        bad = (p[:, 0] < 0) | (p[:, 0] >= w) | (p[:, 1] < 0) | (p[:, 1] >= h)
        if bad.any():
            x, y = p[np.argmax(bad)]
            raise ValueError(f"pixel ({x}, {y}) outside the {w}x{h} frame")
        return p

    def region(self, p: np.ndarray) -> tuple[int, int, int, int]:
        """GL viewport (x, y from the bottom, w, h) of the pixels' bounding box (p: x, y from the top)."""
        x0, x1 = int(p[:, 0].min()), int(p[:, 0].max())
        gy = self.state.height - 1 - p[:, 1]
        y0, y1 = int(gy.min()), int(gy.max())
        return x0, y0, x1 - x0 + 1, y1 - y0 + 1

    def hits_from_region(self, p: np.ndarray, region, ids: np.ndarray, depth: np.ndarray, source: str,
                         inv_vp: np.ndarray, size: tuple[int, int] | None = None) -> list[SurfaceHit | None]:
        """Hits of pixels ``p`` (x, y from the top) from a region read of a frame of ``size`` (width,
        height; default the current one: a pending query keeps the size it was issued at)."""
        width, height = size or (self.state.width, self.state.height)
        x0, y0, _, _ = region
        gx = p[:, 0]
        gy = height - 1 - p[:, 1]
        d = depth[gy - y0, gx - x0]
        dec = decode_ids(masked_ids(ids[gy - y0, gx - x0], d))
        pos = unproject(inv_vp, gx, gy, d, width, height).astype(np.float32)
        layer = None if source in RESERVED_SOURCES else source
        meshes = self.state.meshes.meshes
        out: list[SurfaceHit | None] = []
        for i in range(len(p)):
            m = int(dec["mesh"][i])
            h = meshes.get(m) if m >= 0 else None
            if h is None:
                out.append(None)
                continue
            out.append(SurfaceHit(mesh=h, triangle=int(dec["triangle"][i]), barycentric=dec["barycentric"][i],
                                  position=pos[i], normal=dec["normal"][i], depth=float(d[i]), layer=layer))
        return out

    # -- queries ---------------------------------------------------------------------------------
    def surface_arrays(self, source: str | None = None) -> dict[str, np.ndarray]:
        """Every surface channel of the last frame (see ``SceneRenderer.surface_arrays``)."""
        src = self.source(source)
        s = self.state
        h, w = s.height, s.width
        ids, depth = self.read_region(src, (0, 0, w, h))
        out = decode_ids(masked_ids(ids, depth))
        hit = out["mesh"] >= 0
        gy, gx = np.mgrid[0:h, 0:w]
        pos = unproject(s.inv_view_proj, gx, gy, depth, w, h).astype(np.float32)
        pos[~hit] = 0.0
        out["position"] = pos
        out["depth"] = np.where(hit, depth, 1.0).astype(np.float32)
        if src != "frame":
            gb = s.targets.gbuffer(src)
            alb = np.frombuffer(gb.tex["albedo"].read(alignment=1), np.uint8).reshape(h, w, 4)
            out["albedo"] = ((alb[..., :3].astype(np.float32) / 255.0) ** 2).astype(np.float32)
        return {k: v[::-1].copy() for k, v in out.items()}

    def query_many(self, points, *, layer: str | None = None) -> list[SurfaceHit | None]:
        """Query many pixels (N,2) (x, y from the top) at once: reads their bounding region once."""
        p = self.check_pixels(points)
        src = self.source(layer)
        region = self.region(p)
        ids, depth = self.read_region(src, region)
        return self.hits_from_region(p, region, ids, depth, src, self.state.inv_view_proj)

    def query_async(self, points, *, layer: str | None = None) -> PendingQuery:
        """Record a batched query of the last frame (see :class:`PendingQuery`)."""
        p = self.check_pixels(points)
        src = self.source(layer)
        s = self.state
        q = PendingQuery(self, p, self.region(p), src, s.inv_view_proj.copy(), s.frame_index)
        self._pending.append(q)
        return q

    def copy_pending(self) -> None:
        """Queue the copies of the pending asynchronous queries (before their sources are overwritten,
        resized or removed)."""
        pending, self._pending = self._pending, []
        for q in pending:
            q.copy()

    def forget(self, q: PendingQuery) -> None:
        if q in self._pending:
            self._pending.remove(q)

    def pbo(self, nbytes: int) -> moderngl.Buffer:
        """A pixel-pack buffer of at least ``nbytes`` from the pool (or a new one)."""
        for i, b in enumerate(self._pbo_pool):
            if b.size >= nbytes:
                return self._pbo_pool.pop(i)
        return self.state.res.buffer(reserve=max(nbytes, 4096), label="query read-back")

    def recycle(self, buffers) -> None:
        self._pbo_pool.extend(buffers)
        while len(self._pbo_pool) > 8:
            self.state.res.release(self._pbo_pool.pop(0))

    def evaluate(self, points: Sequence[SurfacePoint]) -> tuple[np.ndarray, np.ndarray]:
        """World positions (N,3) and unit normals (N,3) of surface points on the meshes' CURRENT
        deformed vertices (each involved mesh's SSBOs are read once). ValueError for a point whose mesh
        id is not registered (a removed mesh's)."""
        n = len(points)
        pos = np.zeros((n, 3), np.float32)
        nrm = np.zeros((n, 3), np.float32)
        registry = self.state.meshes
        by_mesh: dict[int, list[int]] = {}
        for i, sp in enumerate(points):
            if not isinstance(sp, SurfacePoint):
                raise TypeError(f"points[{i}] must be a SurfacePoint (mesh_id, triangle, barycentric), got {sp!r}")
            registry.get(sp.mesh_id)  # raises for a removed mesh's id
            by_mesh.setdefault(sp.mesh_id, []).append(i)
        if by_mesh:
            self.state.ctx.memory_barrier(_READBACK_BARRIER)
        for mid, idx in by_mesh.items():
            h = registry.meshes[mid]
            p4, n4 = h.read_vertices()
            tri = np.array([points[i].triangle for i in idx])
            bary = np.array([points[i].barycentric for i in idx], np.float64)
            pp, nn = interpolate_surface(p4[:, :3], h.triangles, tri, bary, n4[:, :3])
            pos[idx], nrm[idx] = pp, nn
        return pos, nrm

    # -- teardown ----------------------------------------------------------------------------------
    def release(self) -> None:
        """Cancel the pending queries (their sources go) and release the pooled buffers."""
        for q in self._pending:
            q.cancel()
        self._pending.clear()
        for b in self._pbo_pool:
            self.state.res.release(b)
        self._pbo_pool.clear()
