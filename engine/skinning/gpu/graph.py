"""The GPU deformer graph (research ch. 6): skin -> spring -> vertex copy -> face normals -> vertex normals.

The graph is data (:mod:`engine.skinning.gpu.plan`): nodes declare the resources they read and write; order
and memory barriers follow from that. :class:`DeformerGraph` runs such graphs for every skinned mesh of a scene:

* meshes that use the same graph form a *batch*; EVERY stage of a batch runs as ONE dispatch (per iteration
  for the springs) over concatenated buffers, so the cost grows with the total vertex count, not the number of
  meshes: control-domain resources (skin, spring, resolve) live in a control pool, display- and face-domain
  resources (copy, face normals, vertex normals) in a display / face pool. Each instance's range in a pool is
  padded to whole work groups (see :mod:`engine.skinning.gpu.layouts`). Instances of one asset (same
  ``asset_key``, default: the same topology object) share the static data (bind data, weights, binding, bind
  normals as SSBOs; adjacency, rest values and triangle lists as images), and a batch creates only the static
  SSBOs its stages bind (``gpu_stages.STATIC_READS``);
* the renderer pulls a mesh's vec4 positions/normals straight from its *range* of the display pool
  (:meth:`DeformerGraph.output_ranges`: buffer, byte offset, byte size; ranges start at multiples of 1024
  bytes, aligned for glBindBufferRange). Callers that pass their own ``positions_buffer`` / ``normals_buffer``
  get a GPU-side copy of their range into them at the end of ``run`` (one glCopyBufferSubData each);
* LBS/DQS graphs skin normals with the same blend (skin option ``normals="skinned"``, the default of the
  built-in ``lbs`` / ``dqs`` graphs): the skin stage writes a 3x3 normal transform per control point and the
  copy stage applies it to each display vertex's bind normal; graphs whose surface changes shape (rigid, IRS,
  springs) recompute face and vertex normals from the deformed surface;
* where the plan fuses skin + copy (gpu_plan ``fusions``: the built-in lbs / dqs graphs, the crowd case) one
  ``skin_copy`` dispatch skins the display vertices straight into the display pool: no control pass, no
  normal transforms. It reads three read-only images (why images: gpu_layouts, "fused skin_copy stage"): a
  SkinVertex per display vertex (static pool), a SkinHead per display work group and the batch's joints as
  compact records (written once per frame);
* springs run up to ``max_iterations`` indirect dispatches per frame; a tiny convergence pass (one work group)
  reads the GPU-side maxima (atomicMax on float bits) / energy partials every ``check_every`` iterations and
  rebuilds the list of active work groups, so a converged mesh costs zero work; the CPU never waits;
* per frame the CPU packs the poses of all instances of a batch at once (stacked arrays, one batched call per
  quantity, only what the batch's nodes read: LBS needs only the skin matrices) and writes each pose buffer
  once; nothing is read back on the per-frame path; ``download`` reads for export and tests.

Every stage has its numpy reference (engine.skinning.meshprep / skinning / springs); tests/gl compare them.
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from typing import Any, Hashable

import moderngl
import numpy as np

from engine.anim.quat import from_matrix as quat_from_matrix
from engine.gpu.layouts import LOCAL_SIZE, MAX_JOINTS, pack_mat4
from engine.gpu.resources import GpuResources
from engine.gpu.shaderlib import ProgramCache
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu import spring as gpu_spring, stages as gpu_stages
from engine.skinning.gpu.plan import (
    BIND,
    SHADER_STORAGE_BARRIER_BIT,
    GraphConfig,
    Plan,
    default_config,
    plan,
)
from engine.skinning.skinning import joint_rotations
from engine.skinning.types import Binding, Bones, MeshTopology, bone_endpoints

__all__ = ["DeformerGraph", "DeformHandle", "GraphConfig", "default_config", "plan", "METHODS",
           "ssbo_offset_alignment"]

METHODS = ("lbs", "dqs", "rigid", "irs", "spring", "spring-feedback")

GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT = 0x90DF
_SPEC_MAX_ALIGNMENT = 256  # the largest value the GL spec allows for the SSBO offset alignment


@dataclass(frozen=True)
class DeformHandle:
    """Opaque handle of one mesh instance in a :class:`DeformerGraph`."""

    id: int


def ssbo_offset_alignment(ctx: moderngl.Context) -> int:
    """GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT of the context in bytes (moderngl's ``ctx.info`` lacks it; read
    with glGetIntegerv through the context's own loader), or 256 (the spec's largest) where it cannot be read."""
    loader = getattr(getattr(ctx, "mglo", None), "_context", None)
    load = getattr(loader, "load_opengl_function", None) or getattr(loader, "load", None)
    if load is None:
        return _SPEC_MAX_ALIGNMENT
    try:
        addr = load("glGetIntegerv")
    except (AttributeError, OSError, TypeError, ValueError):
        return _SPEC_MAX_ALIGNMENT
    if not addr:
        return _SPEC_MAX_ALIGNMENT
    fn = ctypes.CFUNCTYPE(None, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))(addr)
    out = ctypes.c_int(0)
    fn(GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT, ctypes.byref(out))
    return int(out.value) if out.value > 0 else _SPEC_MAX_ALIGNMENT


# ----------------------------------------------------------------------------------------------------------
# CPU-side packing helpers (vectorised; set-up time or once per frame for the whole pose)
def _csr_from_pairs(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """((n,2) offset/count, flat cols sorted by row) for the given (row, col) pairs."""
    order = np.argsort(rows, kind="stable")
    count = np.bincount(rows, minlength=n).astype(np.int32)
    offset = np.zeros(n, np.int32)
    if n:
        offset[1:] = np.cumsum(count)[:-1]
    return np.stack([offset, count], 1).astype(np.int32), cols[order].astype(np.int32)


_NEXT, _AFTER = [1, 2, 0], [2, 0, 1]  # index i -> i + 1, i + 2 (mod 3): cross products of whole arrays


def _svd_rotations(a: np.ndarray) -> np.ndarray:
    """The nearest proper rotation of each (N,3,3) matrix by SVD, as skinning._polar computes it."""
    u, _, vt = np.linalg.svd(a)
    u[:, :, 2] *= np.where(np.linalg.det(u @ vt) < 0, -1.0, 1.0)[:, None]
    return u @ vt


def _polar_rotations(a: np.ndarray, tol: float = 1e-13, max_iter: int = 40) -> np.ndarray:
    """Rotation factor R of the polar decomposition A = R S of (N,3,3) float64 matrices (the nearest proper
    rotation: what skinning._polar's SVD gives, to ~1e-15).

    Why not the SVD: a batched 3x3 SVD costs ~2 us per matrix in numpy, the whole DQS pose upload of a
    crowd. Higham's scaled Newton iteration X <- (X / z + z cof(X) / det X) / 2, z = det(X)^(1/3)
    (cof(X) / det X = X^-T), converges in 2-3 steps for the near-rigid skin matrices of a pose and in under
    ten for strong stretch; it runs on (3,3,N) arrays, cross products as whole-array index shuffles. Matrices
    with det <= 0 (mirrored, singular: Newton would find an improper or no factor) or not converged take the
    SVD."""
    n = a.shape[0]
    out = np.empty((n, 3, 3))
    x = np.ascontiguousarray(a.transpose(1, 2, 0))  # x[i, j] = A[:, i, j]
    idx = np.arange(n)
    fallback = idx[:0]
    for it in range(max_iter):
        if not idx.size:
            break
        xn, xa = x[_NEXT], x[_AFTER]
        cof = xn[:, _NEXT] * xa[:, _AFTER] - xa[:, _NEXT] * xn[:, _AFTER]  # columns cross(x_j+1, x_j+2)
        det = np.einsum("in,in->n", x[:, 0], cof[:, 0])
        if it == 0:
            good = det > 1e-9 * np.abs(x).max(axis=(0, 1)) ** 3
            fallback = idx[~good]
            x, cof, det, idx = x[..., good], cof[..., good], det[good], idx[good]
        z = np.cbrt(det)
        nx = (0.5 / z) * x + (0.5 * z / det) * cof
        done = np.abs(nx - x).max(axis=(0, 1)) < tol
        out[idx[done]] = nx[..., done].transpose(2, 0, 1)
        x, idx = nx[..., ~done], idx[~done]
    rest = np.concatenate([fallback, idx])
    if rest.size:
        out[rest] = _svd_rotations(np.asarray(a[rest], np.float64))
    return out


def _dual_quats(mats: np.ndarray, segments: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """gpu_spring.dual_quats (same results: qr, qd, stretch with the per-skin identity rule) with the polar
    rotations of :func:`_polar_rotations` instead of an SVD per joint (the per-frame DQS upload)."""
    m = np.asarray(mats, np.float64)
    a = m[:, :3, :3]
    r = _polar_rotations(a)
    s = np.swapaxes(r, 1, 2) @ a
    s = 0.5 * (s + np.swapaxes(s, 1, 2))
    qr = quat_from_matrix(r).astype(np.float32)
    # qd = 0.5 (t, 0) qr
    t = m[:, :3, 3]
    q = qr.astype(np.float64)
    qd = np.empty((m.shape[0], 4))
    qd[:, :3] = 0.5 * (q[:, 3:] * t + np.cross(t, q[:, :3]))
    qd[:, 3] = -0.5 * np.einsum("ij,ij->i", t, q[:, :3])
    stretch = np.broadcast_to(np.eye(4), m.shape).copy()
    if m.shape[0]:
        eye = np.eye(3)  # np.allclose(s, I, atol=1e-6) per skin, as the reference decides
        bad = (np.abs(s - eye) > 1e-6 + 1e-5 * eye).any(axis=(1, 2))
        seg = np.asarray(segments, np.int64)
        keep = np.repeat(np.logical_or.reduceat(bad, seg), np.diff(np.append(seg, m.shape[0])))
        stretch[keep, :3, :3] = s[keep].astype(np.float32)
    return qr, qd.astype(np.float32), stretch


def _bind_normals(topo: MeshTopology, normals: np.ndarray | None) -> np.ndarray:
    """(D,4) float32 bind normals per display vertex: the given ones (glTF NORMAL), else the area-weighted
    normals of the bind surface (what the face/vertex normal stages give at the bind pose)."""
    from engine.skinning.meshprep import vertex_normals

    d = topo.n_display
    if normals is None:
        n = vertex_normals(topo.positions, topo.triangles, display_triangles=topo.display_triangles, n_display=d)
    else:
        n = np.asarray(normals, np.float32)
        if n.shape != (d, 3) or not np.all(np.isfinite(n)):
            raise ValueError(f"normals must be ({d},3) finite bind normals per display vertex, got {n.shape}")
    return L.vec4(n, 0.0)


def _skin_vertices(topo: MeshTopology, joints: np.ndarray, weights: np.ndarray,
                   bind_normals: np.ndarray) -> np.ndarray:
    """(D,) SkinVertex records of the fused skin_copy stage: per display vertex the bind position, joints and
    weights of its control point (what skin + copy use for it) and its bind normal (zero when the graph skins
    no normals)."""
    c = topo.control_of_display
    rec = L.SKIN_VERTEX.zeros(topo.n_display)
    rec["bind_joints"][:, :3] = np.ascontiguousarray(topo.positions[c], np.float32).view(np.uint32)
    rec["bind_joints"][:, 3] = L.pack_joint_ids(joints[c])
    rec["weights"] = weights[c]
    if bind_normals.shape[0]:
        rec["normal"] = bind_normals
    return rec


# ----------------------------------------------------------------------------------------------------------
@dataclass
class _Asset:
    """Static data of one asset (shared by its instances inside a batch); CPU copies, packed per batch."""

    key: Hashable
    topology: MeshTopology
    n_joints: int
    n_bones: int
    bind_joints: np.ndarray       # (J,4,4) float64
    parents: np.ndarray
    binding: Binding | None
    arrays: dict[str, np.ndarray]  # per static buffer name -> rows (control, display, CSR, ...)
    users: int = 0
    bend_refs: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n_tris(self) -> int:
        return int(self.topology.display_triangles.shape[0])


@dataclass
class _Instance:
    handle: DeformHandle
    asset: _Asset
    batch: "_Batch"
    params: Any
    given: dict[str, moderngl.Buffer]   # display resources the caller gave (copied into after each run)
    # filled by _Batch.layout()
    group_base: int = 0
    n_groups: int = 0
    dgroup_base: int = 0
    fgroup_base: int = 0
    joint_base: int = 0
    bone_base: int = 0
    laid_out: bool = False
    edit: np.ndarray | None = None     # (V,4) (C.xyz, K) or None
    edit_q: np.ndarray | None = None   # (V,) Q

    @property
    def dyn_base(self) -> int:
        return self.group_base * LOCAL_SIZE

    @property
    def n_dgroups(self) -> int:
        return L.pad_groups(self.asset.topology.n_display)

    @property
    def n_fgroups(self) -> int:
        return L.pad_groups(self.asset.n_tris)

    @property
    def display_base(self) -> int:
        return self.dgroup_base * LOCAL_SIZE

    @property
    def face_base(self) -> int:
        return self.fgroup_base * LOCAL_SIZE

    @property
    def joints(self) -> slice:
        return slice(self.joint_base, self.joint_base + self.asset.n_joints)


# static SSBOs per batch (``s_<name>``; a batch creates those its stages bind, gpu_stages.static_reads):
# name -> (domain of rows, numpy dtype of one row, width). Adjacency, rest values, triangles and the triangle
# lists around vertices have no SSBO: the stages that read them take them from images (_SPRING_IMAGES,
# _NORMAL_IMAGES).
_STATIC = {
    "bind": ("control", np.float32, 4),
    "joint_ids": ("control", np.int32, 4),
    "weights": ("control", np.float32, 4),
    "attach": ("control", np.float32, 4),
    "scale": ("control", np.float32, 4),
    "bone_of": ("control", np.int32, 1),
    "irs": ("control", np.float32, 4),
    "vstatic": ("control", np.float32, L.SPRING_VERTEX.size // 4),  # SpringVertex records as float rows
    "map": ("display", np.int32, 1),
    "bind_normals": ("display", np.float32, 4),  # rows only where the batch skins normals (else empty)
}
# static images per batch (fused skin_copy stage only): name -> record layout of the asset's rows
_STATIC_IMAGES = {"dskin": L.SKIN_VERTEX}
# static images of batches with a spring stage: name -> (record layout, segment kind of the asset's rows)
_SPRING_IMAGES = {"spoints": (L.SPRING_POINT, "control"), "sslots": (L.SPRING_SLOT, "adj")}
# static images of batches with face / vertex normal stages: name -> record layout
_NORMAL_IMAGES = {"ntris": L.NORMAL_TRI, "nverts": L.NORMAL_VERTEX, "nfaces": L.NORMAL_FACES}


def _spring_points(topo: MeshTopology, vstatic: np.ndarray) -> np.ndarray:
    """(V,) SpringPoint records of the spring stage: CSR range (asset-local) and the SpringVertex fields."""
    rec = L.SPRING_POINT.zeros(topo.n_control)
    rec["adj"][:, 0] = topo.adj_offset
    rec["adj"][:, 1] = topo.adj_count
    sv = np.ascontiguousarray(vstatic, np.float32).view(L.SPRING_VERTEX.dtype).reshape(-1)
    for name in ("sdir", "rest", "lam"):
        rec[name] = sv[name]
    return rec


def _spring_slots(topo: MeshTopology, rest: np.ndarray) -> np.ndarray:
    """(H,) SpringSlot records of the spring stage: neighbour (asset-local) and rest values per CSR slot."""
    rec = L.SPRING_SLOT.zeros(int(topo.adj_index.shape[0]))
    rec["nbr"][:, 0] = topo.adj_index
    rec["rest"] = rest
    return rec


def _padded_lists(offset: np.ndarray, count: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR lists (offset, count, flat index) -> (first texel of each list, (texels, NORMAL_LIST_WIDTH) entries):
    every list starts at a texel of its own and is padded with -1 to whole texels (same order inside)."""
    w = L.NORMAL_LIST_WIDTH
    count = np.asarray(count, np.int64)
    texels = -(-count // w)
    first = np.zeros(count.shape[0], np.int64)
    if count.shape[0]:
        first[1:] = np.cumsum(texels)[:-1]
    out = np.full((int(texels.sum()) * w,), -1, np.int32)
    local = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    out[np.repeat(first * w, count) + local] = np.asarray(index)[np.repeat(np.asarray(offset, np.int64), count)
                                                                    + local]
    return first, out.reshape(-1, w)


def _normal_records(topo: MeshTopology, dface: np.ndarray, dface_index: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(NormalTri per display triangle, NormalVertex per display vertex, NormalFaces texels) of an asset: the
    face and vertex normal stages' topology. Each display vertex names its own triangles' list and the list
    of triangles around its control point (shared by the display vertices of one control point)."""
    tris = L.NORMAL_TRI.zeros(topo.display_triangles.shape[0])
    tris["corners"][:, :3] = topo.display_triangles
    d_first, d_lists = _padded_lists(dface[:, 0], dface[:, 1], dface_index)
    c_first, c_lists = _padded_lists(topo.face_offset, topo.face_count, topo.face_index)
    verts = L.NORMAL_VERTEX.zeros(topo.n_display)
    c = topo.control_of_display
    verts["lists"][:, 0] = d_first
    verts["lists"][:, 1] = dface[:, 1]
    verts["lists"][:, 2] = d_lists.shape[0] + c_first[c]
    verts["lists"][:, 3] = np.asarray(topo.face_count)[c]
    faces = L.NORMAL_FACES.zeros(d_lists.shape[0] + c_lists.shape[0])
    faces["tris"] = np.concatenate([d_lists, c_lists])
    return tris, verts, faces


def _image(res: GpuResources, records: np.ndarray, label: str) -> moderngl.Texture:
    """A read-only image of vec4 records for the skin_copy and spring stages (layout: gpu_layouts.image_rows)."""
    texels = L.image_rows(records)
    if texels.shape[0] > res.ctx.info.get("GL_MAX_TEXTURE_SIZE", 16384):
        raise ValueError(f"{label}: {records.shape[0]} records need an image of {texels.shape[0]} rows, more "
                         f"than the driver's GL_MAX_TEXTURE_SIZE; use fewer meshes per graph or fuse = false")
    dtype = {np.dtype(np.uint32): "u4", np.dtype(np.int32): "i4", np.dtype(np.float32): "f4"}[texels.dtype]
    return res.texture((texels.shape[1], texels.shape[0]), 4, texels, dtype=dtype,
                       filter=(moderngl.NEAREST, moderngl.NEAREST), repeat=False, label=label)


def _group_table(bases: list[int], sizes: list[int], total: int) -> np.ndarray:
    """Instance index of every work group of a pool (instance k owns groups bases[k] .. + sizes[k]); -1 for
    groups of no instance (holes left by removed meshes, alignment gaps), which the display stages skip."""
    out = np.full(total, -1, np.int32)
    for k, (b, n) in enumerate(zip(bases, sizes)):
        out[b:b + n] = k
    return out


def _place(used: list[tuple[int, int]], n: int, step: int) -> int:
    """First base (a multiple of ``step``) where ``n`` groups fit between the used (base, size) ranges."""
    pos = 0
    for b, size in sorted(used):
        if b - pos >= n:
            return pos
        pos = max(pos, -(-(b + size) // step) * step)
    return pos


class _Batch:
    """Meshes that share one graph config: pooled buffers and one dispatch per stage."""

    def __init__(self, owner: "DeformerGraph", config: GraphConfig) -> None:
        self.owner = owner
        self.config = config
        self.plan: Plan = plan(config)
        self.instances: list[_Instance] = []
        self.assets: list[_Asset] = []
        self.buffers: dict[str, moderngl.Buffer] = {}
        self.static_bases: dict[int, dict[str, int]] = {}  # id(asset) -> base per segment kind
        self.total_groups = 0
        self.total_dgroups = 0
        self.total_fgroups = 0
        self.n_joints = 0
        self.n_bones = 0
        self.frame = 0
        self.iterations_run = 0
        nodes = [s.node for s in self.plan.steps]
        skins = [n for n in nodes if n.stage in ("skin", "skin_copy")]
        methods = {n.options.get("method", "lbs") for n in skins}
        #: fused skin_copy steps, and the methods whose compact joint records they read
        self.fused = [n for n in nodes if n.stage == "skin_copy"]
        self.fused_methods = sorted({n.options.get("method", "lbs") for n in self.fused})
        self.skin_joint_rec = {m: L.SKIN_JOINTS[m].zeros(1) for m in self.fused_methods}
        self.images: dict[str, moderngl.Texture] = {}
        #: the DeformJoint SSBO is read by (unfused) skin nodes only
        self.joint_ssbo = any(n.stage == "skin" for n in nodes)
        self.has_spring = any(n.stage == "spring" for n in nodes)
        #: face / vertex normal stages read the NormalsHead / topology images
        self.normal_stages = any(n.stage in ("face_normals", "vertex_normals") for n in nodes)
        #: the static SSBOs some stage of the batch binds (the others are not created)
        self.static_names = [name for name in _STATIC if any(name in gpu_stages.static_reads(n) for n in nodes)]
        # what the per-frame pose upload must compute (only what some node reads)
        self.differential = any(n.options.get("mode", "bind") == "differential" for n in skins)
        self.need_dq = "dqs" in methods
        self.need_bones = bool(methods & {"rigid", "irs"}) or self.has_spring
        self.need_irs = "irs" in methods
        self.skinned_targets = tuple(n.outputs["target"] for n in skins
                                     if n.stage == "skin" and n.options.get("normals") == "skinned")
        #: the assets need bind normals per display vertex (skinned normals, fused or not)
        self.bind_normals = bool(self.skinned_targets) or any("normals" in n.outputs for n in self.fused)
        self.any_given = False
        # per-frame pose of every instance, stacked over the batch's joints (instance k: rows joint_base..)
        self.skin_all = np.zeros((0, 4, 4))
        self.posed_all = np.zeros((0, 4, 4))
        self.prev_skin_all = np.zeros((0, 4, 4))
        self.prev_posed_all = np.zeros((0, 4, 4))
        self.bind_all = np.zeros((0, 4, 4))
        self.joint_starts = np.zeros(0, np.int64)
        self.joint_rec = L.DEFORM_JOINT.zeros(1)
        self.bone_rec = L.DEFORM_BONE.zeros(1)
        self.bones_all: Bones | None = None  # the bones of every instance with joint indices into the stack
        self.bone_rows = np.zeros(0, np.int64)
        self.bone_refs = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    # ---- layout -----------------------------------------------------------------------------------------
    def layout(self) -> None:
        """Lay out the pools after instances were added or removed (set-up time).

        The static and control pools are re-packed densely (feedback resources read at @previous keep their
        contents for the instances that stay, so do the poses given with ``set_pose``). The display and face
        pools are what the renderer binds ranges of: their buffer objects live as long as the batch (grown
        in place, contents kept) and an instance keeps its range for its whole life; a new instance takes the
        first hole that fits (left by a removed one) or goes to the end."""
        res = self.owner.resources
        ctx = self.owner.ctx
        old = self.buffers
        old_bases = {id(i): (i.dyn_base, i.joints) for i in self.instances if i.laid_out}
        old_pose = (self.skin_all, self.posed_all, self.prev_skin_all, self.prev_posed_all)
        # static pools: one segment per asset
        self.assets = []
        for inst in self.instances:
            if all(a is not inst.asset for a in self.assets):
                self.assets.append(inst.asset)
        seg = {"control": 0, "adj": 0, "display": 0, "tri": 0, "nface": 0}
        packed: dict[str, list[np.ndarray]] = {k: [] for k in self.static_names}
        self.static_bases = {}
        for a in self.assets:
            self.static_bases[id(a)] = dict(seg)
            for name in self.static_names:
                packed[name].append(a.arrays[name])
            seg["control"] += a.topology.n_control
            seg["adj"] += a.arrays["sslots"].shape[0]  # CSR slots
            seg["display"] += a.topology.n_display
            seg["tri"] += a.n_tris
            seg["nface"] += a.arrays["nfaces"].shape[0]
        # control pool: instances padded to whole groups, packed densely
        g = j = b = 0
        for inst in self.instances:
            inst.group_base = g
            inst.n_groups = L.pad_groups(inst.asset.topology.n_control)
            inst.joint_base = j
            inst.bone_base = b
            g += inst.n_groups
            j += inst.asset.n_joints
            b += max(inst.asset.n_bones, 1)
        # display / face pools: stable ranges; display bases also multiples of the SSBO offset alignment
        step = self.owner.range_groups
        placed = [i for i in self.instances if i.laid_out]
        for inst in self.instances:
            if inst.laid_out:
                continue
            inst.dgroup_base = _place([(i.dgroup_base, i.n_dgroups) for i in placed], inst.n_dgroups, step)
            inst.fgroup_base = _place([(i.fgroup_base, i.n_fgroups) for i in placed], inst.n_fgroups, 1)
            placed.append(inst)
        dg = max((i.dgroup_base + i.n_dgroups for i in self.instances), default=0)
        fg = max((i.fgroup_base + i.n_fgroups for i in self.instances), default=0)
        self.total_groups, self.total_dgroups, self.total_fgroups = g, dg, fg
        self.n_joints, self.n_bones = j, b
        n_dyn = g * LOCAL_SIZE

        new: dict[str, moderngl.Buffer] = {}

        def mk(name: str, data: np.ndarray | None = None, nbytes: int = 0) -> None:
            if data is not None and data.nbytes == 0:
                data, nbytes = None, 16
            new[name] = res.buffer(data, reserve=max(nbytes, 16) if data is None else 0,
                                   label=f"deform {self.config.name} {name}")

        for name in self.static_names:
            _, dt, width = _STATIC[name]
            rows = [np.asarray(x, dt).reshape(-1, width) for x in packed[name]]
            arr = np.concatenate(rows) if rows else np.zeros((0, width), dt)
            mk("s_" + name, np.ascontiguousarray(arr))
        insts = self.instances
        mk("groups", _group_table([i.group_base for i in insts], [i.n_groups for i in insts], g))
        mk("dgroups", _group_table([i.dgroup_base for i in insts], [i.n_dgroups for i in insts], dg))
        mk("fgroups", _group_table([i.fgroup_base for i in insts], [i.n_fgroups for i in insts], fg))
        mk("instances", self.instance_table())
        for r, dom in self.plan.domains.items():
            if dom == "control" and r != BIND and r not in self.plan.elided:
                mk("d_" + r, nbytes=n_dyn * 16)
            elif dom in ("display", "face"):
                need = (dg if dom == "display" else fg) * LOCAL_SIZE * 16
                buf = old.pop("p_" + r, None)  # kept: the renderer holds ranges of it
                if buf is None:
                    buf = res.buffer(reserve=max(need, 16), label=f"deform {self.config.name} p_{r}")
                elif buf.size < need:
                    self._grow(buf, max(need, 2 * buf.size))
                new["p_" + r] = buf
        for r in self.skinned_targets:
            mk("n_" + r, nbytes=n_dyn * 48)  # normal transform: 3 vec4 columns per control point
        if self.has_spring:
            mk("status", nbytes=max(1, len(self.instances)) * L.DEFORM_STATUS.size)
            mk("active", nbytes=max(1, g) * 4)
            mk("indirect", np.array([0, 1, 1, 0], np.uint32))
            mk("partials", nbytes=max(1, g) * 4)
            mk("edit", nbytes=n_dyn * 32)
            mk("spring_vel", np.zeros((n_dyn, 4), np.float32))  # last frame's velocities (dependent mode)
        mk("joints", nbytes=max(1, j) * L.DEFORM_JOINT.size if self.joint_ssbo else 16)
        images: dict[str, moderngl.Texture] = {}
        if self.fused:
            label = f"deform {self.config.name}"
            for name, rec in _STATIC_IMAGES.items():
                rows = [a.arrays[name] for a in self.assets]
                images[name] = _image(res, np.concatenate(rows) if rows else rec.zeros(0), f"{label} {name}")
            images["dheads"] = _image(res, self._display_heads(dg), f"{label} dheads")
            for m in self.fused_methods:  # contents written by upload_pose
                images["skin_joints_" + m] = _image(res, L.SKIN_JOINTS[m].zeros(j), f"{label} skin_joints_{m}")
        if self.has_spring:
            label = f"deform {self.config.name}"
            for name, (rec, _) in _SPRING_IMAGES.items():
                rows = [a.arrays[name] for a in self.assets]
                images[name] = _image(res, np.concatenate(rows) if rows else rec.zeros(0), f"{label} {name}")
            images["sheads"] = _image(res, self._spring_heads(g), f"{label} sheads")
            images["sinstances"] = _image(res, L.SPRING_INSTANCE.zeros(max(1, len(self.instances))),
                                          f"{label} sinstances")  # contents: write_instance_table
            # spring state (x, v) per control point: S0 (initial) and a ring of three (see gpu_stages), and
            # the frame's attachments; written by the GPU only
            for name in ("spring_s0", "spring_r0", "spring_r1", "spring_r2"):
                images[name] = _image(res, L.SPRING_STATE.zeros(n_dyn), f"{label} {name}")
            images["spring_frame"] = _image(res, L.SPRING_FRAME.zeros(n_dyn), f"{label} spring_frame")
        if self.normal_stages:
            label = f"deform {self.config.name}"
            for name, rec in _NORMAL_IMAGES.items():
                rows = [a.arrays[name] for a in self.assets]
                images[name] = _image(res, np.concatenate(rows) if rows else rec.zeros(0), f"{label} {name}")
            images["fheads"] = _image(res, self._normals_heads(fg, faces=True), f"{label} fheads")
            images["vheads"] = _image(res, self._normals_heads(dg, faces=False), f"{label} vheads")
            # face-domain resources also as images (face normals write both; vertex normals gather from the
            # image, the SSBO stays the resource's value for read-back)
            for r, dom in self.plan.domains.items():
                if dom == "face":
                    images["i_" + r] = _image(res, L.NORMAL_FACE.zeros(fg * LOCAL_SIZE), f"{label} i_{r}")
                    if r in self.plan.feedback:  # read at @previous: the new image starts as the kept SSBO
                        self._fill_image(images["i_" + r], new["p_" + r])
        mk("bones", nbytes=max(1, b) * L.DEFORM_BONE.size)
        # control feedback resources: keep old contents of surviving instances, bind positions for new ones
        # (display/face pools keep their contents in place)
        keep = ["d_" + r for r in self.plan.feedback if self.plan.domains[r] == "control"]
        keep += ["spring_vel"] if self.has_spring else []
        for name in keep:
            buf = new[name]
            for inst in self.instances:
                n = inst.asset.topology.n_control
                ob = old_bases.get(id(inst))
                if ob is not None and name in old:
                    if n:
                        ctx.copy_buffer(buf, old[name], size=n * 16, read_offset=ob[0] * 16,
                                        write_offset=inst.dyn_base * 16)
                elif name != "spring_vel":
                    buf.write(np.ascontiguousarray(inst.asset.arrays["bind"], np.float32).tobytes(),
                              offset=inst.dyn_base * 16)
        self._layout_pose(old_bases, old_pose)
        for inst in self.instances:
            inst.laid_out = True
        for buf in old.values():
            res.release(buf)
        for tex in self.images.values():
            res.release(tex)
        self.buffers = new
        self.images = images
        self.any_given = any(inst.given for inst in self.instances)
        if self.has_spring:
            self.write_edits()

    def _fill_image(self, tex: moderngl.Texture, buf: moderngl.Buffer) -> None:
        """Copy a pooled face SSBO into its rebuilt image copy (GPU side, through a pixel-unpack buffer): record i
        of the SSBO is texel i of the image in row order (gpu_layouts.image_rows), so whole bytes carry over;
        texels past the end of the SSBO stay zero."""
        res, ctx = self.owner.resources, self.owner.ctx
        nbytes = tex.width * tex.height * 16
        tmp = res.buffer(reserve=nbytes, label="deform face image fill")
        tmp.clear()
        # the SSBO was last written by a shader (face normals): make those writes visible to the copies
        ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | moderngl.PIXEL_BUFFER_BARRIER_BIT)
        ctx.copy_buffer(tmp, buf, size=min(buf.size, nbytes))
        tex.write(tmp)
        res.release(tmp)

    def _grow(self, buf: moderngl.Buffer, nbytes: int) -> None:
        """Resize ``buf`` in place (same GL object: ranges the renderer holds stay valid), keeping its bytes."""
        res, ctx = self.owner.resources, self.owner.ctx
        n_old = buf.size
        tmp = res.buffer(reserve=n_old, label="deform pool resize")
        ctx.copy_buffer(tmp, buf, size=n_old)
        buf.orphan(int(nbytes))
        ctx.copy_buffer(buf, tmp, size=n_old)
        res.release(tmp)

    def _display_heads(self, n_groups: int) -> np.ndarray:
        """SkinHead records per display work group for skin_copy: SkinVertex index of lane 0, valid lanes (0 in
        holes of the pool), first joint record of the instance."""
        rec = L.SKIN_HEAD.zeros(n_groups)
        heads = rec["group"]  # a view: filled in place
        for inst in self.instances:
            n = inst.asset.topology.n_display
            k = np.arange(inst.n_dgroups)
            rows = inst.dgroup_base + k
            heads[rows, 0] = self.static_bases[id(inst.asset)]["display"] + k * LOCAL_SIZE
            heads[rows, 1] = np.clip(n - k * LOCAL_SIZE, 0, LOCAL_SIZE)
            heads[rows, 2] = inst.joint_base
        return rec

    def _normals_heads(self, n_groups: int, *, faces: bool) -> np.ndarray:
        """NormalsHead records per face work group (``faces``: static triangle of lane 0, valid lanes,
        display_base) or per display work group (static display vertex of lane 0, valid lanes, face_base, first
        NormalFaces texel of the asset); holes of the pools keep zero valid lanes."""
        rec = L.NORMALS_HEAD.zeros(n_groups)
        heads = rec["group"]  # a view: filled in place
        for inst in self.instances:
            sb = self.static_bases[id(inst.asset)]
            if faces:
                n, base, static = inst.asset.n_tris, inst.fgroup_base, sb["tri"]
                extra = (inst.display_base, 0)
            else:
                n, base, static = inst.asset.topology.n_display, inst.dgroup_base, sb["display"]
                extra = (inst.face_base, sb["nface"])
            j = np.arange(L.pad_groups(n))
            rows = base + j
            heads[rows, 0] = static + j * LOCAL_SIZE
            heads[rows, 1] = np.clip(n - j * LOCAL_SIZE, 0, LOCAL_SIZE)
            heads[rows, 2] = extra[0]
            heads[rows, 3] = extra[1]
        return rec

    def _spring_heads(self, n_groups: int) -> np.ndarray:
        """SpringHead records per control work group: static control point of lane 0, valid lanes, instance."""
        rec = L.SPRING_HEAD.zeros(n_groups)
        heads = rec["group"]  # a view: filled in place
        for k, inst in enumerate(self.instances):
            n = inst.asset.topology.n_control
            j = np.arange(inst.n_groups)
            rows = inst.group_base + j
            heads[rows, 0] = self.static_bases[id(inst.asset)]["control"] + j * LOCAL_SIZE
            heads[rows, 1] = np.clip(n - j * LOCAL_SIZE, 0, LOCAL_SIZE)
            heads[rows, 2] = k
        return rec

    def spring_instances(self, table: np.ndarray) -> np.ndarray:
        """SpringInstance records (the spring stage's per-instance image) from the DeformInstance table."""
        rec = L.SPRING_INSTANCE.zeros(max(1, table.shape[0]))
        n = table.shape[0]
        run = rec["run"]
        run[:n, 0] = table["flags"].astype(np.int32)
        run[:n, 1] = table["max_iterations"] + (table["scheme"] == L.SCHEME_ENERGY)
        run[:n, 2] = table["dyn_base"]
        run[:n, 3] = table["adj_base"]
        for i, name in enumerate(("dt", "tiny", "handle_weight", "damping")):
            rec["step"][:n, i] = table[name]
        rec["k"][:n] = table["k"]
        rec["k2"][:n] = table["k2"]
        return rec

    def _layout_pose(self, old_bases: dict[int, tuple], old_pose: tuple[np.ndarray, ...]) -> None:
        """Stacked pose arrays and bone index tables for the new layout (poses of staying instances kept)."""
        nj = self.n_joints
        eye = np.broadcast_to(np.eye(4), (nj, 4, 4))
        skin, posed, prev_skin, prev_posed = (np.array(eye), np.zeros((nj, 4, 4)), np.array(eye),
                                              np.zeros((nj, 4, 4)))
        bind = np.zeros((nj, 4, 4))
        for inst in self.instances:
            sl = inst.joints
            bind[sl] = inst.asset.bind_joints
            ob = old_bases.get(id(inst))
            if ob is not None:
                for dst, src in zip((skin, posed, prev_skin, prev_posed), old_pose):
                    dst[sl] = src[ob[1]]
            else:
                posed[sl] = prev_posed[sl] = inst.asset.bind_joints
        self.skin_all, self.posed_all, self.prev_skin_all, self.prev_posed_all = skin, posed, prev_skin, prev_posed
        self.bind_all = bind
        self.joint_starts = np.array([i.joint_base for i in self.instances], np.int64)
        self.joint_rec = L.DEFORM_JOINT.zeros(max(nj, 1))
        self.joint_rec["stretch"] = pack_mat4(np.eye(4))
        # joint records padded to whole image rows: written to the image as they are every frame
        rows = -(-max(nj, 1) // L.IMAGE_ROW_ITEMS)
        self.skin_joint_rec = {m: L.SKIN_JOINTS[m].zeros(rows * L.IMAGE_ROW_ITEMS) for m in self.fused_methods}
        self.bone_rec = L.DEFORM_BONE.zeros(max(self.n_bones, 1))
        # bones of every instance with a binding, joint indices shifted into the stacked pose arrays
        boned = [i for i in self.instances if i.asset.binding is not None and i.asset.n_bones]
        if not (boned and self.need_bones):
            self.bones_all = None
            return
        parent, child, tip, rows, s_ref, e_ref = [], [], [], [], [], []
        for inst in boned:
            bb = inst.asset.binding.bones  # type: ignore[union-attr]
            jb = inst.joint_base
            parent.append(bb.parent_joint.astype(np.int64) + jb)
            child.append(np.where(bb.child_joint >= 0, bb.child_joint.astype(np.int64) + jb, -1))
            tip.append(np.asarray(bb.tip_local, np.float32))
            rows.append(np.arange(bb.count) + inst.bone_base)
            sr, er = inst.asset.bend_refs  # type: ignore[misc]
            s_ref.append(np.where(sr >= 0, sr + jb, -1))
            e_ref.append(np.where(er >= 0, er + jb, -1))
        self.bones_all = Bones(np.concatenate(parent), np.concatenate(child), np.concatenate(tip))
        self.bone_rows = np.concatenate(rows)
        self.bone_refs = (np.concatenate(s_ref), np.concatenate(e_ref))

    def instance_table(self) -> np.ndarray:
        t = L.DEFORM_INSTANCE.zeros(len(self.instances))
        for k, inst in enumerate(self.instances):
            sb = self.static_bases[id(inst.asset)]
            p = inst.params
            topo = inst.asset.topology
            t[k]["dyn_base"] = inst.dyn_base
            t[k]["static_base"] = sb["control"]
            t[k]["n_control"] = topo.n_control
            t[k]["adj_base"] = sb["adj"]
            t[k]["joint_base"] = inst.joint_base
            t[k]["bone_base"] = inst.bone_base
            t[k]["group_base"] = inst.group_base
            t[k]["n_groups"] = inst.n_groups
            t[k]["n_bones"] = inst.asset.n_bones
            t[k]["display_base"] = inst.display_base
            t[k]["display_static"] = sb["display"]
            t[k]["n_display"] = topo.n_display
            t[k]["dgroup_base"] = inst.dgroup_base
            t[k]["face_base"] = inst.face_base
            t[k]["n_tris"] = inst.asset.n_tris
            t[k]["fgroup_base"] = inst.fgroup_base
            self.owner._fill_spring_record(t[k], p, inst)
        return t

    def write_instance_table(self) -> None:
        table = self.instance_table()
        self.buffers["instances"].write(table.tobytes())
        if "sinstances" in self.images:
            self.images["sinstances"].write(L.image_rows(self.spring_instances(table)).tobytes())

    def write_edits(self) -> None:
        if not self.has_spring:
            return
        n_dyn = self.total_groups * LOCAL_SIZE
        e = np.zeros((n_dyn, 2, 4), np.float32)
        for inst in self.instances:
            if inst.edit is not None:
                n = inst.asset.topology.n_control
                e[inst.dyn_base:inst.dyn_base + n, 0] = inst.edit
                e[inst.dyn_base:inst.dyn_base + n, 1, 0] = inst.edit_q
        self.buffers["edit"].write(e.tobytes())
        self.write_instance_table()

    # ---- per frame --------------------------------------------------------------------------------------
    def upload_pose(self) -> None:
        """Pack the joint (and bone) data of every instance for this frame, batched over all instances (one
        stacked computation per quantity, only what the nodes read), and write each buffer once."""
        joints = self.joint_rec
        if self.n_joints == 0:
            return
        nj = self.n_joints
        if self.differential:
            mats = self.skin_all @ np.linalg.inv(self.prev_skin_all)
            src_joints = self.prev_posed_all
        else:
            mats = self.skin_all
            src_joints = self.bind_all
        dq = None
        if self.joint_ssbo:
            joints["skin"][:nj] = pack_mat4(mats)
            if self.need_dq:
                dq = _dual_quats(mats, self.joint_starts)
                joints["qr"][:nj] = dq[0]
                joints["qd"][:nj] = dq[1]
                joints["stretch"][:nj] = pack_mat4(dq[2])
            self.buffers["joints"].write(joints.tobytes())
        for m in self.fused_methods:  # fused stages skin in bind mode: the skin matrices themselves
            rec = self.skin_joint_rec[m]
            if m == "lbs":
                rec["rows"][:nj] = self.skin_all[:, :3, :]
            else:
                if dq is None or self.differential:
                    dq = _dual_quats(self.skin_all, self.joint_starts)
                qr, qd, st = dq
                rec["qr"][:nj] = qr
                rec["qd"][:nj] = qd
                rec["stretch"][:nj, 0] = st[:, [0, 0, 0, 1], [0, 1, 2, 1]]
                rec["stretch"][:nj, 1, :2] = st[:, [1, 2], [2, 2]]
            self.images["skin_joints_" + m].write(rec.tobytes())
        bb = self.bones_all
        if bb is None:
            return
        bones = self.bone_rec
        rows = self.bone_rows
        # endpoints in float32 as the references compute them
        p, c = bone_endpoints(bb, self.posed_all.astype(np.float32))
        ps, cs = bone_endpoints(bb, src_joints.astype(np.float32))
        r_now_j = joint_rotations(self.bind_all, self.posed_all)
        r_src_j = joint_rotations(self.bind_all, src_joints)
        r_now = r_now_j[bb.parent_joint]
        rot = np.zeros((rows.shape[0], 4, 4))
        rot[:, :3, :3] = r_now @ np.swapaxes(r_src_j[bb.parent_joint], 1, 2)
        rot[:, 3, 3] = 1.0
        rn = np.zeros((rows.shape[0], 4, 4))
        rn[:, :3, :3] = r_now
        rn[:, 3, 3] = 1.0
        bones["p"][rows, :3] = p
        bones["c"][rows, :3] = c
        bones["p_src"][rows, :3] = ps
        bones["c_src"][rows, :3] = cs
        bones["rot"][rows] = pack_mat4(rot)
        bones["rot_now"][rows] = pack_mat4(rn)
        if self.need_irs:
            q_start, q_end = gpu_spring.bend_quats(r_now_j, bb.parent_joint, *self.bone_refs)
            bones["q_start"][rows] = q_start
            bones["q_end"][rows] = q_end
        self.buffers["bones"].write(bones.tobytes())

    def end_frame(self) -> None:
        """Copy the outputs into caller-given buffers; remember this frame's pose (differential mode)."""
        if self.any_given:
            ctx = self.owner.ctx
            ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT)
            for inst in self.instances:
                nd = inst.asset.topology.n_display
                for r, buf in inst.given.items():
                    ctx.copy_buffer(buf, self.buffers["p_" + r], size=16 * nd, read_offset=16 * inst.display_base)
        if self.differential:
            np.copyto(self.prev_skin_all, self.skin_all)
            np.copyto(self.prev_posed_all, self.posed_all)
        self.frame += 1

    def release(self) -> None:
        for obj in list(self.buffers.values()) + list(self.images.values()):
            self.owner.resources.release(obj)
        self.buffers = {}
        self.images = {}


class DeformerGraph:
    """Runs deformer graphs for many skinned meshes on the GPU.

    ``DeformerGraph(ctx, resources, config=None, programs=None)``; ``config`` (a :class:`GraphConfig`, a dict
    or a path to TOML/JSON) is the graph of meshes added without their own; ``programs`` is the shared
    :class:`ProgramCache` (one is made over ``resources`` when omitted and released with the graph).

    Per frame: ``set_pose`` for each mesh, then one ``run()``; the renderer binds ``output_ranges(handle)``
    (buffer, offset, size of the mesh's positions and normals in the batch's display pool).
    ``download(handle)`` reads positions and normals back (export, tests).
    """

    def __init__(self, ctx: moderngl.Context, resources: GpuResources, config: GraphConfig | dict | str | None = None,
                 *, programs: ProgramCache | None = None) -> None:
        self.ctx = ctx
        self.resources = resources
        self._own_programs = programs is None
        self.programs = programs or ProgramCache(resources)
        self.programs.library.add_virtual(L.LAYOUT_INCLUDE, L.layouts_glsl())
        self.default = self._as_config(config) if config is not None else default_config("spring")
        self._batches: dict[str, _Batch] = {}
        self._instances: dict[int, _Instance] = {}
        self._assets: dict[tuple[str, Hashable], _Asset] = {}
        self._next = 1
        self.last_timings: dict[str, float] = {}
        self.timing_source = ""
        self._queries: dict[str, moderngl.Query] = {}
        #: GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT (bytes); display ranges start at multiples of it
        self.offset_alignment = ssbo_offset_alignment(ctx)
        self.range_groups = L.range_groups(self.offset_alignment)

    # ---- configuration ------------------------------------------------------------------------------------
    @staticmethod
    def _as_config(config: GraphConfig | dict | str | Any) -> GraphConfig:
        if isinstance(config, GraphConfig):
            return config
        if isinstance(config, dict):
            return GraphConfig.from_dict(config)
        return GraphConfig.load(config)

    def _batch_for(self, config: GraphConfig) -> _Batch:
        key = repr(config.to_dict())
        b = self._batches.get(key)
        if b is None:
            b = _Batch(self, config)
            self._batches[key] = b
        return b

    # ---- meshes ---------------------------------------------------------------------------------------------
    def add_mesh(self, topology: MeshTopology, binding: Binding | None, joints: np.ndarray, weights: np.ndarray,
                 inverse_bind: np.ndarray, parents: np.ndarray, *, method: str | None = None,
                 config: GraphConfig | dict | str | None = None, spring: Any = None,
                 asset_key: Hashable | None = None, normals: np.ndarray | None = None,
                 positions_buffer: moderngl.Buffer | None = None,
                 normals_buffer: moderngl.Buffer | None = None) -> DeformHandle:
        """Add one skinned mesh instance and return its handle.

        topology: welded mesh (engine.skinning.meshprep.prepare_mesh); binding: attachment binding (needed by
        rigid, irs and spring); joints (D,4) or (V,4) int and weights (D,4)/(V,4): glTF JOINTS_0/WEIGHTS_0 (per
        display vertex: the representative display vertex of each control point is used); inverse_bind (J,4,4);
        parents (J,) within the skin (-1 roots). method: lbs | dqs | rigid | irs | spring | spring-feedback
        picks a built-in graph (else ``config`` or the graph's default). spring: SpringParams of the springs
        reference (None: its defaults). asset_key: instances with the same key share static buffers (default:
        the topology object). normals: (D,3) bind normals (glTF NORMAL) that graphs with skinned normals
        transform (default: area-weighted normals of the bind surface); shared per asset like the rest.

        Outputs live in the batch's display pool (``output_ranges``). positions_buffer/normals_buffer: the
        caller's own vec4 display-order buffers (>= 16 * n_display bytes each); the mesh's outputs are copied
        into them at the end of every ``run`` (a GPU copy each; binding the range directly is cheaper).
        """
        params = self._spring_params(spring)
        if method is not None:
            if method not in METHODS:
                raise ValueError(f"method {method!r}; valid: {METHODS}")
            if method == "spring" and params.mode == "dependent":
                method = "spring-feedback"
            skin = "rigid" if method == "spring-feedback" else params.initial_skinning
            cfg = default_config(method, skin=skin if method.startswith("spring") else None)
        else:
            cfg = self._as_config(config) if config is not None else self.default
        ib = np.asarray(inverse_bind, np.float64)
        if ib.ndim != 3 or ib.shape[1:] != (4, 4) or ib.shape[0] < 1:
            raise ValueError(f"inverse_bind must have shape (J,4,4) with J >= 1, got {ib.shape}")
        if ib.shape[0] > MAX_JOINTS:
            raise ValueError(f"skin has {ib.shape[0]} joints; the GPU path supports 1..{MAX_JOINTS}")
        par = np.asarray(parents).astype(np.int32).reshape(-1)
        if par.shape[0] != ib.shape[0]:
            raise ValueError(f"parents must have shape ({ib.shape[0]},), got {np.asarray(parents).shape}")
        needs_binding = any(s.node.stage == "spring" or s.node.options.get("method") in ("rigid", "irs")
                            for s in plan(cfg).steps)
        if needs_binding and binding is None:
            raise ValueError(f"graph {cfg.name!r} needs an attachment binding (rigid/irs skinning or springs)")
        nd = topology.n_display
        given: dict[str, moderngl.Buffer] = {}
        outs = cfg.outputs
        for nm, buf, res in (("positions_buffer", positions_buffer, outs.get("positions")),
                             ("normals_buffer", normals_buffer, outs.get("normals"))):
            if buf is not None:
                if buf.size < 16 * nd:
                    raise ValueError(f"{nm} holds {buf.size} bytes; a vec4 per display vertex needs {16 * nd}")
                if res is None:
                    raise ValueError(f"{nm} given but graph {cfg.name!r} has no such output")
                given[res] = buf
        batch = self._batch_for(cfg)
        key = (repr(cfg.to_dict()), asset_key if asset_key is not None else id(topology))
        asset = self._assets.get(key)
        if asset is None:
            skin_opts = next((n.options for n in cfg.nodes if n.stage == "skin"), {})
            asset = self._make_asset(key[1], topology, binding, joints, weights, ib, par,
                                     skin_opts.get("influence", (0.5, 0.5)),
                                     normals if batch.bind_normals else None, batch.bind_normals,
                                     fused=bool(batch.fused))
            self._assets[key] = asset
        elif asset.topology is not topology and (asset.topology.n_control != topology.n_control
                                                 or asset.topology.n_display != nd):
            raise ValueError(f"asset_key {asset_key!r} names an asset with {asset.topology.n_control} control "
                             f"points and {asset.topology.n_display} display vertices; this topology has "
                             f"{topology.n_control} and {nd}")
        asset.users += 1
        handle = DeformHandle(self._next)
        self._next += 1
        inst = _Instance(handle, asset, batch, params, given)
        batch.instances.append(inst)
        self._instances[handle.id] = inst
        batch.layout()
        return handle

    def remove_mesh(self, handle: DeformHandle) -> None:
        """Remove a mesh (buffers it was given stay with the caller); the batch's pools are re-packed."""
        inst = self._inst(handle)
        batch = inst.batch
        batch.instances.remove(inst)
        del self._instances[handle.id]
        inst.asset.users -= 1
        if inst.asset.users == 0:
            self._assets = {k: a for k, a in self._assets.items() if a is not inst.asset}
        if batch.instances:
            batch.layout()
        else:
            batch.release()
            self._batches = {k: b for k, b in self._batches.items() if b is not batch}

    def _inst(self, handle: DeformHandle) -> _Instance:
        inst = self._instances.get(getattr(handle, "id", None))
        if inst is None:
            raise ValueError(f"unknown deform handle {handle!r}; live handles: {sorted(self._instances)}")
        return inst

    @property
    def handles(self) -> list[DeformHandle]:
        return [i.handle for i in self._instances.values()]

    def _make_asset(self, key: Hashable, topo: MeshTopology, binding: Binding | None, joints: np.ndarray,
                    weights: np.ndarray, ib: np.ndarray, par: np.ndarray, irs_influence: Any,
                    normals: np.ndarray | None = None, skinned_normals: bool = False, *,
                    fused: bool = False) -> _Asset:
        v, d = topo.n_control, topo.n_display
        jn = np.asarray(joints)
        w = np.asarray(weights, np.float32)
        if jn.shape[0] == d and d != v:
            jn, w = jn[topo.display_of_control], w[topo.display_of_control]
        if jn.shape != (v, 4) or w.shape != (v, 4):
            raise ValueError(f"joints/weights must be (D,4)=({d},4) or (V,4)=({v},4); got {jn.shape}, {w.shape}")
        if jn.size and (jn.min() < 0 or jn.max() >= ib.shape[0]):
            raise ValueError(f"joint indices must lie in [0, {ib.shape[0] - 1}], got [{jn.min()}, {jn.max()}]")
        bind_joints = np.linalg.inv(ib)
        arrays: dict[str, np.ndarray] = {
            "bind": L.vec4(topo.positions, 1.0),
            "joint_ids": jn.astype(np.int32),
            "weights": w,
        }
        if binding is not None:
            arrays["attach"] = np.concatenate([binding.attach, binding.t[:, None]], 1).astype(np.float32)
            arrays["scale"] = L.vec4(binding.scale)
            arrays["bone_of"] = binding.bone.astype(np.int32)
            n_bones = binding.bones.count
        else:
            arrays["attach"] = np.zeros((v, 4), np.float32)
            arrays["scale"] = np.zeros((v, 4), np.float32)
            arrays["bone_of"] = np.zeros(v, np.int32)
            n_bones = 0
        rest, arrays["vstatic"] = gpu_spring.rest_arrays(topo, binding, bind_joints)
        arrays["spoints"] = _spring_points(topo, arrays["vstatic"])
        arrays["sslots"] = _spring_slots(topo, rest)
        arrays["irs"], d0 = gpu_spring.irs_arrays(topo, binding, bind_joints, irs_influence)
        arrays["scale"][:, 3] = d0
        arrays["map"] = topo.control_of_display.astype(np.int32)
        dtri = topo.display_triangles.astype(np.int64)
        t = dtri.shape[0]
        dface, dface_index = _csr_from_pairs(dtri.reshape(-1), np.repeat(np.arange(t), 3), d)
        arrays["ntris"], arrays["nverts"], arrays["nfaces"] = _normal_records(topo, dface, dface_index)
        arrays["bind_normals"] = _bind_normals(topo, normals) if skinned_normals else np.zeros((0, 4), np.float32)
        arrays["dskin"] = _skin_vertices(topo, jn, w, arrays["bind_normals"]) if fused else L.SKIN_VERTEX.zeros(0)
        asset = _Asset(key, topo, int(ib.shape[0]), n_bones, bind_joints, par, binding, arrays)
        if binding is not None:
            asset.bend_refs = gpu_spring.bend_refs(binding, bind_joints, par)
        return asset

    def _spring_params(self, spring: Any) -> Any:
        return gpu_spring.spring_params(spring)

    def _fill_spring_record(self, rec: np.ndarray, params: Any, inst: _Instance) -> None:
        gpu_spring.fill_record(rec, params, inst.asset.topology)

    def set_spring(self, handle: DeformHandle, spring: Any) -> None:
        """Change a mesh's spring parameters at run time (a SpringParams, or None for the defaults)."""
        inst = self._inst(handle)
        inst.params = self._spring_params(spring)
        inst.batch.write_instance_table()

    def set_edits(self, handle: DeformHandle, terms: Any | None) -> None:
        """Surface-edit forces of a mesh (engine.skinning.edits.EditTerms for this frame; None clears them)."""
        inst = self._inst(handle)
        if terms is None:
            inst.edit, inst.edit_q = None, None
        else:
            n = inst.asset.topology.n_control
            k = np.asarray(terms.stiffness, np.float64).reshape(-1)
            c = np.asarray(terms.weighted_target, np.float64).reshape(-1, 3)
            q = np.asarray(terms.q, np.float64).reshape(-1)
            if k.shape[0] != n or c.shape[0] != n or q.shape[0] != n:
                raise ValueError(f"edit terms must have {n} rows (control points), got {k.shape[0]}")
            inst.edit = np.concatenate([c, k[:, None]], 1).astype(np.float32)
            inst.edit_q = q.astype(np.float32)
        inst.batch.write_edits()

    # ---- per frame ----------------------------------------------------------------------------------------
    def set_pose(self, handle: DeformHandle, skin_mats: np.ndarray, posed_joints: np.ndarray) -> None:
        """Pose of one mesh for the next ``run``: skin_mats (J,4,4) = posed_joints @ inverse_bind, posed_joints
        (J,4,4) joint world matrices (skin space). Stored into the batch's stacked pose arrays; ``run`` packs
        and uploads the poses of all meshes at once."""
        inst = self._inst(handle)
        j = inst.asset.n_joints
        sm = np.asarray(skin_mats)
        pj = np.asarray(posed_joints)
        if sm.shape != (j, 4, 4) or pj.shape != (j, 4, 4):
            raise ValueError(f"skin_mats and posed_joints must be ({j},4,4); got {sm.shape}, {pj.shape}")
        b = inst.batch
        sl = inst.joints
        b.skin_all[sl] = sm
        b.posed_all[sl] = pj

    def run(self, *, profile: bool = False) -> None:
        """One frame for every mesh: upload poses, run each batch's plan, end with the renderer's barrier.

        profile: time each node with GL timer queries into ``last_timings`` (ms per node name, summed over
        batches; falls back to glFinish + wall clock where the driver's timer reads 0, see ``timing_source``;
        this waits for the GPU, so use it in benchmarks only). ``last_timings["upload"]`` is the CPU time of
        packing and writing the poses."""
        self.last_timings = {}
        for batch in self._batches.values():
            if not batch.instances:
                continue
            if profile:
                t0 = time.perf_counter()
                batch.upload_pose()
                self.last_timings["upload"] = self.last_timings.get("upload", 0.0) + (time.perf_counter() - t0) * 1e3
            else:
                batch.upload_pose()
            for step in batch.plan.steps:
                if step.barrier_before:
                    self.ctx.memory_barrier(step.barrier_before)
                if profile:
                    q = self._query(step.node.name)
                    self.ctx.finish()
                    t0 = time.perf_counter()
                    with q:
                        gpu_stages.run_node(self, batch, step.node)
                    self.ctx.finish()
                    wall = (time.perf_counter() - t0) * 1e3
                    gpu = q.elapsed * 1e-6
                    # Mesa llvmpipe's timer reports ~0 for compute work: then fall back to the wall clock
                    plausible = gpu > 0.01 * wall
                    self.timing_source = "GL timer query" if plausible else "wall clock (glFinish)"
                    ms = gpu if plausible else wall
                    self.last_timings[step.node.name] = self.last_timings.get(step.node.name, 0.0) + ms
                else:
                    gpu_stages.run_node(self, batch, step.node)
            self.ctx.memory_barrier(batch.plan.final_barrier)
            batch.end_frame()

    def _query(self, name: str) -> moderngl.Query:
        q = self._queries.get(name)
        if q is None:
            q = self.resources.query(time=True, label=f"deform timer {name}")
            self._queries[name] = q
        return q

    # ---- outputs --------------------------------------------------------------------------------------------
    def output_ranges(self, handle: DeformHandle) -> tuple[tuple[moderngl.Buffer, int, int],
                                                           tuple[moderngl.Buffer, int, int]]:
        """((buffer, offset, size) of the positions, the same of the normals) of the mesh: vec4 per display
        vertex (w = 1 / 0), offsets and sizes in bytes, offsets aligned for glBindBufferRange (bind with
        ``buffer.bind_to_storage_buffer(binding, offset=offset, size=size)``). A caller-given buffer is
        reported as (that buffer, 0, size). Valid until meshes are added to or removed from the graph (the
        pools are re-packed then: ask again)."""
        inst = self._inst(handle)
        outs = inst.batch.plan.outputs
        size = 16 * inst.asset.topology.n_display
        out = []
        for key in ("positions", "normals"):
            res = outs[key]
            if res in inst.given:
                out.append((inst.given[res], 0, size))
            else:
                out.append((inst.batch.buffers["p_" + res], 16 * inst.display_base, size))
        return out[0], out[1]

    def output_buffers(self, handle: DeformHandle) -> tuple[moderngl.Buffer, moderngl.Buffer]:
        """(positions, normals) buffers holding only this mesh: the ones given to ``add_mesh``. Outputs in the
        pooled display buffers raise ValueError: bind ``output_ranges(handle)`` instead."""
        (pb, po, _), (nb, no, _) = self.output_ranges(handle)
        inst = self._inst(handle)
        outs = inst.batch.plan.outputs
        missing = [k for k in ("positions", "normals") if outs[k] not in inst.given]
        if missing:
            raise ValueError(f"the {' and '.join(missing)} of mesh {handle.id} live in the batch's pooled display "
                             f"buffer; use output_ranges(handle) (buffer, offset, size), or give "
                             f"positions_buffer/normals_buffer to add_mesh")
        return pb, nb

    def _read_display(self, inst: _Instance, resource: str) -> np.ndarray:
        dom = inst.batch.plan.domains[resource]
        rows, base = ((inst.asset.topology.n_display, inst.display_base) if dom == "display"
                      else (inst.asset.n_tris, inst.face_base))
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        raw = inst.batch.buffers["p_" + resource].read(size=16 * rows, offset=16 * base) if rows else b""
        return np.frombuffer(raw, np.float32).reshape(rows, 4).copy()

    def download(self, handle: DeformHandle) -> tuple[np.ndarray, np.ndarray]:
        """Read back (positions (D,3), normals (D,3)) float32 in display order (export and tests only)."""
        inst = self._inst(handle)
        outs = inst.batch.plan.outputs
        return (self._read_display(inst, outs["positions"])[:, :3].copy(),
                self._read_display(inst, outs["normals"])[:, :3].copy())

    def download_display(self, handle: DeformHandle, resource: str) -> np.ndarray:
        """Read back a display- or face-domain resource of the mesh as (rows, 4) float32 (tests, debugging)."""
        inst = self._inst(handle)
        valid = sorted(r for r, d in inst.batch.plan.domains.items() if d in ("display", "face"))
        if resource not in valid:
            raise ValueError(f"no display/face resource {resource!r}; valid: {valid}")
        return self._read_display(inst, resource)

    def download_control(self, handle: DeformHandle, resource: str) -> np.ndarray:
        """Read back a control-domain resource of the mesh, (V,3) (tests and debugging)."""
        inst = self._inst(handle)
        name = "d_" + resource
        if resource in inst.batch.plan.elided:
            raise ValueError(f"control resource {resource!r} is never written: its skin node was fused with the "
                             f"copy that reads it (one skin_copy dispatch); add the mesh with a graph config "
                             f"with fuse = false to read the control points back")
        if name not in inst.batch.buffers:
            valid = [k[2:] for k in inst.batch.buffers if k.startswith("d_")]
            raise ValueError(f"no control resource {resource!r}; valid: {valid}")
        n = inst.asset.topology.n_control
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        raw = inst.batch.buffers[name].read(size=16 * n, offset=16 * inst.dyn_base)
        return np.frombuffer(raw, np.float32).reshape(n, 4)[:, :3].copy()

    def spring_status(self, handle: DeformHandle) -> dict[str, Any]:
        """Convergence state of the mesh's last spring solve (reads back; tests and tools)."""
        inst = self._inst(handle)
        if "status" not in inst.batch.buffers:
            raise ValueError("this mesh's graph has no spring node")
        k = inst.batch.instances.index(inst)
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        raw = inst.batch.buffers["status"].read(size=L.DEFORM_STATUS.size, offset=k * L.DEFORM_STATUS.size)
        rec = np.frombuffer(raw, L.DEFORM_STATUS.dtype)[0]
        return {"iterations": int(rec["iterations"]), "stopped": bool(rec["converged"]),
                "reason": L.REASONS[int(rec["reason"])], "last_displacement": float(rec["last_disp"]),
                "energy": float(rec["energy"]), "dispatches": inst.batch.iterations_run}

    def gpu_bytes(self) -> dict[str, int]:
        """Bytes of GPU memory the graph holds per buffer kind over all batches (for the benchmark)."""
        out: dict[str, int] = {}
        for b in self._batches.values():
            for name, buf in b.buffers.items():
                out[name] = out.get(name, 0) + buf.size
            for name, tex in b.images.items():  # rgba 32-bit texels
                out[name] = out.get(name, 0) + tex.width * tex.height * 16
        return out

    def release(self) -> None:
        """Release every GPU object the graph owns (output buffers given by the caller are left alone)."""
        for h in list(self._instances):
            self.remove_mesh(DeformHandle(h))
        for b in self._batches.values():
            b.release()
        self._batches = {}
        for q in self._queries.values():
            self.resources.release(q)
        self._queries = {}
        if self._own_programs:
            self.programs.release()
