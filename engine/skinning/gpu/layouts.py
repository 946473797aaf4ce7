"""std430 layouts, SSBO binding points and constants of the deform compute shaders (one definition each).

The structs are :class:`engine.gpu.layouts.Std430Struct` declarations; their GLSL text reaches the shaders
through the virtual include ``generated/deform_layouts.glsl`` (registered with the shader library by the
deformer graph), and the binding points and limits reach GLSL as ``#define``s taken from :data:`BINDINGS` and
:func:`defines_for`. No number below is typed again in a shader.

Pool layout (see pools.py): control-domain data of every mesh instance of a batch is concatenated in one
*dynamic pool*; each instance's range starts at ``group_base * LOCAL_SIZE`` and is padded to a whole number of
work groups, so a work group never spans two instances and ``group_instance[gl_WorkGroupID.x]`` names its
instance. Static data (bind positions, weights, binding, the spring's per-vertex ``SpringVertex`` records with
the step-limiting coefficients, the display -> control map, bind normals) lives in a *static pool* with one
segment per asset, shared by all instances of it (``static_base``, ``display_static``); a batch creates only the
static SSBOs its stages bind. The CSR adjacency with its rest values and the triangle topology of the normal stages
are static images with the same per-asset segments (``adj_base``; see "spring stage images" and "surface normal
stages" below).

Display- and face-domain resources (what copy, face normals and vertex normals write; what the renderer pulls)
are pooled the same way: each instance's display range starts at ``dgroup_base * LOCAL_SIZE``, its face range
at ``fgroup_base * LOCAL_SIZE``, both padded to whole work groups, with their own work-group -> instance tables.
A display range therefore starts at a multiple of ``LOCAL_SIZE * 16`` bytes (1024), which satisfies every
GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT (at most 256 by the spec), so the renderer can bind it with
glBindBufferRange (see :func:`range_groups`).

The fused skin_copy stage (gpu_plan fusion) reads its inputs from read-only 2D images of vec4 records instead
(``IMAGE_RECORDS``: SkinVertex per display vertex, SkinJointLbs/SkinJointDqs per joint, SkinHead per display
work group; why: the comment above SKIN_VERTEX); its outputs are the display pool above.
"""
from __future__ import annotations

import functools

import numpy as np

from engine.gpu.layouts import LOCAL_SIZE, MAX_JOINTS, Std430Struct
from engine.skinning.springs.params import DIFF_LAMBDA, STEP_SAFETY, VOLUME_LAMBDA

MAX_INFLUENCES = 4
"""Skin influences per vertex (glTF JOINTS_0/WEIGHTS_0)."""

# ---- per-instance record (one per mesh instance in a batch) ---------------------------------------------
DEFORM_INSTANCE = Std430Struct("DeformInstance", [
    ("dyn_base", "int"),        # first control point of the instance in the dynamic pool
    ("static_base", "int"),     # first control point of its asset in the static pool
    ("n_control", "int"),       # control points of the mesh
    ("adj_base", "int"),        # first CSR slot of its asset in the SpringSlot image
    ("joint_base", "int"),      # first joint of the instance in the joint pool (per frame)
    ("bone_base", "int"),       # first bone of the instance in the bone pool (per frame)
    ("group_base", "int"),      # first work group of the instance (dyn_base = group_base * LOCAL_SIZE)
    ("n_groups", "int"),        # work groups of the instance
    ("flags", "uint"),          # SPRING_* / FLAG_* bits below
    ("max_iterations", "int"),  # spring iterations per frame (upper bound)
    ("scheme", "int"),          # convergence scheme (SCHEME_*)
    ("n_bones", "int"),         # bones of the instance's binding
    # display / face pools (copy, face normals, vertex normals run once per batch over them)
    ("display_base", "int"),    # first display vertex of the instance in the display pool (= dgroup_base * LOCAL_SIZE)
    ("display_static", "int"),  # first display vertex of its asset in the static pool (map, bind normals)
    ("n_display", "int"),       # display vertices of the mesh
    ("dgroup_base", "int"),     # first display work group of the instance
    ("face_base", "int"),       # first triangle of the instance in the face pool (= fgroup_base * LOCAL_SIZE)
    ("n_tris", "int"),          # display triangles of the mesh
    ("fgroup_base", "int"),     # first face work group of the instance
    ("dt", "float"),            # spring time step
    ("thr_disp", "float"),      # displacement threshold (AABB_min_extent * displacement_rel)
    ("thr_force", "float"),     # force threshold
    ("limit", "float"),         # divergence: a step longer than this (divergence_rel * bbox diagonal)
    ("tiny", "float"),          # 1e-12 * bbox diagonal: lengths below are zero (reference SpringRest.tiny)
    ("handle_weight", "float"),  # factor on neighbour forces of an edit handle (Algorithm 1)
    ("damping", "float"),       # semi-implicit velocity damping; explicit with FLAG_MOMENTUM: the momentum beta
    ("energy_rtol", "float"),   # energy scheme: relative decrease that still counts as progress
    ("k", "vec4"),              # stiffness x k_s (edges), y k_l (lengths), z k_t (torsion), w k_b (bone)
    ("k2", "vec4"),             # x k_r (radial), y k_e (edits), zw unused
    ("k3", "vec4"),             # x k_v (volume term; 0 where it does not act: springs.volume_acts), y k_d
                                # (differential term), zw unused
])

# ---- per-instance convergence state (written by the GPU only) -----------------------------------------
DEFORM_STATUS = Std430Struct("DeformStatus", [
    ("iterations", "int"),      # accepted spring iterations this frame
    ("converged", "int"),       # 1 once the instance stopped (any reason)
    ("reason", "int"),          # REASON_*
    ("max_disp_bits", "uint"),  # floatBitsToUint(max |x_new - x|) of the last dispatch
    ("max_force_bits", "uint"),  # floatBitsToUint(max |F(x)|) of the last dispatch
    ("energy", "float"),        # total energy (+ kinetic) at the input of the last dispatch
    ("prev_energy", "float"),   # the same one dispatch earlier
    ("last_disp", "float"),     # max displacement of the last accepted step
])

# ---- per-joint pose (per frame, CPU -> GPU) ----------------------------------------------------------
DEFORM_JOINT = Std430Struct("DeformJoint", [
    ("skin", "mat4"),     # skinning matrix (bind mode) or differential matrix (differential mode), for GLSL
    ("stretch", "mat4"),  # DQS: symmetric stretch S of the polar decomposition skin = [R t][S 0]
    ("qr", "vec4"),       # DQS: unit quaternion of R (x, y, z, w)
    ("qd", "vec4"),       # DQS: dual part 0.5 (t, 0) qr
])

# ---- fused skin_copy stage (gpu_plan fusion): per display vertex, per joint, per display work group ---------
# The skin_copy kernel is bound by memory instructions on llvmpipe, where an SSBO load is a per-lane loop with a
# branch per component while an image load is one branch-free gather (measured there: ~3x cheaper for a
# coalesced vec4, ~6x for a gathered one, ~2x cheaper than an indexed uniform-block load). So its read-only
# inputs are 2D images of vec4 texels, one record = TEXELS consecutive texels, IMAGE_ROW_ITEMS records per
# image row (record i at x = texel + TEXELS * (i & (IMAGE_ROW_ITEMS - 1)), y = i >> IMAGE_ROW_SHIFT); only
# its outputs, which the renderer binds, are SSBOs. The records below are vec4-only, so the numpy dtype is the
# texel order; the shader reads field f of a record as texel <STRUCT>_<F> (defines from image_record_defines).
SKIN_VERTEX = Std430Struct("SkinVertex", [
    ("bind_joints", "uvec4"),  # xyz float bits of the bind position (of its control point), w 4 joint ids x 8 bits
    ("weights", "vec4"),       # skin weights (of its control point)
    ("normal", "vec4"),        # xyz bind normal of the display vertex (zero when the graph skins no normals)
])
JOINT_ID_BITS = 8  # joint ids packed in SkinVertex.bind_joints.w (MAX_JOINTS of one skin must fit)
assert MAX_JOINTS <= 1 << JOINT_ID_BITS
SKIN_JOINT_LBS = Std430Struct("SkinJointLbs", [
    ("rows", "vec4", 3),       # rows 0..2 of the skinning matrix (p' = rows . (p, 1))
])
SKIN_JOINT_DQS = Std430Struct("SkinJointDqs", [
    ("qr", "vec4"),            # unit quaternion of R (x, y, z, w), as DeformJoint.qr
    ("qd", "vec4"),            # dual part 0.5 (t, 0) qr
    ("stretch", "vec4", 2),    # symmetric stretch S: (s00, s01, s02, s11), (s12, s22, 0, 0)
])
SKIN_JOINTS = {"lbs": SKIN_JOINT_LBS, "dqs": SKIN_JOINT_DQS}
SKIN_HEAD = Std430Struct("SkinHead", [
    ("group", "ivec4"),        # x SkinVertex of lane 0, y valid lanes (0: hole of the pool), z first joint, w 0
])

# ---- spring stage images (same reasoning as skin_copy: the spring iteration runs ~50x per frame and its cost
# follows the memory instructions): per control work group a head, per instance its spring parameters, per
# static control point its CSR range and SpringVertex data, per CSR slot the neighbour and its rest values.
# Integer-first records make rgba32i images; their float fields are read back with intBitsToFloat (the bits of
# an integer stored in a float image could be flushed as denormals, float bits in an integer image cannot).
SPRING_HEAD = Std430Struct("SpringHead", [
    ("group", "ivec4"),        # x static control point of lane 0, y valid lanes, z instance, w 0
])
SPRING_INSTANCE = Std430Struct("SpringInstance", [
    # x flags, y dispatches it takes part in (max_iterations, +1 energy), z dyn_base, w adj_base
    ("run", "ivec4"),
    ("step", "vec4"),          # dt, tiny, handle_weight, damping (DeformInstance fields)
    ("k", "vec4"),             # k_s, k_l, k_t, k_b
    ("k2", "vec4"),            # k_r, k_e, 0, 0
    ("k3", "vec4"),            # k_v (0: no volume term), bone_base (its regions' first row of B_VOLUME), k_d, 0
])
SPRING_POINT = Std430Struct("SpringPoint", [
    ("adj", "ivec4"),          # x first CSR slot (asset-local), y neighbours, z volume region (the point's bone,
                               # -1: no volume term), w 1 for the first point of its region (it clears a sum)
    ("sdir", "vec4"),          # SpringVertex.sdir
    ("rest", "vec4"),          # SpringVertex.rest
    ("lam", "vec4"),           # SpringVertex.lam
    ("vol", "vec4"),           # its region's bind volume V0_r, bind area S0_r, VOLUME_SCALE / |V0_r| (fixed point), N_r
    ("touch", "ivec4"),        # a glued point (springs.touch): x its face's first corner + 1 (0: not glued), y, z
                               # the other two corners (asset-local), w float bits of the first barycentric
    ("touch2", "vec4"),        # a glued point: x the second barycentric, yzw its bind offset in the face's frame
])
SPRING_SLOT = Std430Struct("SpringSlot", [
    ("nbr", "ivec4"),          # x neighbour control point (asset-local), y the face's third corner m (face (i, x, m)
                               # in winding order; -1 none: springs.slot_third_corners), z float bits of the
                               # differential term's slot weight w_ij / sum_k w_ik (springs.diff_weights, normalised
                               # per point: in [0, 1] whatever the units), w 0
    ("rest", "vec4"),          # rest_len, rest_dlen, rest_angle, w_t
])
# The spring's per-frame state is images too (written by the spring stages with imageStore, so an iteration
# gathers its neighbours' positions and attachments as image loads): one record per control point of the pool.
SPRING_STATE = Std430Struct("SpringState", [
    ("x", "vec4"),             # xyz position, w 1
    ("v", "vec4"),             # xyz velocity
])
SPRING_FRAME = Std430Struct("SpringFrame", [
    ("attach", "vec4"),        # xyz posed attachment a_i
    ("bone_ref", "vec4"),      # xyz bone reference direction
    ("diff", "vec4"),          # xyz the differential term's target offset R_i delta0_i (springs.PoseFrame.diff;
                               # written only when the instance's k_d != 0)
])
# ---- surface normal stages (face normals per face work group, vertex normals per display work group): a head
# per work group and the static topology as images; positions and faces stay SSBOs (pooled resources that
# the renderer binds and tests read back).
NORMALS_HEAD = Std430Struct("NormalsHead", [
    ("group", "ivec4"),        # x static record of lane 0 (triangle / display vertex), y valid lanes (0: hole),
                               # z face normals: display_base, vertex normals: face_base; w vertex normals:
                               # first NormalFaces texel of the asset
])
NORMAL_TRI = Std430Struct("NormalTri", [
    ("corners", "ivec4"),      # xyz display vertices (asset-local) of a display triangle
])
NORMAL_VERTEX = Std430Struct("NormalVertex", [
    ("lists", "ivec4"),        # x first NormalFaces texel of the display vertex's own triangles, y their count,
                               # z the same of the triangles around its control point, w their count
])
NORMAL_FACES = Std430Struct("NormalFaces", [
    ("tris", "ivec4"),         # four triangles (asset-local) of a list; lists start at a texel, padded with -1
])
NORMAL_FACE = Std430Struct("NormalFace", [
    ("normal", "vec4"),        # face normals' output as written to the face pool, (unit normal, |cross|)
])
NORMAL_LIST_WIDTH = 4          # triangles per NormalFaces texel (its ivec4)
IMAGE_RECORDS = (SKIN_VERTEX, SKIN_JOINT_LBS, SKIN_JOINT_DQS, SKIN_HEAD, SPRING_HEAD, SPRING_INSTANCE,
                 SPRING_POINT, SPRING_SLOT, SPRING_STATE, SPRING_FRAME, NORMALS_HEAD, NORMAL_TRI, NORMAL_VERTEX,
                 NORMAL_FACES, NORMAL_FACE)
IMAGE_ROW_SHIFT = 10
IMAGE_ROW_ITEMS = 1 << IMAGE_ROW_SHIFT
VOLUME_SCALE = 2.0 ** 22
"""Fixed point of the volume sums (B_VOLUME): a point adds round(V_i VOLUME_SCALE / |V0_r|) to its region's int
sum, so a region at its bind volume sums to 2^22 (headroom to 512 x, rounding ~2.4e-7 of V0_r per point)."""


def image_record_defines() -> dict[str, int]:
    """``<STRUCT>_TEXELS`` and ``<STRUCT>_<FIELD>`` (texel index) of every image record, e.g.
    SKIN_JOINT_DQS_QD = 1 (GLSL names in upper snake case of the struct and field names)."""
    import re

    out: dict[str, int] = {}
    for rec in IMAGE_RECORDS:
        if any(f.glsl_type not in ("vec4", "ivec4", "uvec4") for f in rec.fields):
            raise ValueError(f"image record {rec.name}: vec4 members only (one texel each)")
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", rec.name).upper()
        out[f"{name}_TEXELS"] = rec.size // 16
        for f in rec.fields:
            out[f"{name}_{f.name.upper()}"] = f.offset // 16
    return out


# ---- per-bone pose (per frame, CPU -> GPU) -----------------------------------------------------------
DEFORM_BONE = Std430Struct("DeformBone", [
    ("p", "vec4"),        # xyz posed parent end P', w 1: the instance's springs start warm this frame (else 0)
    ("c", "vec4"),        # xyz posed child end C'
    ("p_src", "vec4"),    # xyz parent end in the source pose (bind, or last frame in differential mode)
    ("c_src", "vec4"),    # xyz child end in the source pose
    ("q_start", "vec4"),  # IRS: bend quaternion at the parent end (w >= 0)
    ("q_end", "vec4"),    # IRS: bend quaternion at the child end
    ("rot", "mat4"),      # R_now R_src^T of the parent joint (polar rotations; GLSL layout)
    ("rot_now", "mat4"),  # R_now of the parent joint relative to bind (GLSL layout)
])

# ---- spring static data per control point (static pool, one segment per asset; set up at bind) ----------
SPRING_VERTEX = Std430Struct("SpringVertex", [
    ("sdir", "vec4"),  # xyz bind unit scale vector s_dir (frame-mode bone reference), w r = bind |s|
    ("rest", "vec4"),  # x bone_angle (cone mode), y s_floor (|s| floor of denominators), zw unused
    ("lam", "vec4"),   # Gershgorin coefficients per unit stiffness (springs.lambda_columns), multiplying
                       # x k_s + k_l, y k_t, z k_b, w k_r; lambda_i = dot(lam, those) + k_e K_i
                       # (+ k_v VOLUME_LAMBDA where the volume term acts, + k_d DIFF_LAMBDA: step limiting)
    ("rigid", "vec4"),  # rigid point (springs.rigid_points): xyz bind offset from its joint, w bone + 1 (0: free,
                        # -1: a glued point, springs.touch; its face in SpringPoint.touch)
    ("diff0", "vec4"),  # xyz the differential term's bind offset delta0_i from the weighted one-ring mean
                        # (springs.SpringRest.diff0), w its share of k_d (springs.diff_scales)
])

# ---- surface-edit row per control point of the pool (records.edit_rows; spring and spring_frame read it) -----
SPRING_EDIT_ROW = Std430Struct("SpringEdit", [
    ("ck", "vec4"),    # xyz C_i (weighted edit target), w K_i (edit stiffness)
    ("q", "vec4"),     # x Q_i (energy constant), y 1 = held (an edit's static set), zw 0
])

DEFORM_LAYOUTS = (DEFORM_INSTANCE, DEFORM_STATUS, DEFORM_JOINT, DEFORM_BONE, SPRING_VERTEX, SPRING_EDIT_ROW)
LAYOUT_INCLUDE = "generated/deform_layouts.glsl"

# ---- spring flags and convergence schemes ------------------------------------------------------------
SPRING_EDGE = 1 << 0      # F_s: edge-length springs
SPRING_LENGTH = 1 << 1    # F_l: scale-vector length springs
SPRING_BONE = 1 << 2      # F_b: bone torsion springs
SPRING_TORSION = 1 << 3   # F_t: attachment torsion springs between neighbours
SPRING_EDIT = 1 << 4      # F_e: surface edit forces
SPRING_RADIAL = 1 << 5    # F_r: radial length springs
FLAG_SEMI_IMPLICIT = 1 << 8   # semi-implicit Euler with damping (else explicit eq. 23)
FLAG_BONE_CONE = 1 << 9       # bone springs against the bone run with the bind angle (else the carried frame)
FLAG_KEEP_VELOCITY = 1 << 10  # frame-dependent mode: start from last frame's velocities
FLAG_STEP_LIMIT = 1 << 11     # per-vertex steps dt_i = min(dt, STEP_SAFETY / lambda_i) (springs.step_sizes)
FLAG_MOMENTUM = 1 << 12       # explicit heavy ball: u' = beta u + dt_i F, x' = x + u' (beta in the damping slot)

SCHEME_ITERATIONS = 0     # run max_iterations
SCHEME_DISPLACEMENT = 1   # stop when the largest position change < threshold
SCHEME_FORCE = 2          # stop when the largest force magnitude < threshold
SCHEME_ENERGY = 3         # stop when the total spring energy stops decreasing (local minimum)
SCHEMES = {"iterations": SCHEME_ITERATIONS, "displacement": SCHEME_DISPLACEMENT, "force": SCHEME_FORCE,
           "energy": SCHEME_ENERGY}

REASON_NONE = 0
REASON_MAX_ITERATIONS = 1
REASON_DISPLACEMENT = 2
REASON_FORCE = 3
REASON_ENERGY = 4
REASON_DIVERGED = 5
REASONS = ("", "max_iterations", "displacement", "force", "energy", "diverged")

# ---- SSBO binding points (one table; each shader gets the subset it declares as defines). Only what some shader
# declares: static inputs the spring iteration, skin_copy and the normal stages read are images (IMAGE_BINDINGS).
# Numbered densely so that every point stays below 32, the GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS of common drivers.
BINDINGS: dict[str, int] = {
    "B_INSTANCES": 0,
    "B_GROUPS": 1,
    "B_STATUS": 2,
    "B_SRC": 3,
    "B_DST": 4,
    "B_JOINT_IDS": 5,
    "B_WEIGHTS": 6,
    "B_JOINTS": 7,
    "B_BONES": 8,
    "B_ATTACH": 9,
    "B_SCALE": 10,
    "B_BONE_OF": 11,
    "B_EDIT": 12,
    "B_SPRING_LOOP": 13,   # spring iterations: the dispatch index and the work-group ticket (spring_iterate.glsl)
    "B_INDIRECT": 14,
    "B_PARTIALS": 15,
    "B_SKINNED": 16,
    "B_MAP": 17,
    "B_FACES": 18,
    "B_IRS": 19,
    "B_VSTATIC": 20,
    "B_VEL": 21,
    "B_NMAT": 22,          # skinned-normal transform per control point (3 vec4 columns), skin -> copy
    "B_BIND_NORMALS": 23,  # bind normals per display vertex (static pool)
    "B_DST_NORMALS": 24,   # normals the copy stage writes (skin node option normals = "skinned")
    "B_WARM": 25,          # spring warm start: the spring stage's last output (its target), read by spring_frame
    "B_BONES_PREV": 26,    # spring warm start: last frame's DeformBone records
    # contact stage (stages/contact.py): per-instance lengths, the hashed grid (bucket counts, starts and the
    # per-pass flags in one uint buffer), the sorted entries, the bind positions, the pushes of smoothed passes
    "B_CONTACT_PARAMS": 27,
    "B_CONTACT_GRID": 28,
    "B_CONTACT_ENTRIES": 29,
    "B_CONTACT_BIND": 30,
    "B_CONTACT_PUSH": 31,  # two halves (contact.comp writes the first, contact_smooth.comp ping-pongs), restore part
    # the spring stage's result, read by the contact stage's volume restore (contact.comp). Shares 26 with
    # B_BONES_PREV (spring_frame.comp only): no shader declares both, each stage binds before dispatching.
    "B_CONTACT_ORIGIN": 26,
    # spring volume term: per bone of the batch three int sums of its region's volume (fixed point), used in turn
    # by the iterations (spring.comp), and a flag (a surface edit touches the region: records.volume_rows).
    # Shares 27 with B_CONTACT_PARAMS: no shader declares both, and each stage binds its buffers before its
    # dispatches.
    "B_VOLUME": 27,
    # morph stage (stages/morph.py): the batch's target deltas, its per-instance table and the weights of the
    # frame. Share the skin's static input points: no shader declares both, each stage binds before dispatching.
    "B_MORPH_DELTAS": 5,
    "B_MORPH_TABLE": 6,
    "B_MORPH_WEIGHTS": 7,
}

#: image units of the image-reading stages (their own namespace; the renderer binds none). Units are per stage: each
#: dispatch binds every unit its shader declares, and no shader declares more than 8 (the GL minimum of
#: GL_MAX_COMPUTE_IMAGE_UNIFORMS), so different stages may share a number.
IMAGE_BINDINGS: dict[str, int] = {
    # skin_copy
    "I_SKIN_VERTS": 0,     # SkinVertex per display vertex (static pool), rgba32ui
    "I_SKIN_JOINTS": 1,    # SkinJointLbs / SkinJointDqs per joint of the batch (per frame), rgba32f
    "I_SKIN_HEADS": 2,     # SkinHead per display work group of the pool, rgba32i
    # spring (the iteration), spring_frame and resolve
    "I_SPRING_HEADS": 0,   # SpringHead per control work group, rgba32i
    "I_SPRING_INSTANCES": 1,  # SpringInstance per instance, rgba32i
    "I_SPRING_POINTS": 2,  # SpringPoint per static control point, rgba32i
    "I_SPRING_SLOTS": 3,   # SpringSlot per static CSR slot, rgba32i
    "I_SPRING_FRAME": 4,   # SpringFrame per control point of the pool, rgba32f
    "I_SPRING_RING": 5,    # SpringState ring: three images stacked in one, bound once per frame (x_0 into the
                           # third by spring_frame; spring reads and writes it; resolve reads it), rgba32f
    # face_normals and vertex_normals
    "I_NORMALS_HEADS": 0,  # NormalsHead per face / display work group, rgba32i
    "I_NORMAL_TRIS": 1,    # NormalTri per static triangle, rgba32i
    "I_NORMAL_VERTS": 1,   # NormalVertex per static display vertex, rgba32i
    "I_NORMAL_FACES": 2,   # NormalFaces texels of every asset's lists, rgba32i
    "I_FACE_IMAGE": 3,     # NormalFace per pooled triangle slot (image copy of the face resource), rgba32f
}

METHOD_IDS = {"lbs": 0, "dqs": 1, "rigid": 2, "irs": 3}

CONSTANTS: dict[str, int | float] = {
    "METHOD_LBS": METHOD_IDS["lbs"],
    "METHOD_DQS": METHOD_IDS["dqs"],
    "METHOD_RIGID": METHOD_IDS["rigid"],
    "METHOD_IRS": METHOD_IDS["irs"],
    "LOCAL_SIZE": LOCAL_SIZE,
    "MAX_JOINTS": MAX_JOINTS,
    "MAX_INFLUENCES": MAX_INFLUENCES,
    "JOINT_ID_BITS": JOINT_ID_BITS,
    "IMAGE_ROW_SHIFT": IMAGE_ROW_SHIFT,
    "NORMAL_LIST_WIDTH": NORMAL_LIST_WIDTH,
    **image_record_defines(),
    "SPRING_EDGE": SPRING_EDGE,
    "SPRING_LENGTH": SPRING_LENGTH,
    "SPRING_BONE": SPRING_BONE,
    "SPRING_TORSION": SPRING_TORSION,
    "SPRING_EDIT": SPRING_EDIT,
    "SPRING_RADIAL": SPRING_RADIAL,
    "FLAG_SEMI_IMPLICIT": FLAG_SEMI_IMPLICIT,
    "FLAG_BONE_CONE": FLAG_BONE_CONE,
    "FLAG_KEEP_VELOCITY": FLAG_KEEP_VELOCITY,
    "FLAG_STEP_LIMIT": FLAG_STEP_LIMIT,
    "FLAG_MOMENTUM": FLAG_MOMENTUM,
    "STEP_SAFETY": float(STEP_SAFETY),
    "VOLUME_LAMBDA": float(VOLUME_LAMBDA),
    "DIFF_LAMBDA": float(DIFF_LAMBDA),
    "VOLUME_SCALE": float(VOLUME_SCALE),
    "REASON_MAX_ITERATIONS": REASON_MAX_ITERATIONS,
    "REASON_DISPLACEMENT": REASON_DISPLACEMENT,
    "REASON_FORCE": REASON_FORCE,
    "REASON_ENERGY": REASON_ENERGY,
    "REASON_DIVERGED": REASON_DIVERGED,
    "SCHEME_ITERATIONS": SCHEME_ITERATIONS,
    "SCHEME_DISPLACEMENT": SCHEME_DISPLACEMENT,
    "SCHEME_FORCE": SCHEME_FORCE,
    "SCHEME_ENERGY": SCHEME_ENERGY,
}


def layouts_glsl() -> str:
    """Text of ``generated/deform_layouts.glsl``."""
    parts = ["// Generated from engine/skinning/gpu/layouts.py; do not edit (one definition of each layout)."]
    parts += [s.glsl() for s in DEFORM_LAYOUTS]
    return "\n".join(parts) + "\n"


def defines_for(source_text: str, extra: dict[str, object] | None = None) -> dict[str, object]:
    """The binding/constant defines a shader's expanded text mentions (the loader refuses unused ones)."""
    out = {k: _all_tables()[k] for k in _mentioned(source_text, tuple(_all_tables()))}
    if extra:
        out.update({k: extra[k] for k in _mentioned(source_text, tuple(extra))})
    return out


def _all_tables() -> dict[str, object]:  # noqa: N802 - read at call time: tests patch CONSTANTS
    return {**BINDINGS, **IMAGE_BINDINGS, **CONSTANTS}


@functools.lru_cache(maxsize=256)
def _mentioned(source_text: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The names that occur as whole words in the text (cached: every new graph asks for the same shaders)."""
    import re

    return tuple(k for k in names if re.search(rf"\b{re.escape(k)}\b", source_text))


def pad_groups(n: int) -> int:
    """Work groups that cover ``n`` items (at least one, so every instance owns a group)."""
    return max(1, -(-int(n) // LOCAL_SIZE))


def range_groups(alignment_bytes: int) -> int:
    """Work groups a pooled display range's start must be a multiple of so that its byte offset
    (``groups * LOCAL_SIZE * 16``) is a multiple of ``alignment_bytes`` (1 for every conforming driver)."""
    a = int(alignment_bytes)
    if a < 1:
        raise ValueError(f"buffer offset alignment must be >= 1 byte, got {alignment_bytes!r}")
    import math

    return a // math.gcd(a, LOCAL_SIZE * 16)


def image_rows(records: np.ndarray) -> np.ndarray:
    """A structured array of image records -> the (rows, IMAGE_ROW_ITEMS * texels, 4) texel array of the image
    (zero padded to whole rows, at least one) in the scalar type of the record's first field (the bits of
    other fields reinterpreted: SkinVertex is an rgba32ui image, the shader takes its floats back with
    uintBitsToFloat)."""
    rec = np.ascontiguousarray(records)
    texels = rec.dtype.itemsize // 16
    fields, names = rec.dtype.fields, rec.dtype.names
    assert fields is not None and names is not None, "records are a structured array"
    base = fields[names[0]][0].base
    flat = rec.view(base).reshape(-1, texels * 4)
    rows = max(1, -(-flat.shape[0] // IMAGE_ROW_ITEMS))
    out = np.zeros((rows * IMAGE_ROW_ITEMS, texels * 4), base)
    out[:flat.shape[0]] = flat
    return out.reshape(rows, IMAGE_ROW_ITEMS * texels, 4)


def pack_joint_ids(joints: np.ndarray) -> np.ndarray:
    """(N,4) joint ids in [0, 2^JOINT_ID_BITS) -> (N,) uint32, id k in bits 8k..8k+7 (SkinVertex)."""
    j = np.asarray(joints).astype(np.uint32)
    if j.size and int(j.max()) >= 1 << JOINT_ID_BITS:
        raise ValueError(f"joint ids must be < {1 << JOINT_ID_BITS} to pack, got {int(j.max())}")
    out = np.zeros(j.shape[0], np.uint32)
    for k in range(MAX_INFLUENCES):
        out |= j[:, k] << np.uint32(JOINT_ID_BITS * k)
    return out


def vec4(x: np.ndarray, w: float = 0.0) -> np.ndarray:
    """(N,3) -> (N,4) float32 with a constant w (SSBOs never hold vec3)."""
    x = np.asarray(x, np.float32).reshape(-1, 3)
    out = np.empty((x.shape[0], 4), np.float32)
    out[:, :3] = x
    out[:, 3] = w
    return out
