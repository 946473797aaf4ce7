"""The controller camera (research 7.5): a second, low-resolution renderer that follows a tracked controller
and reads the surface under the centre of its image, so a stroke can be drawn on skin the headset does not see.

A :class:`ProbeRenderer` shares the scene renderer's base (program variants, mesh registry, lights, look: the
deformed meshes already on the GPU) and owns only its targets: a scene G-buffer of ``size`` x ``size`` pixels
(16 by default, 1 at least). :meth:`ProbeRenderer.centre` runs the ``rects`` and ``gbuffer`` passes of the
frame graph into it with the controller's camera (:meth:`~ProbeRenderer.render`), then reads the surface under
the centre pixel (:meth:`~ProbeRenderer.read`): (mesh, triangle, barycentric, position, normal), the same
:class:`~engine.render.surface.SurfaceHit` a desktop pick gives. Nothing is composed or lit. Only meshes
of the scene G-buffer are drawn (a layer's meshes, e.g. stroke tubes, are not surfaces to draw on).

Exact answers (not the rasteriser's): the pixel NAMES the surface (entity, mesh, triangle), the ray decides
where on it. A rasteriser snaps vertices to a sub-pixel grid (8 bits on NVIDIA), so with a few pixels over the
10 deg frustum the barycentric it interpolates at the centre is off by up to ~3e-3 (llvmpipe happens to be
closer); the probe therefore reads the named triangle's three deformed corners (positions and normals) back
from the GPU and intersects the centre pixel's ray with their plane in float64 (:func:`ray_triangle`):
barycentric and position are the ray's, to the float32 precision of the deformed vertices, on any device; the
normal is the corners' deformed normals interpolated there, flipped on a back face as ``gbuffer.frag`` does
(not the G-buffer's 16-bit octahedral code). A ray the rasteriser gave a triangle by a hair (an edge moved by
the snapping) lands just outside it: the barycentric is clamped onto the triangle. The reads: the centre id
texel only (the probe zeroes it before each pass, a 16-byte upload, so no depth read masks a stale texel; the
window depth is the exact position's), then the corners, copied GPU-side into a probe-owned 96-byte buffer
(six ``glCopyBufferSubData``) and read at once: two round trips, as the ids + depth read was before. The CPU
intersection was chosen over a compute pass: the corners' buffers differ per material group (a pass would have
to bind them all before knowing the triangle), the id read waits for the GPU anyway, and one triangle's
arithmetic in plain floats costs microseconds. The probe draws the flat triangles whatever the scene's look (it
owns a default :class:`~engine.render.look.LookSettings`: no Phong tessellation, no wireframe): a surface point is
(triangle, barycentric) on the flat deformed mesh wherever it is re-evaluated (``interpolate_surface``), so the
flat triangle is the surface a stroke lands on (and the tessellated pass's patch ids are not trusted: on llvmpipe
they restart every 341 patches). For a ray along the named triangle's plane (seen edge-on) the rasterised
answer (ids + depth texels, :meth:`ProbeRenderer.read_rasterised`) stands.

Cluster culling (``cull``, "auto" by default: on for a software rasteriser, off on a hardware GPU; see
:func:`engine.gpu.context.software_rasteriser`): on a software rasteriser the vertex stage over every triangle of the
character, not the 16x16 pixels, is what a full G-buffer pass costs (~0.2 us a triangle on the calling thread).
The probe's pass therefore draws only the CLUSTERS the probe's narrow frustum can see. A mesh's clusters are
made once, when the probe first meets its corner topology: a median-split tree over the triangles' centroids
as the mesh is deformed then (leaves of at most :data:`CLUSTER_TRIANGLES`: compact patches of skin, which stay
patches as the limbs move), and the corner index buffer's rows reordered leaf by leaf into a probe-owned index
buffer over the same corner vertices (a row keeps its provoking corner last, so ids are unchanged). Each
render reads the deformed positions already on the GPU back (one buffer read per mesh; the centre pixel's
read-back waits for the GPU anyway), gives every cluster a bounding sphere (its vertices' box, a ``take`` and
two ``reduceat``), and keeps the spheres that meet the cone around the probe's frustum (half-angle: the
frustum's half diagonal) between the near and far planes. The kept clusters, merged into runs, are ONE
multi-draw (``glMultiDrawElementsIndirect``) per mesh with the same program, instance row and ids as the full
pass, so what is drawn names the same (mesh, triangle, barycentric). The cone encloses the frustum, so the test
is conservative: every pixel of the probe image is what the full pass gives (``cull=False`` draws the full
pass: the reference the tests and ``bench vr`` compare with). When every cluster is culled away nothing is
drawn and :meth:`ProbeRenderer.centre` answers None without the read-back (which waits for the GPU).
On a hardware GPU the culling costs far more than it saves (``bench vr`` on an NVIDIA H100, 4 humanoids all
drawn: 5.2 ms a culled read against 0.95 ms a full one): the full pass of a few characters is microseconds of
GPU work, while the culled path reads every mesh's positions back (a round trip that waits for the GPU) and
runs numpy over them (~0.6 ms a humanoid on a slow CPU); "auto" therefore draws the full pass there. The barrier
and the read-backs come before the pass queues its clear (on llvmpipe they would wait for it), and all kept
clusters of all meshes go to the GPU as one upload of draw commands into orphaned storage (a write into a buffer
a pending draw uses can stall a hardware driver).
"""
from __future__ import annotations

import time
from typing import Any

import moderngl
import numpy as np

from engine.gpu.context import software_rasteriser
from engine.render.camera import perspective
from engine.render.framegraph import HOST, STORAGE, barrier_bits
from engine.render.look import LookSettings
from engine.render.meshes import DrawGroup
from engine.render.passes.gbuffer import GBufferPass, ResetRects
from engine.render.queries import QueryReader
from engine.render.state import Frame, RenderState
from engine.render.surface import SurfaceHit
from engine.render.targets import FrameTargets

__all__ = ["ProbeCamera", "ProbeRenderer", "DEFAULT_PROBE_SIZE", "CLUSTER_TRIANGLES", "centre_ray",
           "probe_reference", "ray_triangle", "spatial_clusters", "cluster_spheres", "clusters_in_cone"]

DEFAULT_PROBE_SIZE = 16
#: triangles per culling cluster (consecutive in the corner-vertex draw order)
CLUSTER_TRIANGLES = 64
#: reading deformed vertices (written by the deformers' shaders) back on the CPU or by a buffer copy
_READBACK_BARRIER = barrier_bits(STORAGE, HOST)
_ZERO_TEXEL = bytes(16)  # one RGBA32UI id texel: no surface


class ProbeCamera:
    """A camera at a tracked pose (4x4 world matrix, looking along its -Z) with a narrow field of view: the
    centre pixel is the ray along the controller's pointing direction."""

    def __init__(self, pose: np.ndarray, *, fov_y: float = 10.0, near: float = 0.005, far: float = 20.0) -> None:
        self.pose = np.asarray(pose, np.float64)
        self.fov_y, self.near, self.far = float(fov_y), float(near), float(far)
        self.aspect = 1.0

    @property
    def view(self) -> np.ndarray:
        return np.linalg.inv(self.pose).astype(np.float32)

    def projection_for(self, aspect: float) -> np.ndarray:
        return perspective(self.fov_y, aspect, self.near, self.far)

    @property
    def projection(self) -> np.ndarray:
        return self.projection_for(1.0)


def centre_ray(camera: Any, size: int, inv_view_proj: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(origin on the near plane, unit direction) float64 of the ray through the centre pixel's centre (pixel
    (size // 2, size // 2), row 0 at the top) of a ``size`` x ``size`` probe image of ``camera`` (its inverse
    view-projection at aspect 1 when the caller has it: ``RenderState.inv_view_proj``)."""
    c = size // 2 + 0.5
    ndc = np.array([c / size * 2.0 - 1.0, 1.0 - c / size * 2.0])
    inv = inv_view_proj if inv_view_proj is not None else np.linalg.inv(
        np.asarray(camera.projection_for(1.0), np.float64) @ np.asarray(camera.view, np.float64))
    pts = [inv @ np.array([ndc[0], ndc[1], z, 1.0]) for z in (-1.0, 1.0)]
    a, b = (p[:3] / p[3] for p in pts)
    return a, (b - a) / np.linalg.norm(b - a)


def probe_reference(positions: np.ndarray, triangles: np.ndarray, camera: Any, size: int = DEFAULT_PROBE_SIZE,
                    *, cull_back: bool = True) -> tuple[int, np.ndarray, np.ndarray] | None:
    """The numpy reference of :meth:`ProbeRenderer.centre` for one mesh: the nearest triangle the centre
    pixel's ray meets beyond the near plane (Moller-Trumbore over every triangle; back faces skipped when
    ``cull_back``, as the G-buffer pass culls a single-sided mesh): (triangle, barycentric (3,), world
    position (3,)), or None."""
    o, d = centre_ray(camera, size)
    p = np.asarray(positions, np.float64)
    t3 = np.asarray(triangles, np.int64)
    a, b, c = p[t3[:, 0]], p[t3[:, 1]], p[t3[:, 2]]
    e1, e2 = b - a, c - a
    h = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, h)
    ok = det > 1e-12 if cull_back else np.abs(det) > 1e-12
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = o - a
    u = np.einsum("ij,ij->i", s, h) * inv
    q = np.cross(s, e1)
    v = (q @ d) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    near = float(camera.near) / max(float(-d @ np.asarray(camera.view, np.float64)[2, :3]), 1e-12)
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > near)
    if not hit.any():
        return None
    k = int(np.flatnonzero(hit)[np.argmin(t[hit])])
    return k, np.array([1.0 - u[k] - v[k], u[k], v[k]]), o + d * t[k]


def _sub(p: tuple[float, ...], q: tuple[float, ...]) -> tuple[float, float, float]:
    return p[0] - q[0], p[1] - q[1], p[2] - q[2]


def _cross(p: tuple[float, ...], q: tuple[float, ...]) -> tuple[float, float, float]:
    return p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]


def _dot(p: tuple[float, ...], q: tuple[float, ...]) -> float:
    return p[0] * q[0] + p[1] * q[1] + p[2] * q[2]


def ray_triangle(origin: np.ndarray, direction: np.ndarray, corners: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """Where the ray (``origin``, ``direction``) meets the plane of the triangle ``corners`` (3, 3+): (barycentric
    (3,) in the corners' order, clamped onto the triangle, and the point (3,) it names), float64; None when the
    ray runs along the plane (or the triangle has no area). The barycentrics are ratios of the sub-triangles'
    areas about the plane point (not the Moller-Trumbore form of :func:`probe_reference`); a point just outside
    (the rasteriser named this triangle because snapping moved an edge by a hair) is clamped onto the triangle
    by dropping the negative weights and renormalising. Plain float arithmetic: one triangle, where numpy's
    per-call overhead would cost ~20x more."""
    o = tuple(float(x) for x in np.asarray(origin).ravel()[:3])
    d = tuple(float(x) for x in np.asarray(direction).ravel()[:3])
    a, b, c = (tuple(float(x) for x in row[:3]) for row in np.asarray(corners, np.float64))
    n = _cross(_sub(b, a), _sub(c, a))
    nn = _dot(n, n)
    denom = _dot(d, n)
    if nn <= 0.0 or abs(denom) <= 1e-12 * (nn * _dot(d, d)) ** 0.5:
        return None
    t = _dot(_sub(a, o), n) / denom
    p = (o[0] + d[0] * t, o[1] + d[1] * t, o[2] + d[2] * t)
    w = [_dot(_cross(_sub(c, b), _sub(p, b)), n) / nn, _dot(_cross(_sub(a, c), _sub(p, c)), n) / nn,
         _dot(_cross(_sub(b, a), _sub(p, a)), n) / nn]
    if min(w) < 0.0:
        w = [max(x, 0.0) for x in w]
        total = sum(w)
        w = [x / total for x in w]
    bary = np.array(w)
    return bary, bary @ np.array([a, b, c])


def spatial_clusters(centroids: np.ndarray, size: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(order (T,), starts (K,)) of a median-split tree over triangle ``centroids`` (T, 3): ``order`` lists the
    triangles leaf by leaf, each leaf at most ``size`` (default CLUSTER_TRIANGLES) triangles, split along its
    box's longest axis, so a cluster is a compact patch of the surface; ``starts`` the first row of each."""
    size = size or CLUSTER_TRIANGLES
    c = np.asarray(centroids, np.float64)
    leaves: list[np.ndarray] = []
    todo = [np.arange(len(c))]
    while todo:
        idx = todo.pop()
        if len(idx) <= size:
            leaves.append(idx)
            continue
        pts = c[idx]
        axis = int(np.argmax(pts.max(axis=0) - pts.min(axis=0)))
        half = len(idx) // 2
        part = np.argpartition(pts[:, axis], half)
        todo += [idx[part[half:]], idx[part[:half]]]
    order = np.concatenate(leaves)
    starts = np.cumsum([0] + [len(x) for x in leaves[:-1]]).astype(np.int64)
    return order, starts


class _Clusters:
    """A corner topology's culling clusters: its draw rows reordered cluster by cluster (a probe-owned index
    buffer over the same corner vertices: the provoking corner stays last, so ids are unchanged), the
    triangle runs, and the distinct display vertices of each cluster (their bounding boxes)."""

    def __init__(self, state: RenderState, topology: Any, positions: np.ndarray) -> None:
        self.topology = topology
        rows = np.asarray(topology.indices, np.uint32)
        display = np.asarray(topology.corners[:, 0], np.int64)[rows.astype(np.int64)]  # (T, 3)
        # clusters from the mesh as it is deformed now: a patch stays a patch as the limbs move
        order, self.starts = spatial_clusters(np.asarray(positions, np.float64)[display, :3].mean(axis=1))
        self.counts = np.diff(np.append(self.starts, len(order)))
        self.res = state.res
        self.indices = state.res.buffer(np.ascontiguousarray(rows[order]), label="probe cluster indices")
        flat: list[np.ndarray] = []
        vstarts = np.zeros(len(self.starts), np.int64)
        at = 0
        for k, (a, n) in enumerate(zip(self.starts, self.counts)):
            u = np.unique(display[order[a:a + n]])
            vstarts[k] = at
            at += len(u)
            flat.append(u)
        self.flat, self.vstarts = np.concatenate(flat), vstarts
        self._vaos: dict[tuple[int, int], Any] = {}

    def vao(self, prog: Any, h: Any) -> Any:
        """The G-buffer program's vertex array over this index buffer (as ``Programs.vao(corners=True)``)."""
        key = (id(prog), id(h.corner_texcoords))
        vao = self._vaos.get(key)
        if vao is None:
            content = [(h.corners, "2u", "in_corner")]
            if "in_uv" in prog:
                content.append((h.corner_texcoords, "2f", "in_uv"))
            vao = self.res.vertex_array(prog, content, index_buffer=self.indices, label=f"{h.label} probe vao")
            self._vaos[key] = vao
        return vao

    def release(self) -> None:
        for vao in self._vaos.values():
            self.res.release(vao)
        self._vaos.clear()
        self.res.release(self.indices)


def cluster_spheres(positions: np.ndarray, flat: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centres (K, 3), radii (K,)) float64 of the clusters' vertex boxes: cluster k's vertices are
    ``positions[flat[starts[k]:starts[k + 1]]]`` (``positions`` (V, 3) or (V, 4), e.g. a deformer's vec4s)."""
    p = np.asarray(positions, np.float32)
    if p.shape[1] != 4:
        p = np.concatenate([p[:, :3], np.ones((p.shape[0], 1), np.float32)], axis=1)
    # one 16-byte row is one complex128: a 1-D take gathers the rows ~30x faster than a 2-D fancy index
    rows = np.take(np.ascontiguousarray(p).view(np.complex128).ravel(), flat).view(np.float32).reshape(-1, 4)
    # x, y, z as contiguous rows: reduceat along a row runs ~1.5x faster than down 4-wide rows
    xyz = np.ascontiguousarray(rows.T[:3])
    lo = np.minimum.reduceat(xyz, starts, axis=1).T.astype(np.float64)
    hi = np.maximum.reduceat(xyz, starts, axis=1).T.astype(np.float64)
    return (lo + hi) * 0.5, np.linalg.norm(hi - lo, axis=1) * 0.5


def clusters_in_cone(centres: np.ndarray, radii: np.ndarray, camera: Any) -> np.ndarray:
    """(K,) bool: the spheres that meet the cone around ``camera``'s square frustum (apex at the eye, along
    its -Z, half-angle the frustum's half diagonal) between its near and far planes. Conservative: a sphere
    the frustum meets is always kept."""
    view = np.asarray(camera.view, np.float64)
    c = centres @ view[:3, :3].T + view[:3, 3]
    d = -c[:, 2]  # distance along the axis
    q = np.hypot(c[:, 0], c[:, 1])  # distance from the axis
    half = np.arctan(np.tan(np.radians(float(camera.fov_y)) * 0.5) * np.sqrt(2.0))
    lateral = q * np.cos(half) - d * np.sin(half)  # signed distance from the cone's side (apex region: less)
    return (lateral <= radii) & (d + radii >= float(camera.near)) & (d - radii <= float(camera.far))


class _CulledGBufferPass(GBufferPass):
    """The scene G-buffer pass drawing only the clusters the probe's frustum can see (module docstring)."""

    def __init__(self, groups_key: str) -> None:
        super().__init__(None, 0, groups_key=groups_key)
        self.camera: Any = None
        self._clusters: dict[int, _Clusters] = {}
        self.drawn_triangles = 0  # of the last frame (bench and tests)
        self.culling_ms = 0.0  # wall time of the last frame's culling: barrier, read-backs, spheres, cone (bench)
        self.skipped = 0  # meshes of the last frame off the corner path (not drawn by the culled pass)
        self._commands: Any = None  # the indirect draw buffer (DrawElementsIndirectCommand rows), grown as needed
        self._todo: list[tuple[DrawGroup, int, _Clusters, list[tuple[int, int]]]] = []  # this render's draws
        self._res: Any = None

    def _runs(self, state: RenderState, h: Any) -> tuple[_Clusters, list[tuple[int, int]]]:
        """Mesh ``h``'s clusters and the (first triangle, count) runs of the visible ones in their order."""
        topo = h.corner_topology
        pos = np.frombuffer(h.positions.read(size=h.vertex_count * 16, offset=h.positions_offset),
                            np.float32).reshape(-1, 4)
        cl = self._clusters.get(id(topo))
        if cl is None or cl.topology is not topo:
            if cl is not None:
                cl.release()
            cl = self._clusters[id(topo)] = _Clusters(state, topo, pos)
        keep = clusters_in_cone(*cluster_spheres(pos, cl.flat, cl.vstarts), self.camera)
        if not keep.any():
            return cl, []
        edges = np.flatnonzero(np.diff(np.concatenate([[0], keep.astype(np.int8), [0]])))
        ends = np.append(cl.starts[1:], cl.starts[-1] + cl.counts[-1])
        return cl, [(int(cl.starts[a]), int(ends[b - 1] - cl.starts[a])) for a, b in zip(edges[::2], edges[1::2])]

    def run(self, state: RenderState, frame: Frame) -> None:
        """The visible runs of every mesh first (the barrier and the positions' read-backs before the pass
        queues its clear and draws: on llvmpipe a barrier or read behind queued draws waits for them), then
        the pass (its clear, then :meth:`_draw_groups`)."""
        t0 = time.perf_counter()
        meshes = frame.lists[self.layer]
        groups = state.meshes.draw_groups(self.groups_key, meshes) if meshes else []
        self._todo = []
        if groups:
            state.ctx.memory_barrier(_READBACK_BARRIER)  # the deformers' writes, read back for the spheres
        for g in groups:
            for i, m in enumerate(g.meshes):
                if m.corner_topology is None:  # not on the corner path: centre() then reads what is there
                    self.skipped += 1
                    continue
                cl, runs = self._runs(state, m)
                if runs:
                    self._todo.append((g, i, cl, runs))
        self.culling_ms = (time.perf_counter() - t0) * 1e3
        super().run(state, frame)

    def _draw_groups(self, state: RenderState, groups: list[DrawGroup], material: Any) -> None:
        """Each mesh with visible clusters (prepared by :meth:`run` from the same ``groups``) on its own
        (instance row = its place in its group), only those clusters' runs of the corner index buffer; every
        mesh's runs in ONE upload of draw commands."""
        todo = self._todo
        if not todo:
            return
        # the runs as multi-draws (count, instances 1, first index, base vertex 0, base instance 0): gl_InstanceID
        # stays 0, so the row is u_instance_base's, as in the full pass
        runs_all = [r for *_, runs in todo for r in runs]
        cmd = np.zeros((len(runs_all), 5), np.uint32)
        cmd[:, 0] = [3 * c for _, c in runs_all]
        cmd[:, 1] = 1
        cmd[:, 2] = [3 * f for f, _ in runs_all]
        commands = self._command_buffer(state, cmd.tobytes())
        current = None
        first = 0
        for g, i, cl, runs in todo:
            current = self._bind_group(state, g, current, material)
            _, prog, u_rows, u_base, capacity = current
            vao = cl.vao(prog, g.head)
            b = i // capacity
            u_rows.write(g.row_blocks(capacity)[b])
            u_base.value = i - b * capacity
            vao.render_indirect(commands, moderngl.TRIANGLES, count=len(runs), first=first)
            first += len(runs)
            self.drawn_triangles += sum(c for _, c in runs)

    def _command_buffer(self, state: RenderState, data: bytes) -> Any:
        """The indirect command buffer holding ``data`` (grown by doubling, released by :meth:`release`)."""
        if self._commands is None or self._commands.size < len(data):
            self._release_commands()
            self._res = state.res
            self._commands = state.res.buffer(reserve=max(1024, 2 * len(data)), label="probe draw commands")
        else:  # fresh storage: the last render's draws may still read the old (a hardware driver would wait)
            self._commands.orphan()
        self._commands.write(data)
        return self._commands

    def release(self) -> None:
        for cl in self._clusters.values():
            cl.release()
        self._clusters.clear()
        self._release_commands()

    def _release_commands(self) -> None:
        if self._commands is not None:
            self._res.release(self._commands)
            self._commands = None


class ProbeRenderer:
    """A ``size`` x ``size`` G-buffer renderer over ``renderer``'s meshes (see the module docstring);
    :meth:`release` frees its targets (the shared parts stay the scene renderer's). ``cull``: "auto" (culled
    on a software rasteriser, the full pass on a hardware GPU), True or False; :attr:`cull` is the choice."""

    def __init__(self, renderer: Any, size: int = DEFAULT_PROBE_SIZE, *, cull: bool | str = "auto") -> None:
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 256:
            raise ValueError(f"the controller camera's size must be a whole number of pixels in [1, 256], got {size!r}")
        if cull not in (True, False, "auto"):
            raise ValueError(f"cull must be 'auto', True or False, got {cull!r}")
        base: RenderState = renderer.shared_state()
        self.size = size
        self._base = base
        self._targets = FrameTargets(base.res)
        self._targets.resize(size, size)
        # its own look: the flat corner pass whatever the scene shows (module docstring)
        self._state = RenderState(base.ctx, base.res, base.programs, base.meshes, self._targets, base.lights,
                                  LookSettings())
        self._reader = QueryReader(self._state)
        # its own slot in the registry's cache of material groups (the scene renderer keeps its own)
        key = f"controller camera {id(self)}"
        self._culled = _CulledGBufferPass(key)
        self.cull = software_rasteriser(base.ctx) if cull == "auto" else bool(cull)
        self._passes = (ResetRects(), self._culled)
        self._full = (ResetRects(), GBufferPass(None, 0, groups_key=key))
        self._lists: tuple[Any, Any, list] | None = None  # (the scene's draw list, entities, the probe's list)
        gb = self._targets.scene
        assert gb is not None
        # the centre id texel is zeroed before each pass (an upload: glClear is undefined on an integer target),
        # so where nothing is drawn it reads mesh 0, no surface: no depth read is needed to mask a stale texel
        self._ids_fbo = base.res.framebuffer([gb.tex["ids"]], label="probe ids")
        self._ids_tex = gb.tex["ids"]
        c = size // 2
        self._centre_viewport = (c, size - 1 - c, 1, 1)  # GL rows from the bottom
        self._corners = base.res.buffer(reserve=96, label="probe triangle corners")
        self._released = False
        self._empty = False
        self._camera: Any = None

    def render(self, camera: Any, *, entities: Any = None) -> None:
        """Draw the scene G-buffer's meshes from ``camera`` into the probe's G-buffer (only those of
        ``entities`` when given: the character a stroke is drawn on; on a software rasteriser the vertex stage
        over every mesh, not the 16x16 pixels, is the probe's cost)."""
        s = self._state
        s.set_camera(camera)
        self._camera = camera
        scene = self._base.meshes.draw_lists(tuple(self._base.targets.layers))[None]
        keep = None if entities is None else frozenset(entities)
        if self._lists is None or self._lists[0] is not scene or self._lists[1] != keep:
            # the same list object while the scene's is unchanged: the registry's groups of it stay cached
            self._lists = (scene, keep, scene if keep is None else [h for h in scene if h.entity in keep])
        meshes = self._lists[2]
        frame = Frame(camera, {None: meshes}, "none")
        self._culled.camera = camera
        culled = self.cull
        self._culled.drawn_triangles = self._culled.skipped = 0
        self._ids_tex.write(_ZERO_TEXEL, viewport=self._centre_viewport)
        for p in (self._passes if culled else self._full):
            p.run(s, frame)
        s.frame_index += 1
        # every triangle culled away: the G-buffer is only cleared, so there is nothing under the centre
        self._empty = culled and self._culled.drawn_triangles == 0 and self._culled.skipped == 0

    @property
    def drawn_triangles(self) -> int:
        """Triangles the last culled render drew (the full pass: not counted)."""
        return self._culled.drawn_triangles

    @property
    def culling_ms(self) -> float:
        """Wall time (ms) the last culled render spent choosing its clusters before its pass (the read-backs of
        the deformed positions, which wait for the GPU, the spheres and the cone test): ``bench vr``."""
        return self._culled.culling_ms

    def centre(self, camera: Any, *, entities: Any = None) -> SurfaceHit | None:
        """Render from ``camera`` (the meshes of ``entities``, default all) and read the surface under the
        centre pixel (None: nothing there): the pixel's (mesh, triangle), the exact barycentric and position of
        the centre ray on that triangle's deformed corners, their normals interpolated there (module docstring)."""
        self.render(camera, entities=entities)
        return self.read()

    def read(self) -> SurfaceHit | None:
        """The surface under the centre pixel of the last :meth:`render` (see :meth:`centre`)."""
        camera = self._camera
        if camera is None:
            raise RuntimeError("the controller camera reads what it rendered: call render() or centre() first")
        if self._empty:  # no read-back (it waits for the GPU): the frustum meets no cluster
            return None
        # the id texel (engine/render/surface.py's layout): x = mesh id + 1 (0: nothing), y = the triangle
        x, y = (int(v) for v in np.frombuffer(self._ids_fbo.read(viewport=self._centre_viewport, components=4,
                                                                 dtype="u4", alignment=1), np.uint32)[:2])
        h = self._state.meshes.meshes.get(x - 1) if x > 0 else None
        if h is None:
            return None
        pos, nrm = self._read_corners(h, h.triangles[y])
        o, d = centre_ray(camera, self.size, self._state.inv_view_proj)
        exact = ray_triangle(o, d, pos)
        if exact is None:  # the ray runs along the triangle's plane (seen edge-on): the rasteriser's answer
            return self.read_rasterised()
        bary, where = exact
        # gbuffer.frag's normal: the deformed normals interpolated, flipped on a back face (gl_FrontFacing:
        # counter-clockwise on screen, i.e. the geometric normal against the ray)
        n = bary @ nrm[:, :3].astype(np.float64)
        a, b, cc = (tuple(float(v) for v in row[:3]) for row in pos)
        if _dot(_cross(_sub(b, a), _sub(cc, a)), tuple(float(v) for v in d)) > 0.0:
            n = -n
        length = float(np.sqrt(n @ n))
        clip = np.asarray(self._state.last_view_proj, np.float64) @ np.append(where, 1.0)
        return SurfaceHit(mesh=h, triangle=y, barycentric=bary.astype(np.float32),
                          position=where.astype(np.float32),
                          normal=(n / length if length > 0 else n).astype(np.float32),
                          depth=float(clip[2] / clip[3] * 0.5 + 0.5), layer=None)

    def read_rasterised(self) -> SurfaceHit | None:
        """The rasteriser's answer at the centre pixel of the last :meth:`render`: its id and depth texels
        decoded (the barycentric as interpolated, the position unprojected from the depth), as a desktop pick
        reads; :meth:`read` falls back on it for a ray along the triangle, ``bench vr`` and the tests compare."""
        c = self.size // 2
        return self._reader.query_many([(c, c)], layer="gbuffer")[0]

    def _read_corners(self, h: Any, verts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions (3, 4), normals (3, 4)) float32, deformed, of mesh ``h``'s display vertices ``verts``:
        copied GPU-side into the probe's 96-byte buffer (6 copies queued after the pass), then ONE read."""
        ctx = self._state.ctx
        ctx.memory_barrier(_READBACK_BARRIER)
        for k, v in enumerate(int(x) for x in verts):
            ctx.copy_buffer(self._corners, h.positions, 16, read_offset=h.positions_offset + 16 * v,
                            write_offset=16 * k)
            ctx.copy_buffer(self._corners, h.normals, 16, read_offset=h.normals_offset + 16 * v,
                            write_offset=48 + 16 * k)
        rows = np.frombuffer(self._corners.read(), np.float32).reshape(6, 4)
        return rows[:3], rows[3:]

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        self._culled.release()
        self._reader.release()
        res = self._base.res
        res.release(self._corners)
        res.release(self._ids_fbo)
        self._targets.release()
