"""GPU resource ownership: every buffer, texture, framebuffer, program and query has exactly one owner.

:class:`GpuResources` wraps a moderngl context: objects created through it are tracked with a kind and
a label until ``release(obj)`` (or ``release_all()``) frees them. ``live_counts()`` and the process-wide
:func:`live_objects` counter make leaks visible in tests. The numpy/ECS side never holds these objects.

The std430 layout helper and the constants shared with GLSL live in :mod:`engine.gpu.layouts` and
are re-exported here (``Std430Struct``, ``MAX_JOINTS``, ``LOCAL_SIZE``, ``GLSL_CONSTANTS``).
"""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

import moderngl
import numpy as np

from engine.gpu.layouts import (  # noqa: F401  (re-exported)
    GLSL_CONSTANTS,
    LOCAL_SIZE,
    MAX_JOINTS,
    Std430Struct,
    pack_mat4,
)

log = logging.getLogger(__name__)

KINDS = ("buffer", "texture", "framebuffer", "program", "compute", "vertex_array", "query", "sampler")

_GLOBAL_LIVE: Counter = Counter()


def live_objects() -> dict[str, int]:
    """Live objects per kind over every GpuResources of the process (a debug counter)."""
    return {k: v for k, v in _GLOBAL_LIVE.items() if v}


def _free(obj) -> None:
    # moderngl's Query has no release(): its GL name lives until the context goes; untracking it is
    # all an owner can do (queries are few and created up front).
    rel = getattr(obj, "release", None)
    if rel is not None:
        rel()


@dataclass
class _Tracked:
    kind: str
    label: str
    obj: object


class GpuResources:
    """The owner of the GL objects created through it. All creation methods take a ``label`` shown by
    ``describe()`` (and set as the GL debug label where the driver supports it)."""

    def __init__(self, ctx: moderngl.Context) -> None:
        self.ctx = ctx
        self._objs: dict[int, _Tracked] = {}

    # -- bookkeeping ---------------------------------------------------------------------------
    def _track(self, kind: str, obj, label: str):
        self._objs[id(obj)] = _Tracked(kind, label, obj)
        _GLOBAL_LIVE[kind] += 1
        if label and getattr(self.ctx, "supports_labels", False) and isinstance(
                getattr(type(obj), "label", None), property):
            try:
                obj.label = label[:200]
            except (TypeError, moderngl.Error) as exc:  # labels are a debug aid: never fail creation
                log.debug("GL label %r not set: %s", label, exc)
        return obj

    def owns(self, obj) -> bool:
        return id(obj) in self._objs

    def release(self, obj) -> None:
        """Release one object created here; ValueError for an object this owner does not hold."""
        t = self._objs.pop(id(obj), None)
        if t is None:
            raise ValueError(f"{obj!r} is not owned by this GpuResources (already released or foreign)")
        _GLOBAL_LIVE[t.kind] -= 1
        _free(obj)

    def release_all(self) -> None:
        """Release everything, newest first (vertex arrays and framebuffers before what they use)."""
        for key in reversed(list(self._objs)):
            t = self._objs.pop(key)
            _GLOBAL_LIVE[t.kind] -= 1
            _free(t.obj)

    def live_counts(self) -> dict[str, int]:
        """Live objects of this owner per kind (kinds with none are left out)."""
        c = Counter(t.kind for t in self._objs.values())
        return dict(c)

    @property
    def live_count(self) -> int:
        return len(self._objs)

    def describe(self) -> list[str]:
        """'kind label' per live object, oldest first (for leak reports)."""
        return [f"{t.kind} {t.label}" for t in self._objs.values()]

    # -- creation --------------------------------------------------------------------------------
    def buffer(self, data: bytes | np.ndarray | None = None, *, reserve: int = 0, dynamic: bool = False,
               label: str = "") -> moderngl.Buffer:
        """A buffer from ``data`` (bytes or a numpy array, uploaded as is) or ``reserve`` zeroed bytes."""
        if data is None:
            if reserve <= 0:
                raise ValueError(f"buffer {label!r}: give data or reserve > 0 bytes, got reserve={reserve}")
            # uploaded zeros, not a reserved store: GL leaves that undefined (llvmpipe hands out zeros, an NVIDIA
            # driver whatever the memory held: a spring status read before the first run came back with a reason
            # code out of range). Not Buffer.clear() either: on an H100 that mapped the store and broke a dozen
            # GPU == reference tests.
            buf = self.ctx.buffer(bytes(int(reserve)), dynamic=dynamic)
        else:
            raw = np.ascontiguousarray(data).tobytes() if isinstance(data, np.ndarray) else bytes(data)
            if not raw:
                raise ValueError(f"buffer {label!r}: data is empty; use reserve for an empty buffer")
            buf = self.ctx.buffer(raw, dynamic=dynamic)
        return self._track("buffer", buf, label)

    def texture(self, size: tuple[int, int], components: int, data: bytes | np.ndarray | None = None, *,
                dtype: str = "f1", internal_format: int | None = None, filter: tuple[int, int] | None = None,
                repeat: bool = True, mipmaps: bool = False, label: str = "") -> moderngl.Texture:
        """A 2D texture; ``data`` rows are uploaded in order (row 0 lands at texture coordinate t = 0)."""
        w, h = int(size[0]), int(size[1])
        if w <= 0 or h <= 0:
            raise ValueError(f"texture {label!r}: size must be positive, got {size}")
        if components not in (1, 2, 3, 4):
            raise ValueError(f"texture {label!r}: components must be 1..4, got {components}")
        raw = np.ascontiguousarray(data).tobytes() if isinstance(data, np.ndarray) else data
        tex = self.ctx.texture((w, h), components, raw, dtype=dtype, internal_format=internal_format)
        if mipmaps:
            tex.build_mipmaps()
            tex.filter = filter or (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
            tex.anisotropy = 8.0
        elif filter is not None:
            tex.filter = filter
        tex.repeat_x = tex.repeat_y = repeat
        return self._track("texture", tex, label)

    def depth_texture(self, size: tuple[int, int], *, label: str = "") -> moderngl.Texture:
        w, h = int(size[0]), int(size[1])
        if w <= 0 or h <= 0:
            raise ValueError(f"depth texture {label!r}: size must be positive, got {size}")
        return self._track("texture", self.ctx.depth_texture((w, h)), label)

    def framebuffer(self, color_attachments: list, depth_attachment=None, *, label: str = "") -> moderngl.Framebuffer:
        """A framebuffer over attachments this owner (or another) created; it does not own them."""
        fbo = self.ctx.framebuffer(color_attachments=color_attachments, depth_attachment=depth_attachment)
        return self._track("framebuffer", fbo, label)

    def program(self, *, vertex_shader: str, fragment_shader: str | None = None,
                geometry_shader: str | None = None, tess_control_shader: str | None = None,
                tess_evaluation_shader: str | None = None, label: str = "") -> moderngl.Program:
        prog = self.ctx.program(vertex_shader=vertex_shader, fragment_shader=fragment_shader,
                                geometry_shader=geometry_shader, tess_control_shader=tess_control_shader,
                                tess_evaluation_shader=tess_evaluation_shader)
        return self._track("program", prog, label)

    def compute_shader(self, source: str, *, label: str = "") -> moderngl.ComputeShader:
        return self._track("compute", self.ctx.compute_shader(source), label)

    def vertex_array(self, program: moderngl.Program, content: list | None = None, *,
                     index_buffer: moderngl.Buffer | None = None, index_element_size: int = 4,
                     label: str = "") -> moderngl.VertexArray:
        """A vertex array; ``content=[]`` with an index buffer is the attribute-less vertex-pull case."""
        vao = self.ctx.vertex_array(program, content or [], index_buffer=index_buffer,
                                    index_element_size=index_element_size)
        return self._track("vertex_array", vao, label)

    def query(self, *, time: bool = False, samples: bool = False, primitives: bool = False,
              label: str = "") -> moderngl.Query:
        return self._track("query", self.ctx.query(time=time, samples=samples, primitives=primitives), label)

    def sampler(self, *, label: str = "", **kwargs) -> moderngl.Sampler:
        return self._track("sampler", self.ctx.sampler(**kwargs), label)
