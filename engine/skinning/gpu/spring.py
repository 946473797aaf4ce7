"""Set-up data of the GPU spring and IRS stages, taken from the numpy references (one definition of the maths).

* :func:`spring_params` normalises the ``spring=`` argument of ``DeformerGraph.add_mesh`` to a validated
  :class:`engine.skinning.springs.SpringParams`;
* :func:`rest_arrays` runs the reference's ``build_rest`` (bind edge lengths, scale-vector length differences and
  angles, torsion pair weights, bone angles, |s| floors, the Gershgorin coefficients of step limiting) and lays
  it out per CSR slot / per control point (``gpu_layouts.SPRING_VERTEX``) as the shaders read it (float32);
* :func:`fill_record` writes the per-instance spring fields of ``DeformInstance`` (stiffness with their
  switches applied, thresholds in scene units exactly as ``SpringDeformer`` derives them);
* :func:`irs_arrays` precomputes the eq. 14 weights (p_w, c_w) and the bind distance to the skeleton d0 per
  control point, and :func:`irs_bend_quats` the per-frame bend quaternions per bone, as ``skinning.irs`` does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.math.quat import from_matrix as quat_from_matrix
from engine.skinning.binding.project import nearest_bone
from engine.skinning.gpu import layouts as L
from engine.skinning.skinning import bend_refs as _bend_refs
from engine.skinning.skinning import dual_quat_parts, irs_weights
from engine.skinning.springs.params import SpringParams
from engine.skinning.springs.rest import build_rest, diff_share, volume_acts
from engine.skinning.types import Binding, MeshTopology, bone_endpoints


def spring_params(spring: Any) -> SpringParams:
    """None -> defaults; a dict -> SpringParams.from_dict; a SpringParams -> validated copy."""
    if spring is None:
        return SpringParams().validate()
    if isinstance(spring, SpringParams):
        return spring.validate()
    if isinstance(spring, dict):
        return SpringParams.from_dict(spring)
    raise TypeError(f"spring must be a SpringParams, a dict or None, got {type(spring).__name__}")


def mesh_scales(topology: MeshTopology) -> tuple[float, float, float]:
    """(AABB smallest positive extent, bbox diagonal (1 if 0), tiny) of the control points, as the reference."""
    x = np.asarray(topology.positions, np.float64)
    ext = x.max(0) - x.min(0) if x.shape[0] else np.ones(3)
    pos = ext[ext > 0.0]
    aabb_min = float(pos.min()) if pos.size else 1.0
    diag = float(np.linalg.norm(ext)) or 1.0
    raw_diag = float(np.linalg.norm(ext)) if x.shape[0] else 1.0
    tiny = 1e-12 * max(raw_diag, 1e-30)
    return aabb_min, diag, tiny


def rest_arrays(topology: MeshTopology, binding: Binding | None, bind_joints: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """(rest, vstatic) of :func:`spring_arrays` (see there)."""
    rest, vstatic, _ = spring_arrays(topology, binding, bind_joints)
    return rest, vstatic


def spring_arrays(topology: MeshTopology, binding: Binding | None, bind_joints: np.ndarray, *,
                  joints: np.ndarray | None = None, weights: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(rest (H,4) per CSR slot: rest_len, rest_dlen, rest_angle, w_t; vstatic (V, SPRING_VERTEX floats): the
    ``gpu_layouts.SPRING_VERTEX`` record of each control point as float32 rows: s_dir xyz, r | bone_angle,
    s_floor, joint-blend code (+-(other bone + 1), + parent end / - child end, 0 none), own blend weight |
    Gershgorin coefficients (``springs.lambda_columns``, the step-limiting lambda_i per unit
    stiffness; the shader adds k_e K_i, k_v VOLUME_LAMBDA and k_d DIFF_LAMBDA) | the rigid point's offset and
    bone + 1 (``springs.rigid_points``, from the skin's joints/weights when given; 0: free) | the differential
    term's bind offset delta0 (``SpringRest.diff0``) and the point's share of k_d (``springs.diff_scales``).
    Zeros without a binding (no spring stage then).
    The third value holds the volume term's records: "third" (H,) int32 per CSR slot (the face's third corner,
    -1 none), "region" (V,2) int32 (the point's region, -1 none; 1 for the first point of its region) and "vol"
    (V,4) float32 (its region's V0_r, S0_r, the fixed-point scale VOLUME_SCALE / |V0_r|, its number of points N_r);
    and the differential term's "diff_w" (H,) float32 per CSR slot: ``SpringRest.diff_w`` divided by its point's
    sum (`diff_slot_weights`); where points are glued (springs.touch) also "touch" (V,4) int32 and "touch2" (V,4)
    float32, the SpringPoint fields of that name (their rigid.w is -1)."""
    v = topology.n_control
    h = int(topology.adj_index.shape[0])
    rest = np.zeros((h, 4), np.float32)
    rec = L.SPRING_VERTEX.zeros(v)
    vstatic = rec.view(np.float32).reshape(v, L.SPRING_VERTEX.size // 4)
    volume = {"third": np.full(h, -1, np.int32), "region": np.zeros((v, 2), np.int32),
              "vol": np.zeros((v, 4), np.float32)}
    volume["region"][:, 0] = -1
    volume["diff_w"] = np.zeros(h, np.float32)
    if binding is None or v == 0:
        return rest, vstatic, volume
    r = build_rest(topology, binding, bind_joints, joints=joints, weights=weights)
    # slot h of the reference is (rows[h], cols[h]) in row order; place it at its CSR position
    count = np.asarray(topology.adj_count, np.int64)
    start = np.cumsum(count) - count
    local = np.arange(r.rows.shape[0]) - np.repeat(start, count)
    flat = np.asarray(topology.adj_offset, np.int64)[r.rows] + local
    rest[flat] = np.stack([r.rest_len, r.rest_dlen, r.rest_angle, r.w_t], 1)
    rec["sdir"][:, :3] = r.s_dir
    rec["sdir"][:, 3] = r.r
    rec["rest"][:, 0] = r.bone_angle
    rec["rest"][:, 1] = r.s_floor
    # joint blending (springs.joint_blend_weights): z = +-(other bone + 1) (+ parent end, - child end, 0 none)
    code = np.where(r.blend_end == 0, 1.0, -1.0) * (r.blend_other + 1.0)
    rec["rest"][:, 2] = np.where(r.blend_other >= 0, code, 0.0)
    rec["rest"][:, 3] = r.blend_w
    rec["lam"] = r.lam_cols  # columns in springs.LAMBDA_COLUMNS order: k_s + k_l, k_t, k_b, k_r
    if r.rigid_bone.shape[0] == v:  # the rigid points (springs.rigid_points): offset and bone + 1
        rec["rigid"][:, :3] = r.rigid_offset
        rec["rigid"][:, 3] = r.rigid_bone + 1.0
    glued = r.glued
    if glued is not None:  # the glued points (springs.touch): flagged here, their faces in the SpringPoint records
        rec["rigid"][glued, 3] = -1.0
        touch = np.zeros((v, 4), np.int32)
        touch2 = np.zeros((v, 4), np.float32)
        touch[glued, 0] = r.touch_corners[glued, 0] + 1
        touch[glued, 1:3] = r.touch_corners[glued, 1:]
        touch[glued, 3] = r.touch_bary[glued, 0].astype(np.float32).view(np.int32)
        touch2[glued, 0] = r.touch_bary[glued, 1]
        touch2[glued, 1:] = r.touch_local[glued]
        volume["touch"], volume["touch2"] = touch, touch2
    rec["diff0"][:, :3] = r.diff0
    rec["diff0"][:, 3] = diff_share(r)
    volume["diff_w"][flat] = diff_slot_weights(r.rows, r.diff_w, v)
    volume["third"][flat] = r.vol_third
    region = r.vol_region
    volume["region"][:, 0] = region
    on = np.flatnonzero(region >= 0)
    if on.size:
        _, first = np.unique(region[on], return_index=True)
        volume["region"][on[first], 1] = 1
        v0, s0 = r.vol_v0[region[on]], r.vol_s0[region[on]]
        volume["vol"][on, 0] = v0
        volume["vol"][on, 1] = s0
        volume["vol"][on, 2] = L.VOLUME_SCALE / np.abs(v0)
        volume["vol"][on, 3] = np.bincount(region[on])[region[on]]  # N_r (the tiled kernel's volume estimate)
    return rest, vstatic, volume


def diff_slot_weights(rows: np.ndarray, diff_w: np.ndarray, n: int) -> np.ndarray:
    """(H,) the differential term's slot weights divided by their point's sum (0 for a point without weighted
    neighbours): the shader's one-ring mean sum_j w_ij x_j / sum_j w_ij (``springs.ring_means``) from weights in
    [0, 1], so 1 / length^2 of a mesh in small units neither overflows float32 nor loses precision there."""
    w = np.asarray(diff_w, np.float64)
    total = np.bincount(rows, weights=w, minlength=n)
    den = total[rows]
    out = np.zeros(w.shape[0])
    np.divide(w, den, out=out, where=den > 0.0)
    return out


def fill_record(rec: np.ndarray, params: SpringParams, topology: MeshTopology, *,
                scales: tuple[float, float, float] | None = None) -> None:
    """Write the spring fields of one DeformInstance record (``scales``: ``mesh_scales(topology)`` if known)."""
    aabb_min, diag, tiny = scales if scales is not None else mesh_scales(topology)
    p = params
    flags = 0
    for bit, name in ((L.SPRING_EDGE, "k_s"), (L.SPRING_LENGTH, "k_l"), (L.SPRING_BONE, "k_b"),
                      (L.SPRING_TORSION, "k_t"), (L.SPRING_EDIT, "k_e"), (L.SPRING_RADIAL, "k_r")):
        if p.stiffness(name):
            flags |= bit
    if p.integrator == "semi_implicit":
        flags |= L.FLAG_SEMI_IMPLICIT
    if p.bone_mode == "cone":
        flags |= L.FLAG_BONE_CONE
    if p.mode == "dependent" and p.integrator == "semi_implicit":
        flags |= L.FLAG_KEEP_VELOCITY
    if p.step_limit:
        flags |= L.FLAG_STEP_LIMIT
    momentum = p.integrator == "explicit" and p.acceleration == "momentum"
    if momentum:
        flags |= L.FLAG_MOMENTUM
    thr_d = aabb_min * p.displacement_rel
    rec["flags"] = flags
    rec["max_iterations"] = int(p.max_iterations)
    rec["scheme"] = L.SCHEMES[p.convergence]
    rec["dt"] = p.dt
    rec["thr_disp"] = thr_d
    # float32 fields: a tiny dt (refused where a spring stage runs; carried along by graphs without one) must not
    # overflow the cast
    rec["thr_force"] = min(p.force_tol if p.force_tol is not None else thr_d / p.dt, float(np.finfo(np.float32).max))
    rec["limit"] = p.divergence_rel * diag
    rec["tiny"] = tiny
    rec["handle_weight"] = p.handle_weight
    rec["damping"] = p.momentum if momentum else p.damping  # one slot: the explicit update has no damping
    rec["energy_rtol"] = p.energy_rtol
    rec["k"] = [p.stiffness("k_s"), p.stiffness("k_l"), p.stiffness("k_t"), p.stiffness("k_b")]
    # z: joint blending on; w: the start is the (blended) rigid skinning (rigid initial skinning, independent
    # mode: spring_frame.comp moves the skin stage's plain rigid output, as SpringDeformer.rigid / initial_positions)
    blend = 1.0 if p.joint_blend else 0.0
    rigid_start = 1.0 if (p.initial_skinning == "rigid" and p.mode == "independent") else 0.0
    rec["k2"] = [p.stiffness("k_r"), p.stiffness("k_e"), blend, rigid_start]
    # the volume term (springs.volume_acts; regions an edit touches are switched off per frame in B_VOLUME) and
    # the differential term (springs.spring_forces: k_d)
    rec["k3"] = [p.stiffness("k_v") if volume_acts(p) else 0.0, p.stiffness("k_d"), 0.0, 0.0]


def _influence(value: Any, nj: int, name: str) -> np.ndarray:
    arr = np.asarray(value, np.float64)
    if arr.ndim == 0:
        arr = np.full(nj, float(arr))
    if arr.shape != (nj,) or not np.all((arr >= 0) & (arr <= 1)):
        raise ValueError(f"IRS {name} must be a scalar or ({nj},) values in [0, 1], got {value!r}")
    return arr


def irs_arrays(topology: MeshTopology, binding: Binding | None, bind_joints: np.ndarray,
               influence: Any = (0.5, 0.5)) -> tuple[np.ndarray, np.ndarray]:
    """(irs (V,4): p_w, c_w (eq. 14), 0, 0; d0 (V,): bind distance of each control point to the skeleton)."""
    v = topology.n_control
    out = np.zeros((v, 4), np.float32)
    d0 = np.zeros(v, np.float32)
    if binding is None or v == 0:
        return out, d0
    nj = bind_joints.shape[0]
    try:
        pi_val, ci_val = influence
    except (TypeError, ValueError):
        raise ValueError(f"IRS influence must be a pair (p_i, c_i), got {influence!r}") from None
    p_inf = _influence(pi_val, nj, "influence p_i").astype(np.float32)
    c_inf = _influence(ci_val, nj, "influence c_i").astype(np.float32)
    bones = binding.bones
    pw, cw = irs_weights(binding, p_inf, c_inf)
    out[:, 0] = pw
    out[:, 1] = cw
    pb, cb = bone_endpoints(bones, np.asarray(bind_joints, np.float32))
    _, _, d0 = nearest_bone(binding.attach + binding.scale, pb, cb)
    return out, d0.astype(np.float32)


def bend_refs(binding: Binding, bind_joints: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per bone, the reference joints of the bend at its parent and child ends (skinning.irs's rule)."""
    return _bend_refs(binding.bones, bind_joints, parents)


def irs_bend_quats(rot: np.ndarray, binding: Binding, start_ref: np.ndarray, end_ref: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per-bone bend quaternions (q_start, q_end) (B,4) xyzw, w >= 0, from joint rotations rot (J,3,3)."""
    return bend_quats(rot, binding.bones.parent_joint, start_ref, end_ref)


def bend_quats(rot: np.ndarray, parent_joint: np.ndarray, start_ref: np.ndarray, end_ref: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`irs_bend_quats` for bones given by their parent joints (B,) and reference joints (B,) (-1: none)
    into one joint array rot (J,3,3): works on the bones of many instances at once (joint indices offset)."""
    q_joint = quat_from_matrix(rot)
    q_par = q_joint[parent_joint]
    ident = np.array([0.0, 0.0, 0.0, 1.0])
    conj = np.array([-1.0, -1.0, -1.0, 1.0])
    q_start = np.where((start_ref >= 0)[:, None], _qmul(q_par, q_joint[np.maximum(start_ref, 0)] * conj), ident)
    q_end = np.where((end_ref >= 0)[:, None], _qmul(q_joint[np.maximum(end_ref, 0)], q_par * conj), ident)
    q_start[q_start[:, 3] < 0] *= -1.0
    q_end[q_end[:, 3] < 0] *= -1.0
    return q_start.astype(np.float32), q_end.astype(np.float32)


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    av, aw = a[..., :3], a[..., 3:]
    bv, bw = b[..., :3], b[..., 3:]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), aw * bw - (av * bv).sum(-1, keepdims=True)], -1)


def dual_quats(mats: np.ndarray, segments: np.ndarray | None = None, *, fast: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per joint (qr (J,4), qd (J,4), stretch (J,4,4)) of skin matrices as the GPU skin stages read them:
    :func:`engine.skinning.skinning.dual_quat_parts` (the reference's split and its identity rule, per skin
    when ``segments`` gives the first joint of each stacked skin), the stretch as a 4x4 that is exactly the
    identity for rigid skins. ``fast``: Newton polar rotations (the per-frame upload)."""
    qr, qd, s, stretched = dual_quat_parts(mats, segments, fast=fast)
    stretch = np.broadcast_to(np.eye(4), (s.shape[0], 4, 4)).copy()
    stretch[stretched, :3, :3] = s[stretched].astype(np.float32)
    return qr, qd, stretch
