"""The scene renderer: deferred G-buffers straight from the deformed-vertex SSBOs, then a depth compositor.

:class:`SceneRenderer` is a thin facade over the parts of ``engine/render/`` (see the package docstring for
the map): it validates arguments, keeps the public API and runs one frame as the frame graph plans it.

* the passes, one module each in ``engine/render/passes/`` (``rects``, ``shadow``, ``gbuffer``,
  ``layer:NAME``, ``backdrop``, ``compose``, ``ui``, ``present``): each declares what it reads and writes;
  ``engine/render/framegraph.py`` derives their order, the memory barriers between them and the GPU timer
  scopes of :attr:`SceneRenderer.gpu_ms` from those declarations;
* the mesh registry (``meshes.py``): handles, per-asset GPU data shared with reference counts, the id table;
* the render targets (``targets.py``): G-buffers, the frame, the backdrop, the screen rectangles;
* the queries (``queries.py``): synchronous and asynchronous pixel queries, surface arrays, evaluation of
  :class:`~engine.input.picking.SurfacePoint` (the renderer implements ``engine.input.picking.SurfaceQueries``);
* the program variants (``programs.py``) and the look and lights (``look.py``).

A mesh's deformed vertex data lives in two SSBOs of vec4 (or ranges of pooled ones); the deformer graph
writes them with compute shaders (pass its ``output_ranges`` as ``buffers=`` to :meth:`SceneRenderer.add_mesh`),
or :meth:`SceneRenderer.update_vertices` uploads them from the CPU.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence

import moderngl
import numpy as np

from engine.gpu.layouts import MAX_LAYERS
from engine.gpu.resources import GpuResources
from engine.gpu.shaderlib import ProgramCache
from engine.gpu.timers import GpuTimers
from engine.input.picking import SurfacePoint
from engine.render.framegraph import FramePlan, plan_frame
from engine.render.look import SHADOW_MODES, VIEWS, Lights, LookSettings, default_lights, srgb_to_linear
from engine.render.meshes import MeshHandle, MeshRegistry, albedo_levels, vertex_normals
from engine.render.passes import PASSES, RenderPass
from engine.render.passes.backdrop import BackdropPass
from engine.render.passes.compose import ComposePass, compose_program
from engine.render.passes.gbuffer import PREVIOUS_RECTS, GBufferPass, ResetRects
from engine.render.passes.overlay import OverlayPass
from engine.render.passes.present import PresentPass
from engine.render.passes.shadow import ShadowPass
from engine.render.programs import STAGES, ProgramVariants, gl_flush_function
from engine.render.queries import PendingQuery, QueryReader
from engine.render.silhouette import SilhouetteFilter, SilhouettePixels, check_filter
from engine.render.state import Frame, RenderState
from engine.render.surface import SurfaceHit
from engine.render.targets import GBUFFER_LAYOUT, RESERVED_SOURCES, FrameTargets, check_size

__all__ = ["SceneRenderer", "MeshHandle", "SurfaceHit", "SurfacePoint", "PendingQuery", "LookSettings",
           "vertex_normals", "default_lights", "albedo_levels", "srgb_to_linear", "gl_flush_function",
           "GBUFFER_LAYOUT", "PASSES", "VIEWS", "SHADOW_MODES"]

#: resources written before a frame starts: the deformed vertices (the deformer graph ends with the barrier
#: the renderer's reads need; CPU uploads are ordered by GL), the light block (a CPU write) and the last
#: frame's screen rectangles (its compose pass issued the storage barrier before reading them)
EXTERNAL_RESOURCES = ("vertices", "lights", PREVIOUS_RECTS)


class SceneRenderer:
    """Deferred scene renderer over meshes whose vertices live in SSBOs (see the module docstring)."""

    def __init__(self, ctx: moderngl.Context, resources: GpuResources, width: int, height: int, *,
                 programs: ProgramCache | None = None, shadow_size: int = 2048,
                 look: LookSettings | None = None) -> None:
        check_size(width, height)
        if not 16 <= shadow_size <= 8192:
            raise ValueError(f"shadow_size must be in [16, 8192], got {shadow_size}")
        look = look or LookSettings()
        look.check()
        self.ctx = ctx
        self.res = resources
        self._variants = ProgramVariants(resources, programs)
        self.programs = self._variants.cache
        self._meshes = MeshRegistry(resources, on_remove=self._variants.drop_mesh)
        self._targets = FrameTargets(resources)
        self._state = RenderState(ctx, resources, self._variants, self._meshes, self._targets, Lights(resources),
                                  look)
        # Compile every program the current settings need now: a shader error surfaces at set-up.
        for uv in (False, True):
            self._gbuffer_program(uv, tess=look.tessellation, wire=look.wireframe)
        for name in STAGES:
            self._variants.program(name)
        # the G-buffer clear's vertex array now: the first frame clears whole and does not draw it
        self._variants.vao(self._variants.program("rect_clear"), None)
        self.set_lights(default_lights())  # compiles the compose program for this light count
        self._shadow = ShadowPass(resources, shadow_size)
        self._backdrop = BackdropPass()
        self._compose = ComposePass(resources, self._shadow)
        self._plan_key: tuple | None = None
        self._plan: FramePlan | None = None
        self._passes: dict[str, RenderPass] = {}
        self._queries = QueryReader(self._state)
        self._silhouette = SilhouetteFilter(self._state)
        self.timers = GpuTimers(resources, PASSES)
        self.last_wall_ms: dict[str, float] = {}  # per pass, from the last render(profile=True)
        self._released = False
        self.resize(width, height)

    # -- state the parts share ---------------------------------------------------------------------
    @property
    def look(self) -> LookSettings:
        return self._state.look

    @look.setter
    def look(self, look: LookSettings) -> None:
        if not isinstance(look, LookSettings):
            raise TypeError(f"look must be a LookSettings, got {type(look).__name__}")
        look.check()
        self._state.look = look

    def shared_state(self) -> RenderState:
        """The state the renderer's parts share (programs, meshes, lights, look): a second renderer over the
        same meshes (engine/render/probe.py, the controller camera) builds on it with targets of its own."""
        return self._state

    @property
    def compose_pass(self) -> ComposePass:
        """The compose pass (lighting, ground, contact shadows) of the frame graph."""
        return self._compose

    @property
    def meshes(self) -> dict[int, MeshHandle]:
        """The registered meshes by id."""
        return self._meshes.meshes

    @property
    def width(self) -> int:
        return self._targets.width

    @property
    def height(self) -> int:
        return self._targets.height

    @property
    def frame_index(self) -> int:
        """Frames rendered so far."""
        return self._state.frame_index

    @property
    def last_view_proj(self) -> np.ndarray | None:
        """The last frame's view-projection (float32), None before the first frame."""
        return self._state.last_view_proj

    @property
    def last_view(self) -> np.ndarray | None:
        return self._state.last_view

    @property
    def last_projection(self) -> np.ndarray | None:
        return self._state.last_projection

    @property
    def light_count(self) -> int:
        return self._state.lights.count

    @property
    def texture_anisotropy(self) -> float:
        """Max anisotropy of base-colour textures added from now on."""
        return self._meshes.texture_anisotropy

    @texture_anisotropy.setter
    def texture_anisotropy(self, value: float) -> None:
        self._meshes.texture_anisotropy = float(value)

    @property
    def flush_triangles(self) -> int:
        """The G-buffer pass submits its draws (glFlush) every time about this many triangles have been
        queued, so that a software rasteriser (llvmpipe bins a whole batch before its threads rasterise it)
        rasterises one batch while the CPU still runs the next meshes' vertex stage; 0 = never."""
        return self._state.flush_triangles

    @flush_triangles.setter
    def flush_triangles(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"flush_triangles must be an int >= 0, got {value!r}")
        self._state.flush_triangles = int(value)

    @property
    def _frame_ids_written(self) -> bool:
        """Whether the last frame's compositor wrote the frame id targets (see ``targets.py``)."""
        return self._targets.frame_ids_written

    # -- program variants ------------------------------------------------------------------------
    def _gbuffer_program(self, uv: bool, *, tess: bool, wire: bool) -> moderngl.Program:
        return self._variants.gbuffer(uv, tess=tess, wire=wire)

    def _compose_program(self) -> moderngl.Program:
        """The compose variant of the current settings (compiled now if it is new)."""
        return compose_program(self._state)

    def _compile_gbuffer_variants(self) -> None:
        for uv in (False, True):  # compile the variant now, not in the next frame
            self._gbuffer_program(uv, tess=self.look.tessellation, wire=self.look.wireframe)

    # -- targets -------------------------------------------------------------------------------
    def resize(self, width: int, height: int) -> None:
        """(Re)create the size-dependent targets; the old ones are released first."""
        check_size(width, height)
        if (width, height) == (self.width, self.height):
            return
        self._queries.copy_pending()
        self._targets.resize(width, height)
        self._backdrop.invalidate()

    @property
    def frame_depth(self) -> moderngl.Texture:
        """The frame's window-depth target (R32F, 0 where no surface): overlays test their marks against it."""
        return self._targets.depth

    @property
    def framebuffer(self) -> moderngl.Framebuffer:
        """The finished frame's colour (RGBA8) for overlays (UI) to draw into."""
        return self._targets.overlay

    @property
    def color_texture(self) -> moderngl.Texture:
        return self._targets.color

    def screen_rect(self, source: str | None = None) -> tuple[int, int, int, int] | None:
        """(x0, y0, x1, y1) pixels, x1/y1 exclusive, row 0 at the bottom (GL), of the last frame's screen
        rectangle of ``source``'s surfaces (None or "scene": the scene G-buffer, else a layer name), or
        None when empty. A synchronous read (waits for the GPU): for tools and tests."""
        return self._targets.screen_rect(source)

    # -- layers --------------------------------------------------------------------------------
    @property
    def layers(self) -> tuple[str, ...]:
        return tuple(self._targets.layers)

    def add_layer(self, name: str) -> None:
        """Create a layer: a G-buffer of its own that meshes can be moved into (:meth:`set_layer`)."""
        if not isinstance(name, str) or not name or name in RESERVED_SOURCES:
            raise ValueError(f"layer name must be a non-empty str other than {RESERVED_SOURCES}, got {name!r}")
        if name in self._targets.layers:
            raise ValueError(f"layer {name!r} exists already; layers: {list(self._targets.layers)}")
        if len(self._targets.layers) >= MAX_LAYERS:
            raise ValueError(f"at most {MAX_LAYERS} layers, got a request for layer {len(self._targets.layers) + 1}")
        self._targets.add_layer(name)
        self.timers.add_pass(f"layer:{name}")
        self._meshes.invalidate()
        self._compose_program()

    def remove_layer(self, name: str) -> None:
        """Remove a layer; its meshes go back to the scene G-buffer."""
        if name not in self._targets.layers:
            raise ValueError(f"no layer {name!r}; layers: {list(self._targets.layers)}")
        self._queries.copy_pending()
        for h in self._meshes:
            if h.layer == name:
                h.layer = None
        self._targets.remove_layer(name)
        self.timers.remove_pass(f"layer:{name}")
        self._meshes.invalidate()

    def set_layer(self, handles: MeshHandle | Sequence[MeshHandle], layer: str | None) -> None:
        """Draw these meshes into ``layer`` (created with :meth:`add_layer`), or the scene G-buffer (None)."""
        if layer is not None and layer not in self._targets.layers:
            raise ValueError(f"no layer {layer!r}; layers: {list(self._targets.layers)} (add_layer first)")
        hs = [handles] if isinstance(handles, MeshHandle) else list(handles)
        for h in hs:
            self._meshes.check(h)
            h.layer = layer
        self._meshes.invalidate()

    # -- settings -------------------------------------------------------------------------------
    @property
    def view(self) -> str:
        """The channel the compose pass shows (one of :data:`VIEWS`)."""
        return self._state.view

    @view.setter
    def view(self, name: str) -> None:
        if name not in VIEWS:
            raise ValueError(f"view must be one of {', '.join(VIEWS)}; got {name!r}")
        self._state.view = name
        self._compose_program()

    @property
    def silhouette_view(self) -> tuple[str, float]:
        """(channel, threshold) of the silhouette filter the "silhouette" view shows (engine/render/silhouette.py)."""
        return self._state.silhouette_view

    @silhouette_view.setter
    def silhouette_view(self, value: tuple[str, float | None]) -> None:
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(f"silhouette_view must be a (channel, threshold) tuple, got {value!r}")
        channel, threshold = value
        _, thr = check_filter(channel, threshold)
        self._state.silhouette_view = (channel, thr)

    def cycle_view(self, step: int = 1) -> str:
        """Switch to the next debug view (for a window key); returns its name."""
        self.view = VIEWS[(VIEWS.index(self.view) + step) % len(VIEWS)]
        return self.view

    @property
    def wireframe(self) -> bool:
        return self.look.wireframe

    @wireframe.setter
    def wireframe(self, on: bool) -> None:
        self.look.wireframe = bool(on)
        self._compile_gbuffer_variants()

    def set_tessellation(self, on: bool, *, level: float | None = None, alpha: float | None = None) -> None:
        """Toggle Phong tessellation (compiles its programs now)."""
        if level is not None:
            self.look.tess_level = float(level)
        if alpha is not None:
            self.look.phong_alpha = float(alpha)
        self.look.tessellation = bool(on)
        self.look.check()
        self._compile_gbuffer_variants()

    def set_lights(self, lights: np.ndarray) -> None:
        """Replace the lights (an array of ``layouts.LIGHT``; the first one casts shadows)."""
        self._state.lights.set(lights)
        self._compose_program()  # the compose variant of this light count, compiled now

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
        h = self._meshes.add(triangles, vertex_count, layers=self._targets.layers, base_color=base_color,
                             texcoords=texcoords, image=image, buffers=buffers, entity=entity, node=node,
                             mesh_index=mesh_index, primitive=primitive, layer=layer, label=label,
                             double_sided=double_sided)
        if positions is not None:
            self.update_vertices(h, positions, normals)
        return h

    def remove_mesh(self, handle: MeshHandle) -> None:
        """Release a mesh's buffers and vertex arrays, and the shared topology / texcoords / texture
        when it was their last user."""
        self._meshes.remove(handle)

    def update_vertices(self, handle: MeshHandle, positions: np.ndarray, normals: np.ndarray | None = None) -> None:
        """Upload world-space positions (V,3) and normals (V,3) (area-weighted from the triangles when
        None) into the mesh's vec4 SSBOs, and refresh its bounds."""
        self._meshes.update_vertices(handle, positions, normals)

    def id_table(self) -> np.ndarray:
        """(K, 5) int32 rows (mesh id, entity, node, mesh index, primitive) for ids up to the largest
        registered one, -1 rows for unused ids: decodes id buffers to scene objects with one gather."""
        return self._meshes.id_table()

    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(min, max) world box of the visible meshes with bounds, None when there are none."""
        return self._meshes.scene_bounds()

    def invalidate(self) -> None:
        """Call after changing ``visible`` on a mesh: rebuilds the draw lists and the shadow map."""
        self._meshes.invalidate()

    # -- frame -----------------------------------------------------------------------------------
    def frame_plan(self) -> FramePlan:
        """The plan of the current settings: the passes in order with their barriers and timer scopes."""
        return self._current_plan(self.look.shadow_mode())[0]

    def _current_plan(self, mode: str) -> tuple[FramePlan, dict[str, RenderPass]]:
        """Re-planned when the layers or the shadow mode change (the declarations depend on them)."""
        key = (tuple(self._targets.layers), mode)
        if key != self._plan_key:
            passes: list[RenderPass] = [ResetRects(), self._shadow, GBufferPass(None, 0)]
            passes += [GBufferPass(name, k + 1) for k, name in enumerate(self._targets.layers)]
            passes += [self._backdrop, self._compose, OverlayPass(), PresentPass()]
            self._plan = plan_frame([p.spec(self._state) for p in passes], external=EXTERNAL_RESOURCES)
            self._passes = {p.name: p for p in passes}
            self._plan_key = key
        assert self._plan is not None
        return self._plan, self._passes

    def render(self, camera, *, target: moderngl.Framebuffer | None = None,
               ui: Callable[[SceneRenderer], None] | None = None, profile: bool = False) -> None:
        """Render one frame with ``camera`` (anything with ``view`` and ``projection_for(aspect)``) into
        the offscreen frame; ``ui(renderer)`` may then draw into :attr:`framebuffer`; the frame is copied
        to ``target`` (e.g. the window's framebuffer) if given. ``profile``: finish the GPU work around
        every pass and put its wall-clock ms in :attr:`last_wall_ms` (this serialises the frame: for
        benchmarks; on software rasterisers the timer scopes of :attr:`gpu_ms` also count waits)."""
        s = self._state
        if self._variants.refresh_after_reload():
            self._backdrop.invalidate()
        self._queries.copy_pending()
        mode = s.look.shadow_mode()
        s.set_camera(camera)
        frame = Frame(camera, self._meshes.draw_lists(self._targets.layers), mode,
                      None if ui is None else (lambda: ui(self)), target)
        plan, passes = self._current_plan(mode)
        t = self.timers
        self.last_wall_ms = {}
        scope = self._profiled_scope if profile else t.scope
        t.begin_frame()
        finished = False
        try:
            for timer, steps in plan.scopes:
                with scope(timer) if timer is not None else contextlib.nullcontext():
                    for step in steps:
                        if step.barrier:
                            self.ctx.memory_barrier(step.barrier)
                        passes[step.name].run(s, frame)
            finished = True
        finally:
            if not finished:  # the rectangles may not cover what the G-buffers hold: clear them whole
                self._targets.mark_stale()
            self.ctx.disable(moderngl.DEPTH_TEST | moderngl.BLEND)
            t.end_frame()
            s.frame_index += 1

    @contextlib.contextmanager
    def _profiled_scope(self, name: str) -> Iterator[None]:
        """A timer scope that also records the pass's wall-clock ms, GPU work finished on both sides."""
        with self.timers.scope(name):
            self.ctx.finish()
            t0 = time.perf_counter()
            yield
            self.ctx.finish()
            self.last_wall_ms[name] = (time.perf_counter() - t0) * 1e3

    # -- read-back -------------------------------------------------------------------------------
    @property
    def gpu_ms(self) -> dict[str, float]:
        """Per-pass GPU time in ms, from timer queries a few frames back (empty for the first frames)."""
        return dict(self.timers.ms)

    def read_pixels(self) -> np.ndarray:
        """The last frame as (H, W, 4) uint8 RGBA, row 0 = top of the image."""
        raw = self._targets.color.read(alignment=1)
        img = np.frombuffer(raw, np.uint8).reshape(self.height, self.width, 4)
        return img[::-1].copy()

    def save_png(self, path) -> None:
        from PIL import Image

        Image.fromarray(self.read_pixels(), "RGBA").save(path)

    def surface_arrays(self, source: str | None = None) -> dict[str, np.ndarray]:
        """Every surface channel of the last frame as (H, W, ...) arrays, row 0 = top of the image:
        ``mesh`` / ``triangle`` int32 (-1 for background), ``barycentric`` and ``normal`` (H,W,3)
        float32, ``position`` (H,W,3) float32 world (reconstructed from depth), ``depth`` (H,W)
        float32 window depth (1 where no mesh), ``albedo`` (H,W,3) float32 linear (scene/layer only).
        ``source``: "frame" (default: what the compositor shows), "gbuffer" (the scene G-buffer
        alone) or a layer name."""
        return self._queries.surface_arrays(source)

    def gbuffer_arrays(self) -> dict[str, np.ndarray]:
        """The scene G-buffer's channels (``surface_arrays("gbuffer")``)."""
        return self.surface_arrays("gbuffer")

    def query(self, x: int, y: int, *, layer: str | None = None) -> SurfaceHit | None:
        """The surface under pixel (x, y) of the last frame (y = 0 at the top), or None for no mesh.
        ``layer``: query that layer's G-buffer (finds its surface whatever covers it); "gbuffer" the
        scene G-buffer; None the composited frame."""
        return self.query_many([(x, y)], layer=layer)[0]

    def query_many(self, points, *, layer: str | None = None) -> list[SurfaceHit | None]:
        """Query many pixels (N,2) (x, y from the top) at once: reads their bounding region once."""
        return self._queries.query_many(points, layer=layer)

    def query_async(self, points, *, layer: str | None = None) -> PendingQuery:
        """Issue a batched query of the last frame without waiting (see :class:`PendingQuery`): the
        copy of the region's texels is queued at the start of the next :meth:`render`;
        :meth:`PendingQuery.result` maps them once that frame is rendered (one frame of latency)."""
        return self._queries.query_async(points, layer=layer)

    def silhouette_pixels(self, channel: str = "normal", threshold: float | None = None, *,
                          mesh_ids: Sequence[int] | None = None) -> SilhouettePixels:
        """The last frame's silhouette pixels (research 7.3): the Laplacian edge filter of G-buffer ``channel``
        ("normal", "depth" or "position") above ``threshold`` (None: the channel's default), on the surfaces of
        the meshes ``mesh_ids`` (None: all), run on the GPU (render/silhouette.comp); only those pixels are read
        back (see engine/render/silhouette.py; numpy reference engine.skinning.roi.silhouette_pixels)."""
        return self._silhouette.pixels(channel, threshold, mesh_ids=mesh_ids)

    def silhouette_edges(self, channel: str = "normal") -> np.ndarray:
        """(H,W) float32 silhouette filter values of the last frame, row 0 at the top, 0 where no surface shows
        (the whole image is read back: tests and debugging)."""
        return self._silhouette.edges(channel)

    def evaluate(self, points: Sequence[SurfacePoint]) -> tuple[np.ndarray, np.ndarray]:
        """World positions (N,3) and unit normals (N,3) of surface points (mesh id, triangle, barycentric)
        on the meshes' CURRENT deformed vertices (each involved mesh's SSBOs are read once); ValueError
        for a point of a removed mesh."""
        return self._queries.evaluate(points)

    # -- teardown --------------------------------------------------------------------------------
    def release(self) -> None:
        """Release everything this renderer created (meshes, targets, programs it compiled itself)."""
        if self._released:
            return
        self._released = True
        self._meshes.release()
        self._queries.release()  # pending queries' sources go now: nothing left to copy from
        self._silhouette.release()
        self._targets.release()
        self.timers.release()
        self._compose.release()
        self._shadow.release()
        self._state.lights.release()
        self._variants.release()
