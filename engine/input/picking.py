"""Picking as input sees it: surface points as plain data, and the query interface a renderer implements.

A surface point names a point of a mesh surface that does not depend on the pose: (mesh id, triangle,
barycentric). The mesh id is the mesh's id in the renderer's registry, the number its id buffer holds, so
strokes, edits and saved sessions keep plain integers and never a GPU handle (ARCHITECTURE.md: "strokes,
surface points and edits are plain data"). Re-evaluated on the current deformed vertices
(:meth:`SurfaceQueries.evaluate`), a point stays on the skin while the character moves.

Direction of imports: input never imports render. The renderer (``engine.render.renderer.SceneRenderer``)
implements :class:`SurfaceQueries`; input code and tools type against the protocol.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["SurfacePoint", "PickHit", "PendingPick", "SurfaceQueries"]


@dataclass(frozen=True)
class SurfacePoint:
    """A pose-independent point of a mesh surface: ``mesh_id`` (the registry id, as the id buffer holds
    it), ``triangle`` (index into the mesh's triangles) and ``barycentric`` (three floats summing to 1,
    weights of the triangle's corners in order). Plain, hashable, comparable data."""

    mesh_id: int
    triangle: int
    barycentric: tuple[float, float, float]

    def __post_init__(self) -> None:
        for name in ("mesh_id", "triangle"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"SurfacePoint.{name} must be an int, got {v!r} ({type(v).__name__})")
            if v < 0:
                raise ValueError(f"SurfacePoint.{name} must be >= 0, got {v}")
            object.__setattr__(self, name, int(v))
        try:
            b = tuple(float(x) for x in self.barycentric)
        except TypeError:
            raise TypeError(f"SurfacePoint.barycentric must be 3 numbers, got {self.barycentric!r}") from None
        if len(b) != 3 or not all(math.isfinite(x) for x in b):
            raise ValueError(f"SurfacePoint.barycentric must be 3 finite numbers, got {self.barycentric!r}")
        object.__setattr__(self, "barycentric", b)


@runtime_checkable
class PickHit(Protocol):
    """What a query finds under a pixel (the renderer's ``SurfaceHit`` has these and more)."""

    triangle: int
    barycentric: np.ndarray  # (3,) float32
    position: np.ndarray  # (3,) float32 world
    normal: np.ndarray  # (3,) float32 world
    depth: float  # window depth in [0, 1]

    @property
    def surface_point(self) -> SurfacePoint: ...


@runtime_checkable
class PendingPick(Protocol):
    """An asynchronous batched query: ``ready`` once its frame is done, ``result()`` the hits."""

    @property
    def ready(self) -> bool: ...

    def result(self) -> list[PickHit | None]: ...


@runtime_checkable
class SurfaceQueries(Protocol):
    """The picking interface: batched pixel queries of the last frame, synchronous or one frame late, and
    re-evaluation of surface points on the current deformed vertices. Pixels are (x, y) with y = 0 at the
    top; ``layer`` None reads the composited frame."""

    def query_many(self, points, *, layer: str | None = None) -> list[PickHit | None]: ...

    def query_async(self, points, *, layer: str | None = None) -> PendingPick: ...

    def evaluate(self, points: Sequence[SurfacePoint]) -> tuple[np.ndarray, np.ndarray]: ...
