"""The renderer's render targets: G-buffers (the scene's and one per layer), the frame, the backdrop, and
the screen rectangles; (re)created together on resize.

* a G-buffer (:class:`GBuffer`, :data:`GBUFFER_LAYOUT`): albedo RGBA8 (sqrt of linear albedo, alpha =
  wireframe coverage), ids RGBA32UI (``shaders/include/gbuffer_codec.glsl``, decoded by
  ``engine/render/surface.py``), zcopy R32F (window depth, 0 = no surface) and a depth buffer. Only zcopy
  and depth are cleared each frame: albedo and id texels mean something only where zcopy is non-zero
  (a 128-bit clear costs ~4 ms at 720p on llvmpipe; readers mask them); and only over the screen rectangle
  the last frame drew (:attr:`GBuffer.stale` asks for a full clear: a new G-buffer, a layer change, a frame
  that did not finish);
* the frame: colour RGBA8 (what ``read_pixels`` returns and overlays draw into), ids and depth (written
  by the compositor only when several G-buffers compete or the shadow-map ground pass needs them:
  :attr:`FrameTargets.frame_ids_written`);
* the backdrop: background gradient + ground grid with its depth, cached between frames;
* the screen rectangles (SSBO, one ivec4 per G-buffer slot: scene, then layers in order) that the
  G-buffer passes grow and the compose pass reads; two buffers used in turn, so that the last frame's
  rectangles (:attr:`FrameTargets.previous_rects`) tell the next G-buffer clear where to clear, on the GPU
  (no read-back).

Sizes are bounded before anything is allocated (issue 16): :func:`check_device_size` against the device's
texture, renderbuffer, viewport and framebuffer limits, :func:`check_render_memory` against the memory the
process may still use (available RAM, the cgroup limit, ``ulimit -v`` / ``-d``), with a per-pixel estimate
derived from the target formats plus the measured cost of reading a frame (and its G-buffer) back. A size
that does not fit is a ValueError naming the size, the limit and the largest size that fits.
"""
from __future__ import annotations

import math
import resource
from pathlib import Path

import moderngl
import numpy as np

from engine.gpu.layouts import MAX_LAYERS
from engine.gpu.resources import GpuResources

__all__ = ["GBUFFER_LAYOUT", "GBuffer", "FrameTargets", "RESERVED_SOURCES", "check_size", "check_device_size",
           "check_render_memory", "render_bytes", "available_memory", "GBUFFER_BYTES_PER_PIXEL",
           "FRAME_BYTES_PER_PIXEL", "READBACK_BYTES_PER_PIXEL", "GBUFFER_READBACK_BYTES_PER_PIXEL"]

# G-buffer attachments: name -> (components, dtype); order = fragment output locations.
GBUFFER_LAYOUT: tuple[tuple[str, int, str], ...] = (
    ("albedo", 4, "f1"),  # sqrt(linear albedo), a = wireframe edge coverage
    ("ids", 4, "u4"),     # mesh id + 1, triangle, packed barycentrics, packed normal (surface.py)
    ("zcopy", 1, "f4"),   # window depth (0 = no surface): what the compositor and queries read
)
#: source names that are not layers: the composited frame and the scene G-buffer
RESERVED_SOURCES = ("frame", "gbuffer")


#: bytes per pixel of one G-buffer: its attachments (GBUFFER_LAYOUT; moderngl dtypes name the bytes per
#: component: "f1", "u4") and a 32-bit depth buffer
GBUFFER_BYTES_PER_PIXEL = sum(comps * int(dtype[1:]) for _, comps, dtype in GBUFFER_LAYOUT) + 4
#: bytes per pixel of the frame (colour RGBA8, ids RGBA32UI, depth R32F) and the backdrop (RGBA8, depth, R32F)
FRAME_BYTES_PER_PIXEL = (4 + 16 + 4) + (4 + 4 + 4)
#: host bytes per pixel beyond the targets, measured with ``render`` on llvmpipe at 1024^2 and 2048^2 (the
#: slope of the peak resident size): reading the colour back and encoding the PNG ...
READBACK_BYTES_PER_PIXEL = 16
#: ... and, with ``--gbuffer``, the G-buffer read-back, its decoded channels and the npz (~190 measured)
GBUFFER_READBACK_BYTES_PER_PIXEL = 200
#: memory a GL context, its programs and the interpreter take whatever the size (~200 MB resident measured)
_CONTEXT_BYTES = 256 * 2**20
#: address space a GL context maps beyond what it touches (~1 GB measured on llvmpipe): counts against
#: ``ulimit -v`` only
_CONTEXT_ADDRESS_SPACE = 1280 * 2**20
_GIB = 2**30


def check_size(width: int, height: int) -> None:
    """Raise ValueError for a render size outside [1, 16384] per side."""
    if not (1 <= int(width) <= 16384 and 1 <= int(height) <= 16384):
        raise ValueError(f"render size must be in [1, 16384] per side, got {width}x{height}")


def check_device_size(ctx: moderngl.Context, width: int, height: int) -> None:
    """Raise ValueError when ``width`` x ``height`` exceeds what the device can attach and draw: the smallest of
    GL_MAX_TEXTURE_SIZE, GL_MAX_RENDERBUFFER_SIZE, GL_MAX_VIEWPORT_DIMS and GL_MAX_FRAMEBUFFER_WIDTH/HEIGHT."""
    info = getattr(ctx, "info", {}) or {}
    limits: list[tuple[int, int, str]] = []  # (max width, max height, name)
    for key in ("GL_MAX_TEXTURE_SIZE", "GL_MAX_RENDERBUFFER_SIZE"):
        if isinstance(info.get(key), int) and info[key] > 0:
            limits.append((info[key], info[key], key))
    dims = info.get("GL_MAX_VIEWPORT_DIMS")
    if isinstance(dims, (tuple, list)) and len(dims) == 2:
        limits.append((int(dims[0]), int(dims[1]), "GL_MAX_VIEWPORT_DIMS"))
    fw, fh = info.get("GL_MAX_FRAMEBUFFER_WIDTH"), info.get("GL_MAX_FRAMEBUFFER_HEIGHT")
    if isinstance(fw, int) and isinstance(fh, int) and fw > 0 and fh > 0:
        limits.append((fw, fh, "GL_MAX_FRAMEBUFFER_WIDTH/HEIGHT"))
    for mw, mh, name in limits:
        if int(width) > mw or int(height) > mh:
            raise ValueError(f"render size {width}x{height} exceeds the device's limit of {mw}x{mh} ({name} of "
                             f"{info.get('GL_RENDERER', 'this GL device')})")


def render_bytes(width: int, height: int, *, layers: int = 0, readback: bool = True,
                 gbuffer_readback: bool = False) -> int:
    """Estimated peak bytes of rendering one ``width`` x ``height`` frame: the frame and backdrop targets, the
    scene G-buffer and ``layers`` more, reading the colour back (``readback``) and the G-buffer read-back."""
    per_pixel = FRAME_BYTES_PER_PIXEL + GBUFFER_BYTES_PER_PIXEL * (1 + int(layers))
    per_pixel += READBACK_BYTES_PER_PIXEL if readback else 0
    per_pixel += GBUFFER_READBACK_BYTES_PER_PIXEL if gbuffer_readback else 0
    return int(width) * int(height) * per_pixel


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _status_kib(key: str) -> int | None:
    """A ``VmSize``-style field of /proc/self/status in bytes."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def available_memory(*, context_mapped: bool = False) -> tuple[int, str] | None:
    """The bytes this process may still allocate and what bounds them, the tightest of: available RAM
    (/proc/meminfo MemAvailable), the cgroup's memory limit (v2 memory.max, v1 memory.limit_in_bytes) less its
    usage, and ``ulimit -v`` / ``ulimit -d`` less the process's current size (less what a GL context will map,
    unless ``context_mapped``: the process already holds its context). None where none of them can be read."""
    found: list[tuple[int, str]] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append((int(line.split()[1]) * 1024, "available memory (MemAvailable)"))
    except (OSError, ValueError, IndexError):
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < 2**60:
            found.append((limit - usage, f"memory left under the cgroup limit of {limit / _GIB:.1f} GiB"))
    overhead = 0 if context_mapped else _CONTEXT_ADDRESS_SPACE
    for rlimit, field, name in ((resource.RLIMIT_AS, "VmSize", "ulimit -v"),
                                (resource.RLIMIT_DATA, "VmData", "ulimit -d")):
        soft, _ = resource.getrlimit(rlimit)
        used = _status_kib(field)
        if soft != resource.RLIM_INFINITY and used is not None:
            found.append((soft - used - overhead, f"memory left under the {name} limit of {soft / _GIB:.1f} GiB"))
    return min(found) if found else None


def check_render_memory(width: int, height: int, *, layers: int = 0, readback: bool = True,
                        gbuffer_readback: bool = False, available: tuple[int, str] | None = None,
                        context_exists: bool = False) -> None:
    """Raise ValueError, before anything is allocated, when rendering ``width`` x ``height`` (see
    :func:`render_bytes`) needs more memory than :func:`available_memory` (or ``available``) leaves; the message
    names the size, the estimate, the limit and the largest size of the same aspect that fits. Without
    ``context_exists`` the GL context the render will create is counted too."""
    avail = available if available is not None else available_memory(context_mapped=context_exists)
    if avail is None:
        return
    free, what = avail
    context = 0 if context_exists else _CONTEXT_BYTES
    need = render_bytes(width, height, layers=layers, readback=readback, gbuffer_readback=gbuffer_readback)
    if need + context <= free:
        return
    per_pixel = need // max(1, int(width) * int(height))
    scale = math.sqrt(max(0, free - context) / max(1, need))
    fit_w, fit_h = int(width * scale), int(height * scale)
    fits = f"at most about {fit_w}x{fit_h} fits" if fit_w >= 1 and fit_h >= 1 else "no size fits"
    extra = " with the G-buffer read-back" if gbuffer_readback else ""
    raise ValueError(f"render size {width}x{height}{extra} needs about {(need + context) / _GIB:.1f} GiB "
                     f"({per_pixel} bytes per pixel), more than the {max(free, 0) / _GIB:.1f} GiB of {what}; "
                     f"{fits}")


class GBuffer:
    """One G-buffer (albedo RGBA8, ids RGBA32UI, zcopy R32F, depth) of a given size; the scene's or a
    layer's, with the two framebuffers its compose draw writes the frame through (its depth as the
    early-depth-test mask)."""

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
        #: True: the next frame clears the whole G-buffer; False: only what the last frame drew (its
        #: previous screen rectangle) differs from a cleared one (see passes/gbuffer.py)
        self.stale = True
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


class FrameTargets:
    """Every size-dependent target plus the layers' G-buffers and the screen rectangles. Layers keep their
    order (it is their screen-rectangle slot minus one and the compositor's sampler order)."""

    def __init__(self, resources: GpuResources) -> None:
        self.res = resources
        self.width = self.height = 0
        self.layers: dict[str, GBuffer | None] = {}  # name -> G-buffer (None until sized)
        self.scene: GBuffer | None = None
        self._sized: list = []
        #: whether the last frame's compositor wrote the frame id and depth targets
        self.frame_ids_written = False
        # Per G-buffer (scene, then the layers in order) the screen rectangle its surfaces cover, grown by
        # the G-buffer pass's vertex stage and read by the compose pass's (no CPU read-back): see
        # shaders/render/gbuffer.vert (SCREEN_RECT) and compose.vert. Two buffers used in turn: the other
        # one holds the last frame's, over which the G-buffer pass clears (shaders/render/rect_clear.vert).
        self._rect_buffers = [resources.buffer(np.zeros((MAX_LAYERS + 1, 4), np.int32), label=f"screen rects {k}")
                              for k in range(2)]
        self._rect_turn = 0

    @property
    def size(self) -> tuple[int, int]:
        return self.width, self.height

    @property
    def rects(self) -> moderngl.Buffer:
        """This frame's screen rectangles (between frames: the last frame's)."""
        return self._rect_buffers[self._rect_turn]

    @property
    def previous_rects(self) -> moderngl.Buffer:
        """The screen rectangles of the frame before this one: where the G-buffers hold its surfaces."""
        return self._rect_buffers[1 - self._rect_turn]

    def mark_stale(self) -> None:
        """Every G-buffer is cleared whole in the next frame (their slots or contents no longer match the
        previous rectangles)."""
        for gb in [self.scene, *self.layers.values()]:
            if gb is not None:
                gb.stale = True

    def resize(self, width: int, height: int) -> None:
        """(Re)create the size-dependent targets (the old ones are released first); ValueError, with nothing
        released or allocated, for a size past the device's limits or the memory left."""
        check_device_size(self.res.ctx, width, height)
        check_render_memory(width, height, layers=len(self.layers), readback=False, context_exists=True)
        self.release_sized()
        self.width, self.height = int(width), int(height)
        size = (self.width, self.height)
        r = self.res
        near = (moderngl.NEAREST, moderngl.NEAREST)
        self.color = r.texture(size, 4, filter=(moderngl.LINEAR, moderngl.LINEAR), repeat=False, label="frame colour")
        self.ids = r.texture(size, 4, dtype="u4", filter=near, repeat=False, label="frame ids")
        self.depth = r.texture(size, 1, dtype="f4", filter=near, repeat=False, label="frame depth")
        self.frame = r.framebuffer([self.color, self.ids, self.depth], label="frame")
        # Only the frame depth is cleared (0 = no surface): ids texels are meaningful where depth != 0
        # (clearing a 128-bit target costs ~10x a 32-bit one on llvmpipe).
        self.frame_clear = r.framebuffer([self.depth], label="frame depth")
        self.overlay = r.framebuffer([self.color], label="frame overlay")
        self.backdrop = r.texture(size, 4, filter=near, repeat=False, label="backdrop colour")
        self.backdrop_depth = r.depth_texture(size, label="backdrop depth")
        self.backdrop_zcopy = r.texture(size, 1, dtype="f4", filter=near, repeat=False, label="backdrop depth copy")
        self.backdrop_fbo = r.framebuffer([self.backdrop, self.backdrop_zcopy], self.backdrop_depth,
                                          label="backdrop")
        self.backdrop_color_fbo = r.framebuffer([self.backdrop], label="backdrop colour")
        self._sized += [self.color, self.ids, self.depth, self.frame, self.frame_clear, self.overlay, self.backdrop,
                        self.backdrop_depth, self.backdrop_zcopy, self.backdrop_fbo, self.backdrop_color_fbo]
        self.scene = self._new_gbuffer("scene")
        for name in self.layers:
            self.layers[name] = self._new_gbuffer(f"layer {name}")

    def _new_gbuffer(self, label: str) -> GBuffer:
        """A G-buffer plus the compose framebuffers that write the frame with the G-buffer's depth as
        the early-depth-test mask (needs the frame targets)."""
        gb = GBuffer(self.res, (self.width, self.height), f"{label} gbuffer")
        gb.compose_fbo = self.res.framebuffer([self.color, self.ids, self.depth], gb.depth,
                                              label=f"{label} compose")
        gb.compose_color_fbo = self.res.framebuffer([self.color], gb.depth, label=f"{label} compose colour")
        return gb

    def add_layer(self, name: str) -> None:
        self.layers[name] = self._new_gbuffer(f"layer {name}")

    def remove_layer(self, name: str) -> None:
        gb = self.layers.pop(name)
        if gb is not None:
            gb.release()
        self.mark_stale()  # the later layers move to other rectangle slots

    def gbuffer(self, source: str | None) -> GBuffer:
        """The scene G-buffer (None, "gbuffer" or "frame") or a layer's."""
        gb = self.scene if source in (None, "gbuffer", "frame") else self.layers[source]
        assert gb is not None, "targets are not sized"
        return gb

    def gbuffers(self) -> list[GBuffer]:
        """The scene G-buffer then the layers', in slot order."""
        return [self.gbuffer(None)] + [self.gbuffer(name) for name in self.layers]

    def reset_rects(self, *, whole: bool) -> None:
        """Start a frame's rectangles: the current ones become :attr:`previous_rects`, and every G-buffer's
        screen rectangle starts empty (lo = size, hi = 0); ``whole`` (Phong tessellation, whose vertex stage
        does not grow it: displaced surfaces leave the corners' bounds): the whole viewport."""
        self._rect_turn = 1 - self._rect_turn
        r = np.empty((MAX_LAYERS + 1, 4), np.int32)
        if whole:
            r[:] = (0, 0, self.width, self.height)
        else:
            r[:] = (self.width, self.height, 0, 0)
        self.rects.write(r.tobytes())

    def screen_rect(self, source: str | None = None) -> tuple[int, int, int, int] | None:
        """(x0, y0, x1, y1) pixels, x1/y1 exclusive, row 0 at the bottom (GL), of the last frame's screen
        rectangle of ``source``'s surfaces (None or "scene": the scene G-buffer, else a layer name), or
        None when empty. A synchronous read (waits for the GPU): for tools and tests."""
        names = [None] + list(self.layers)
        key = None if source in (None, "scene") else source
        if key not in names:
            raise ValueError(f"source must be None, 'scene' or a layer of {list(self.layers)}, got {source!r}")
        r = np.frombuffer(self.rects.read(), np.int32).reshape(-1, 4)[names.index(key)]
        return None if r[2] <= r[0] or r[3] <= r[1] else (int(r[0]), int(r[1]), int(r[2]), int(r[3]))

    def release_sized(self) -> None:
        """Release the size-dependent targets (the layers keep their names, without G-buffers)."""
        for name, gb in self.layers.items():
            if gb is not None:
                gb.release()
                self.layers[name] = None
        if self.scene is not None:
            self.scene.release()
            self.scene = None
        for obj in reversed(self._sized):
            self.res.release(obj)
        self._sized.clear()

    def release(self) -> None:
        """Release everything, the screen rectangles included; no layer is left."""
        self.release_sized()
        self.layers.clear()
        for buf in self._rect_buffers:
            self.res.release(buf)
        self.width = self.height = 0
