"""What every stage module of the deformer graph shares: the program source type and binding helpers.

A stage receives a typed context (a dataclass of its module naming the buffers, images, program source and
counts it needs, built by :mod:`engine.skinning.gpu.contexts` from the batch's pools); binding points and
image units come from :data:`engine.skinning.gpu.layouts.BINDINGS` / ``IMAGE_BINDINGS`` (one table shared with
the shaders through defines).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import moderngl

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
