"""The ``compose`` pass (research Stage 5): the G-buffers, lit and composited by depth with the backdrop,
into the frame; contact-shadow blobs and the shadow-map ground darkening on the way.

Per G-buffer one quad over its screen rectangle (built on the GPU from the rectangle SSBO,
``shaders/render/compose.vert``) at the far plane, early-depth-tested against that G-buffer so the shader runs
only on its surfaces: per pixel the nearest of the scene G-buffer and the layers wins, is lit (key + fill +
back light, hemisphere ambient, rim; optional wireframe) or shown as a debug channel (``look.VIEWS``), and is
composited by depth with the cached backdrop (copied into the frame first; a dark clear for debug views).
With layers (or a shadow map) it also writes a scene-level id buffer and frame depth (0 where no mesh
shows); without, the scene G-buffer is the scene-level id buffer and the queries apply the backdrop depth
test compose applies (``queries.QueryReader.region_reads``), so the pass writes colour only and reads the
G-buffer through image loads. Cost grows with the pixels the meshes cover and with the number of layers,
not of meshes.

Contact-shadow blobs (the default ``shadows="blob"``: :class:`ContactShadows`, one instanced draw of
octagons) darken the ground under each entity, drawn in the same framebuffer just before the first quad.
With ``shadows="map"`` the ground where the key light's shadow map says it is blocked is darkened after the
quads (``render/ground_shadow.frag``, from the frame and backdrop depths).
"""
from __future__ import annotations

import moderngl
import numpy as np

from engine.gpu.layouts import BLOB, GLSL_CONSTANTS
from engine.gpu.resources import GpuResources
from engine.render.framegraph import ATTACHMENT, COPY, IMAGE, SAMPLED, STORAGE, UNIFORM, PassSpec, uses
from engine.render.look import VIEWS, linear_rgb
from engine.render.meshes import MeshHandle
from engine.render.passes.backdrop import backdrop_key
from engine.render.passes.gbuffer import gbuffer_resource, rect_resource
from engine.render.passes.shadow import ShadowPass
from engine.render.programs import set_matrix, set_uniform
from engine.render.silhouette import check_filter
from engine.render.state import Frame, RenderState

__all__ = ["ComposePass", "ContactShadows", "compose_program", "blob_key"]

#: blend that darkens the frame colour by the source alpha and keeps the destination alpha (blobs, ground shadow)
_DARKEN = (moderngl.ZERO, moderngl.ONE_MINUS_SRC_ALPHA, moderngl.ZERO, moderngl.ONE)
#: moderngl.DEFAULT_BLENDING spelled out (its stub types the constant as an int)
_DEFAULT_BLENDING = (moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA)


def _set_blend_func(ctx: moderngl.Context, func: tuple[int, int, int, int]) -> None:
    """Separate RGB / alpha blend factors; moderngl takes 2 or 4 values, its stub declares only the pair."""
    ctx.blend_func = func  # type: ignore[assignment]  # stub: Tuple[int, int]


def _set_color_masks(fbo: moderngl.Framebuffer, masks: tuple[tuple[bool, bool, bool, bool], ...]) -> None:
    """One RGBA write mask per colour attachment; moderngl takes that, its stub declares a single mask."""
    fbo.color_mask = masks  # type: ignore[assignment]  # stub: Tuple[bool, bool, bool, bool]


def compose_program(state: RenderState) -> moderngl.Program:
    """The compose variant of the current settings (light count, layers, frame ids, view, shadow taps)."""
    look = state.look
    map_taps = int(look.shadow_taps) if look.shadow_mode() == "map" else None
    return state.programs.compose(light_count=state.lights.count, frame_ids=state.frame_ids_needed(),
                                  layers=len(state.targets.layers), view=VIEWS.index(state.view),
                                  shadow_taps=map_taps)


class ContactShadows:
    """Soft contact shadows: one ellipse on the ground under each entity's bounds (meshes without an
    entity get one each), darker the closer the entity's lowest point is to the ground. Owns the blob
    SSBO (``layouts.BLOB``), grown when there are more entities than it holds, and the cached frame of
    still blobs (below).

    The cache: the blobs cost what their octagons cover (a blended fragment each: about 1.1-1.7 ms at
    1280x720 on llvmpipe for one CesiumMan, whose ellipse spans half the screen), the same every frame even
    when nothing moved. The backdrop with the blobs on it is a function of :func:`blob_key` (the backdrop's
    own key, the blob records, the program generation): when a frame's key equals the previous frame's, the
    frame colour right after the blobs are drawn is copied into :attr:`cache` (one copy, once), and from the
    next frame with that key on the compositor copies the cache into the frame instead of the plain
    backdrop and skips the blob draw. Moving characters (new bounds every frame) never pay the copy; a
    still scene (paused clip, a pose being edited elsewhere, a turntable stopped) stops paying for the
    blobs. The cache texture is (re)made at the frame size the first time a key repeats, and released with
    the rest."""

    def __init__(self, resources: GpuResources) -> None:
        self.res = resources
        self.capacity = 64
        self.buffer = resources.buffer(BLOB.zeros(self.capacity), label="contact shadow blobs")
        self.cache: moderngl.Texture | None = None
        self._cache_fbo: moderngl.Framebuffer | None = None
        self._cache_key: tuple | None = None  # the key the cache holds the frame of (None: nothing)
        self._last_key: tuple | None = None   # the key of the last frame that drew blobs
        self.cache_hits = 0                   # frames that copied the cache instead of drawing (for tests)

    def records(self, state: RenderState, lists: dict[str | None, list[MeshHandle]]) -> np.ndarray | None:
        """The frame's blob records (``layouts.BLOB``, one per entity with bounds), None without any."""
        boxes = [(h, h.bounds) for meshes in lists.values() for h in meshes if h.bounds is not None]
        if not boxes:
            return None
        keys = np.array([h.entity if h.entity >= 0 else -1 - h.id for h, _ in boxes])
        lo = np.array([b[0] for _, b in boxes], np.float64)
        hi = np.array([b[1] for _, b in boxes], np.float64)
        uniq, inv = np.unique(keys, return_inverse=True)
        glo = np.full((len(uniq), 3), np.inf)
        ghi = np.full((len(uniq), 3), -np.inf)
        np.minimum.at(glo, inv, lo)
        np.maximum.at(ghi, inv, hi)
        look = state.look
        size = ghi - glo
        height = np.maximum(size[:, 1], 1e-3)
        lift = np.maximum(glo[:, 1] - look.ground_height, 0.0)
        dark = look.blob_strength * np.clip(1.0 - lift / (0.5 * height), 0.0, 1.0)
        blobs = BLOB.zeros(len(uniq))
        blobs["ellipse"][:, 0] = (glo[:, 0] + ghi[:, 0]) / 2
        blobs["ellipse"][:, 1] = (glo[:, 2] + ghi[:, 2]) / 2
        blobs["ellipse"][:, 2] = 0.7 * size[:, 0] + 0.08 * height
        blobs["ellipse"][:, 3] = 0.7 * size[:, 2] + 0.08 * height
        blobs["params"][:, 0] = dark
        return blobs

    def cached(self, key: tuple) -> bool:
        """Whether :attr:`cache` holds the backdrop with these blobs (``key`` from :func:`blob_key`)."""
        return self.cache is not None and key == self._cache_key

    def note(self, key: tuple) -> bool:
        """Record this frame's key; True when it repeats the last frame's (the blobs stood still: keep the
        frame after the blob draw with :meth:`keep`)."""
        repeat = key == self._last_key
        self._last_key = key
        return repeat

    def keep(self, state: RenderState, key: tuple) -> None:
        """Copy the frame colour (backdrop + blobs, before any mesh is composited) into the cache."""
        size = (state.width, state.height)
        if self.cache is None or self.cache.size != size:
            self._release_cache()
            self.cache = self.res.texture(size, 4, filter=(moderngl.NEAREST, moderngl.NEAREST), repeat=False,
                                          label="backdrop with contact shadows")
            self._cache_fbo = self.res.framebuffer([self.cache], label="backdrop with contact shadows")
        assert self._cache_fbo is not None
        state.ctx.copy_framebuffer(self._cache_fbo, state.targets.overlay)
        self._cache_key = key

    def restore(self, state: RenderState) -> None:
        """The cached backdrop with its blobs into the frame colour (instead of the backdrop and the draw)."""
        assert self._cache_fbo is not None, "restore only after cached() said yes"
        state.ctx.copy_framebuffer(state.targets.overlay, self._cache_fbo)
        self.cache_hits += 1

    def draw(self, state: RenderState, blobs: np.ndarray, fbo: moderngl.Framebuffer) -> None:
        """``blobs`` (:meth:`records`) into the frame colour (attachment 0 of ``fbo``, the others masked)
        after the backdrop and before the compose quads, which then overwrite the pixels that show a mesh:
        no depth test, no read of the frame. (Where the ground hides part of a mesh the compositor writes
        the plain backdrop, without the blob.)"""
        n = len(blobs)
        if n > self.capacity:
            self.res.release(self.buffer)
            self.capacity = max(n, 2 * self.capacity)
            self.buffer = self.res.buffer(BLOB.zeros(self.capacity), label="contact shadow blobs")
        self.buffer.write(blobs.tobytes())
        ctx = state.ctx
        prog = state.programs.program("blob")
        attachments = len(fbo.color_attachments)
        if attachments > 1:
            _set_color_masks(fbo, ((True,) * 4,) + ((False,) * 4,) * (attachments - 1))
        fbo.use()
        ctx.disable(moderngl.DEPTH_TEST)
        ctx.enable(moderngl.BLEND)
        _set_blend_func(ctx, _DARKEN)
        vp = state.last_view_proj
        assert vp is not None, "set_camera runs before the passes"
        set_matrix(prog, "u_view_proj", vp)
        set_uniform(prog, "u_ground_height", float(state.look.ground_height))
        self.buffer.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_BLOBS"])
        state.programs.vao(prog, None).render(moderngl.TRIANGLES, vertices=18, instances=n)
        ctx.disable(moderngl.BLEND)
        ctx.blend_func = _DEFAULT_BLENDING
        if attachments > 1:
            _set_color_masks(fbo, ((True,) * 4,) * attachments)
            fbo.use()

    def _release_cache(self) -> None:
        if self._cache_fbo is not None:
            self.res.release(self._cache_fbo)
        if self.cache is not None:
            self.res.release(self.cache)
        self.cache, self._cache_fbo, self._cache_key = None, None, None

    def release(self) -> None:
        self._release_cache()
        self.res.release(self.buffer)


def blob_key(state: RenderState, frame: Frame, blobs: np.ndarray) -> tuple:
    """What the backdrop with these blobs on it depends on: the backdrop's key (camera, lights, look, size),
    the blob records and the program generation (a shader reload redraws both)."""
    return (backdrop_key(state, frame), blobs.tobytes(), state.programs.cache.generation)


class _UniformCache:
    """The values this pass last wrote to each program's per-frame uniforms: a uniform is written only when
    its value changed (most do not between two frames of one camera; a write is a Python call and a GL
    call each). A program starts empty when :meth:`reset` (new to the pass, or reloaded: the program
    variants' ``initialised`` set, keyed alike, is cleared then)."""

    def __init__(self) -> None:
        self._values: dict[int, dict[str, object]] = {}

    def reset(self, prog: moderngl.Program) -> None:
        self._values[id(prog)] = {}

    def set(self, prog: moderngl.Program, name: str, value: object) -> None:
        seen = self._values.setdefault(id(prog), {})
        if name not in seen or seen[name] != value:
            set_uniform(prog, name, value)
            seen[name] = value

    def matrix(self, prog: moderngl.Program, name: str, m: np.ndarray) -> None:
        seen = self._values.setdefault(id(prog), {})
        key = np.asarray(m, np.float64).tobytes()
        if seen.get(name) != key:
            set_matrix(prog, name, m)
            seen[name] = key


class ComposePass:
    """The compositor; reads the shadow pass's map (``shadows="map"``) and owns the contact shadows."""

    name = "compose"

    def __init__(self, resources: GpuResources, shadow: ShadowPass) -> None:
        self.shadow = shadow
        self.blobs = ContactShadows(resources)
        #: the per-frame uniform writer (writes on change); ``bench/bench_fixed_cost.py`` swaps in one that
        #: writes every call, to measure what it saves
        self.uniforms: _UniformCache = _UniformCache()

    def spec(self, state: RenderState) -> PassSpec:
        layers = list(state.targets.layers)
        gbuffer_read = SAMPLED if layers else IMAGE  # samplers with layers, image loads without (compose.frag)
        names: list[str | None] = [None, *layers]
        reads = (uses(gbuffer_read, *(gbuffer_resource(n) for n in names))
                 + uses(STORAGE, *(rect_resource(n) for n in names))
                 + uses(COPY, "backdrop") + uses(gbuffer_read, "backdrop") + uses(UNIFORM, "lights"))
        if state.look.shadow_mode() == "map":
            reads += uses(SAMPLED, "shadow_map")
        return PassSpec(self.name, reads=reads, writes=uses(ATTACHMENT, "composed"), timer="compose")

    def run(self, state: RenderState, frame: Frame) -> None:
        """Backdrop (or a dark clear for debug views) into the frame, then one early-depth-tested quad per
        G-buffer (see shaders/render/compose.frag)."""
        ctx, look, t = state.ctx, state.look, state.targets
        mode = frame.mode
        lit = state.view == "color"
        blobs = self.blobs.records(state, frame.lists) if mode == "blob" and look.ground and lit else None
        keep: tuple | None = None  # the key to cache the frame under once the blobs are drawn
        if blobs is not None:
            key = blob_key(state, frame, blobs)
            repeat = self.blobs.note(key)
            if self.blobs.cached(key):
                self.blobs.restore(state)
                blobs = None  # in the frame already
            else:
                ctx.copy_framebuffer(t.overlay, t.backdrop_color_fbo)
                keep = key if repeat else None
        elif lit:
            ctx.copy_framebuffer(t.overlay, t.backdrop_color_fbo)
        else:
            t.overlay.clear(0.08, 0.08, 0.08, 1.0)
        frame_ids = state.frame_ids_needed()
        t.frame_ids_written = frame_ids
        if frame_ids:
            t.frame_clear.clear(0.0)
        gbs = t.gbuffers()
        n = len(gbs)
        prog = compose_program(state)
        if id(prog) not in state.programs.initialised:
            state.programs.initialised.add(id(prog))
            set_uniform(prog, "g_zcopy", list(range(n)) if n > 1 else 0)
            set_uniform(prog, "g_albedo", list(range(n, 2 * n)) if n > 1 else 1)
            set_uniform(prog, "g_ids", list(range(2 * n, 3 * n)) if n > 1 else 2)
            set_uniform(prog, "u_backdrop", 3 * n)
            set_uniform(prog, "u_backdrop_depth_copy", 3 * n + 1)
            set_uniform(prog, "u_shadow_map", 3 * n + 2)
            set_uniform(prog, "u_depth", 1.0 - 1e-6)
            self.uniforms.reset(prog)
        u = self.uniforms
        u.matrix(prog, "u_inv_view_proj", state.inv_view_proj)  # (vertex stage: view rays; fragment: unprojection)
        u.set(prog, "u_inv_size", (1.0 / state.width, 1.0 / state.height))
        u.set(prog, "u_eye", tuple(float(x) for x in state.eye))
        if lit:
            sky, bounce = look.ambient_colors()
            state.lights.buffer.bind_to_uniform_block(GLSL_CONSTANTS["BINDING_LIGHTS"])
            u.set(prog, "u_light_count", state.lights.count)
            u.set(prog, "u_exposure", float(look.exposure))
            u.set(prog, "u_sky_color", sky)
            u.set(prog, "u_ground_color", bounce)
            u.set(prog, "u_rim_strength", float(look.rim_strength))
            if mode == "map":
                self.shadow.texture.use(location=3 * n + 2)
                u.matrix(prog, "u_shadow_matrix", self.shadow.matrix)
                u.set(prog, "u_shadow_texel", 1.0 / self.shadow.size)
        else:
            b = state.meshes.scene_bounds()
            lo, hi = b if b is not None else (np.zeros(3), np.ones(3))
            u.set(prog, "u_bounds_lo", tuple(float(x) for x in lo))
            u.set(prog, "u_bounds_hi", tuple(float(x) for x in hi))
            corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
            dist = np.linalg.norm(corners - state.eye, axis=1)
            u.set(prog, "u_depth_range", (float(dist.min()), float(dist.max())))
        if state.view == "silhouette":
            code, threshold = check_filter(*state.silhouette_view)
            u.set(prog, "u_sil_channel", code)
            u.set(prog, "u_sil_threshold", threshold)
        u.set(prog, "u_wireframe", bool(look.wireframe))
        u.set(prog, "u_wire_color", linear_rgb(look.wire_color))
        if n == 1:  # image loads (see compose.frag); the G-buffer was written by the framebuffer
            C = GLSL_CONSTANTS
            gb = gbs[0]
            gb.tex["zcopy"].bind_to_image(C["IMAGE_GBUFFER_ZCOPY"], read=True, write=False)
            gb.tex["albedo"].bind_to_image(C["IMAGE_GBUFFER_ALBEDO"], read=True, write=False)
            gb.tex["ids"].bind_to_image(C["IMAGE_GBUFFER_IDS"], read=True, write=False)
            t.backdrop_zcopy.bind_to_image(C["IMAGE_BACKDROP_DEPTH"], read=True, write=False)
        else:
            for k, gb in enumerate(gbs):
                gb.tex["zcopy"].use(location=k)
                gb.tex["albedo"].use(location=n + k)
                gb.tex["ids"].use(location=2 * n + k)
            t.backdrop_zcopy.use(location=3 * n + 1)
        t.backdrop.use(location=3 * n)
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = ">"  # the far-plane quad passes where the G-buffer has a surface
        t.rects.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_SCREEN_RECTS"])
        u.set(prog, "u_viewport", (float(state.width), float(state.height)))
        vao = state.programs.vao(prog, None)
        names: list[str | None] = [None, *t.layers]
        for k, gb in enumerate(gbs):
            if not frame.lists[names[k]]:
                continue  # an empty G-buffer has no surface to run on
            fbo = gb.compose_fbo if frame_ids else gb.compose_color_fbo
            assert fbo is not None, "the targets made the G-buffer's compose framebuffers"
            if blobs is not None:  # into the same framebuffer, so that llvmpipe rasterises both in one pass
                self.blobs.draw(state, blobs, fbo)
                blobs = None
                if keep is not None:
                    self.blobs.keep(state, keep)
                ctx.enable(moderngl.DEPTH_TEST)
            fbo.use()
            fbo.depth_mask = False
            set_uniform(prog, "u_rect_slot", k)
            vao.render(moderngl.TRIANGLES, vertices=6)
            fbo.depth_mask = True
        ctx.disable(moderngl.DEPTH_TEST)
        if blobs is not None:  # no G-buffer had a surface: the blobs go onto the backdrop
            self.blobs.draw(state, blobs, t.overlay)
            if keep is not None:
                self.blobs.keep(state, keep)
        if mode == "map" and look.ground and lit and self.shadow.valid(state):
            self._ground_shadow(state)

    def _ground_shadow(self, state: RenderState) -> None:
        """Darken the ground where the key light's shadow map says it is blocked (frame pixels without a
        mesh, from the backdrop depth), blended into the frame colour."""
        ctx, t = state.ctx, state.targets
        prog = state.programs.program("ground_shadow")
        t.overlay.use()
        ctx.enable(moderngl.BLEND)
        _set_blend_func(ctx, _DARKEN)
        t.depth.use(location=0)
        t.backdrop_depth.use(location=1)
        self.shadow.texture.use(location=2)
        set_uniform(prog, "u_frame_depth", 0)
        set_uniform(prog, "u_backdrop_depth", 1)
        set_uniform(prog, "u_shadow_map", 2)
        set_matrix(prog, "u_shadow_matrix", self.shadow.matrix)
        set_matrix(prog, "u_inv_view_proj", state.inv_view_proj)
        set_uniform(prog, "u_inv_size", (1.0 / state.width, 1.0 / state.height))
        set_uniform(prog, "u_ground_shadow", float(state.look.ground_shadow))
        state.programs.vao(prog, None).render(moderngl.TRIANGLES, vertices=3)
        ctx.disable(moderngl.BLEND)
        ctx.blend_func = _DEFAULT_BLENDING

    def release(self) -> None:
        self.blobs.release()
