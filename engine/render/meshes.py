"""The renderer's mesh registry: mesh handles, per-asset GPU data shared with reference counts, the id table.

A mesh's deformed vertex data lives in two SSBOs of vec4 (positions w = 1, normals w = 0), or in a range of
each (glBindBufferRange: the deformer graph pools the outputs of many meshes in one buffer); the deformer
graph writes them with compute shaders (pass its ``output_ranges`` as ``buffers=``), or
:meth:`MeshRegistry.update_vertices` uploads them from the CPU. Everything static is shared between the
meshes of one asset, keyed by content: the index buffer, the corner vertices of the G-buffer draw
(``engine/render/corners.py``), the texcoords and the base-colour texture; the registry counts the users and
releases them with the last one. Every mesh has an id (never reused while the registry lives: it is what
the G-buffer's id texels and :class:`~engine.input.picking.SurfacePoint` hold) and tags (entity, glTF
node, mesh, primitive) so ids decode to scene objects (:meth:`MeshRegistry.id_table`).

The G-buffer pass draws a MATERIAL GROUP per draw, not a mesh (:meth:`MeshRegistry.draw_groups`): the meshes
of one draw list that share the corner vertices, texcoords, texture, base colour and cull state and whose
deformed vertices lie in one pair of buffers (a deformer pool) form a :class:`DrawGroup`, drawn as instances
of one indexed draw; a row per instance (base element of its vertex ranges, mesh id) tells the vertex stage
where that mesh's vertices are and which id it writes. The groups are built with the draw lists, so a mesh's
``base_color`` is read then: call :meth:`MeshRegistry.invalidate` after changing it on a drawn mesh.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field

import moderngl
import numpy as np

from engine.gpu.resources import GpuResources
from engine.math import mesh as mesh_math
from engine.render.corners import CornerTopology, build_corner_topology
from engine.render.look import srgb_to_linear

__all__ = ["MeshHandle", "MeshRegistry", "DrawGroup", "vertex_normals", "albedo_levels"]


def vertex_normals(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted unit vertex normals (V,3) float32; vertices without area get +Y (engine.math.mesh)."""
    return mesh_math.vertex_normals(positions, triangles, fallback=(0.0, 1.0, 0.0))


def albedo_levels(image: np.ndarray) -> list[np.ndarray]:
    """The mip chain of a base-colour image ((H,W,4) uint8 sRGB, row 0 = top) in the G-buffer's albedo
    encoding: rgb = sqrt(linear), alpha linear, each level the 2x2 mean of the previous one in linear
    light (odd edges dropped), down to 1x1. What the G-buffer pass samples (RGBA8 UNORM: llvmpipe filters
    8-bit UNORM texels on its fast path; an sRGB texture would be decoded per texel)."""
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 4 or img.dtype != np.uint8:
        raise ValueError(f"image must be (H,W,4) uint8, got {img.shape} {img.dtype}")
    lin: np.ndarray = np.empty(img.shape, np.float32)
    lin[..., :3] = srgb_to_linear(img[..., :3] / np.float32(255.0))
    lin[..., 3] = img[..., 3] / np.float32(255.0)
    levels: list[np.ndarray] = []
    while True:
        enc = np.empty(lin.shape, np.float32)
        enc[..., :3] = np.sqrt(lin[..., :3])
        enc[..., 3] = lin[..., 3]
        levels.append(np.clip(np.rint(enc * 255.0), 0, 255).astype(np.uint8))
        h, w = lin.shape[:2]
        if h == 1 and w == 1:
            return levels
        h2, w2 = max(h // 2, 1), max(w // 2, 1)
        fy, fx = (2 if h > 1 else 1), (2 if w > 1 else 1)
        lin = lin[:h2 * fy, :w2 * fx].reshape(h2, fy, w2, fx, 4).mean(axis=(1, 3), dtype=np.float32)


def _digest(a: np.ndarray) -> bytes:
    """Content key of an array (shape, dtype and bytes) for sharing GPU copies of equal data."""
    a = np.ascontiguousarray(a)
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((a.shape, a.dtype.str)).encode())
    h.update(a.data)
    return h.digest()


@dataclass(eq=False)
class MeshHandle:
    """One registered mesh. ``positions`` / ``normals`` are the vec4 SSBOs the deformers write;
    ``bounds`` (min, max) world box (fits the shadow camera and the contact-shadow blob; set it when a
    GPU stage deforms). Tags: ``entity`` (ECS entity), glTF ``node``, ``mesh_index``, ``primitive``
    (-1 when unknown). ``layer``: name of the layer it draws into, None for the scene G-buffer.
    ``double_sided`` False (glTF ``material.doubleSided`` false) culls back faces in the G-buffer pass.
    Meshes with the same triangles share ``indices`` and the corner vertices (``corner_indices``,
    ``corners``, ``corner_topology``: engine/render/corners.py), with the same texcoords too
    ``texcoords`` and ``corner_texcoords`` (per corner vertex), and with the same base-colour image
    ``texture``; the registry counts the users and releases them with the last one."""

    id: int
    label: str
    vertex_count: int
    triangles: np.ndarray = field(repr=False)
    positions: moderngl.Buffer = field(repr=False)
    normals: moderngl.Buffer = field(repr=False)
    indices: moderngl.Buffer = field(repr=False)
    corner_indices: moderngl.Buffer | None = field(default=None, repr=False)
    corners: moderngl.Buffer | None = field(default=None, repr=False)
    corner_topology: CornerTopology | None = field(default=None, repr=False)
    texcoords: moderngl.Buffer | None = field(default=None, repr=False)
    corner_texcoords: moderngl.Buffer | None = field(default=None, repr=False)  # texcoords per corner vertex
    texture: moderngl.Texture | None = field(default=None, repr=False)
    base_color: np.ndarray = field(default_factory=lambda: np.ones(4, np.float32))
    bounds: tuple[np.ndarray, np.ndarray] | None = None
    visible: bool = True
    entity: int = -1
    node: int = -1
    mesh_index: int = -1
    primitive: int = -1
    layer: str | None = None
    owns_vertex_buffers: bool = True
    double_sided: bool = True
    positions_offset: int = 0  # byte offset of the mesh's range in ``positions`` (glBindBufferRange)
    normals_offset: int = 0    # byte offset of the mesh's range in ``normals``
    shared_keys: tuple = field(default=(), repr=False)  # keys of the shared objects it uses (registry-internal)

    def bind_vertices(self, binding_positions: int, binding_normals: int) -> None:
        """Bind the mesh's positions / normals ranges (V vec4 each) to the two SSBO binding points."""
        size = self.vertex_count * 16
        self.positions.bind_to_storage_buffer(binding_positions, offset=self.positions_offset, size=size)
        self.normals.bind_to_storage_buffer(binding_normals, offset=self.normals_offset, size=size)

    def read_vertices(self) -> tuple[np.ndarray, np.ndarray]:
        """The current deformed (positions, normals) as (V,4) float32 each (a synchronous read)."""
        v = self.vertex_count
        p4 = np.frombuffer(self.positions.read(size=v * 16, offset=self.positions_offset), np.float32)
        n4 = np.frombuffer(self.normals.read(size=v * 16, offset=self.normals_offset), np.float32)
        return p4.reshape(v, 4), n4.reshape(v, 4)

    @property
    def albedo_scale(self) -> tuple[float, float, float]:
        """sqrt of the linear RGB base colour (the G-buffer's albedo encoding; clamped to [0, 1])."""
        r, g, b = (math.sqrt(min(max(float(x), 0.0), 1.0)) for x in self.base_color[:3])
        return r, g, b

    @property
    def triangle_count(self) -> int:
        return int(self.triangles.shape[0])


@dataclass(eq=False)
class DrawGroup:
    """Meshes of one draw list drawn as the instances of one indexed draw (the G-buffer pass): they share
    the vertex array's data (corner vertices, corner texcoords, index buffer: ``meshes[0]``'s vertex array
    serves all), the texture, the albedo scale and the cull state, and their deformed vertices lie in one
    positions buffer and one normals buffer. ``positions`` / ``normals``: (buffer, offset, size) of the one
    range of each that the draw binds (from the lowest mesh range to the end of the highest); ``rows``
    (K,4) uint32, one per mesh in draw order: (first vec4 of its positions, of its normals, counted from
    the bound ranges' starts; mesh id; 0)."""

    meshes: list[MeshHandle]
    rows: np.ndarray = field(repr=False)
    positions: tuple[moderngl.Buffer, int, int] = field(repr=False)
    normals: tuple[moderngl.Buffer, int, int] = field(repr=False)
    _blocks: dict[int, list[bytes]] = field(default_factory=dict, repr=False)

    @property
    def head(self) -> MeshHandle:
        """The first mesh: its vertex array, texture, texcoords and flags are the group's."""
        return self.meshes[0]

    @property
    def triangle_count(self) -> int:
        """Triangles of one instance."""
        return self.head.triangle_count

    def bind_vertices(self, binding_positions: int, binding_normals: int) -> None:
        """Bind the group's positions / normals ranges to the two SSBO binding points."""
        buf, off, size = self.positions
        buf.bind_to_storage_buffer(binding_positions, offset=off, size=size)
        buf, off, size = self.normals
        buf.bind_to_storage_buffer(binding_normals, offset=off, size=size)

    def row_blocks(self, capacity: int) -> list[bytes]:
        """``rows`` in blocks of ``capacity`` rows, the last zero-padded: the bytes of a uniform array of
        ``capacity`` uvec4 (made once per capacity)."""
        blocks = self._blocks.get(capacity)
        if blocks is None:
            if capacity < 1:
                raise ValueError(f"capacity must be >= 1, got {capacity}")
            k = self.rows.shape[0]
            padded = np.zeros((-(-k // capacity) * capacity, 4), np.uint32)
            padded[:k] = self.rows
            blocks = [padded[i:i + capacity].tobytes() for i in range(0, padded.shape[0], capacity)]
            self._blocks[capacity] = blocks
        return blocks


def _make_group(meshes: list[MeshHandle]) -> DrawGroup:
    """The :class:`DrawGroup` of meshes that share a group key (:meth:`MeshRegistry.draw_groups`)."""
    p0 = min(h.positions_offset for h in meshes)
    n0 = min(h.normals_offset for h in meshes)
    p1 = max(h.positions_offset + h.vertex_count * 16 for h in meshes)
    n1 = max(h.normals_offset + h.vertex_count * 16 for h in meshes)
    rows = np.zeros((len(meshes), 4), np.uint32)
    rows[:, 0] = [(h.positions_offset - p0) // 16 for h in meshes]
    rows[:, 1] = [(h.normals_offset - n0) // 16 for h in meshes]
    rows[:, 2] = [h.id for h in meshes]
    head = meshes[0]
    return DrawGroup(meshes, rows, (head.positions, p0, p1 - p0), (head.normals, n0, n1 - n0))


class MeshRegistry:
    """The registered meshes by id, the shared per-asset GPU data with their user counts, and the draw
    lists the G-buffer and shadow passes iterate. ``on_remove(mesh_id)`` is called when a mesh goes
    (the program variants release its vertex arrays)."""

    def __init__(self, resources: GpuResources, *, on_remove: Callable[[int], None] | None = None) -> None:
        self.res = resources
        self.meshes: dict[int, MeshHandle] = {}
        self._next_id = 0
        self._shared: dict[tuple, list] = {}  # key -> [users, objects...]: topologies and textures of meshes
        self._draw_lists: dict[str | None, list[MeshHandle]] | None = None
        self._on_remove = on_remove
        #: changes whenever the draw lists are rebuilt (the shadow pass re-renders)
        self.lists_version = 0
        self.texture_anisotropy = 1.0  # max anisotropy of base-colour textures added from now on
        self._instancing = True
        self._groups: dict[str | None, tuple[list[MeshHandle], list[DrawGroup]]] = {}
        max_block = resources.ctx.info.get("GL_MAX_SHADER_STORAGE_BLOCK_SIZE", 1 << 27)
        #: the most bytes one group binds of a vertex buffer (the driver's largest SSBO)
        self.max_group_bytes = int(max_block) if isinstance(max_block, int) and max_block > 0 else 1 << 27

    def __len__(self) -> int:
        return len(self.meshes)

    def __iter__(self) -> Iterator[MeshHandle]:
        return iter(self.meshes.values())

    # -- add / remove ------------------------------------------------------------------------------
    def add(self, triangles: np.ndarray, vertex_count: int, *, layers: Collection[str],
            base_color=(1.0, 1.0, 1.0, 1.0), texcoords: np.ndarray | None = None, image: np.ndarray | None = None,
            buffers=None, entity: int = -1, node: int = -1, mesh_index: int = -1, primitive: int = -1,
            layer: str | None = None, label: str = "", double_sided: bool = True) -> MeshHandle:
        """Register a mesh (see ``SceneRenderer.add_mesh``; ``layers`` are the layer names it may name)."""
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
        ranges = None
        if buffers is not None:
            if len(buffers) != 2:
                raise ValueError(f"buffers must be (positions, normals), got {len(buffers)} items")
            ranges = [b if isinstance(b, tuple) else (b, 0, b.size) for b in buffers]
            for name, (buf, off, size) in zip(("positions", "normals"), ranges):
                if off < 0 or off % 16 or size < v * 16 or off + v * 16 > buf.size:
                    raise ValueError(f"{name} range (offset {off}, size {size}) of a {buf.size}-byte buffer must "
                                     f"hold V vec4 = {v * 16} bytes at a 16-byte aligned offset inside it")
        if layer is not None and layer not in layers:
            raise ValueError(f"no layer {layer!r}; layers: {list(layers)} (add_layer first)")
        mid = self._next_id
        self._next_id += 1
        label = label or f"mesh{mid}"
        r = self.res
        keys: list[tuple[object, ...]] = [("topology", v, _digest(tri))]
        indices, corner_indices, corners, topo = self._acquire(keys[0], lambda: self._make_topology(tri, v, label))
        tc_buf = tex = None
        ctc_buf = None
        if texcoords is not None:
            tc = texcoords
            keys.append(("texcoords", _digest(tc), keys[0]))
            src = topo.corners[:, 0].astype(np.int64)
            tc_buf, ctc_buf = self._acquire(keys[-1], lambda: (
                r.buffer(tc, label=f"{label} texcoords"),
                r.buffer(np.ascontiguousarray(tc[src]), label=f"{label} corner texcoords")))
        if image is not None:
            img = image
            keys.append(("texture", img.shape, _digest(img), float(self.texture_anisotropy)))
            (tex,) = self._acquire(keys[-1], lambda: (self._make_albedo_texture(img, label),))
        h = MeshHandle(
            id=mid, label=label, vertex_count=v, triangles=tri,
            positions=ranges[0][0] if ranges else r.buffer(reserve=v * 16, label=f"{label} positions"),
            normals=ranges[1][0] if ranges else r.buffer(reserve=v * 16, label=f"{label} normals"),
            positions_offset=int(ranges[0][1]) if ranges else 0, normals_offset=int(ranges[1][1]) if ranges else 0,
            indices=indices, corner_indices=corner_indices, corners=corners, corner_topology=topo,
            texcoords=tc_buf, corner_texcoords=ctc_buf, texture=tex,
            base_color=color, entity=int(entity), node=int(node), mesh_index=int(mesh_index),
            primitive=int(primitive), layer=layer, owns_vertex_buffers=buffers is None,
            double_sided=bool(double_sided), shared_keys=tuple(keys),
        )
        self.meshes[mid] = h
        self._draw_lists = None
        return h

    def _make_topology(self, tri: np.ndarray, v: int, label: str) -> tuple:
        """(index buffer, corner index buffer, corner vertex buffer (uvec2 attributes), CornerTopology)
        of a triangle list."""
        topo = build_corner_topology(tri, v)
        r = self.res
        return (r.buffer(tri, label=f"{label} indices"), r.buffer(topo.indices, label=f"{label} corner indices"),
                r.buffer(topo.corners, label=f"{label} corner vertices"), topo)

    def _make_albedo_texture(self, image: np.ndarray, label: str) -> moderngl.Texture:
        """RGBA8 UNORM texture of sqrt(linear albedo) with its mip chain filtered in linear light
        (:func:`albedo_levels`); rows uploaded in order, so image row 0 (glTF: the top) lands at v = 0."""
        levels = albedo_levels(image)
        tex = self.res.texture((image.shape[1], image.shape[0]), 4, levels[0], mipmaps=True,
                               label=f"{label} base colour")
        for k, lv in enumerate(levels[1:], start=1):
            tex.write(np.ascontiguousarray(lv).tobytes(), level=k)
        # bilinear in one mip level: blending two levels (trilinear) or anisotropic filtering costs
        # markedly more on software rasterisers, for a difference invisible at these sizes
        tex.anisotropy = float(self.texture_anisotropy)
        tex.filter = (moderngl.LINEAR_MIPMAP_NEAREST, moderngl.LINEAR)
        return tex

    def _acquire(self, key: tuple, make: Callable[[], tuple]) -> tuple:
        """The shared objects under ``key`` (made by ``make()`` for the first user), one more user counted."""
        entry = self._shared.get(key)
        if entry is None:
            entry = [0, *make()]
            self._shared[key] = entry
        entry[0] += 1
        return tuple(entry[1:])

    def _release_shared(self, key: tuple) -> None:
        entry = self._shared[key]
        entry[0] -= 1
        if entry[0] == 0:
            del self._shared[key]
            for obj in entry[1:]:
                if self.res.owns(obj):
                    self.res.release(obj)

    def check(self, handle: MeshHandle) -> None:
        """Raise ValueError unless ``handle`` is registered here."""
        if self.meshes.get(handle.id) is not handle:
            raise ValueError(f"mesh {handle.label!r} (id {handle.id}) is not registered here")

    def get(self, mesh_id: int) -> MeshHandle:
        """The mesh of a registry id (a SurfacePoint's ``mesh_id``); ValueError for an id never given or
        of a removed mesh."""
        h = self.meshes.get(mesh_id)
        if h is None:
            state = "was removed" if 0 <= mesh_id < self._next_id else "was never registered"
            raise ValueError(f"mesh id {mesh_id} {state}; registered ids: {sorted(self.meshes)}")
        return h

    def remove(self, handle: MeshHandle) -> None:
        """Release a mesh's buffers and vertex arrays, and the shared topology / texcoords / texture
        when it was their last user."""
        self.check(handle)
        del self.meshes[handle.id]
        self._draw_lists = None
        self._groups.clear()
        if self._on_remove is not None:
            self._on_remove(handle.id)
        for key in handle.shared_keys:
            self._release_shared(key)
        if handle.owns_vertex_buffers:
            self.res.release(handle.positions)
            self.res.release(handle.normals)

    def release(self) -> None:
        """Remove every mesh."""
        for h in list(self.meshes.values()):
            self.remove(h)

    # -- vertices --------------------------------------------------------------------------------
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
        handle.positions.write(p4, offset=handle.positions_offset)
        handle.normals.write(n4, offset=handle.normals_offset)
        handle.bounds = (pos.min(axis=0), pos.max(axis=0))

    # -- what the passes read ------------------------------------------------------------------
    def id_table(self) -> np.ndarray:
        """(K, 5) int32 rows (mesh id, entity, node, mesh index, primitive) for ids up to the largest
        registered one, -1 rows for unused ids: decodes id buffers to scene objects with one gather."""
        k = max(self.meshes, default=-1) + 1
        t = np.full((k, 5), -1, np.int32)
        for h in self.meshes.values():
            t[h.id] = (h.id, h.entity, h.node, h.mesh_index, h.primitive)
        return t

    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(min, max) float64 world box of the visible meshes with bounds, None when there are none."""
        boxes = [h.bounds for h in self.meshes.values() if h.visible and h.bounds is not None]
        if not boxes:
            return None
        lo = np.min([b[0] for b in boxes], axis=0)
        hi = np.max([b[1] for b in boxes], axis=0)
        return lo.astype(np.float64), hi.astype(np.float64)

    def draw_lists(self, layers: Collection[str]) -> dict[str | None, list[MeshHandle]]:
        """Visible meshes per target (None = scene G-buffer, then ``layers`` in order), textured ones last,
        single-sided first within each (fewest program and cull-state changes); cached until the set of
        meshes, their layers or visibility change (:meth:`invalidate`)."""
        if self._draw_lists is None:
            lists: dict[str | None, list[MeshHandle]] = {None: []}
            for name in layers:
                lists[name] = []
            for h in self.meshes.values():
                if h.visible:
                    lists[h.layer].append(h)
            for k in lists:
                lists[k].sort(key=lambda m: (m.texcoords is not None, m.double_sided))
            self._draw_lists = lists
            self._groups.clear()
            self.lists_version += 1
        return self._draw_lists

    @property
    def instancing(self) -> bool:
        """Draw the meshes of a material group as the instances of one draw (default); False: one draw per
        mesh (what the instanced G-buffer is tested against)."""
        return self._instancing

    @instancing.setter
    def instancing(self, on: bool) -> None:
        if not isinstance(on, bool):
            raise TypeError(f"instancing must be a bool, got {on!r}")
        self._instancing = on
        self._groups.clear()

    def draw_groups(self, layer: str | None, meshes: list[MeshHandle]) -> list[DrawGroup]:
        """The material groups of draw list ``meshes`` (that of ``layer``), in the list's order of first
        appearance, each mesh in the order of the list: meshes with the same corner vertices, corner
        texcoords, texture, albedo scale and cull state whose positions and normals lie in the same two
        buffers share a group, as long as the range it binds of each stays within :attr:`max_group_bytes`.
        With :attr:`instancing` off, one group per mesh. Cached until the draw lists change (or another
        list is given for ``layer``)."""
        cached = self._groups.get(layer)
        if cached is not None and cached[0] is meshes:
            return cached[1]
        groups: list[list[MeshHandle]] = []
        # key -> (index in groups, lowest / highest byte of its positions, of its normals)
        open_groups: dict[tuple, tuple[int, int, int, int, int]] = {}
        limit = self.max_group_bytes
        for h in meshes:
            size = 16 * h.vertex_count
            po, no = h.positions_offset, h.normals_offset
            key = (id(h.corner_indices), id(h.corner_texcoords), id(h.texture), h.albedo_scale, h.double_sided,
                   id(h.positions), id(h.normals))
            entry = open_groups.get(key) if self._instancing else None
            if entry is not None:
                k, p0, p1, n0, n1 = entry
                p0, p1, n0, n1 = min(p0, po), max(p1, po + size), min(n0, no), max(n1, no + size)
                if p1 - p0 <= limit and n1 - n0 <= limit:
                    groups[k].append(h)
                    open_groups[key] = (k, p0, p1, n0, n1)
                    continue
            open_groups[key] = (len(groups), po, po + size, no, no + size)
            groups.append([h])
        out = [_make_group(g) for g in groups]
        self._groups[layer] = (meshes, out)
        return out

    def invalidate(self) -> None:
        """Rebuild the draw lists (and the material groups) at the next frame (meshes' visibility, layers
        or base colours changed)."""
        self._draw_lists = None
        self._groups.clear()
