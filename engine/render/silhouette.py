"""The silhouette filter on the GPU (research 7.3, after SilSketch): a Laplacian edge filter over a G-buffer
channel of the last frame, masked by mesh ids, for the silhouette tool and the "silhouette" debug view.

The filter value of a pixel is the magnitude of the 4-neighbour Laplacian of a channel (``normal``, the
default; ``depth``, window depth; ``position``, world position), summed over its components, border pixels
replicated; a pixel showing a surface is a silhouette (or crease) pixel where it exceeds the channel's
threshold. The math is written once in GLSL (``shaders/include/silhouette.glsl``) and run by two shaders:

* ``shaders/render/silhouette.comp`` (:class:`SilhouetteFilter`): one invocation per pixel inside the G-buffers'
  screen rectangles; the silhouette pixels of the selected meshes are appended to a storage buffer as
  (pixel, mesh id, triangle, packed barycentrics), and only those records are read back (a count, then
  16 bytes per pixel): what :func:`engine.authoring.silhouette.silhouette_edit` needs, not the G-buffer;
* ``shaders/render/compose.frag`` with the "silhouette" view (``SceneRenderer.view``, the V cycle): the
  filter's output over the frame, below the threshold in grey (brighter towards it), above in yellow.

The numpy reference is :func:`engine.skinning.roi.laplacian_edges` / :func:`~engine.skinning.roi.silhouette_pixels`
over ``Session.gbuffer()`` (the frame's channels as the queries decode them: normal and position 0, depth 1
where no surface shows); tests compare the two on the cylinder and the humanoid. The channel names, their
default thresholds and the GLSL channel codes are defined once in :mod:`engine.gpu.layouts` (below render and
skinning, which both read them) and re-exported here.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.gpu.layouts import GLSL_CONSTANTS, SILHOUETTE_CHANNELS, SILHOUETTE_DEFINES, SILHOUETTE_THRESHOLDS
from engine.render.surface import decode_ids

if TYPE_CHECKING:
    import moderngl

    from engine.render.state import RenderState

__all__ = ["SILHOUETTE_CHANNELS", "SILHOUETTE_THRESHOLDS", "SILHOUETTE_DEFINES", "SilhouettePixels",
           "SilhouetteFilter", "check_filter"]

#: the compute shader's storage buffer and image bindings (bound just before its dispatch)
_BINDINGS = {"SIL_BINDING_MASK": 0, "SIL_BINDING_FOUND": 1, "SIL_IMAGE_EDGES": 0}
_CHANNEL_CODES = {"normal": "SIL_NORMAL", "depth": "SIL_DEPTH", "position": "SIL_POSITION"}
_GROUP = 8          # the compute shader's local size (8 x 8 pixels)
_FIRST_CAPACITY = 16384  # records the found buffer holds at first (grown to what a frame needs)


def check_filter(channel: str, threshold: float | None = None) -> tuple[int, float]:
    """(GLSL channel code, threshold) of a channel name and a threshold (None: the channel's default);
    ValueError naming a bad one."""
    if channel not in SILHOUETTE_CHANNELS:
        raise ValueError(f"channel {channel!r} is unknown; valid: {', '.join(SILHOUETTE_CHANNELS)}")
    thr = SILHOUETTE_THRESHOLDS[channel] if threshold is None else threshold
    if isinstance(thr, bool) or not isinstance(thr, (int, float, np.integer, np.floating)) or \
            not (math.isfinite(float(thr)) and float(thr) > 0):
        raise ValueError(f"threshold must be a finite number > 0, got {threshold!r}")
    return SILHOUETTE_DEFINES[_CHANNEL_CODES[channel]], float(thr)


@dataclass(frozen=True)
class SilhouettePixels:
    """Silhouette pixels of the last frame, in row-major order (rows from the top, as ``Session.gbuffer()``):
    ``rows``, ``cols`` int32, ``mesh`` int32 renderer mesh ids, ``triangle`` int32, ``barycentric`` (N,3)
    float32 (decoded as the queries decode them)."""

    rows: np.ndarray
    cols: np.ndarray
    mesh: np.ndarray
    triangle: np.ndarray
    barycentric: np.ndarray
    shape: tuple[int, int]  # (height, width) of the frame

    def mask(self, mesh_id: int | None = None) -> np.ndarray:
        """(H,W) bool image of the pixels (of one mesh id, or all)."""
        out = np.zeros(self.shape, bool)
        keep = slice(None) if mesh_id is None else self.mesh == int(mesh_id)
        out[self.rows[keep], self.cols[keep]] = True
        return out

    def of(self, mesh_id: int) -> SilhouettePixels:
        """The pixels of one mesh id."""
        k = self.mesh == int(mesh_id)
        return SilhouettePixels(self.rows[k], self.cols[k], self.mesh[k], self.triangle[k], self.barycentric[k],
                                self.shape)

    def __len__(self) -> int:
        return int(self.rows.shape[0])


class SilhouetteFilter:
    """Runs ``render/silhouette.comp`` over the last frame and reads back the silhouette pixels. Owns its
    program (compiled at set-up), the mesh-mask and found buffers (grown as needed) and the optional filter
    value image; :meth:`release` frees them."""

    def __init__(self, state: RenderState) -> None:
        self.state = state
        self._defines = {**SILHOUETTE_DEFINES, **_BINDINGS,
                         "BINDING_SCREEN_RECTS": GLSL_CONSTANTS["BINDING_SCREEN_RECTS"]}
        self.program()  # a shader error surfaces at set-up
        res = state.res
        self._mask = res.buffer(np.zeros(4, np.uint32), label="silhouette mesh mask")
        self._capacity = _FIRST_CAPACITY
        self._found = res.buffer(reserve=16 + 16 * self._capacity, label="silhouette pixels")
        self._edges: moderngl.Texture | None = None

    def program(self) -> moderngl.ComputeShader:
        return self.state.programs.cache.get_compute("render/silhouette.comp", self._defines)

    def _sources(self) -> tuple[moderngl.Texture, moderngl.Texture, bool]:
        """(ids, depth, ground test) of the frame as the queries read it (engine/render/queries.py)."""
        t = self.state.targets
        if t.frame_ids_written:
            return t.ids, t.depth, False
        gb = t.gbuffer(None)
        return gb.tex["ids"], gb.tex["zcopy"], True

    def _write_mask(self, mesh_ids: Iterable[int] | None) -> bool:
        """Upload the mesh-id bit mask; False when every mesh is selected (None)."""
        if mesh_ids is None:
            return False
        ids = np.asarray(sorted({int(m) for m in mesh_ids}), np.int64)
        if ids.size and ids[0] < 0:
            raise ValueError(f"mesh ids must be >= 0, got {int(ids[0])}")
        words = np.zeros(max(4, int(ids[-1]) // 32 + 1 if ids.size else 1), np.uint32)
        np.bitwise_or.at(words, ids // 32, (np.uint32(1) << (ids % 32).astype(np.uint32)))
        if words.nbytes > self._mask.size:
            self.state.res.release(self._mask)
            self._mask = self.state.res.buffer(words, label="silhouette mesh mask")
        else:
            self._mask.write(words.tobytes())
        return True

    def _edges_image(self) -> moderngl.Texture:
        import moderngl

        s = self.state
        if self._edges is None or self._edges.size != (s.width, s.height):
            if self._edges is not None:
                s.res.release(self._edges)
            self._edges = s.res.texture((s.width, s.height), 1, dtype="f4",
                                        filter=(moderngl.NEAREST, moderngl.NEAREST), repeat=False,
                                        label="silhouette filter values")
        return self._edges

    def _dispatch(self, code: int, threshold: float, selected: bool, write_edges: bool) -> int:
        import moderngl

        from engine.render.framegraph import HOST, STORAGE, barrier_bits
        from engine.render.programs import set_matrix, set_uniform

        s = self.state
        prog = self.program()
        ids, depth, ground = self._sources()
        ids.use(location=0)
        depth.use(location=1)
        s.targets.backdrop_zcopy.use(location=2)
        set_uniform(prog, "u_ids", 0)
        set_uniform(prog, "u_depth", 1)
        set_uniform(prog, "u_backdrop", 2)
        set_uniform(prog, "u_ground_test", ground)
        set_matrix(prog, "u_inv_view_proj", s.inv_view_proj)
        set_uniform(prog, "u_inv_size", (1.0 / s.width, 1.0 / s.height))
        set_uniform(prog, "u_slots", 1 + len(s.targets.layers))
        set_uniform(prog, "u_sil_channel", code)
        set_uniform(prog, "u_threshold", threshold)
        set_uniform(prog, "u_all_meshes", not selected)
        set_uniform(prog, "u_capacity", self._capacity)
        set_uniform(prog, "u_write_edges", write_edges)
        edges = self._edges_image()  # bound either way: the image unit must name a valid image
        edges.bind_to_image(_BINDINGS["SIL_IMAGE_EDGES"], read=False, write=True)
        s.targets.rects.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_SCREEN_RECTS"])
        self._mask.bind_to_storage_buffer(_BINDINGS["SIL_BINDING_MASK"])
        self._found.write(np.zeros(4, np.uint32).tobytes())
        self._found.bind_to_storage_buffer(_BINDINGS["SIL_BINDING_FOUND"])
        # the G-buffer pass grew the screen rectangles with atomics (storage writes)
        s.ctx.memory_barrier(barrier_bits(STORAGE, STORAGE))
        prog.run(group_x=-(-s.width // _GROUP), group_y=-(-s.height // _GROUP))
        texture_read = moderngl.TEXTURE_UPDATE_BARRIER_BIT if write_edges else 0  # edges() reads the image
        s.ctx.memory_barrier(barrier_bits(STORAGE, HOST) | texture_read)
        return int(np.frombuffer(self._found.read(size=4), np.uint32)[0])

    def pixels(self, channel: str = "normal", threshold: float | None = None, *,
               mesh_ids: Iterable[int] | None = None) -> SilhouettePixels:
        """The silhouette pixels of the last frame on ``channel`` above ``threshold`` (None: the channel's
        default), of the meshes ``mesh_ids`` (renderer mesh ids; None: every mesh). Reads back only them."""
        code, thr = check_filter(channel, threshold)
        selected = self._write_mask(mesh_ids)
        n = self._dispatch(code, thr, selected, False)
        if n > self._capacity:  # more than the buffer holds: grow to fit and filter again
            self.state.res.release(self._found)
            self._capacity = int(n)
            self._found = self.state.res.buffer(reserve=16 + 16 * self._capacity, label="silhouette pixels")
            n = self._dispatch(code, thr, selected, False)
        rec = np.frombuffer(self._found.read(size=16 * n, offset=16), np.uint32).reshape(n, 4) if n else \
            np.zeros((0, 4), np.uint32)
        h, w = self.state.height, self.state.width
        x = (rec[:, 0] & 0xFFFF).astype(np.int32)
        rows = (h - 1 - (rec[:, 0] >> 16)).astype(np.int32)
        order = np.lexsort((x, rows))  # row-major, as np.nonzero of a mask
        dec = decode_ids(np.c_[rec[order, 1:], np.zeros(n, np.uint32)])
        return SilhouettePixels(rows[order], x[order], dec["mesh"], dec["triangle"], dec["barycentric"], (h, w))

    def edges(self, channel: str = "normal") -> np.ndarray:
        """(H,W) float32 filter values of the last frame (rows from the top; 0 where no surface shows): the
        GPU side of engine.skinning.roi.laplacian_edges, for tests and debugging (reads the whole image)."""
        code, _ = check_filter(channel)
        self._write_mask(None)
        self._dispatch(code, SILHOUETTE_THRESHOLDS[channel], False, True)
        s = self.state
        assert self._edges is not None
        img = np.frombuffer(self._edges.read(alignment=1), np.float32).reshape(s.height, s.width)
        return img[::-1].copy()

    def release(self) -> None:
        for obj in (self._mask, self._found, self._edges):
            if obj is not None:
                self.state.res.release(obj)
        self._edges = None

