"""Set-up records of the deformer graph: what is built once per asset and per instance layout (no GL).

* :class:`Asset`: the static data of one asset (bind data, weights, binding, spring rest values, the normal
  stages' topology, the fused stage's SkinVertex records), shared by its instances inside a batch;
  :func:`make_asset` builds it from the mesh and skin;
* :class:`Instance`: one mesh instance with its ranges in the batch's pools (filled by
  :meth:`engine.skinning.gpu.pools.Batch.layout`);
* the static tables: which static SSBOs exist (:data:`STATIC`, rows per domain) and which record images the
  fused, spring and normal stages read (:data:`STATIC_IMAGES`, :data:`SPRING_IMAGES`, :data:`NORMAL_IMAGES`);
* the per-layout head records (one per work group of a pool: where its lanes start, how many are valid, which
  instance) and the per-instance tables (``DeformInstance``, ``SpringInstance``).

Record layouts are :mod:`engine.skinning.gpu.layouts`; the numbers come from the numpy references through
:mod:`engine.skinning.gpu.spring`.
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import moderngl
import numpy as np

from engine.gpu.layouts import LOCAL_SIZE
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu import spring as gpu_spring
from engine.skinning.springs.rest import edited_regions
from engine.skinning.types import Binding, MeshTopology


@dataclass(frozen=True)
class DeformHandle:
    """Opaque handle of one mesh instance in a :class:`engine.skinning.gpu.graph.DeformerGraph`."""

    id: int


@dataclass
class Asset:
    """Static data of one asset (shared by its instances inside a batch); CPU copies, packed per batch."""

    key: Hashable
    topology: MeshTopology
    n_joints: int
    n_bones: int
    bind_joints: np.ndarray       # (J,4,4) float64
    parents: np.ndarray
    binding: Binding | None
    arrays: dict[str, np.ndarray]  # per static buffer / image name -> rows (control, display, CSR, ...)
    users: int = 0
    bend_refs: tuple[np.ndarray, np.ndarray] | None = None
    #: morph targets: (M,V,3) position deltas per control point, (M,D,3) normal deltas per display vertex or
    #: None (the morph stage reads them; engine.skinning.gpu.stages.morph)
    morph_positions: np.ndarray | None = None
    morph_normals: np.ndarray | None = None
    #: (topology, binding) of the morphed rest at the default weights (the springs' rest), or None
    rest: tuple[MeshTopology, Binding | None] | None = None

    @property
    def n_targets(self) -> int:
        return 0 if self.morph_positions is None else int(self.morph_positions.shape[0])

    @property
    def n_tris(self) -> int:
        return int(self.topology.display_triangles.shape[0])


@dataclass
class Instance:
    """One mesh instance of a batch: its asset, spring parameters, caller-given outputs and pool ranges."""

    handle: DeformHandle
    asset: Asset
    params: Any
    given: dict[str, moderngl.Buffer]   # display resources the caller gave (copied into after each run)
    # filled by Batch.layout()
    group_base: int = 0
    n_groups: int = 0
    dgroup_base: int = 0
    fgroup_base: int = 0
    joint_base: int = 0
    bone_base: int = 0
    laid_out: bool = False
    edit: np.ndarray | None = None     # (V,4) (C.xyz, K) or None
    edit_q: np.ndarray | None = None   # (V,) Q
    edit_held: np.ndarray | None = None  # (V,) 1.0 where an edit's static set holds the point
    morph_weights: np.ndarray | None = None  # (M,) float32 this instance's morph weights (morphed assets)

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


#: static SSBOs per batch (a batch creates those its stages bind, ``stages.static_reads``): name -> (domain of
#: rows, numpy dtype of one row, width). Adjacency, rest values, triangles and the triangle lists around
#: vertices have no SSBO: the stages that read them take them from images (SPRING_IMAGES, NORMAL_IMAGES).
STATIC = {
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
#: static images per batch (fused skin_copy stage only): name -> record layout of the asset's rows
STATIC_IMAGES = {"dskin": L.SKIN_VERTEX}
#: static images of batches with a spring stage: name -> (record layout, segment kind of the asset's rows)
SPRING_IMAGES = {"spoints": (L.SPRING_POINT, "control"), "sslots": (L.SPRING_SLOT, "adj")}
#: static images of batches with face / vertex normal stages: name -> record layout
NORMAL_IMAGES = {"ntris": L.NORMAL_TRI, "nverts": L.NORMAL_VERTEX, "nfaces": L.NORMAL_FACES}


# ----------------------------------------------------------------------------------------------------------
# per-asset records (set-up time, vectorised)
def bind_normals(topo: MeshTopology, normals: np.ndarray | None) -> np.ndarray:
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


def skin_vertices(topo: MeshTopology, joints: np.ndarray, weights: np.ndarray,
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


def spring_points(topo: MeshTopology, vstatic: np.ndarray, volume: dict[str, np.ndarray] | None = None
                  ) -> np.ndarray:
    """(V,) SpringPoint records of the spring stage: CSR range (asset-local), the SpringVertex fields and the
    volume term's region records (``gpu_spring.spring_arrays``; none: no volume term)."""
    rec = L.SPRING_POINT.zeros(topo.n_control)
    rec["adj"][:, 0] = topo.adj_offset
    rec["adj"][:, 1] = topo.adj_count
    rec["adj"][:, 2] = -1
    sv = np.ascontiguousarray(vstatic, np.float32).view(L.SPRING_VERTEX.dtype).reshape(-1)
    for name in ("sdir", "rest", "lam"):
        rec[name] = sv[name]
    if volume is not None:
        rec["adj"][:, 2:] = volume["region"]
        rec["vol"] = volume["vol"]
        if "touch" in volume:  # the glued points' faces (gpu_spring.spring_arrays)
            rec["touch"] = volume["touch"]
            rec["touch2"] = volume["touch2"]
    return rec


def spring_slots(topo: MeshTopology, rest: np.ndarray, third: np.ndarray | None = None,
                 diff_w: np.ndarray | None = None) -> np.ndarray:
    """(H,) SpringSlot records of the spring stage: neighbour (asset-local), the face's third corner (-1 none),
    the differential term's normalised slot weight (float bits; ``gpu_spring.diff_slot_weights``, none: 0) and
    rest values per CSR slot."""
    rec = L.SPRING_SLOT.zeros(int(topo.adj_index.shape[0]))
    rec["nbr"][:, 0] = topo.adj_index
    rec["nbr"][:, 1] = -1 if third is None else third
    if diff_w is not None:
        rec["nbr"][:, 2] = np.ascontiguousarray(diff_w, np.float32).view(np.int32)
    rec["rest"] = rest
    return rec


def padded_lists(offset: np.ndarray, count: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def normal_records(topo: MeshTopology, dface: np.ndarray, dface_index: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(NormalTri per display triangle, NormalVertex per display vertex, NormalFaces texels) of an asset: the
    face and vertex normal stages' topology. Each display vertex names its own triangles' list (``dface``:
    CSR offset/count per display vertex into ``dface_index``) and the list of triangles around its control
    point (shared by the display vertices of one control point)."""
    tris = L.NORMAL_TRI.zeros(topo.display_triangles.shape[0])
    tris["corners"][:, :3] = topo.display_triangles
    d_first, d_lists = padded_lists(dface[:, 0], dface[:, 1], dface_index)
    c_first, c_lists = padded_lists(topo.face_offset, topo.face_count, topo.face_index)
    verts = L.NORMAL_VERTEX.zeros(topo.n_display)
    c = topo.control_of_display
    verts["lists"][:, 0] = d_first
    verts["lists"][:, 1] = dface[:, 1]
    verts["lists"][:, 2] = d_lists.shape[0] + c_first[c]
    verts["lists"][:, 3] = np.asarray(topo.face_count)[c]
    faces = L.NORMAL_FACES.zeros(d_lists.shape[0] + c_lists.shape[0])
    faces["tris"] = np.concatenate([d_lists, c_lists])
    return tris, verts, faces


def influence_sets(joints: np.ndarray) -> int:
    """vec4 sets (4 influence slots each) that hold the (N,K) joint ids: ceil(K / 4), at least 1."""
    k = int(np.asarray(joints).shape[1]) if np.ndim(joints) == 2 else L.MAX_INFLUENCES
    return max(1, -(-k // L.MAX_INFLUENCES))


def make_asset(key: Hashable, topo: MeshTopology, binding: Binding | None, joints: np.ndarray,
               weights: np.ndarray, inverse_bind: np.ndarray, parents: np.ndarray, irs_influence: Any,
               display_faces: tuple[np.ndarray, np.ndarray], normals: np.ndarray | None = None, *,
               skinned_normals: bool = False, fused: bool = False, influence_sets: int = 1,
               rest_shape: tuple[MeshTopology, Binding | None] | None = None) -> Asset:
    """The static records of one asset. joints/weights (D,K) or (V,K), K <= 4 * influence_sets (padded with
    weight-0 slots to that width: the batch's skin shader reads INFLUENCE_SETS vec4s per control point);
    inverse_bind (J,4,4) float64;
    display_faces: (offset/count (D,2), flat triangle indices) of the triangles around each display vertex;
    skinned_normals: the batch transforms bind normals (``normals`` or the bind surface's); fused: the batch
    has a skin_copy stage (SkinVertex records); rest_shape: the (topology, binding) the springs' rest state is built
    from when it is not the bind pose (a morphed mesh: its morphed rest at the default weights)."""
    v, d = topo.n_control, topo.n_display
    jn = np.asarray(joints)
    w = np.asarray(weights, np.float32)
    if jn.shape[0] == d and d != v:
        jn, w = jn[topo.display_of_control], w[topo.display_of_control]
    width = L.MAX_INFLUENCES * influence_sets
    if jn.ndim != 2 or jn.shape[0] != v or not 1 <= jn.shape[1] <= width or w.shape != jn.shape:
        raise ValueError(f"joints/weights must be (D,K)=({d},K) or (V,K)=({v},K) with 1 <= K <= {width}; got "
                         f"{jn.shape}, {w.shape}")
    if jn.shape[1] < width:  # unused slots: joint 0 with weight 0
        jn = np.concatenate([jn, np.zeros((v, width - jn.shape[1]), jn.dtype)], 1)
        w = np.concatenate([w, np.zeros((v, width - w.shape[1]), np.float32)], 1)
    ib = inverse_bind
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
    rest_topo, rest_binding = rest_shape if rest_shape is not None else (topo, binding)
    rest, arrays["vstatic"], volume = gpu_spring.spring_arrays(rest_topo, rest_binding, bind_joints, joints=jn,
                                                               weights=w)
    arrays["spoints"] = spring_points(topo, arrays["vstatic"], volume)
    arrays["vregion"] = volume["region"][:, 0].copy()  # per point its volume region (-1 none): volume_rows
    arrays["sslots"] = spring_slots(topo, rest, volume["third"], volume["diff_w"])
    arrays["irs"], d0 = gpu_spring.irs_arrays(topo, binding, bind_joints, irs_influence)
    arrays["scale"][:, 3] = d0
    arrays["map"] = topo.control_of_display.astype(np.int32)
    arrays["ntris"], arrays["nverts"], arrays["nfaces"] = normal_records(topo, *display_faces)
    arrays["bind_normals"] = bind_normals(topo, normals) if skinned_normals else np.zeros((0, 4), np.float32)
    arrays["dskin"] = skin_vertices(topo, jn, w, arrays["bind_normals"]) if fused else L.SKIN_VERTEX.zeros(0)
    asset = Asset(key, topo, int(ib.shape[0]), n_bones, bind_joints, parents, binding, arrays)
    if binding is not None:
        asset.bend_refs = gpu_spring.bend_refs(binding, bind_joints, parents)
    return asset


# ----------------------------------------------------------------------------------------------------------
# per-layout records (rebuilt when instances are added or removed)
StaticBases = dict[int, dict[str, int]]
"""id(asset) -> first row of the asset's segment per segment kind (control, adj, display, tri, nface)."""


def group_table(bases: list[int], sizes: list[int], total: int) -> np.ndarray:
    """Instance index of every work group of a pool (instance k owns groups bases[k] .. + sizes[k]); -1 for
    groups of no instance (holes left by removed meshes, alignment gaps), which the display stages skip."""
    out = np.full(total, -1, np.int32)
    for k, (b, n) in enumerate(zip(bases, sizes)):
        out[b:b + n] = k
    return out


def _head_rows(rec: np.ndarray, base: int, static: int, n: int, n_groups: int) -> np.ndarray:
    """Fill lanes 0/1 of the head records of one instance's groups (first static row of the group, valid
    lanes: 0 in holes) and return the rows written."""
    k = np.arange(n_groups)
    rows = base + k
    rec[rows, 0] = static + k * LOCAL_SIZE
    rec[rows, 1] = np.clip(n - k * LOCAL_SIZE, 0, LOCAL_SIZE)
    return rows


def display_heads(instances: list[Instance], bases: StaticBases, n_groups: int) -> np.ndarray:
    """SkinHead records per display work group for skin_copy: SkinVertex index of lane 0, valid lanes (0 in
    holes of the pool), first joint record of the instance."""
    rec = L.SKIN_HEAD.zeros(n_groups)
    heads = rec["group"]  # a view: filled in place
    for inst in instances:
        rows = _head_rows(heads, inst.dgroup_base, bases[id(inst.asset)]["display"],
                          inst.asset.topology.n_display, inst.n_dgroups)
        heads[rows, 2] = inst.joint_base
    return rec


def normals_heads(instances: list[Instance], bases: StaticBases, n_groups: int, *, faces: bool) -> np.ndarray:
    """NormalsHead records per face work group (``faces``: static triangle of lane 0, valid lanes,
    display_base) or per display work group (static display vertex of lane 0, valid lanes, face_base, first
    NormalFaces texel of the asset); holes of the pools keep zero valid lanes."""
    rec = L.NORMALS_HEAD.zeros(n_groups)
    heads = rec["group"]  # a view: filled in place
    for inst in instances:
        sb = bases[id(inst.asset)]
        if faces:
            n, base, static = inst.asset.n_tris, inst.fgroup_base, sb["tri"]
            extra = (inst.display_base, 0)
        else:
            n, base, static = inst.asset.topology.n_display, inst.dgroup_base, sb["display"]
            extra = (inst.face_base, sb["nface"])
        rows = _head_rows(heads, base, static, n, L.pad_groups(n))
        heads[rows, 2] = extra[0]
        heads[rows, 3] = extra[1]
    return rec


def spring_heads(instances: list[Instance], bases: StaticBases, n_groups: int) -> np.ndarray:
    """SpringHead records per control work group: static control point of lane 0, valid lanes, instance."""
    rec = L.SPRING_HEAD.zeros(n_groups)
    heads = rec["group"]  # a view: filled in place
    for k, inst in enumerate(instances):
        rows = _head_rows(heads, inst.group_base, bases[id(inst.asset)]["control"], inst.asset.topology.n_control,
                          inst.n_groups)
        heads[rows, 2] = k
    return rec


def instance_table(instances: list[Instance], bases: StaticBases) -> np.ndarray:
    """DeformInstance records of a batch: pool ranges of each instance and its spring fields."""
    t = L.DEFORM_INSTANCE.zeros(len(instances))
    scales: dict[int, tuple[float, float, float]] = {}  # per asset: instances of one mesh share them
    for k, inst in enumerate(instances):
        sb = bases[id(inst.asset)]
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
        if id(inst.asset) not in scales:
            scales[id(inst.asset)] = gpu_spring.mesh_scales(topo)
        gpu_spring.fill_record(t[k], inst.params, topo, scales=scales[id(inst.asset)])
    return t


def spring_instances(table: np.ndarray) -> np.ndarray:
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
    rec["k3"][:n, 0] = table["k3"][:, 0]
    rec["k3"][:n, 1] = table["bone_base"]
    rec["k3"][:n, 2] = table["k3"][:, 1]  # k_d
    return rec


def volume_rows(instances: list[Instance], n_bones: int) -> np.ndarray:
    """(max(1, n_bones), 4) int32: the B_VOLUME rows at the start of a frame, per bone of the batch three zeroed
    volume sums and a flag, 1 where the region has a surface-edit handle or a held point of its instance (the
    volume term leaves those regions alone: springs.edited_regions / volume_points)."""
    rows = np.zeros((max(1, n_bones), 4), np.int32)
    for inst in instances:
        if inst.edit is None or not inst.params.stiffness("k_e"):
            continue
        region = inst.asset.arrays["vregion"]
        regions = edited_regions(region, inst.edit[:, 3], inst.edit_held)
        rows[inst.bone_base + regions, 3] = 1
    return rows


#: bytes of one control point's surface-edit rows in the control pool (two vec4: (C.xyz, K), (Q, held, 0, 0))
EDIT_ROW_BYTES = 32


def instance_edit_rows(inst: Instance) -> np.ndarray:
    """(V, 2, 4) float32 surface-edit rows of one instance's control points: (C.xyz, K) and (Q, held, 0, 0);
    zeros where it has no edits (what its range of the control pool holds then)."""
    n = inst.asset.topology.n_control
    e = np.zeros((n, 2, 4), np.float32)
    if inst.edit is not None:
        e[:, 0] = inst.edit
        e[:, 1, 0] = inst.edit_q
        if inst.edit_held is not None:
            e[:, 1, 1] = inst.edit_held
    return e


def edit_rows(instances: list[Instance], n_dyn: int) -> np.ndarray:
    """(n_dyn, 2, 4) float32 surface-edit rows of the control pool: (C.xyz, K) and (Q, held, 0, 0) per point."""
    e = np.zeros((n_dyn, 2, 4), np.float32)
    for inst in instances:
        if inst.edit is not None:
            n = inst.asset.topology.n_control
            e[inst.dyn_base:inst.dyn_base + n] = instance_edit_rows(inst)
    return e
