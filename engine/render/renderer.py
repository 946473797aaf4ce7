"""The scene renderer: deferred G-buffer straight from the deformed-vertex SSBOs, then a compositor.

Passes of one frame (each a GPU timer scope):

``shadow``   depth of every mesh from the key light (orthographic, fitted to the meshes' bounds).
``gbuffer``  every mesh pulled from its SSBOs by gl_VertexID (index buffer = the triangles), a geometry
             stage adding barycentrics and the triangle index; MRT writes albedo, normal, world
             position, ids (mesh + 1, triangle), barycentrics (+ edge distance in pixels) and depth.
``compose``  one fullscreen triangle: lights the G-buffer (key + fill + back light, hemisphere
             ambient, rim, key-light shadows), composites it by depth with an analytic ground plane
             whose grid fades with distance, over a background gradient, optional wireframe from the
             barycentrics; writes the display colour (RGBA8, sRGB-encoded) and depth.
``present``  copies the frame to a target framebuffer (the window) when one is given.

A mesh's deformed vertex data lives in two SSBOs of vec4 (positions w = 1, normals w = 0); the
deformer graph writes them with compute shaders (``MeshHandle.positions`` / ``.normals``), or
:meth:`SceneRenderer.update_vertices` uploads them from the CPU. The G-buffer also answers surface
queries (:meth:`SceneRenderer.query`): mesh, triangle and barycentrics under a pixel, which stay
valid while the mesh deforms.

Per-mesh layers (one G-buffer per mesh, composited by depth, as the dissertation's Stage 4/5) are the
next step: the compose pass already composites a layer by depth, so a layer is one more G-buffer
bound in a loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import moderngl
import numpy as np

from engine.render.camera import look_at
from engine.render.layouts import GLSL_CONSTANTS, LIGHT, MAX_LIGHTS, pack_mat4
from engine.render.resources import GpuResources
from engine.render.shaderlib import ProgramCache
from engine.render.timers import GpuTimers

PASSES = ("shadow", "gbuffer", "compose", "present")
GL_SRGB8_ALPHA8 = 0x8C43

# G-buffer attachments: name -> (components, dtype); order = fragment output locations.
GBUFFER_LAYOUT: tuple[tuple[str, int, str], ...] = (
    ("albedo", 4, "f2"),
    ("normal", 4, "f2"),
    ("position", 4, "f4"),
    ("ids", 2, "u4"),
    ("bary", 4, "f4"),
)

_MESH_DEFINES = ("BINDING_POSITIONS", "BINDING_NORMALS", "BINDING_TEXCOORDS")
_LIGHT_DEFINES = ("BINDING_LIGHTS", "MAX_LIGHTS")


def _constants(*names: str) -> dict[str, int]:
    return {n: GLSL_CONSTANTS[n] for n in names}


def srgb_to_linear(c) -> np.ndarray:
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


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
    ``bounds`` (min, max) world box used to fit the shadow camera (set it when a GPU stage deforms)."""

    id: int
    label: str
    vertex_count: int
    triangles: np.ndarray = field(repr=False)
    positions: moderngl.Buffer = field(repr=False)
    normals: moderngl.Buffer = field(repr=False)
    indices: moderngl.Buffer = field(repr=False)
    texcoords: moderngl.Buffer | None = field(default=None, repr=False)
    texture: moderngl.Texture | None = field(default=None, repr=False)
    base_color: np.ndarray = field(default_factory=lambda: np.ones(4, np.float32))
    bounds: tuple[np.ndarray, np.ndarray] | None = None
    visible: bool = True

    @property
    def triangle_count(self) -> int:
        return int(self.triangles.shape[0])


@dataclass
class SurfaceHit:
    """What :meth:`SceneRenderer.query` finds under a pixel."""

    mesh: MeshHandle
    triangle: int
    barycentric: np.ndarray  # (3,)
    position: np.ndarray  # (3,) world
    normal: np.ndarray  # (3,) world, facing the camera
    depth: float  # window depth in [0, 1]


@dataclass
class LookSettings:
    """Colours are display sRGB (converted to linear for shading); lengths in metres."""

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
    shadows: bool = True
    wireframe: bool = False
    wire_color: tuple = (0.05, 0.06, 0.08)


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
        self.meshes: dict[int, MeshHandle] = {}
        self._next_id = 0
        self._owned: list = []  # renderer-wide objects (not per mesh, not per size)
        self._targets: list = []  # size-dependent objects
        self._vaos: dict[tuple, moderngl.VertexArray] = {}
        self._vao_generation = self.programs.generation
        self.last_view_proj: np.ndarray | None = None

        # Compile every program now: a shader error surfaces at set-up, not mid-frame.
        self._program_args = {
            "gbuffer": dict(vertex="render/mesh.vert", geometry="render/mesh.geom",
                            fragment="render/gbuffer.frag", defines=_constants(*_MESH_DEFINES)),
            "gbuffer_uv": dict(vertex="render/mesh.vert", geometry="render/mesh.geom",
                               fragment="render/gbuffer.frag",
                               defines={**_constants(*_MESH_DEFINES), "HAS_TEXCOORDS": 1}),
            "shadow": dict(vertex="render/mesh.vert", fragment="render/shadow.frag",
                           defines=_constants(*_MESH_DEFINES)),
            "compose": dict(vertex="render/fullscreen.vert", fragment="render/compose.frag",
                            defines=_constants(*_LIGHT_DEFINES)),
            "present": dict(vertex="render/fullscreen.vert", fragment="render/present.frag"),
        }
        for name in self._program_args:
            self._program(name)

        lights = default_lights()
        self._lights = self._own(resources.buffer(LIGHT.zeros(MAX_LIGHTS), label="lights"))
        self.light_count = 0
        self.set_lights(lights)
        self._white = self._own(resources.texture((1, 1), 4, bytes([255, 255, 255, 255]), label="white"))
        self._shadow_size = shadow_size
        self._shadow_tex = self._own(resources.depth_texture((shadow_size, shadow_size), label="shadow map"))
        self._shadow_tex.compare_func = "<="
        self._shadow_tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self._shadow_tex.repeat_x = self._shadow_tex.repeat_y = False
        self._shadow_fbo = self._own(resources.framebuffer([], self._shadow_tex, label="shadow fbo"))
        self._shadow_matrix = np.eye(4, dtype=np.float32)
        self.timers = GpuTimers(resources, PASSES)
        self._build_shared_vaos()
        self.width = self.height = 0
        self.resize(width, height)

    # -- ownership helpers -----------------------------------------------------------------------
    def _own(self, obj):
        self._owned.append(obj)
        return obj

    def _program(self, name: str) -> moderngl.Program:
        return self.programs.get_program(**self._program_args[name])

    def _build_shared_vaos(self) -> None:
        for name in ("compose", "present"):
            self._vaos[(name,)] = self.res.vertex_array(self._program(name), [], label=f"{name} fullscreen")

    def _build_mesh_vaos(self, h: MeshHandle) -> None:
        gname = "gbuffer_uv" if h.texcoords is not None else "gbuffer"
        self._vaos[("gbuffer", h.id)] = self.res.vertex_array(self._program(gname), [], index_buffer=h.indices,
                                                             label=f"{h.label} gbuffer")
        self._vaos[("shadow", h.id)] = self.res.vertex_array(self._program("shadow"), [], index_buffer=h.indices,
                                                            label=f"{h.label} shadow")

    def _refresh_after_reload(self) -> None:
        """Vertex arrays are bound to a program: rebuild them after the cache swapped programs."""
        if self._vao_generation == self.programs.generation:
            return
        for vao in self._vaos.values():
            self.res.release(vao)
        self._vaos.clear()
        self._build_shared_vaos()
        for h in self.meshes.values():
            self._build_mesh_vaos(h)
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
        for obj in reversed(self._targets):
            self.res.release(obj)
        self._targets.clear()
        self.width, self.height = int(width), int(height)
        size = (self.width, self.height)
        t = self._targets
        self._gtex: dict[str, moderngl.Texture] = {}
        for name, comps, dtype in GBUFFER_LAYOUT:
            tex = self.res.texture(size, comps, dtype=dtype, filter=(moderngl.NEAREST, moderngl.NEAREST),
                                   repeat=False, label=f"gbuffer {name}")
            self._gtex[name] = tex
            t.append(tex)
        self._gdepth = self.res.depth_texture(size, label="gbuffer depth")
        t.append(self._gdepth)
        self._gbuffer = self.res.framebuffer([self._gtex[n] for n, _, _ in GBUFFER_LAYOUT], self._gdepth,
                                             label="gbuffer")
        t.append(self._gbuffer)
        self._color = self.res.texture(size, 4, filter=(moderngl.LINEAR, moderngl.LINEAR), repeat=False,
                                       label="frame colour")
        self._depth = self.res.depth_texture(size, label="frame depth")
        self._frame = self.res.framebuffer([self._color], self._depth, label="frame")
        t += [self._color, self._depth, self._frame]

    @property
    def framebuffer(self) -> moderngl.Framebuffer:
        """The finished frame (colour RGBA8 + depth); overlays (UI) may draw into it."""
        return self._frame

    @property
    def color_texture(self) -> moderngl.Texture:
        return self._color

    # -- meshes --------------------------------------------------------------------------------
    def add_mesh(self, triangles: np.ndarray, vertex_count: int, *, base_color=(1.0, 1.0, 1.0, 1.0),
                 texcoords: np.ndarray | None = None, image: np.ndarray | None = None,
                 positions: np.ndarray | None = None, normals: np.ndarray | None = None,
                 label: str = "") -> MeshHandle:
        """Register a mesh: SSBOs for V vertices (filled by ``update_vertices`` or a deformer), its
        index buffer, optional TEXCOORD_0 and base-colour image ((H,W,4) uint8, row 0 = top, sRGB).
        ``base_color`` is the linear glTF baseColorFactor. ``positions`` (and ``normals``) upload now."""
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
        mid = self._next_id
        self._next_id += 1
        label = label or f"mesh{mid}"
        r = self.res
        h = MeshHandle(
            id=mid, label=label, vertex_count=v, triangles=tri,
            positions=r.buffer(reserve=v * 16, label=f"{label} positions"),
            normals=r.buffer(reserve=v * 16, label=f"{label} normals"),
            indices=r.buffer(tri, label=f"{label} indices"),
            texcoords=None if texcoords is None else r.buffer(texcoords, label=f"{label} texcoords"),
            texture=None if image is None else r.texture(
                (image.shape[1], image.shape[0]), 4, image, internal_format=GL_SRGB8_ALPHA8, mipmaps=True,
                label=f"{label} base colour"),
            base_color=color,
        )
        self.meshes[mid] = h
        self._build_mesh_vaos(h)
        if positions is not None:
            self.update_vertices(h, positions, normals)
        return h

    def remove_mesh(self, handle: MeshHandle) -> None:
        """Release a mesh's buffers, texture and vertex arrays."""
        if self.meshes.get(handle.id) is not handle:
            raise ValueError(f"mesh {handle.label!r} (id {handle.id}) is not registered here")
        del self.meshes[handle.id]
        for key in (("gbuffer", handle.id), ("shadow", handle.id)):
            self.res.release(self._vaos.pop(key))
        for obj in (handle.positions, handle.normals, handle.indices, handle.texcoords, handle.texture):
            if obj is not None:
                self.res.release(obj)

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
        handle.positions.write(p4)
        handle.normals.write(n4)
        handle.bounds = (pos.min(axis=0), pos.max(axis=0))

    def set_lights(self, lights: np.ndarray) -> None:
        """Replace the lights (an array of ``layouts.LIGHT``; the first one casts shadows)."""
        if lights.dtype != LIGHT.dtype or not 1 <= len(lights) <= MAX_LIGHTS:
            raise ValueError(f"lights must be 1..{MAX_LIGHTS} LIGHT structs, got {len(lights)} of {lights.dtype}")
        self._lights.write(np.ascontiguousarray(lights).tobytes())
        self.light_count = len(lights)
        self._key_dir = np.asarray(lights["direction"][0, :3], np.float64)

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

    def render(self, camera, *, target: moderngl.Framebuffer | None = None) -> None:
        """Render one frame with ``camera`` (anything with ``view`` and ``projection_for(aspect)``) into
        the offscreen frame; then copy it to ``target`` (e.g. ``ctx.screen`` of the window) if given."""
        self._refresh_after_reload()
        ctx = self.ctx
        aspect = self.width / self.height
        vp = (camera.projection_for(aspect).astype(np.float64) @ camera.view.astype(np.float64))
        self.last_view_proj = vp.astype(np.float32)
        inv_vp = np.linalg.inv(vp).astype(np.float32)
        eye = np.linalg.inv(camera.view.astype(np.float64))[:3, 3]
        visible = [h for h in self.meshes.values() if h.visible]
        t = self.timers
        t.begin_frame()
        try:
            shadow_vp = self._shadow_view_proj() if (self.look.shadows and visible) else None
            with t.scope("shadow"):
                if shadow_vp is not None:
                    self._shadow_pass(shadow_vp, visible)
            with t.scope("gbuffer"):
                self._gbuffer_pass(vp.astype(np.float32), visible)
            with t.scope("compose"):
                self._compose_pass(vp.astype(np.float32), inv_vp, eye, camera, shadow_vp)
            with t.scope("present"):
                if target is not None:
                    self._present(target)
        finally:
            ctx.disable(moderngl.DEPTH_TEST)
            t.end_frame()

    @staticmethod
    def _mat(prog: moderngl.Program, name: str, m: np.ndarray) -> None:
        if name in prog:
            prog[name].write(pack_mat4(m).tobytes())

    @staticmethod
    def _set(prog: moderngl.Program, name: str, value) -> None:
        if name in prog:
            prog[name].value = value

    def _bind_mesh(self, h: MeshHandle) -> None:
        h.positions.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_POSITIONS"])
        h.normals.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_NORMALS"])
        if h.texcoords is not None:
            h.texcoords.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_TEXCOORDS"])

    def _shadow_pass(self, shadow_vp: np.ndarray, meshes: list[MeshHandle]) -> None:
        ctx = self.ctx
        self._shadow_fbo.use()
        self._shadow_fbo.clear(depth=1.0)
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = "<"
        prog = self._program("shadow")
        self._mat(prog, "u_view_proj", shadow_vp)
        for h in meshes:
            self._bind_mesh(h)
            self._vaos[("shadow", h.id)].render(moderngl.TRIANGLES)
        bias = np.array([[0.5, 0, 0, 0.5], [0, 0.5, 0, 0.5], [0, 0, 0.5, 0.5], [0, 0, 0, 1]], np.float32)
        self._shadow_matrix = bias @ shadow_vp

    def _gbuffer_pass(self, vp: np.ndarray, meshes: list[MeshHandle]) -> None:
        ctx = self.ctx
        self._gbuffer.use()
        self._gbuffer.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = "<"
        for h in meshes:
            prog = self._program("gbuffer_uv" if h.texcoords is not None else "gbuffer")
            self._mat(prog, "u_view_proj", vp)
            self._set(prog, "u_base_color", tuple(float(x) for x in h.base_color))
            self._set(prog, "u_mesh_id", h.id)
            self._set(prog, "u_has_texture", h.texture is not None)
            (h.texture or self._white).use(location=0)
            self._set(prog, "u_base_texture", 0)
            self._bind_mesh(h)
            self._vaos[("gbuffer", h.id)].render(moderngl.TRIANGLES)

    def _compose_pass(self, vp, inv_vp, eye, camera, shadow_vp) -> None:
        ctx, look = self.ctx, self.look
        self._frame.use()
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = "1"  # always: the pass writes every pixel's depth itself
        prog = self._program("compose")
        for unit, name in enumerate(("albedo", "normal", "bary", "position")):
            self._gtex[name].use(location=unit)
            self._set(prog, f"g_{name}", unit)
        self._gdepth.use(location=4)
        self._set(prog, "g_depth", 4)
        self._shadow_tex.use(location=5)
        self._set(prog, "u_shadow_map", 5)
        self._set(prog, "u_shadow_enabled", shadow_vp is not None)
        self._mat(prog, "u_shadow_matrix", self._shadow_matrix)
        self._set(prog, "u_shadow_texel", 1.0 / self._shadow_size)
        self._lights.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_LIGHTS"])
        self._set(prog, "u_light_count", self.light_count)
        self._mat(prog, "u_view_proj", vp)
        self._mat(prog, "u_inv_view_proj", inv_vp)
        self._set(prog, "u_eye", tuple(float(x) for x in eye))
        lin = lambda c: tuple(float(x) for x in srgb_to_linear(c))  # noqa: E731
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
        target = np.asarray(getattr(camera, "target", eye), np.float64)
        if look.fade_range is None:
            d = float(np.linalg.norm(eye - target))
            fade = (max(3.0, 1.5 * d), max(8.0, 4.0 * d))
        else:
            fade = tuple(float(x) for x in look.fade_range)
        self._set(prog, "u_fade_center", tuple(float(x) for x in target))
        self._set(prog, "u_fade_range", fade)
        self._set(prog, "u_wireframe", bool(look.wireframe))
        self._set(prog, "u_wire_color", lin(look.wire_color))
        self._vaos[("compose",)].render(moderngl.TRIANGLES, vertices=3)

    def _present(self, target: moderngl.Framebuffer) -> None:
        self.ctx.disable(moderngl.DEPTH_TEST)
        target.use()
        prog = self._program("present")
        self._color.use(location=0)
        self._set(prog, "u_frame", 0)
        self._vaos[("present",)].render(moderngl.TRIANGLES, vertices=3)

    # -- read-back -------------------------------------------------------------------------------
    @property
    def wireframe(self) -> bool:
        return self.look.wireframe

    @wireframe.setter
    def wireframe(self, on: bool) -> None:
        self.look.wireframe = bool(on)

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

    def gbuffer_arrays(self) -> dict[str, np.ndarray]:
        """Every G-buffer attachment as (H, W, C) arrays (row 0 = top) plus ``depth`` (H, W) float32:
        albedo/normal float32, position/bary float32, ids uint32 (mesh id + 1, triangle)."""
        out = {}
        for i, (name, comps, dtype) in enumerate(GBUFFER_LAYOUT):
            rd = "u4" if dtype == "u4" else "f4"
            raw = self._gbuffer.read(components=comps, attachment=i, dtype=rd, alignment=1)
            out[name] = np.frombuffer(raw, np.dtype(rd)).reshape(self.height, self.width, comps)[::-1].copy()
        raw = self._gbuffer.read(attachment=-1, dtype="f4", components=1, alignment=1)
        out["depth"] = np.frombuffer(raw, np.float32).reshape(self.height, self.width)[::-1].copy()
        return out

    def query(self, x: int, y: int) -> SurfaceHit | None:
        """The surface under pixel (x, y) of the last frame (y = 0 at the top), or None for no mesh."""
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise ValueError(f"pixel ({x}, {y}) outside the {self.width}x{self.height} frame")
        vp = (int(x), self.height - 1 - int(y), 1, 1)
        rd = lambda i, c, dt: np.frombuffer(  # noqa: E731
            self._gbuffer.read(viewport=vp, components=c, attachment=i, dtype=dt, alignment=1), np.dtype(dt))
        ids = rd(3, 2, "u4")
        if ids[0] == 0 or ids[0] - 1 not in self.meshes:
            return None
        bary = rd(4, 4, "f4")
        depth = np.frombuffer(self._gbuffer.read(viewport=vp, attachment=-1, dtype="f4", components=1,
                                                 alignment=1), np.float32)
        return SurfaceHit(mesh=self.meshes[int(ids[0]) - 1], triangle=int(ids[1]),
                          barycentric=bary[:3].astype(np.float32).copy(),
                          position=rd(2, 4, "f4")[:3].copy(), normal=rd(1, 4, "f4")[:3].copy(),
                          depth=float(depth[0]))

    # -- teardown --------------------------------------------------------------------------------
    def release(self) -> None:
        """Release everything this renderer created (meshes, targets, programs it compiled itself)."""
        for h in list(self.meshes.values()):
            self.remove_mesh(h)
        for vao in self._vaos.values():
            self.res.release(vao)
        self._vaos.clear()
        for obj in reversed(self._targets):
            self.res.release(obj)
        self._targets.clear()
        self.timers.release()
        for obj in reversed(self._owned):
            self.res.release(obj)
        self._owned.clear()
        if self._own_programs:
            self.programs.release()
        self.width = self.height = 0


__all__ = ["SceneRenderer", "MeshHandle", "SurfaceHit", "LookSettings", "vertex_normals", "default_lights",
           "GBUFFER_LAYOUT", "PASSES"]
