"""What every stage module of the deformer graph shares: the program source type and binding helpers.

A stage receives a typed context (a dataclass of its module naming the buffers, images, program source and
counts it needs, built by :mod:`engine.skinning.gpu.contexts` from the batch's pools); binding points and
image units come from :data:`engine.skinning.gpu.layouts.BINDINGS` / ``IMAGE_BINDINGS`` (one table shared with
the shaders through defines).
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import moderngl

from engine.gpu.glfunc import MultiBind
from engine.gpu.shaderlib import uniform
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu.plan import NodeConfig

ProgramSource = Callable[[str, dict[str, object] | None], moderngl.ComputeShader]
"""``program(name, defines)``: the compute shader ``shaders/deform/<name>.comp`` with the bindings and
constants it mentions plus ``defines`` (engine.skinning.gpu.stages.program over the graph's ProgramCache)."""


@dataclass(frozen=True)
class StageContext:
    """What every stage context names: the plan node (ports and options) and the program source."""

    node: NodeConfig
    program: ProgramSource


@dataclass(frozen=True)
class PooledSourceContext(StageContext):
    """A stage that reads a control-domain source over a pool with the instance and work-group tables."""

    instances: moderngl.Buffer            # DeformInstance table
    groups: moderngl.Buffer               # work group -> instance of the pool the stage runs over
    source: moderngl.Buffer
    source_static: bool                   # the source is indexed like the static pool (the bind pose)


def set_uniform(cs: moderngl.ComputeShader, name: str, value: Any) -> None:
    """Set a uniform if the program has it (a uniform the compiler optimised away needs no value)."""
    u = cs.get(name, None)
    if u is not None:
        uniform(cs, name).value = value


def bind_ssbo(buf: moderngl.Buffer, point: str) -> None:
    """Bind a whole buffer to the SSBO binding point named ``point`` (layouts.BINDINGS)."""
    buf.bind_to_storage_buffer(L.BINDINGS[point])


def bind_image(tex: moderngl.Texture, unit: str, *, read: bool = True, write: bool = False) -> None:
    """Bind an image to the image unit named ``unit`` (layouts.IMAGE_BINDINGS)."""
    tex.bind_to_image(L.IMAGE_BINDINGS[unit], read=read, write=write)


def bind_all(pairs: tuple[tuple[moderngl.Buffer, str], ...]) -> None:
    """Bind (buffer, binding point) pairs."""
    for buf, point in pairs:
        bind_ssbo(buf, point)


@dataclass
class Bound:
    """What one run of a stage has bound so far: binding the same buffer to the same point again within the run is
    skipped, and so is an image already bound with at least the access asked for (a read-write binding serves a
    read-only use). Make a new one at the start of every run: other stages and the renderer change the GL bindings
    between runs. Objects are compared by identity (a different object is always bound)."""

    ssbos: dict[int, moderngl.Buffer] = field(default_factory=dict)
    images: dict[int, tuple[moderngl.Texture, bool, bool]] = field(default_factory=dict)

    def preload(self, binder: MultiBind | None, ssbos: Sequence[tuple[moderngl.Buffer, str]],
                images: Sequence[tuple[moderngl.Texture, str]]) -> None:
        """Bind every (buffer, point) pair with one multi-bind call and every (image, unit) pair read-write with
        another (GL 4.4, :class:`engine.gpu.glfunc.MultiBind`; points between them that no pair names are
        unbound), so that the stage's :meth:`ssbo` / :meth:`image` calls for them cost nothing. Without multi-bind
        (``binder`` None or unavailable) nothing is bound here and those calls bind one by one."""
        if binder is None or not binder.available:
            return
        points: dict[int, moderngl.Buffer] = {}
        for buf, name in ssbos:
            at = L.BINDINGS[name]
            assert points.setdefault(at, buf) is buf, f"two buffers for binding point {name} in one preload"
        units: dict[int, moderngl.Texture] = {}
        for tex, name in images:
            at = L.IMAGE_BINDINGS[name]
            assert units.setdefault(at, tex) is tex, f"two images for image unit {name} in one preload"
        if points:
            lo = min(points)
            binder.storage_buffers(lo, [points.get(p) for p in range(lo, max(points) + 1)])
            self.ssbos.update(points)
        if units:
            lo = min(units)
            binder.image_textures(lo, [units.get(u) for u in range(lo, max(units) + 1)])
            self.images.update({u: (tex, True, True) for u, tex in units.items()})

    def ssbo(self, buf: moderngl.Buffer, point: str) -> None:
        """Bind ``buf`` to the SSBO binding point ``point`` unless this run already did."""
        at = L.BINDINGS[point]
        if self.ssbos.get(at) is not buf:
            buf.bind_to_storage_buffer(at)
            self.ssbos[at] = buf

    def all(self, pairs: Sequence[tuple[moderngl.Buffer, str]]) -> None:
        """Bind (buffer, binding point) pairs (:meth:`ssbo`)."""
        for buf, point in pairs:
            self.ssbo(buf, point)

    def image(self, tex: moderngl.Texture, unit: str, *, read: bool = True, write: bool = False) -> None:
        """Bind ``tex`` to the image unit ``unit`` with this access unless this run already bound it there with
        this access or more."""
        at = L.IMAGE_BINDINGS[unit]
        last = self.images.get(at)
        if last is None or last[0] is not tex or (read and not last[1]) or (write and not last[2]):
            tex.bind_to_image(at, read=read, write=write)
            self.images[at] = (tex, read, write)


#: the last value written to each uniform of each program (set_uniform_changed); uniform values are program
#: state, kept by GL across frames and untouched by other stages' bindings
_UNIFORM_VALUES: weakref.WeakKeyDictionary[moderngl.ComputeShader, dict[str, Any]] = weakref.WeakKeyDictionary()


def set_uniform_changed(cs: moderngl.ComputeShader, name: str, value: Any) -> None:
    """:func:`set_uniform` only when ``value`` differs from the last value this function wrote to ``cs``'s
    uniform (a per-frame constant is uploaded once). Only for uniforms that are written through this function."""
    last = _UNIFORM_VALUES.setdefault(cs, {})
    if name in last and last[name] == value:
        return
    set_uniform(cs, name, value)
    last[name] = value
