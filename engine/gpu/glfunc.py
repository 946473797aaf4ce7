"""GL entry points moderngl does not wrap, reached through the context's own function loader (glcontext's
``load_opengl_function`` / ``load``), and the multi-bind calls built on them.

* :func:`gl_function`: one entry point as a ctypes function (void return), or None where the loader lacks it
  (a context without a loader, an old driver); callers fall back to moderngl's calls or a default then.
* :class:`MultiBind` (GL 4.4 / ARB_multi_bind): ``glBindBuffersBase`` binds a range of SSBO binding points and
  ``glBindImageTextures`` a range of image units, each in one GL call. A stage that binds a dozen buffers and
  images per frame (the spring stage) issues two calls instead; :func:`multi_bind` keeps one per context.
"""
from __future__ import annotations

import ctypes
import weakref
from collections.abc import Sequence
from typing import Any

import moderngl

__all__ = ["MultiBind", "gl_function", "multi_bind"]

GL_SHADER_STORAGE_BUFFER = 0x90D2

_U = ctypes.c_uint


def gl_function(ctx: Any, name: str, *argtypes: Any) -> Any:
    """The GL entry point ``name`` (returning void, taking ``argtypes``) from ``ctx``'s own loader, or None."""
    inner = getattr(getattr(ctx, "mglo", None), "_context", None)
    load = getattr(inner, "load_opengl_function", None) or getattr(inner, "load", None)
    if load is None:
        return None
    try:
        address = load(name)
    except (AttributeError, OSError, TypeError, ValueError):
        return None
    return ctypes.CFUNCTYPE(None, *argtypes)(address) if address else None


class MultiBind:
    """Ranges of SSBO binding points and image units bound in one GL call each (GL 4.4 multi-bind).

    ``available`` is False below GL 4.4 or where the loader lacks the entry points; callers then bind one by one.
    A point in a range given None is unbound (GL name 0). Images are bound as ``glBindImageTexture(unit, tex, 0,
    GL_TRUE, 0, GL_READ_WRITE, tex's internal format)`` would: level 0, read-write (a shader's ``readonly`` or
    ``writeonly`` still restricts it), the texture's own format."""

    def __init__(self, ctx: moderngl.Context) -> None:
        self._buffers = self._images = None
        if int(getattr(ctx, "version_code", 0)) >= 440:
            self._buffers = gl_function(ctx, "glBindBuffersBase", _U, _U, ctypes.c_int, ctypes.POINTER(_U))
            self._images = gl_function(ctx, "glBindImageTextures", _U, ctypes.c_int, ctypes.POINTER(_U))

    @property
    def available(self) -> bool:
        return self._buffers is not None and self._images is not None

    def storage_buffers(self, first: int, buffers: Sequence[moderngl.Buffer | None]) -> None:
        """Bind ``buffers[i]`` to SSBO binding point ``first + i`` (None: unbind), one GL call."""
        assert self._buffers is not None, "MultiBind.storage_buffers without glBindBuffersBase"
        names = (_U * len(buffers))(*[0 if b is None else int(b.glo) for b in buffers])
        self._buffers(GL_SHADER_STORAGE_BUFFER, first, len(buffers), names)

    def image_textures(self, first: int, textures: Sequence[moderngl.Texture | None]) -> None:
        """Bind ``textures[i]`` (level 0, read-write, its own format) to image unit ``first + i`` (None: unbind),
        one GL call."""
        assert self._images is not None, "MultiBind.image_textures without glBindImageTextures"
        names = (_U * len(textures))(*[0 if t is None else int(t.glo) for t in textures])
        self._images(first, len(textures), names)


_PER_CONTEXT: weakref.WeakKeyDictionary[moderngl.Context, MultiBind] = weakref.WeakKeyDictionary()


def multi_bind(ctx: moderngl.Context) -> MultiBind:
    """The context's :class:`MultiBind` (entry points loaded once per context)."""
    mb = _PER_CONTEXT.get(ctx)
    if mb is None:
        mb = _PER_CONTEXT[ctx] = MultiBind(ctx)
    return mb
