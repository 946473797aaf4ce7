"""The scene renderer: deferred G-buffers straight from the deformed-vertex SSBOs, then a depth compositor.

Passes of one frame (each a GPU timer scope, see :attr:`SceneRenderer.gpu_ms`):

``shadow``      (``shadows="map"`` only) depth of every mesh from the key light, re-rendered every
                ``shadow_interval`` frames (and when the set of meshes changes).
``gbuffer``     every mesh WITHOUT a layer, into ONE scene G-buffer with the hardware depth test: cost
                grows with pixels and triangles, not with a framebuffer per mesh. Each mesh is one
                indexed draw over its CORNER VERTICES (``engine/render/corners.py``,
                ``shaders/render/gbuffer.vert``): display vertices with a colour per triangle corner, so
                the interpolated colour vectors are the barycentrics and the provoking corner passes the
                triangle index flat (no gl_PrimitiveID, which sends llvmpipe down a slow path; no
                expanded draw), triangles in a vertex-cache friendly strip order; the vertex stage pulls
                the deformed vertices from SSBOs. The fragment stage writes albedo and an id texel (mesh
                id, triangle, barycentrics, normal; ``shaders/include/gbuffer_codec.glsl``) plus depth,
                and is kept minimal (it runs for every 4x4 block a small triangle touches): base-colour
                textures are stored as sqrt(linear albedo) in RGBA8 UNORM (:func:`albedo_levels`,
                llvmpipe's fast 8-bit filtering path, one mip level per sample), the wireframe coverage
                only in the wireframe variant. Meshes of one asset share index buffers, corner
                vertices, texcoords and texture (counted, released with the last user), and the pass
                binds them only when they change. Single-sided meshes (glTF ``doubleSided`` false) cull
                back faces. Only the depth targets are cleared: id and albedo texels mean something only
                where the depth copy is non-zero (readers mask them; a 128-bit clear costs ~4 ms at 720p
                on llvmpipe). Draws are submitted (glFlush) every :attr:`SceneRenderer.flush_triangles`
                triangles so a software rasteriser rasterises while the CPU still runs later meshes'
                vertex stage. The vertex stage also grows the G-buffer's SCREEN RECTANGLE (SSBO, atomics
                only for vertices outside it): the pixel bounds of every vertex's projection, the whole
                view when one lies behind the eye; exact and conservative, never read back by the CPU.
``layer:NAME``  the meshes given layer NAME, into that layer's own G-buffer (research Stage 4 gives every
                mesh its own framebuffer; here a tool opts in where it must see a surface whatever
                covers it: skin under clothes, a character behind another).
``compose``     research Stage 5, per G-buffer one quad over its screen rectangle (built on the GPU from
                the rectangle SSBO, ``shaders/render/compose.vert``) at the far plane, early-depth-tested
                against that G-buffer so the shader runs only on its surfaces: per pixel the nearest of
                the scene G-buffer and the layers wins, is lit (key + fill + back light, hemisphere
                ambient, rim; optional wireframe) or shown as a debug channel (:data:`VIEWS`), and is
                composited by depth with the cached backdrop (background gradient + ground grid, redrawn
                only when the camera, the lights or the look change; copied into the frame first).
                With layers (or a shadow map) it also writes a scene-level id buffer and frame depth
                (0 where no mesh shows); without, the scene G-buffer is the scene-level id buffer and
                queries apply the backdrop depth test compose applies (:meth:`SceneRenderer._region_reads`),
                so the pass writes colour only and reads the G-buffer through image loads. Cost grows
                with the pixels the meshes cover and with the number of layers, not of meshes.
                Contact-shadow blobs (the default ``shadows="blob"``: one instanced draw of octagons)
                darken the ground under each entity, drawn in the same framebuffer just before.
``ui``          optional overlay callback drawing into :attr:`SceneRenderer.framebuffer`.
``present``     copies the frame to a target framebuffer (the window) when one is given.

A mesh's deformed vertex data lives in two SSBOs of vec4 (positions w = 1, normals w = 0), or in a range
of each (glBindBufferRange: the deformer graph pools the outputs of many meshes in one buffer); the
deformer graph writes them with compute shaders (pass its ``output_ranges`` as ``buffers=`` to
:meth:`SceneRenderer.add_mesh`), or :meth:`SceneRenderer.update_vertices` uploads them from the CPU.
Every mesh carries tags (entity, glTF node, mesh, primitive) so ids decode to scene objects.

Queries (:meth:`~SceneRenderer.query`, :meth:`~SceneRenderer.query_many`, :meth:`~SceneRenderer.query_async`)
read the id and depth texels of the last frame (or of one layer); a batch reads only the bounding
region of its pixels, once; the async form only records the query, the copy into pixel-pack buffers
is queued at the start of the next frame (before anything overwrites the texels) and mapped after it,
so a query never stalls the frame it is issued in (one frame of latency). A hit's (mesh, triangle, barycentric) is a
:class:`~engine.render.surface.SurfacePoint`; :meth:`~SceneRenderer.evaluate` re-evaluates such points
on the current deformed vertices.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import ctypes

import moderngl
import numpy as np

from engine.render.camera import look_at
from engine.render.corners import CornerTopology, build_corner_topology
from engine.gpu.layouts import BLOB, GLSL_CONSTANTS, LIGHT, MAX_LAYERS, MAX_LIGHTS, pack_mat4
from engine.gpu.resources import GpuResources
from engine.gpu.shaderlib import ProgramCache
from engine.render.surface import (SurfaceHit, SurfacePoint, decode_ids, interpolate_surface,
                                   unproject)
from engine.gpu.timers import GpuTimers

PASSES = ("shadow", "gbuffer", "compose", "ui", "present")
"""Fixed passes; each layer adds ``layer:NAME``."""
VIEWS = ("color", "albedo", "normal", "position", "depth", "triangle", "barycentric", "mesh")
"""What the compose pass shows: the lit frame, or one G-buffer channel in false colour."""
SHADOW_MODES = ("off", "blob", "map")
_RESERVED_SOURCES = ("frame", "gbuffer")

# G-buffer attachments: name -> (components, dtype); order = fragment output locations.
GBUFFER_LAYOUT: tuple[tuple[str, int, str], ...] = (
    ("albedo", 4, "f1"),  # sqrt(linear albedo), a = wireframe edge coverage
    ("ids", 4, "u4"),     # mesh id + 1, triangle, packed barycentrics, packed normal (surface.py)
    ("zcopy", 1, "f4"),   # window depth (0 = no surface): what the compositor and queries read
)

_MESH_DEFINES = ("BINDING_POSITIONS", "BINDING_NORMALS", "BINDING_TEXCOORDS")
_CORNER_DEFINES = ("CORNER_TRIANGLE_SHIFT", "BINDING_SCREEN_RECTS")
_COMPOSE_IMAGES = ("IMAGE_GBUFFER_ZCOPY", "IMAGE_GBUFFER_ALBEDO", "IMAGE_GBUFFER_IDS", "IMAGE_BACKDROP_DEPTH")
_LIGHT_DEFINES = ("BINDING_LIGHTS", "MAX_LIGHTS")


def _constants(*names: str) -> dict[str, int]:
    return {n: GLSL_CONSTANTS[n] for n in names}


def srgb_to_linear(c) -> np.ndarray:
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _gl_function(ctx: moderngl.Context, name: str, *argtypes):
    """A GL entry point (returning void) from the context's own loader, or None where the loader does
    not provide it."""
    loader = getattr(getattr(ctx, "mglo", None), "_context", None)
    load = getattr(loader, "load_opengl_function", None) or getattr(loader, "load", None)
    if load is None:
        return None
    try:
        addr = load(name)
    except (AttributeError, OSError, TypeError, ValueError):
        return None
    return ctypes.CFUNCTYPE(None, *argtypes)(addr) if addr else None


def gl_flush_function(ctx: moderngl.Context) -> Callable[[], None] | None:
    """``glFlush`` of the context's own GL loader (moderngl exposes no flush), or None where the loader
    does not provide it. A flush only submits the queued commands; nothing waits."""
    return _gl_function(ctx, "glFlush")


def albedo_levels(image: np.ndarray) -> list[np.ndarray]:
    """The mip chain of a base-colour image ((H,W,4) uint8 sRGB, row 0 = top) in the G-buffer's albedo
    encoding: rgb = sqrt(linear), alpha linear, each level the 2x2 mean of the previous one in linear
    light (odd edges dropped), down to 1x1. What the G-buffer pass samples (RGBA8 UNORM: llvmpipe filters
    8-bit UNORM texels on its fast path; an sRGB texture would be decoded per texel)."""
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 4 or img.dtype != np.uint8:
        raise ValueError(f"image must be (H,W,4) uint8, got {img.shape} {img.dtype}")
    lin = np.empty(img.shape, np.float32)
    lin[..., :3] = srgb_to_linear(img[..., :3] / np.float32(255.0))
    lin[..., 3] = img[..., 3] / np.float32(255.0)
    levels = []
    while True:
        enc = np.empty(lin.shape, np.float32)
        enc[..., :3] = np.sqrt(lin[..., :3])
        enc[..., 3] = lin[..., 3]
        levels.append(np.clip(np.rint(enc * 255.0), 0, 255).astype(np.uint8))
        h, w = lin.shape[:2]
        if h == 1 and w == 1:
            return levels
        h2, w2 = max(h // 2, 1), max(w // 2, 1)
        fy, fx = (2 if h > 1 else 1), (2 if w > 1 else 1)
        lin = lin[:h2 * fy, :w2 * fx].reshape(h2, fy, w2, fx, 4).mean(axis=(1, 3), dtype=np.float32)


def _digest(a: np.ndarray) -> bytes:
    """Content key of an array (shape, dtype and bytes) for sharing GPU copies of equal data."""
    a = np.ascontiguousarray(a)
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((a.shape, a.dtype.str)).encode())
    h.update(a.data)
    return h.digest()


def _masked_ids(ids: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Id texels with those of pixels without a surface (depth texel 0) zeroed: the renderer clears
    only depth targets, so an id texel is stale wherever its depth texel is 0."""
    return np.where((depth != 0.0)[..., None], ids, np.uint32(0))


def vertex_normals(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted vertex normals (V,3) float32: the sum of the incident faces' cross products (whose
    length is twice the area), normalised; vertices without area get +Y."""
    p = np.asarray(positions, np.float64)
    t = np.asarray(triangles, np.int64)
    v = p.shape[0]
    fn = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    idx = t.reshape(-1)
    w = np.repeat(fn, 3, axis=0)
    acc = np.stack([np.bincount(idx, weights=w[:, k], minlength=v) for k in range(3)], axis=1)
    n = np.linalg.norm(acc, axis=1)
    ok = n > 1e-20
    out = np.zeros((v, 3))
    out[ok] = acc[ok] / n[ok, None]
    out[~ok] = (0.0, 1.0, 0.0)
    return out.astype(np.float32)


@dataclass(eq=False)
class MeshHandle:
    """One registered mesh. ``positions`` / ``normals`` are the vec4 SSBOs the deformers write;
    ``bounds`` (min, max) world box (fits the shadow camera and the contact-shadow blob; set it when a
    GPU stage deforms). Tags: ``entity`` (ECS entity), glTF ``node``, ``mesh_index``, ``primitive``
    (-1 when unknown). ``layer``: name of the layer it draws into, None for the scene G-buffer.
    ``double_sided`` False (glTF ``material.doubleSided`` false) culls back faces in the G-buffer pass.
    Meshes with the same triangles share ``indices`` and the corner vertices (``corner_indices``,
    ``corners``, ``corner_topology``: engine/render/corners.py), with the same texcoords too
    ``texcoords`` and ``corner_texcoords`` (per corner vertex), and with the same base-colour image
    ``texture``; the renderer counts the users and releases them with the last one."""

    id: int
    label: str
    vertex_count: int
    triangles: np.ndarray = field(repr=False)
    positions: moderngl.Buffer = field(repr=False)
    normals: moderngl.Buffer = field(repr=False)
    indices: moderngl.Buffer = field(repr=False)
    corner_indices: moderngl.Buffer | None = field(default=None, repr=False)
    corners: moderngl.Buffer | None = field(default=None, repr=False)
    corner_topology: CornerTopology | None = field(default=None, repr=False)
    texcoords: moderngl.Buffer | None = field(default=None, repr=False)
    corner_texcoords: moderngl.Buffer | None = field(default=None, repr=False)  # texcoords per corner vertex
    texture: moderngl.Texture | None = field(default=None, repr=False)
    base_color: np.ndarray = field(default_factory=lambda: np.ones(4, np.float32))
    bounds: tuple[np.ndarray, np.ndarray] | None = None
    visible: bool = True
    entity: int = -1
    node: int = -1
    mesh_index: int = -1
    primitive: int = -1
    layer: str | None = None
    owns_vertex_buffers: bool = True
    double_sided: bool = True
    positions_offset: int = 0  # byte offset of the mesh's range in ``positions`` (glBindBufferRange)
    normals_offset: int = 0    # byte offset of the mesh's range in ``normals``
    shared_keys: tuple = field(default=(), repr=False)  # keys of the shared objects it uses (renderer-internal)

    def bind_vertices(self, binding_positions: int, binding_normals: int) -> None:
        """Bind the mesh's positions / normals ranges (V vec4 each) to the two SSBO binding points."""
        size = self.vertex_count * 16
        self.positions.bind_to_storage_buffer(binding_positions, offset=self.positions_offset, size=size)
        self.normals.bind_to_storage_buffer(binding_normals, offset=self.normals_offset, size=size)

    @property
    def albedo_scale(self) -> tuple[float, float, float]:
        """sqrt of the linear RGB base colour (the G-buffer's albedo encoding; clamped to [0, 1])."""
        return tuple(math.sqrt(min(max(float(x), 0.0), 1.0)) for x in self.base_color[:3])

    @property
    def triangle_count(self) -> int:
        return int(self.triangles.shape[0])


@dataclass
class LookSettings:
    """Colours are display sRGB (converted to linear for shading); lengths in metres.

    ``shadows``: "off", "blob" (default: soft contact shadows under each entity, nearly free) or "map"
    (key-light shadow map with ``shadow_taps`` 1, 4 or 9 hardware-filtered taps per pixel, re-rendered
    every ``shadow_interval`` frames); True means "map", False "off". ``tessellation`` turns on Phong
    tessellation (``tess_level`` in [1, 16], shape factor ``phong_alpha`` in [0, 1])."""

    background_top: tuple = (0.33, 0.40, 0.50)
    background_horizon: tuple = (0.72, 0.74, 0.76)
    background_bottom: tuple = (0.30, 0.30, 0.31)
    ground: bool = True
    ground_height: float = 0.0
    ground_color: tuple = (0.50, 0.50, 0.49)
    grid_color: tuple = (0.30, 0.31, 0.33)
    grid_spacing: tuple = (0.25, 1.0)
    fade_range: tuple | None = None  # None: from the camera distance
    sky_color: tuple = (0.62, 0.68, 0.78)
    ground_bounce: tuple = (0.36, 0.33, 0.30)
    ambient: float = 0.45
    rim_strength: float = 0.12
    exposure: float = 1.0
    shadows: str | bool = "blob"
    shadow_taps: int = 1
    shadow_interval: int = 1
    ground_shadow: float = 0.45  # darkening of the ground in full key-light shadow ("map")
    blob_strength: float = 0.5
    wireframe: bool = False
    wire_color: tuple = (0.05, 0.06, 0.08)
    tessellation: bool = False
    tess_level: float = 3.0
    phong_alpha: float = 0.75

    def shadow_mode(self) -> str:
        """The validated shadow mode ("off", "blob" or "map")."""
        s = self.shadows
        mode = ("map" if s else "off") if isinstance(s, bool) else s
        if mode not in SHADOW_MODES:
            raise ValueError(f"shadows must be one of {SHADOW_MODES} (or a bool), got {s!r}")
        if mode == "map" and self.shadow_taps not in (1, 4, 9):
            raise ValueError(f"shadow_taps must be 1, 4 or 9, got {self.shadow_taps!r}")
        if mode == "map" and not (isinstance(self.shadow_interval, int) and self.shadow_interval >= 1):
            raise ValueError(f"shadow_interval must be an int >= 1 frames, got {self.shadow_interval!r}")
        return mode

    def check(self) -> None:
        """Raise ValueError for a setting out of range."""
        self.shadow_mode()
        if not 1.0 <= float(self.tess_level) <= 16.0:
            raise ValueError(f"tess_level must be in [1, 16], got {self.tess_level!r}")
        if not 0.0 <= float(self.phong_alpha) <= 1.0:
            raise ValueError(f"phong_alpha must be in [0, 1], got {self.phong_alpha!r}")
        if not 0.0 <= float(self.blob_strength) <= 1.0:
            raise ValueError(f"blob_strength must be in [0, 1], got {self.blob_strength!r}")


def default_lights() -> np.ndarray:
    """Key (warm, upper front right), fill (cool, left) and back light as LIGHT structs."""
    lights = LIGHT.zeros(3)
    dirs = np.array([[0.75, 1.0, 0.5], [-0.8, 0.35, 0.45], [-0.2, 0.6, -1.0]])
    lights["direction"][:, :3] = dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    lights["color"] = [[1.25, 1.17, 1.05, 0.2], [0.26, 0.31, 0.42, 0.5], [0.35, 0.35, 0.4, 0.0]]
    return lights


def _ortho(half_w: float, half_h: float, near: float, far: float) -> np.ndarray:
    m = np.eye(4)
    m[0, 0], m[1, 1] = 1.0 / half_w, 1.0 / half_h
    m[2, 2] = -2.0 / (far - near)
    m[2, 3] = -(far + near) / (far - near)
    return m


class _GBuffer:
    """One G-buffer (albedo RGBA8, ids RGBA32UI, depth) of a given size; the scene's or a layer's."""

    def __init__(self, res: GpuResources, size: tuple[int, int], label: str) -> None:
        self.res = res
        self.tex: dict[str, moderngl.Texture] = {}
        for name, comps, dtype in GBUFFER_LAYOUT:
            self.tex[name] = res.texture(size, comps, dtype=dtype, filter=(moderngl.NEAREST, moderngl.NEAREST),
                                         repeat=False, label=f"{label} {name}")
        self.depth = res.depth_texture(size, label=f"{label} depth")
        self.fbo = res.framebuffer([self.tex[n] for n, _, _ in GBUFFER_LAYOUT], self.depth, label=label)
        # what is cleared each frame: zcopy (0 = no surface) and the depth; albedo and ids are only
        # meaningful where zcopy != 0, so they are never cleared (a 128-bit clear is slow on llvmpipe)
        self.clear_fbo = res.framebuffer([self.tex["zcopy"]], self.depth, label=f"{label} clear")
        self.compose_fbo: moderngl.Framebuffer | None = None        # frame colour + ids + depth
        self.compose_color_fbo: moderngl.Framebuffer | None = None  # frame colour only

    def release(self) -> None:
        for fbo in (self.compose_color_fbo, self.compose_fbo):
            if fbo is not None:
                self.res.release(fbo)
        self.res.release(self.clear_fbo)
        self.res.release(self.fbo)
        self.res.release(self.depth)
        for t in reversed(list(self.tex.values())):
            self.res.release(t)


class PendingQuery:
    """An asynchronous batched query of the frame it was issued after. Issuing only records it; the
    renderer queues the copy of the id and depth texels of the pixels' bounding region into pixel-pack
    buffers at the start of its next :meth:`SceneRenderer.render` (before anything overwrites them), so
    the issuing frame never waits for the GPU, not even on a software rasteriser, where a read-back
    waits for the frame's rasterisation. :attr:`ready` once that next frame has been rendered;
    :meth:`result` then maps the buffers. Obtain from :meth:`SceneRenderer.query_async`."""

    def __init__(self, renderer: "SceneRenderer", points: np.ndarray, region: tuple[int, int, int, int],
                 source: str, inv_vp: np.ndarray, frame: int) -> None:
        self._r = renderer
        self.points = points
        self.region = region
        self.source = source
        self._buffers: tuple[moderngl.Buffer, ...] = ()
        self._copied = False
        self._size = (renderer.width, renderer.height)  # of the frame it asks about
        self._cancelled = False
        self._inv_vp = inv_vp
        self.frame = frame
        self._result: list[SurfaceHit | None] | None = None

    def _copy(self) -> None:
        """Queue the region's copy into pixel-pack buffers (the renderer calls this before it next
        writes the source's targets)."""
        if self._copied:
            return
        self._copied = True
        r = self._r
        _, _, w, h = self.region
        self._reads = [(comps, dtype) for _, _, comps, dtype in r._region_reads(self.source)]
        buffers = []
        for fbo, attachment, comps, dtype in r._region_reads(self.source):
            buf = r._pbo(w * h * 4 * comps)
            fbo.read_into(buf, viewport=self.region, components=comps, attachment=attachment, dtype=dtype,
                          alignment=1)
            buffers.append(buf)
        self._buffers = tuple(buffers)

    @property
    def ready(self) -> bool:
        """True once a frame has been rendered since the query was issued (mapping will not wait)."""
        return self._result is not None or self._r.frame_index > self.frame

    def result(self) -> list[SurfaceHit | None]:
        """The hits (None where no surface), in the order of the points; releases the buffers. Called
        before :attr:`ready`, it copies and maps now (waiting for the GPU)."""
        if self._result is None:
            if self._cancelled:
                raise RuntimeError("the renderer was released before this query's texels were copied")
            self._r._forget_pending(self)
            self._copy()
            x0, y0, w, h = self.region
            arrays = [np.frombuffer(buf.read(size=w * h * 4 * comps), np.uint32 if dtype == "u4" else np.float32)
                      .reshape((h, w, comps) if comps > 1 else (h, w))
                      for buf, (comps, dtype) in zip(self._buffers, self._reads)]
            ids, depth = self._r._combine_reads(arrays)
            self._result = self._r._hits_from_region(self.points, self.region, ids, depth, self.source,
                                                     self._inv_vp, self._size)
            self._r._recycle(self._buffers)
            self._buffers = ()
        return self._result


class SceneRenderer:
    """Deferred scene renderer over meshes whose vertices live in SSBOs (see the module doc)."""

    def __init__(self, ctx: moderngl.Context, resources: GpuResources, width: int, height: int, *,
                 programs: ProgramCache | None = None, shadow_size: int = 2048,
                 look: LookSettings | None = None) -> None:
        self._check_size(width, height)
        if not 16 <= shadow_size <= 8192:
            raise ValueError(f"shadow_size must be in [16, 8192], got {shadow_size}")
        self.ctx = ctx
        self.res = resources
        self._own_programs = programs is None
        self.programs = programs if programs is not None else ProgramCache(resources)
        self.look = look or LookSettings()
        self.look.check()
        self.meshes: dict[int, MeshHandle] = {}
        self._next_id = 0
        self._owned: list = []  # renderer-wide objects (not per mesh, not per size)
        self._vaos: dict[tuple, moderngl.VertexArray] = {}
        self._vao_generation = self.programs.generation
        self._view = "color"
        self._layers: dict[str, _GBuffer | None] = {}  # name -> G-buffer (None until sized)
        self._draw_lists: dict[str | None, list[MeshHandle]] | None = None
        self._pbo_pool: list[moderngl.Buffer] = []
        self._pending: list[PendingQuery] = []  # asynchronous queries whose copy is not queued yet
        self._frame_ids_written = False  # whether the last frame's compositor wrote the frame id targets
        self.frame_index = 0
        self.texture_anisotropy = 1.0  # max anisotropy of base-colour textures added from now on
        self.last_view_proj: np.ndarray | None = None
        self.last_view: np.ndarray | None = None
        self.last_projection: np.ndarray | None = None
        self._inv_vp = np.eye(4)
        self._eye = np.zeros(3)
        self._backdrop_key: tuple | None = None
        self._shadow_valid = False
        self._shadow_frame = -10**9
        self._inited_programs: set[int] = set()
        self.last_wall_ms: dict[str, float] = {}  # per pass, from the last render(profile=True)
        self.flush_triangles = 8192
        """The G-buffer pass submits its draws (glFlush) every time about this many triangles have been
        queued, so that a software rasteriser (llvmpipe bins a whole batch before its threads rasterise it)
        rasterises one batch while the CPU still runs the next meshes' vertex stage; 0 = never."""
        self._flush = gl_flush_function(ctx)
        self._shared: dict[tuple, list] = {}  # key -> [users, objects...]: topologies and textures of meshes

        # Compile every program the current settings need now: a shader error surfaces at set-up.
        for uv in (False, True):
            self._gbuffer_program(uv, tess=self.look.tessellation, wire=self.look.wireframe)
        self._program("backdrop")
        self._program("present")
        self._program("shadow")
        self._program("blob")
        self._program("ground_shadow")

        self._lights = self._own(resources.buffer(LIGHT.zeros(MAX_LIGHTS), label="lights"))
        self.light_count = 0
        self._lights_version = 0
        self.set_lights(default_lights())  # compiles the compose program for this light count
        self._blobs = self._own(resources.buffer(BLOB.zeros(64), label="contact shadow blobs"))
        # Per G-buffer (scene, then the layers in order) the screen rectangle its surfaces cover, grown by
        # the G-buffer pass's vertex stage and read by the compose pass's (no CPU read-back): see
        # shaders/render/gbuffer.vert (SCREEN_RECT) and compose.vert.
        self._rects = self._own(resources.buffer(np.zeros((MAX_LAYERS + 1, 4), np.int32), label="screen rects"))
        self._blob_capacity = 64
        self._shadow_size = shadow_size
        self._shadow_tex = self._own(resources.depth_texture((shadow_size, shadow_size), label="shadow map"))
        self._shadow_tex.compare_func = "<="
        self._shadow_tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self._shadow_tex.repeat_x = self._shadow_tex.repeat_y = False
        self._shadow_fbo = self._own(resources.framebuffer([], self._shadow_tex, label="shadow fbo"))
        self._shadow_matrix = np.eye(4, dtype=np.float32)
        self.timers = GpuTimers(resources, PASSES)
        self._fullscreen: dict[int, moderngl.VertexArray] = {}
        self._targets: list = []
        self._scene: _GBuffer | None = None
        self.width = self.height = 0
        self.resize(width, height)

    # -- ownership helpers -----------------------------------------------------------------------
    def _own(self, obj):
        self._owned.append(obj)
        return obj

    _STAGES = {
        "backdrop": dict(vertex="render/fullscreen.vert", fragment="render/backdrop.frag",
                         defines=_constants(*_LIGHT_DEFINES)),
        "present": dict(vertex="render/fullscreen.vert", fragment="render/present.frag"),
        "shadow": dict(vertex="render/mesh.vert", fragment="render/shadow.frag", defines=_constants(*_MESH_DEFINES)),
        "blob": dict(vertex="render/blob.vert", fragment="render/blob.frag", defines=_constants("BINDING_BLOBS")),
        "ground_shadow": dict(vertex="render/fullscreen.vert", fragment="render/ground_shadow.frag"),
    }

    def _program(self, name: str) -> moderngl.Program:
        return self.programs.get_program(**self._STAGES[name])

    def _gbuffer_program(self, uv: bool, *, tess: bool, wire: bool) -> moderngl.Program:
        defines = _constants(*_MESH_DEFINES)
        if uv:
            defines["HAS_TEXCOORDS"] = 1
        if wire:
            defines["WIREFRAME"] = 1
        if tess:
            defines["TESSELLATION"] = 1
            return self.programs.get_program(vertex="render/mesh.vert", tess_control="render/phong.tesc",
                                             tess_evaluation="render/phong.tese", fragment="render/gbuffer.frag",
                                             defines=defines)
        defines.update(_constants(*_CORNER_DEFINES))
        defines["CORNERS"] = 1
        defines["SCREEN_RECT"] = 1
        return self.programs.get_program(vertex="render/gbuffer.vert", fragment="render/gbuffer.frag", defines=defines)

    def _frame_ids_needed(self) -> bool:
        """Whether the compositor writes the frame-level id and depth targets: with layers (nearest of
        several G-buffers) and for the shadow-map ground pass; otherwise the scene G-buffer, tested
        against the backdrop depth, is the scene-level id buffer (see :meth:`_region_reads`)."""
        return bool(self._layers) or self.look.shadow_mode() == "map"

    def _compose_program(self) -> moderngl.Program:
        defines = _constants(*_LIGHT_DEFINES, "BINDING_SCREEN_RECTS")
        defines["LIGHT_COUNT"] = self.light_count
        if self._frame_ids_needed():
            defines["FRAME_IDS"] = 1
        n = len(self._layers)
        if n:
            defines["LAYER_COUNT"] = n
        else:
            defines.update(_constants(*_COMPOSE_IMAGES))
        v = VIEWS.index(self._view)
        if v:
            defines["VIEW"] = v
        elif self.look.shadow_mode() == "map":
            defines["SHADOW_TAPS"] = int(self.look.shadow_taps)
        return self.programs.get_program(vertex="render/compose.vert", fragment="render/compose.frag",
                                         defines=defines)

    def _vao(self, prog: moderngl.Program, h: MeshHandle | None, *, corners: bool = False) -> moderngl.VertexArray:
        """The vertex array of ``prog`` for mesh ``h`` (or the attribute-less fullscreen one), made
        once per (program, mesh) and kept until the mesh goes or a shader reload swaps programs. Its
        index buffer is the mesh's triangles, or with ``corners`` the triangles over its corner vertices
        (the G-buffer draw, see gbuffer.vert: the corner vertices' static data, info word and texcoords,
        are vertex attributes); the vertex stages pull the deformed vertices from SSBOs themselves."""
        key = (id(prog), None if h is None else h.id)
        vao = self._vaos.get(key)
        if vao is None:
            label = "fullscreen" if h is None else f"{h.label}"
            index = None if h is None else (h.corner_indices if corners else h.indices)
            content = []
            if corners:  # static per-corner data as vertex attributes (see gbuffer.vert)
                content.append((h.corners, "2u", "in_corner"))
                if "in_uv" in prog:
                    content.append((h.corner_texcoords, "2f", "in_uv"))
            vao = self.res.vertex_array(prog, content, index_buffer=index, label=f"{label} vao")
            self._vaos[key] = vao
        return vao

    def _refresh_after_reload(self) -> None:
        """Vertex arrays are bound to a program: drop them after the cache swapped programs."""
        if self._vao_generation == self.programs.generation:
            return
        for vao in self._vaos.values():
            self.res.release(vao)
        self._vaos.clear()
        self._inited_programs.clear()
        self._backdrop_key = None
        self._vao_generation = self.programs.generation

    @staticmethod
    def _check_size(width: int, height: int) -> None:
        if not (1 <= int(width) <= 16384 and 1 <= int(height) <= 16384):
            raise ValueError(f"render size must be in [1, 16384] per side, got {width}x{height}")

    # -- targets -------------------------------------------------------------------------------
    def resize(self, width: int, height: int) -> None:
        """(Re)create the size-dependent targets; the old ones are released first."""
        self._check_size(width, height)
        if (width, height) == (self.width, self.height):
            return
        self._copy_pending()
        self._release_targets()
        self.width, self.height = int(width), int(height)
        size = (self.width, self.height)
        r = self.res
        t = self._targets
        near = (moderngl.NEAREST, moderngl.NEAREST)
        self._color = r.texture(size, 4, filter=(moderngl.LINEAR, moderngl.LINEAR), repeat=False, label="frame colour")
        self._ids = r.texture(size, 4, dtype="u4", filter=near, repeat=False, label="frame ids")
        self._depth = r.texture(size, 1, dtype="f4", filter=near, repeat=False, label="frame depth")
        self._frame = r.framebuffer([self._color, self._ids, self._depth], label="frame")
        # Only the frame depth is cleared (0 = no surface): ids texels are meaningful where depth != 0
        # (clearing a 128-bit target costs ~10x a 32-bit one on llvmpipe).
        self._frame_clear = r.framebuffer([self._depth], label="frame depth")
        self._overlay = r.framebuffer([self._color], label="frame overlay")
        self._backdrop = r.texture(size, 4, filter=near, repeat=False, label="backdrop colour")
        self._backdrop_depth = r.depth_texture(size, label="backdrop depth")
        self._backdrop_zcopy = r.texture(size, 1, dtype="f4", filter=near, repeat=False, label="backdrop depth copy")
        self._backdrop_fbo = r.framebuffer([self._backdrop, self._backdrop_zcopy], self._backdrop_depth,
                                           label="backdrop")
        self._backdrop_color_fbo = r.framebuffer([self._backdrop], label="backdrop colour")
        t += [self._color, self._ids, self._depth, self._frame, self._frame_clear, self._overlay, self._backdrop,
              self._backdrop_depth, self._backdrop_zcopy, self._backdrop_fbo, self._backdrop_color_fbo]
        self._scene = self._new_gbuffer("scene")
        for name in self._layers:
            self._layers[name] = self._new_gbuffer(f"layer {name}")
        self._backdrop_key = None

    def _new_gbuffer(self, label: str) -> _GBuffer:
        """A G-buffer plus the compose framebuffer that writes the frame with the G-buffer's depth as
        the early-depth-test mask (needs the frame targets)."""
        gb = _GBuffer(self.res, (self.width, self.height), f"{label} gbuffer")
        gb.compose_fbo = self.res.framebuffer([self._color, self._ids, self._depth], gb.depth,
                                              label=f"{label} compose")
        gb.compose_color_fbo = self.res.framebuffer([self._color], gb.depth, label=f"{label} compose colour")
        return gb

    def _release_targets(self) -> None:
        for name, gb in self._layers.items():
            if gb is not None:
                gb.release()
                self._layers[name] = None
        if self._scene is not None:
            self._scene.release()
            self._scene = None
        for obj in reversed(self._targets):
            self.res.release(obj)
        self._targets.clear()

    @property
    def framebuffer(self) -> moderngl.Framebuffer:
        """The finished frame's colour (RGBA8) for overlays (UI) to draw into."""
        return self._overlay

    @property
    def color_texture(self) -> moderngl.Texture:
        return self._color

    # -- layers --------------------------------------------------------------------------------
    @property
    def layers(self) -> tuple[str, ...]:
        return tuple(self._layers)

    def add_layer(self, name: str) -> None:
        """Create a layer: a G-buffer of its own that meshes can be moved into (:meth:`set_layer`)."""
        if not isinstance(name, str) or not name or name in _RESERVED_SOURCES:
            raise ValueError(f"layer name must be a non-empty str other than {_RESERVED_SOURCES}, got {name!r}")
        if name in self._layers:
            raise ValueError(f"layer {name!r} exists already; layers: {list(self._layers)}")
        if len(self._layers) >= MAX_LAYERS:
            raise ValueError(f"at most {MAX_LAYERS} layers, got a request for layer {len(self._layers) + 1}")
        self._layers[name] = self._new_gbuffer(f"layer {name}")
        self.timers.add_pass(f"layer:{name}")
        self._draw_lists = None
        self._compose_program()

    def remove_layer(self, name: str) -> None:
        """Remove a layer; its meshes go back to the scene G-buffer."""
        if name not in self._layers:
            raise ValueError(f"no layer {name!r}; layers: {list(self._layers)}")
        self._copy_pending()
        for h in self.meshes.values():
            if h.layer == name:
                h.layer = None
        gb = self._layers.pop(name)
        if gb is not None:
            gb.release()
        self.timers.remove_pass(f"layer:{name}")
        self._draw_lists = None

    def set_layer(self, handles: MeshHandle | Sequence[MeshHandle], layer: str | None) -> None:
        """Draw these meshes into ``layer`` (created with :meth:`add_layer`), or the scene G-buffer (None)."""
        if layer is not None and layer not in self._layers:
            raise ValueError(f"no layer {layer!r}; layers: {list(self._layers)} (add_layer first)")
        hs = [handles] if isinstance(handles, MeshHandle) else list(handles)
        for h in hs:
            self._check_handle(h)
            h.layer = layer
        self._draw_lists = None

    # -- settings -------------------------------------------------------------------------------
    @property
    def view(self) -> str:
        """The channel the compose pass shows (one of :data:`VIEWS`)."""
        return self._view

    @view.setter
    def view(self, name: str) -> None:
        if name not in VIEWS:
            raise ValueError(f"view must be one of {', '.join(VIEWS)}; got {name!r}")
        self._view = name
        self._compose_program()

    def cycle_view(self, step: int = 1) -> str:
        """Switch to the next debug view (for a window key); returns its name."""
        self.view = VIEWS[(VIEWS.index(self._view) + step) % len(VIEWS)]
        return self._view

    @property
    def wireframe(self) -> bool:
        return self.look.wireframe

    @wireframe.setter
    def wireframe(self, on: bool) -> None:
        self.look.wireframe = bool(on)
        for uv in (False, True):  # compile the variant now, not in the next frame
            self._gbuffer_program(uv, tess=self.look.tessellation, wire=self.look.wireframe)

    def set_tessellation(self, on: bool, *, level: float | None = None, alpha: float | None = None) -> None:
        """Toggle Phong tessellation (compiles its programs now)."""
        if level is not None:
            self.look.tess_level = float(level)
        if alpha is not None:
            self.look.phong_alpha = float(alpha)
        self.look.tessellation = bool(on)
        self.look.check()
        for uv in (False, True):
            self._gbuffer_program(uv, tess=self.look.tessellation, wire=self.look.wireframe)

    # -- meshes --------------------------------------------------------------------------------
    def add_mesh(self, triangles: np.ndarray, vertex_count: int, *, base_color=(1.0, 1.0, 1.0, 1.0),
                 texcoords: np.ndarray | None = None, image: np.ndarray | None = None,
                 positions: np.ndarray | None = None, normals: np.ndarray | None = None,
                 buffers: tuple[moderngl.Buffer | tuple[moderngl.Buffer, int, int],
                                moderngl.Buffer | tuple[moderngl.Buffer, int, int]] | None = None,
                 entity: int = -1, node: int = -1, mesh_index: int = -1, primitive: int = -1,
                 layer: str | None = None, label: str = "", double_sided: bool = True) -> MeshHandle:
        """Register a mesh: SSBOs for V vertices (filled by ``update_vertices`` or a deformer; or the
        deformer's own vec4 ``buffers`` = (positions, normals), not owned here; each a buffer or a range
        (buffer, byte offset, byte size) of one, as ``DeformerGraph.output_ranges`` gives), its index buffer,
        optional TEXCOORD_0 and base-colour image ((H,W,4) uint8, row 0 = top, sRGB). ``base_color``
        is the linear glTF baseColorFactor. ``positions`` (and ``normals``) upload now. Tags
        (entity, node, mesh_index, primitive) name the mesh in query results and G-buffer exports.
        ``double_sided``: the glTF material's ``doubleSided``; False culls back faces (counter-clockwise
        front faces, as glTF), which halves the triangles a closed mesh rasterises; True (the default)
        draws both sides, the inside of an open mesh lit as seen from there."""
        v = int(vertex_count)
        if v < 1:
            raise ValueError(f"vertex_count must be >= 1, got {vertex_count}")
        tri = np.asarray(triangles)
        if tri.ndim != 2 or tri.shape[1] != 3 or tri.shape[0] < 1 or not np.issubdtype(tri.dtype, np.integer):
            raise ValueError(f"triangles must be a non-empty (T,3) integer array, got shape {tri.shape} {tri.dtype}")
        if tri.min() < 0 or tri.max() >= v:
            raise ValueError(f"triangle indices must be in [0, {v - 1}], got [{tri.min()}, {tri.max()}]")
        tri = np.ascontiguousarray(tri, np.uint32)
        color = np.asarray(base_color, np.float32).reshape(-1)
        if color.shape != (4,) or not np.all(np.isfinite(color)):
            raise ValueError(f"base_color must be 4 finite numbers (linear RGBA), got {base_color!r}")
        if texcoords is not None:
            texcoords = np.asarray(texcoords, np.float32)
            if texcoords.shape != (v, 2):
                raise ValueError(f"texcoords must be ({v},2), got {texcoords.shape}")
        if image is not None:
            image = np.asarray(image)
            if image.ndim != 3 or image.shape[2] != 4 or image.dtype != np.uint8:
                raise ValueError(f"image must be (H,W,4) uint8, got {image.shape} {image.dtype}")
            if texcoords is None:
                raise ValueError("an image needs texcoords (TEXCOORD_0) to be mapped")
        ranges = None
        if buffers is not None:
            if len(buffers) != 2:
                raise ValueError(f"buffers must be (positions, normals), got {len(buffers)} items")
            ranges = [b if isinstance(b, tuple) else (b, 0, b.size) for b in buffers]
            for name, (buf, off, size) in zip(("positions", "normals"), ranges):
                if off < 0 or off % 16 or size < v * 16 or off + v * 16 > buf.size:
                    raise ValueError(f"{name} range (offset {off}, size {size}) of a {buf.size}-byte buffer must "
                                     f"hold V vec4 = {v * 16} bytes at a 16-byte aligned offset inside it")
        if layer is not None and layer not in self._layers:
            raise ValueError(f"no layer {layer!r}; layers: {list(self._layers)} (add_layer first)")
        mid = self._next_id
        self._next_id += 1
        label = label or f"mesh{mid}"
        r = self.res
        keys = [("topology", v, _digest(tri))]
        indices, corner_indices, corners, topo = self._acquire(keys[0], lambda: self._make_topology(tri, v, label))
        tc_buf = tex = None
        ctc_buf = None
        if texcoords is not None:
            keys.append(("texcoords", _digest(texcoords), keys[0]))
            src = topo.corners[:, 0].astype(np.int64)
            tc_buf, ctc_buf = self._acquire(keys[-1], lambda: (
                r.buffer(texcoords, label=f"{label} texcoords"),
                r.buffer(np.ascontiguousarray(texcoords[src]), label=f"{label} corner texcoords")))
        if image is not None:
            keys.append(("texture", image.shape, _digest(image), float(self.texture_anisotropy)))
            (tex,) = self._acquire(keys[-1], lambda: (self._make_albedo_texture(image, label),))
        h = MeshHandle(
            id=mid, label=label, vertex_count=v, triangles=tri,
            positions=ranges[0][0] if ranges else r.buffer(reserve=v * 16, label=f"{label} positions"),
            normals=ranges[1][0] if ranges else r.buffer(reserve=v * 16, label=f"{label} normals"),
            positions_offset=int(ranges[0][1]) if ranges else 0, normals_offset=int(ranges[1][1]) if ranges else 0,
            indices=indices, corner_indices=corner_indices, corners=corners, corner_topology=topo,
            texcoords=tc_buf, corner_texcoords=ctc_buf, texture=tex,
            base_color=color, entity=int(entity), node=int(node), mesh_index=int(mesh_index),
            primitive=int(primitive), layer=layer, owns_vertex_buffers=buffers is None,
            double_sided=bool(double_sided), shared_keys=tuple(keys),
        )
        self.meshes[mid] = h
        self._draw_lists = None
        if positions is not None:
            self.update_vertices(h, positions, normals)
        return h

    def _make_topology(self, tri: np.ndarray, v: int, label: str) -> tuple:
        """(index buffer, corner index buffer, corner vertex buffer (uvec2 attributes), CornerTopology)
        of a triangle list."""
        topo = build_corner_topology(tri, v)
        r = self.res
        return (r.buffer(tri, label=f"{label} indices"), r.buffer(topo.indices, label=f"{label} corner indices"),
                r.buffer(topo.corners, label=f"{label} corner vertices"), topo)

    def _make_albedo_texture(self, image: np.ndarray, label: str) -> moderngl.Texture:
        """RGBA8 UNORM texture of sqrt(linear albedo) with its mip chain filtered in linear light
        (:func:`albedo_levels`); rows uploaded in order, so image row 0 (glTF: the top) lands at v = 0."""
        levels = albedo_levels(image)
        tex = self.res.texture((image.shape[1], image.shape[0]), 4, levels[0], mipmaps=True,
                               label=f"{label} base colour")
        for k, lv in enumerate(levels[1:], start=1):
            tex.write(np.ascontiguousarray(lv).tobytes(), level=k)
        # bilinear in one mip level: blending two levels (trilinear) or anisotropic filtering costs
        # markedly more on software rasterisers, for a difference invisible at these sizes
        tex.anisotropy = float(self.texture_anisotropy)
        tex.filter = (moderngl.LINEAR_MIPMAP_NEAREST, moderngl.LINEAR)
        return tex

    def _acquire(self, key: tuple, make: Callable[[], tuple]) -> tuple:
        """The shared objects under ``key`` (made by ``make()`` for the first user), one more user counted."""
        entry = self._shared.get(key)
        if entry is None:
            entry = [0, *make()]
            self._shared[key] = entry
        entry[0] += 1
        return tuple(entry[1:])

    def _release_shared(self, key: tuple) -> None:
        entry = self._shared[key]
        entry[0] -= 1
        if entry[0] == 0:
            del self._shared[key]
            for obj in entry[1:]:
                if self.res.owns(obj):
                    self.res.release(obj)

    def _check_handle(self, handle: MeshHandle) -> None:
        if self.meshes.get(handle.id) is not handle:
            raise ValueError(f"mesh {handle.label!r} (id {handle.id}) is not registered here")

    def remove_mesh(self, handle: MeshHandle) -> None:
        """Release a mesh's buffers and vertex arrays, and the shared topology / texcoords / texture
        when it was their last user."""
        self._check_handle(handle)
        del self.meshes[handle.id]
        self._draw_lists = None
        for key in [k for k in self._vaos if k[1] == handle.id]:
            self.res.release(self._vaos.pop(key))
        for key in handle.shared_keys:
            self._release_shared(key)
        if handle.owns_vertex_buffers:
            self.res.release(handle.positions)
            self.res.release(handle.normals)

    def update_vertices(self, handle: MeshHandle, positions: np.ndarray, normals: np.ndarray | None = None) -> None:
        """Upload world-space positions (V,3) and normals (V,3) (area-weighted from the triangles when
        None) into the mesh's vec4 SSBOs, and refresh its bounds."""
        v = handle.vertex_count
        pos = np.asarray(positions, np.float32)
        if pos.shape != (v, 3):
            raise ValueError(f"positions of {handle.label!r} must be ({v},3), got {pos.shape}")
        if not np.all(np.isfinite(pos)):
            raise ValueError(f"positions of {handle.label!r} contain non-finite values")
        if normals is None:
            nrm = vertex_normals(pos, handle.triangles)
        else:
            nrm = np.asarray(normals, np.float32)
            if nrm.shape != (v, 3):
                raise ValueError(f"normals of {handle.label!r} must be ({v},3), got {nrm.shape}")
        p4 = np.empty((v, 4), np.float32)
        p4[:, :3], p4[:, 3] = pos, 1.0
        n4 = np.zeros((v, 4), np.float32)
        n4[:, :3] = nrm
        handle.positions.write(p4, offset=handle.positions_offset)
        handle.normals.write(n4, offset=handle.normals_offset)
        handle.bounds = (pos.min(axis=0), pos.max(axis=0))

    def set_lights(self, lights: np.ndarray) -> None:
        """Replace the lights (an array of ``layouts.LIGHT``; the first one casts shadows)."""
        if lights.dtype != LIGHT.dtype or not 1 <= len(lights) <= MAX_LIGHTS:
            raise ValueError(f"lights must be 1..{MAX_LIGHTS} LIGHT structs, got {len(lights)} of {lights.dtype}")
        d = np.asarray(lights["direction"][:, :3], np.float64)
        norm = np.linalg.norm(d, axis=1)
        if not np.all(np.isfinite(norm)) or np.any(norm < 1e-9):
            raise ValueError(f"light directions must be finite non-zero vectors, got {d.tolist()}")
        lights = np.array(lights, copy=True)
        lights["direction"][:, :3] = d / norm[:, None]  # the shaders take unit directions
        self._lights.write(np.ascontiguousarray(lights).tobytes())
        self.light_count = len(lights)
        self._compose_program()  # the compose variant of this light count, compiled now
        self._lights_version += 1
        self._key_dir = np.asarray(lights["direction"][0, :3], np.float64)
        self._shadow_valid = False

    def id_table(self) -> np.ndarray:
        """(K, 5) int32 rows (mesh id, entity, node, mesh index, primitive) for ids up to the largest
        registered one, -1 rows for unused ids: decodes id buffers to scene objects with one gather."""
        k = max(self.meshes, default=-1) + 1
        t = np.full((k, 5), -1, np.int32)
        for h in self.meshes.values():
            t[h.id] = (h.id, h.entity, h.node, h.mesh_index, h.primitive)
        return t

    # -- frame -----------------------------------------------------------------------------------
    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        boxes = [h.bounds for h in self.meshes.values() if h.visible and h.bounds is not None]
        if not boxes:
            return None
        lo = np.min([b[0] for b in boxes], axis=0)
        hi = np.max([b[1] for b in boxes], axis=0)
        return lo.astype(np.float64), hi.astype(np.float64)

    def _shadow_view_proj(self) -> np.ndarray | None:
        b = self.scene_bounds()
        if b is None:
            return None
        lo, hi = b
        if self.look.ground:
            lo = lo.copy()
            lo[1] = min(lo[1], self.look.ground_height)
        centre = (lo + hi) / 2
        radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
        ldir = self._key_dir / max(np.linalg.norm(self._key_dir), 1e-12)
        view = look_at(centre + ldir * radius * 2.0, centre).astype(np.float64)
        proj = _ortho(radius * 1.05, radius * 1.05, radius * 0.5, radius * 3.5)
        return (proj @ view).astype(np.float32)

    def _lists(self) -> dict[str | None, list[MeshHandle]]:
        """Visible meshes per target (None = scene G-buffer), textured ones last, single-sided first within
        each (fewest program and cull-state changes); cached until the set
        of meshes, their layers or visibility change."""
        if self._draw_lists is None:
            lists: dict[str | None, list[MeshHandle]] = {None: []}
            for name in self._layers:
                lists[name] = []
            for h in self.meshes.values():
                if h.visible:
                    lists[h.layer].append(h)
            for k in lists:
                lists[k].sort(key=lambda m: (m.texcoords is not None, m.double_sided))
            self._draw_lists = lists
            self._shadow_valid = False
        return self._draw_lists

    def invalidate(self) -> None:
        """Call after changing ``visible`` on a mesh: rebuilds the draw lists and the shadow map."""
        self._draw_lists = None

    def render(self, camera, *, target: moderngl.Framebuffer | None = None,
               ui: Callable[["SceneRenderer"], None] | None = None, profile: bool = False) -> None:
        """Render one frame with ``camera`` (anything with ``view`` and ``projection_for(aspect)``) into
        the offscreen frame; ``ui(renderer)`` may then draw into :attr:`framebuffer`; the frame is copied
        to ``target`` (e.g. the window's framebuffer) if given. ``profile``: finish the GPU work around
        every pass and put its wall-clock ms in :attr:`last_wall_ms` (this serialises the frame: for
        benchmarks; on software rasterisers the timer scopes of :attr:`gpu_ms` also count waits)."""
        self._refresh_after_reload()
        self._copy_pending()
        look = self.look
        mode = look.shadow_mode()
        ctx = self.ctx
        aspect = self.width / self.height
        view = np.asarray(camera.view, np.float64)
        proj = np.asarray(camera.projection_for(aspect), np.float64)
        vp = proj @ view
        self.last_view, self.last_projection = view.astype(np.float32), proj.astype(np.float32)
        self.last_view_proj = vp.astype(np.float32)
        self._inv_vp = np.linalg.inv(vp)
        self._eye = np.linalg.inv(view)[:3, 3]
        lists = self._lists()
        t = self.timers
        self.last_wall_ms = {}
        scope = self._profiled_scope if profile else t.scope
        t.begin_frame()
        try:
            self._reset_rects()
            with scope("shadow"):
                if mode == "map":
                    self._shadow_pass(lists)
            vp32 = self.last_view_proj
            with scope("gbuffer"):
                self._gbuffer_pass(self._scene, vp32, lists[None], slot=0)
            for k, (name, gb) in enumerate(self._layers.items()):
                with scope(f"layer:{name}"):
                    self._gbuffer_pass(gb, vp32, lists[name], slot=k + 1)
            with scope("compose"):
                self._backdrop_pass(camera)
                self._compose_pass(mode)
            with scope("ui"):
                if ui is not None:
                    self._overlay.use()
                    ui(self)
            with scope("present"):
                if target is not None:
                    self._present(target)
        finally:
            ctx.disable(moderngl.DEPTH_TEST | moderngl.BLEND)
            t.end_frame()
            self.frame_index += 1

    @contextlib.contextmanager
    def _profiled_scope(self, name: str) -> Iterator[None]:
        """A timer scope that also records the pass's wall-clock ms, GPU work finished on both sides."""
        with self.timers.scope(name):
            self.ctx.finish()
            t0 = time.perf_counter()
            yield
            self.ctx.finish()
            self.last_wall_ms[name] = (time.perf_counter() - t0) * 1e3

    @staticmethod
    def _mat(prog: moderngl.Program, name: str, m: np.ndarray) -> None:
        if name in prog:
            prog[name].write(pack_mat4(m).tobytes())

    @staticmethod
    def _set(prog: moderngl.Program, name: str, value) -> None:
        if name in prog:
            prog[name].value = value

    def _shadow_pass(self, lists: dict[str | None, list[MeshHandle]]) -> None:
        look = self.look
        due = self.frame_index - self._shadow_frame >= look.shadow_interval
        if self._shadow_valid and not due:
            return
        shadow_vp = self._shadow_view_proj()
        if shadow_vp is None:
            return
        ctx = self.ctx
        self._shadow_fbo.use()
        self._shadow_fbo.clear(depth=1.0)
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = "<"
        prog = self._program("shadow")
        self._mat(prog, "u_view_proj", shadow_vp)
        bp, bn = GLSL_CONSTANTS["BINDING_POSITIONS"], GLSL_CONSTANTS["BINDING_NORMALS"]
        for meshes in lists.values():
            for h in meshes:
                h.bind_vertices(bp, bn)
                self._vao(prog, h).render(moderngl.TRIANGLES)
        bias = np.array([[0.5, 0, 0, 0.5], [0, 0.5, 0, 0.5], [0, 0, 0.5, 0.5], [0, 0, 0, 1]], np.float32)
        self._shadow_matrix = bias @ shadow_vp
        self._shadow_valid = True
        self._shadow_frame = self.frame_index

    def _reset_rects(self) -> None:
        """Start every G-buffer's screen rectangle empty (lo = size, hi = 0); with Phong tessellation,
        whose vertex stage does not grow it (displaced surfaces leave the corners' bounds), the whole
        viewport."""
        r = np.empty((MAX_LAYERS + 1, 4), np.int32)
        if self.look.tessellation:
            r[:] = (0, 0, self.width, self.height)
        else:
            r[:] = (self.width, self.height, 0, 0)
        self._rects.write(r.tobytes())
        self._rects.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_SCREEN_RECTS"])

    def screen_rect(self, source: str | None = None) -> tuple[int, int, int, int] | None:
        """(x0, y0, x1, y1) pixels, x1/y1 exclusive, row 0 at the bottom (GL), of the last frame's screen
        rectangle of ``source``'s surfaces (None or "scene": the scene G-buffer, else a layer name), or
        None when empty. A synchronous read (waits for the GPU): for tools and tests."""
        names = [None] + list(self._layers)
        key = None if source in (None, "scene") else source
        if key not in names:
            raise ValueError(f"source must be None, 'scene' or a layer of {list(self._layers)}, got {source!r}")
        r = np.frombuffer(self._rects.read(), np.int32).reshape(-1, 4)[names.index(key)]
        return None if r[2] <= r[0] or r[3] <= r[1] else tuple(int(x) for x in r)

    def _gbuffer_pass(self, gb: _GBuffer, vp: np.ndarray, meshes: list[MeshHandle], *, slot: int) -> None:
        """Clear (zcopy + depth only) and draw ``meshes`` into ``gb``: one program bind per
        (textured, untextured) group; uniforms, textures, shared buffers and cull state are set only
        when they change (meshes of one asset share them). The vertex stage grows screen rect ``slot``."""
        ctx = self.ctx
        gb.clear_fbo.use()
        gb.clear_fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        if not meshes:
            return
        gb.fbo.use()
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = "<"
        tess = self.look.tessellation
        wire = bool(self.look.wireframe)
        mode = moderngl.PATCHES if tess else moderngl.TRIANGLES
        if tess:
            ctx.patch_vertices = 3
        else:  # the corner draw needs GL's default (last vertex provokes), whatever other code set
            ctx.provoking_vertex = moderngl.LAST_VERTEX_CONVENTION
        bp, bn = GLSL_CONSTANTS["BINDING_POSITIONS"], GLSL_CONSTANTS["BINDING_NORMALS"]
        bt = GLSL_CONSTANTS["BINDING_TEXCOORDS"]
        current = None
        u_id = u_scale = u_tex = None
        last_scale = last_has_tex = last_tex = last_tc = None
        cull = False
        queued = 0
        flush_every = self.flush_triangles if self._flush is not None else 0
        try:
            for h in meshes:
                if flush_every and queued >= flush_every:
                    self._flush()
                    queued = 0
                queued += h.triangle_count
                uv = h.texcoords is not None
                if current is None or current[0] != uv:
                    prog = self._gbuffer_program(uv, tess=tess, wire=wire)
                    current = (uv, prog)
                    self._mat(prog, "u_view_proj", vp)
                    self._set(prog, "u_rect_slot", slot)
                    self._set(prog, "u_viewport", (float(self.width), float(self.height)))
                    if tess:
                        self._set(prog, "u_tess_level", float(self.look.tess_level))
                        self._set(prog, "u_phong_alpha", float(self.look.phong_alpha))
                    self._set(prog, "u_base_texture", 0)
                    u_id, u_scale = prog["u_mesh_id"], prog["u_albedo_scale"]
                    u_tex = prog["u_has_texture"] if "u_has_texture" in prog else None
                    last_scale = last_has_tex = None
                prog = current[1]
                if cull != (not h.double_sided):
                    cull = not h.double_sided
                    if cull:
                        ctx.enable(moderngl.CULL_FACE)
                    else:
                        ctx.disable(moderngl.CULL_FACE)
                u_id.value = h.id
                scale = h.albedo_scale
                if scale != last_scale:
                    u_scale.value = scale
                    last_scale = scale
                if uv:
                    has_tex = h.texture is not None
                    if has_tex and h.texture is not last_tex:
                        h.texture.use(location=0)
                        last_tex = h.texture
                    if has_tex != last_has_tex and u_tex is not None:
                        u_tex.value = has_tex
                        last_has_tex = has_tex
                    if tess and h.texcoords is not last_tc:
                        h.texcoords.bind_to_storage_buffer(bt)
                        last_tc = h.texcoords
                h.bind_vertices(bp, bn)
                self._vao(prog, h, corners=not tess).render(mode)
        finally:
            if cull:
                ctx.disable(moderngl.CULL_FACE)

    def _backdrop_pass(self, camera) -> None:
        """Redraw background + ground only when the camera, the lights, the look or the size changed."""
        look = self.look
        target = np.asarray(getattr(camera, "target", self._eye), np.float64)
        key = (self.last_view_proj.tobytes(), target.tobytes(), self.width, self.height, self._lights_version,
               dataclasses.astuple(look))
        if key == self._backdrop_key:
            return
        self._backdrop_key = key
        ctx = self.ctx
        prog = self._program("backdrop")
        self._backdrop_fbo.use()
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = "1"  # always: the pass writes every pixel's depth itself
        self._lights.bind_to_uniform_block(GLSL_CONSTANTS["BINDING_LIGHTS"])
        lin = lambda c: tuple(float(x) for x in srgb_to_linear(c))  # noqa: E731
        eye = self._eye
        self._mat(prog, "u_view_proj", self.last_view_proj)
        self._mat(prog, "u_inv_view_proj", self._inv_vp)
        self._set(prog, "u_eye", tuple(float(x) for x in eye))
        self._set(prog, "u_light_count", self.light_count)
        self._set(prog, "u_exposure", float(look.exposure))
        self._set(prog, "u_bg_top", lin(look.background_top))
        self._set(prog, "u_bg_horizon", lin(look.background_horizon))
        self._set(prog, "u_bg_bottom", lin(look.background_bottom))
        self._set(prog, "u_sky_color", tuple(look.ambient * x for x in lin(look.sky_color)))
        self._set(prog, "u_ground_color", tuple(look.ambient * x for x in lin(look.ground_bounce)))
        self._set(prog, "u_rim_strength", float(look.rim_strength))
        self._set(prog, "u_ground", bool(look.ground))
        self._set(prog, "u_ground_height", float(look.ground_height))
        self._set(prog, "u_ground_albedo", lin(look.ground_color))
        self._set(prog, "u_grid_color", lin(look.grid_color))
        self._set(prog, "u_grid_spacing", tuple(float(x) for x in look.grid_spacing))
        if look.fade_range is None:
            d = float(np.linalg.norm(eye - target))
            fade = (max(3.0, 1.5 * d), max(8.0, 4.0 * d))
        else:
            fade = tuple(float(x) for x in look.fade_range)
        self._set(prog, "u_fade_center", tuple(float(x) for x in target))
        self._set(prog, "u_fade_range", fade)
        self._vao(prog, None).render(moderngl.TRIANGLES, vertices=3)

    def _compose_pass(self, mode: str) -> None:
        """Backdrop (or a dark clear for debug views) into the frame, then one early-depth-tested
        fullscreen pass per G-buffer (see shaders/render/compose.frag)."""
        ctx, look = self.ctx, self.look
        if self._view == "color":
            ctx.copy_framebuffer(self._overlay, self._backdrop_color_fbo)
        else:
            self._overlay.clear(0.08, 0.08, 0.08, 1.0)
        frame_ids = self._frame_ids_needed()
        self._frame_ids_written = frame_ids
        if frame_ids:
            self._frame_clear.clear(0.0)
        gbs = [self._scene] + list(self._layers.values())
        n = len(gbs)
        prog = self._compose_program()
        if id(prog) not in self._inited_programs:
            self._inited_programs.add(id(prog))
            self._set(prog, "g_zcopy", list(range(n)) if n > 1 else 0)
            self._set(prog, "g_albedo", list(range(n, 2 * n)) if n > 1 else 1)
            self._set(prog, "g_ids", list(range(2 * n, 3 * n)) if n > 1 else 2)
            self._set(prog, "u_backdrop", 3 * n)
            self._set(prog, "u_backdrop_depth_copy", 3 * n + 1)
            self._set(prog, "u_shadow_map", 3 * n + 2)
            self._set(prog, "u_depth", 1.0 - 1e-6)
        lin = lambda c: tuple(float(x) for x in srgb_to_linear(c))  # noqa: E731
        self._mat(prog, "u_inv_view_proj", self._inv_vp)  # (vertex stage: view rays; fragment: unprojection)
        self._set(prog, "u_inv_size", (1.0 / self.width, 1.0 / self.height))
        self._set(prog, "u_eye", tuple(float(x) for x in self._eye))
        if self._view == "color":
            self._lights.bind_to_uniform_block(GLSL_CONSTANTS["BINDING_LIGHTS"])
            self._set(prog, "u_light_count", self.light_count)
            self._set(prog, "u_exposure", float(look.exposure))
            self._set(prog, "u_sky_color", tuple(look.ambient * x for x in lin(look.sky_color)))
            self._set(prog, "u_ground_color", tuple(look.ambient * x for x in lin(look.ground_bounce)))
            self._set(prog, "u_rim_strength", float(look.rim_strength))
            if mode == "map":
                self._shadow_tex.use(location=3 * n + 2)
                self._mat(prog, "u_shadow_matrix", self._shadow_matrix)
                self._set(prog, "u_shadow_texel", 1.0 / self._shadow_size)
        else:
            b = self.scene_bounds()
            lo, hi = b if b is not None else (np.zeros(3), np.ones(3))
            self._set(prog, "u_bounds_lo", tuple(float(x) for x in lo))
            self._set(prog, "u_bounds_hi", tuple(float(x) for x in hi))
            corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
            dist = np.linalg.norm(corners - self._eye, axis=1)
            self._set(prog, "u_depth_range", (float(dist.min()), float(dist.max())))
        self._set(prog, "u_wireframe", bool(look.wireframe))
        self._set(prog, "u_wire_color", lin(look.wire_color))
        if n == 1:  # image loads (see compose.frag); the G-buffer was written by the framebuffer
            C = GLSL_CONSTANTS
            gb = self._scene
            gb.tex["zcopy"].bind_to_image(C["IMAGE_GBUFFER_ZCOPY"], read=True, write=False)
            gb.tex["albedo"].bind_to_image(C["IMAGE_GBUFFER_ALBEDO"], read=True, write=False)
            gb.tex["ids"].bind_to_image(C["IMAGE_GBUFFER_IDS"], read=True, write=False)
            self._backdrop_zcopy.bind_to_image(C["IMAGE_BACKDROP_DEPTH"], read=True, write=False)
        else:
            for k, gb in enumerate(gbs):
                gb.tex["zcopy"].use(location=k)
                gb.tex["albedo"].use(location=n + k)
                gb.tex["ids"].use(location=2 * n + k)
            self._backdrop_zcopy.use(location=3 * n + 1)
        self._backdrop.use(location=3 * n)
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = ">"  # the far-plane quad passes where the G-buffer has a surface
        # the rectangles the G-buffer passes grew (SSBO) and, to be safe, image loads after framebuffer writes
        ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT | moderngl.SHADER_IMAGE_ACCESS_BARRIER_BIT)
        self._rects.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_SCREEN_RECTS"])
        self._set(prog, "u_viewport", (float(self.width), float(self.height)))
        vao = self._vao(prog, None)
        lists = self._lists()
        names = [None] + list(self._layers)
        blobs = mode == "blob" and look.ground and self._view == "color"
        for k, gb in enumerate(gbs):
            if not lists[names[k]]:
                continue  # an empty G-buffer has no surface to run on
            fbo = gb.compose_fbo if frame_ids else gb.compose_color_fbo
            if blobs:  # into the same framebuffer, so that llvmpipe rasterises both in one pass
                self._blob_pass(fbo)
                blobs = False
                ctx.enable(moderngl.DEPTH_TEST)
            fbo.use()
            fbo.depth_mask = False
            self._set(prog, "u_rect_slot", k)
            vao.render(moderngl.TRIANGLES, vertices=6)
            fbo.depth_mask = True
        ctx.disable(moderngl.DEPTH_TEST)
        if blobs:  # no G-buffer had a surface: the blobs (if any entity has bounds) go onto the backdrop
            self._blob_pass(self._overlay)
        if mode == "map" and look.ground and self._view == "color" and self._shadow_valid:
            self._ground_shadow_pass()

    def _ground_shadow_pass(self) -> None:
        ctx = self.ctx
        prog = self._program("ground_shadow")
        self._overlay.use()
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = (moderngl.ZERO, moderngl.ONE_MINUS_SRC_ALPHA, moderngl.ZERO, moderngl.ONE)
        self._depth.use(location=0)
        self._backdrop_depth.use(location=1)
        self._shadow_tex.use(location=2)
        self._set(prog, "u_frame_depth", 0)
        self._set(prog, "u_backdrop_depth", 1)
        self._set(prog, "u_shadow_map", 2)
        self._mat(prog, "u_shadow_matrix", self._shadow_matrix)
        self._mat(prog, "u_inv_view_proj", self._inv_vp)
        self._set(prog, "u_inv_size", (1.0 / self.width, 1.0 / self.height))
        self._set(prog, "u_ground_shadow", float(self.look.ground_shadow))
        self._vao(prog, None).render(moderngl.TRIANGLES, vertices=3)
        ctx.disable(moderngl.BLEND)
        ctx.blend_func = moderngl.DEFAULT_BLENDING

    def _blob_pass(self, fbo: moderngl.Framebuffer) -> None:
        """Soft contact shadows: one ellipse on the ground under each entity's bounds (meshes without
        an entity get one each), darker the closer the entity's lowest point is to the ground. Drawn
        into the frame colour (attachment 0 of ``fbo``, the others masked) after the backdrop and
        before the compose quads, which then overwrite the pixels that show a mesh: no depth test,
        no read of the frame. (Where the ground hides part of a mesh the compositor writes the plain
        backdrop, without the blob.)"""
        hs = [h for meshes in self._lists().values() for h in meshes if h.bounds is not None]
        if not hs:
            return
        keys = np.array([h.entity if h.entity >= 0 else -1 - h.id for h in hs])
        lo = np.array([h.bounds[0] for h in hs], np.float64)
        hi = np.array([h.bounds[1] for h in hs], np.float64)
        uniq, inv = np.unique(keys, return_inverse=True)
        glo = np.full((len(uniq), 3), np.inf)
        ghi = np.full((len(uniq), 3), -np.inf)
        np.minimum.at(glo, inv, lo)
        np.maximum.at(ghi, inv, hi)
        look = self.look
        size = ghi - glo
        height = np.maximum(size[:, 1], 1e-3)
        lift = np.maximum(glo[:, 1] - look.ground_height, 0.0)
        dark = look.blob_strength * np.clip(1.0 - lift / (0.5 * height), 0.0, 1.0)
        n = len(uniq)
        if n > self._blob_capacity:
            self.res.release(self._blobs)
            self._owned.remove(self._blobs)
            self._blob_capacity = max(n, 2 * self._blob_capacity)
            self._blobs = self._own(self.res.buffer(BLOB.zeros(self._blob_capacity), label="contact shadow blobs"))
        blobs = BLOB.zeros(n)
        blobs["ellipse"][:, 0] = (glo[:, 0] + ghi[:, 0]) / 2
        blobs["ellipse"][:, 1] = (glo[:, 2] + ghi[:, 2]) / 2
        blobs["ellipse"][:, 2] = 0.7 * size[:, 0] + 0.08 * height
        blobs["ellipse"][:, 3] = 0.7 * size[:, 2] + 0.08 * height
        blobs["params"][:, 0] = dark
        self._blobs.write(blobs.tobytes())
        ctx = self.ctx
        prog = self._program("blob")
        attachments = len(fbo.color_attachments)
        if attachments > 1:
            fbo.color_mask = ((True,) * 4,) + ((False,) * 4,) * (attachments - 1)
        fbo.use()
        ctx.disable(moderngl.DEPTH_TEST)
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = (moderngl.ZERO, moderngl.ONE_MINUS_SRC_ALPHA, moderngl.ZERO, moderngl.ONE)
        self._mat(prog, "u_view_proj", self.last_view_proj)
        self._set(prog, "u_ground_height", float(look.ground_height))
        self._blobs.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_BLOBS"])
        self._vao(prog, None).render(moderngl.TRIANGLES, vertices=18, instances=n)
        ctx.disable(moderngl.BLEND)
        ctx.blend_func = moderngl.DEFAULT_BLENDING
        if attachments > 1:
            fbo.color_mask = ((True,) * 4,) * attachments
            fbo.use()

    def _present(self, target: moderngl.Framebuffer) -> None:
        self.ctx.disable(moderngl.DEPTH_TEST)
        target.use()
        prog = self._program("present")
        self._color.use(location=0)
        self._set(prog, "u_frame", 0)
        self._vao(prog, None).render(moderngl.TRIANGLES, vertices=3)

    # -- read-back -------------------------------------------------------------------------------
    @property
    def gpu_ms(self) -> dict[str, float]:
        """Per-pass GPU time in ms, from timer queries a few frames back (empty for the first frames)."""
        return dict(self.timers.ms)

    def read_pixels(self) -> np.ndarray:
        """The last frame as (H, W, 4) uint8 RGBA, row 0 = top of the image."""
        raw = self._color.read(alignment=1)
        img = np.frombuffer(raw, np.uint8).reshape(self.height, self.width, 4)
        return img[::-1].copy()

    def save_png(self, path) -> None:
        from PIL import Image

        Image.fromarray(self.read_pixels(), "RGBA").save(path)

    def _source(self, source: str | None) -> str:
        """The validated source name: "frame" (composited, the default), "gbuffer" (the scene
        G-buffer) or a layer."""
        src = "frame" if source is None else source
        if src not in ("frame", "gbuffer") and src not in self._layers:
            raise ValueError(f"source must be 'frame', 'gbuffer' or a layer {list(self._layers)}, got {source!r}")
        return src

    def _region_reads(self, src: str) -> list[tuple[moderngl.Framebuffer, int, int, str]]:
        """What reading a region of ``src`` reads, as (framebuffer, attachment, components, dtype): its
        ids (RGBA32UI), its depth (R32F, 0 = no surface) and, for a frame whose compositor wrote no id
        targets (no layers), the backdrop depth: there the scene G-buffer's surfaces are the frame's
        except where the ground is in front, which :meth:`_combine_reads` applies as compose.frag does."""
        if src == "frame" and self._frame_ids_written:
            return [(self._frame, 1, 4, "u4"), (self._frame, 2, 1, "f4")]
        gb = self._scene if src in ("frame", "gbuffer") else self._layers[src]
        reads = [(gb.fbo, 1, 4, "u4"), (gb.fbo, 2, 1, "f4")]
        if src == "frame":
            reads.append((self._backdrop_fbo, 1, 1, "f4"))
        return reads

    @staticmethod
    def _combine_reads(arrays: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(ids (h,w,4) uint32, depth (h,w) float32 with 0 = no surface) from the arrays of
        :meth:`_region_reads`."""
        ids, depth = arrays[0], arrays[1]
        if len(arrays) == 3:  # the ground in front wins (compose.frag: back < depth)
            depth = np.where(depth <= arrays[2], depth, np.float32(0.0))
        return ids, depth

    def _read_region(self, src: str, region: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Synchronous (ids, depth) of GL viewport ``region`` (x, y from the bottom, w, h) of ``src``."""
        _, _, w, h = region
        arrays = []
        for fbo, attachment, comps, dtype in self._region_reads(src):
            raw = fbo.read(viewport=region, components=comps, attachment=attachment, dtype=dtype, alignment=1)
            arrays.append(np.frombuffer(raw, np.uint32 if dtype == "u4" else np.float32).reshape(
                (h, w, comps) if comps > 1 else (h, w)))
        return self._combine_reads(arrays)

    def surface_arrays(self, source: str | None = None) -> dict[str, np.ndarray]:
        """Every surface channel of the last frame as (H, W, ...) arrays, row 0 = top of the image:
        ``mesh`` / ``triangle`` int32 (-1 for background), ``barycentric`` and ``normal`` (H,W,3)
        float32, ``position`` (H,W,3) float32 world (reconstructed from depth), ``depth`` (H,W)
        float32 window depth (1 where no mesh), ``albedo`` (H,W,3) float32 linear (scene/layer only).
        ``source``: "frame" (default: what the compositor shows), "gbuffer" (the scene G-buffer
        alone) or a layer name."""
        src = self._source(source)
        h, w = self.height, self.width
        ids, depth = self._read_region(src, (0, 0, w, h))
        out = decode_ids(_masked_ids(ids, depth))
        hit = out["mesh"] >= 0
        gy, gx = np.mgrid[0:h, 0:w]
        pos = unproject(self._inv_vp, gx, gy, depth, w, h).astype(np.float32)
        pos[~hit] = 0.0
        out["position"] = pos
        out["depth"] = np.where(hit, depth, 1.0).astype(np.float32)
        if src != "frame":
            gb = self._scene if src == "gbuffer" else self._layers[src]
            alb = np.frombuffer(gb.tex["albedo"].read(alignment=1), np.uint8).reshape(h, w, 4)
            out["albedo"] = ((alb[..., :3].astype(np.float32) / 255.0) ** 2).astype(np.float32)
        return {k: v[::-1].copy() for k, v in out.items()}

    def gbuffer_arrays(self) -> dict[str, np.ndarray]:
        """The scene G-buffer's channels (``surface_arrays("gbuffer")``)."""
        return self.surface_arrays("gbuffer")

    def _check_pixels(self, points) -> np.ndarray:
        p = np.asarray(points)
        if p.ndim != 2 or p.shape[1] != 2 or len(p) == 0:
            raise ValueError(f"points must be a non-empty (N,2) array of (x, y) pixels, got shape {p.shape}")
        p = np.floor(p).astype(np.int64)
        bad = (p[:, 0] < 0) | (p[:, 0] >= self.width) | (p[:, 1] < 0) | (p[:, 1] >= self.height)
        if bad.any():
            x, y = p[np.argmax(bad)]
            raise ValueError(f"pixel ({x}, {y}) outside the {self.width}x{self.height} frame")
        return p

    def _region(self, p: np.ndarray) -> tuple[int, int, int, int]:
        """GL viewport (x, y from the bottom, w, h) of the pixels' bounding box (p: x, y from the top)."""
        x0, x1 = int(p[:, 0].min()), int(p[:, 0].max())
        gy = self.height - 1 - p[:, 1]
        y0, y1 = int(gy.min()), int(gy.max())
        return x0, y0, x1 - x0 + 1, y1 - y0 + 1

    def _hits_from_region(self, p: np.ndarray, region, ids: np.ndarray, depth: np.ndarray, source: str,
                          inv_vp: np.ndarray, size: tuple[int, int] | None = None) -> list[SurfaceHit | None]:
        """Hits of pixels ``p`` (x, y from the top) from a region read of a frame of ``size`` (width,
        height; default the current one: a pending query keeps the size it was issued at)."""
        width, height = size or (self.width, self.height)
        x0, y0, _, _ = region
        gx = p[:, 0]
        gy = height - 1 - p[:, 1]
        d = depth[gy - y0, gx - x0]
        dec = decode_ids(_masked_ids(ids[gy - y0, gx - x0], d))
        pos = unproject(inv_vp, gx, gy, d, width, height).astype(np.float32)
        layer = None if source in _RESERVED_SOURCES else source
        out: list[SurfaceHit | None] = []
        for i in range(len(p)):
            m = int(dec["mesh"][i])
            h = self.meshes.get(m) if m >= 0 else None
            if h is None:
                out.append(None)
                continue
            out.append(SurfaceHit(mesh=h, triangle=int(dec["triangle"][i]), barycentric=dec["barycentric"][i],
                                  position=pos[i], normal=dec["normal"][i], depth=float(d[i]), layer=layer))
        return out

    def query(self, x: int, y: int, *, layer: str | None = None) -> SurfaceHit | None:
        """The surface under pixel (x, y) of the last frame (y = 0 at the top), or None for no mesh.
        ``layer``: query that layer's G-buffer (finds its surface whatever covers it); "gbuffer" the
        scene G-buffer; None the composited frame."""
        return self.query_many([(x, y)], layer=layer)[0]

    def query_many(self, points, *, layer: str | None = None) -> list[SurfaceHit | None]:
        """Query many pixels (N,2) (x, y from the top) at once: reads their bounding region once."""
        p = self._check_pixels(points)
        src = self._source(layer)
        region = self._region(p)
        ids, depth = self._read_region(src, region)
        return self._hits_from_region(p, region, ids, depth, src, self._inv_vp)

    def query_async(self, points, *, layer: str | None = None) -> PendingQuery:
        """Issue a batched query of the last frame without waiting (see :class:`PendingQuery`): the
        copy of the region's texels is queued at the start of the next :meth:`render`;
        :meth:`PendingQuery.result` maps them once that frame is rendered (one frame of latency)."""
        p = self._check_pixels(points)
        src = self._source(layer)
        q = PendingQuery(self, p, self._region(p), src, self._inv_vp.copy(), self.frame_index)
        self._pending.append(q)
        return q

    def _copy_pending(self) -> None:
        """Queue the copies of the pending asynchronous queries (before their sources are overwritten,
        resized or removed)."""
        pending, self._pending = self._pending, []
        for q in pending:
            q._copy()

    def _forget_pending(self, q: PendingQuery) -> None:
        if q in self._pending:
            self._pending.remove(q)

    def _pbo(self, nbytes: int) -> moderngl.Buffer:
        for i, b in enumerate(self._pbo_pool):
            if b.size >= nbytes:
                return self._pbo_pool.pop(i)
        return self.res.buffer(reserve=max(nbytes, 4096), label="query read-back")

    def _recycle(self, buffers) -> None:
        self._pbo_pool.extend(buffers)
        while len(self._pbo_pool) > 8:
            self.res.release(self._pbo_pool.pop(0))

    def evaluate(self, points: Sequence[SurfacePoint]) -> tuple[np.ndarray, np.ndarray]:
        """World positions (N,3) and unit normals (N,3) of surface points on the meshes' CURRENT
        deformed vertices (each involved mesh's SSBOs are read once)."""
        n = len(points)
        pos = np.zeros((n, 3), np.float32)
        nrm = np.zeros((n, 3), np.float32)
        by_mesh: dict[int, list[int]] = {}
        for i, sp in enumerate(points):
            self._check_handle(sp.mesh)
            by_mesh.setdefault(sp.mesh.id, []).append(i)
        if by_mesh:
            self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | moderngl.SHADER_STORAGE_BARRIER_BIT)
        for mid, idx in by_mesh.items():
            h = self.meshes[mid]
            v = h.vertex_count
            p4 = np.frombuffer(h.positions.read(size=v * 16, offset=h.positions_offset), np.float32).reshape(v, 4)
            n4 = np.frombuffer(h.normals.read(size=v * 16, offset=h.normals_offset), np.float32).reshape(v, 4)
            tri = np.array([points[i].triangle for i in idx])
            bary = np.array([points[i].barycentric for i in idx], np.float64)
            pp, nn = interpolate_surface(p4[:, :3], h.triangles, tri, bary, n4[:, :3])
            pos[idx], nrm[idx] = pp, nn
        return pos, nrm

    # -- teardown --------------------------------------------------------------------------------
    def release(self) -> None:
        """Release everything this renderer created (meshes, targets, programs it compiled itself)."""
        for h in list(self.meshes.values()):
            self.remove_mesh(h)
        for vao in self._vaos.values():
            self.res.release(vao)
        self._vaos.clear()
        for q in self._pending:  # their sources go now: nothing left to copy from
            q._cancelled = True
        self._pending.clear()
        self._release_targets()
        self._layers.clear()
        for b in self._pbo_pool:
            self.res.release(b)
        self._pbo_pool.clear()
        self.timers.release()
        for obj in reversed(self._owned):
            self.res.release(obj)
        self._owned.clear()
        if self._own_programs:
            self.programs.release()
        self.width = self.height = 0


__all__ = ["SceneRenderer", "MeshHandle", "SurfaceHit", "SurfacePoint", "PendingQuery", "LookSettings",
           "vertex_normals", "default_lights", "GBUFFER_LAYOUT", "PASSES", "VIEWS", "SHADOW_MODES"]
