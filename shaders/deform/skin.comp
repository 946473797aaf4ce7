#version 430 core
// Skinning Compute (research 6.3): one invocation per control point of every instance of the batch.
// METHOD selects LBS, DQS, rigid attachment skinning or IRS (numpy reference engine.skinning.skinning).
// Bind-pose mode: the source is the static bind positions and the joint data are skinning matrices.
// Differential mode (SKIN_DIFFERENTIAL = 1): the source is last frame's result and the joint data are the
// differential transforms M_now M_prev^-1 (bones: source = last frame's pose), as the frame-dependent graph uses.
// SKIN_NORMALS = 1 (option normals = "skinned", LBS/DQS in bind mode): also write the normal transform N of
// the control point (3 vec4 columns at B_NMAT): LBS cof(B) of the blended 3x3 B (skinning.lbs_normals); DQS
// R(blended rotation) cof(blended stretch) (skinning.dqs_normals). The copy stage applies it to bind normals.
// Units (rigid/IRS in bind mode): the bind-unit scale vector is scaled by the pose unit u (DeformBone.c.w;
// reference skinning._rigid_parts), the IRS length correction's bind distance d0 too (a spring node's rigid
// start does not read this output: spring_frame.comp computes it). In differential mode s is last frame's
// offset, already in the scene's units.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_quat.glsl"

layout(std430, binding = B_SRC) readonly buffer Src { vec4 src[]; };
layout(std430, binding = B_DST) writeonly buffer Dst { vec4 dst[]; };
layout(std430, binding = B_JOINTS) readonly buffer Joints { DeformJoint joints[]; };
layout(std430, binding = B_BONES) readonly buffer Bones { DeformBone bones[]; };
// static inputs only where METHOD reads them: the batch creates and binds just those (gpu_stages.static_reads)
#if METHOD == METHOD_LBS || METHOD == METHOD_DQS
layout(std430, binding = B_JOINT_IDS) readonly buffer JointIds { ivec4 joint_ids[]; };  // INFLUENCE_SETS per point
layout(std430, binding = B_WEIGHTS) readonly buffer Weights { vec4 weights[]; };
#else
layout(std430, binding = B_ATTACH) readonly buffer Attach { vec4 attach[]; };   // xyz bind attachment, w = t
layout(std430, binding = B_SCALE) readonly buffer Scale { vec4 scale[]; };     // xyz bind scale vector, w = d0
layout(std430, binding = B_BONE_OF) readonly buffer BoneOf { int bone_of[]; };
#endif
#if METHOD == METHOD_IRS
layout(std430, binding = B_IRS) readonly buffer Irs { vec4 irs[]; };           // x p_w, y c_w (eq. 14)
#endif

#if SKIN_NORMALS
layout(std430, binding = B_NMAT) writeonly buffer NMat { vec4 nmat[]; };   // 3 per control point (dynamic pool)
#endif

uniform int u_source_static;  // 1: src is indexed like the static pool (bind positions), 0: like the dynamic pool

mat3 nrm_m;  // normal transform of the current control point (SKIN_NORMALS)

// cof(A) = det(A) A^-T: columns cross(a1, a2), cross(a2, a0), cross(a0, a1) (the normal transform, no inverse)
mat3 cofactor(mat3 a) { return mat3(cross(a[1], a[2]), cross(a[2], a[0]), cross(a[0], a[1])); }

#if METHOD == METHOD_LBS || METHOD == METHOD_DQS
vec3 skin_lbs(int sidx, int jb, vec3 v) {
    mat4 m = mat4(0.0);
    for (int s = 0; s < INFLUENCE_SETS; ++s) {
        ivec4 j = joint_ids[sidx * INFLUENCE_SETS + s];
        vec4 w = weights[sidx * INFLUENCE_SETS + s];
        m += w.x * joints[jb + j.x].skin + w.y * joints[jb + j.y].skin
           + w.z * joints[jb + j.z].skin + w.w * joints[jb + j.w].skin;
    }
#if SKIN_NORMALS
    nrm_m = cofactor(mat3(m));
#endif
    return (m * vec4(v, 1.0)).xyz;
}

vec3 skin_dqs(int sidx, int jb, vec3 v) {
    // stretch first (linear blend of the symmetric factors), identity for rigid skin matrices
    mat4 s = mat4(0.0);
    // antipodality: flip every influence into the hemisphere of the largest-weight joint (first on ties)
    float wk = -1.0;
    int jk = 0;
    for (int q = 0; q < INFLUENCE_SETS; ++q) {
        ivec4 j = joint_ids[sidx * INFLUENCE_SETS + q];
        vec4 w = weights[sidx * INFLUENCE_SETS + q];
        s += w.x * joints[jb + j.x].stretch + w.y * joints[jb + j.y].stretch
           + w.z * joints[jb + j.z].stretch + w.w * joints[jb + j.w].stretch;
        for (int i = 0; i < MAX_INFLUENCES; ++i) if (w[i] > wk) { wk = w[i]; jk = j[i]; }
    }
    v = mat3(s) * v;
    vec4 pivot = joints[jb + jk].qr;
    vec4 br = vec4(0.0), bd = vec4(0.0);
    for (int q = 0; q < INFLUENCE_SETS; ++q) {
        ivec4 j = joint_ids[sidx * INFLUENCE_SETS + q];
        vec4 w = weights[sidx * INFLUENCE_SETS + q];
        for (int i = 0; i < MAX_INFLUENCES; ++i) {
            vec4 qi = joints[jb + j[i]].qr;
            float sw = dot(qi, pivot) < 0.0 ? -w[i] : w[i];
            br += sw * qi;
            bd += sw * joints[jb + j[i]].qd;
        }
    }
    float n = length(br);
    if (n > 0.0) { br /= n; bd /= n; } else { br = vec4(0, 0, 0, 1); bd = vec4(0.0); }
#if SKIN_NORMALS
    nrm_m = quat_to_mat3(br) * cofactor(mat3(s));
#endif
    vec3 t = 2.0 * (br.w * bd.xyz - bd.w * br.xyz + cross(br.xyz, bd.xyz));
    return quat_rotate(br, v) + t;
}
#else
// Attachment skinning: a' = p' + t (c' - p'), v' = a' + R s (R = R_now R_src^T; s = v_src - a_src).
vec3 posed_attach(DeformBone b, float t) { return b.p.xyz + t * (b.c.xyz - b.p.xyz); }

vec3 source_scale(DeformBone b, int sidx, vec3 v) {
#if SKIN_DIFFERENTIAL
    float t = attach[sidx].w;
    return v - (b.p_src.xyz + t * (b.c_src.xyz - b.p_src.xyz));
#else
    // a source other than the static bind pose (morphed bind positions): s = v - a at the bind pose
    if (u_source_static == 0) {
        float t = attach[sidx].w;
        return v - (b.p_src.xyz + t * (b.c_src.xyz - b.p_src.xyz));
    }
    return scale[sidx].xyz;
#endif
}
#endif

void main() {
    uint g = gl_WorkGroupID.x;
    DeformInstance inst = instances[instance_of_group(g)];
    int i = local_index(inst, g);
    if (i >= inst.n_control) return;
    int sidx = inst.static_base + i;
    int didx = inst.dyn_base + i;
    vec3 v = src[u_source_static != 0 ? sidx : didx].xyz;
#if METHOD == METHOD_LBS
    vec3 r = skin_lbs(sidx, inst.joint_base, v);
#elif METHOD == METHOD_DQS
    vec3 r = skin_dqs(sidx, inst.joint_base, v);
#else
    DeformBone b = bones[inst.bone_base + bone_of[sidx]];
    float t = attach[sidx].w;
    vec3 a = posed_attach(b, t);
    vec3 s = mat3(b.rot) * source_scale(b, sidx, v);
#if SKIN_DIFFERENTIAL
    float u = 1.0;
#else
    float u = b.c.w > 0.0 ? b.c.w : 1.0;
    s *= u;
#endif
#if METHOD == METHOD_IRS
    // eqs. 14-17: rotate s by up to half of each joint's bend near that joint
    float pw = irs[sidx].x, cw = irs[sidx].y, tot = pw + cw;
    if (tot > 0.0) {
        vec4 dp = quat_fraction(b.q_start, -0.5 * pw);
        vec4 dc = quat_fraction(b.q_end, 0.5 * cw);
#if IRS_BLEND_MATRIX
        mat3 m = (pw / tot) * quat_to_mat3(dp) + (cw / tot) * quat_to_mat3(dc);
        s = m * s;
#else
        vec4 q = pw * dp + cw * dc;
        s = quat_rotate(q / length(q), s);
#endif
    }
    vec3 r = a + s;  // eq. 18
#if IRS_LENGTH_CORRECTION
    // keep the bind distance d0 to the skeleton: v''' = v_s + d0 (v'' - v_s) / |v'' - v_s|
    float best = 1e38;
    vec3 vs = r;
    for (int k = 0; k < inst.n_bones; ++k) {
        DeformBone o = bones[inst.bone_base + k];
        vec3 d = o.c.xyz - o.p.xyz;
        float dd = dot(d, d);
        float tt = dd > 0.0 ? clamp(dot(r - o.p.xyz, d) / dd, 0.0, 1.0) : 0.0;
        vec3 q = o.p.xyz + tt * d;
        vec3 diff = r - q;
        float d2 = dot(diff, diff);
        if (d2 < best) { best = d2; vs = q; }
    }
    float dist = sqrt(best);
    float ratio = dist > 0.0 ? scale[sidx].w * u / dist : 1.0;
    r = vs + ratio * (r - vs);
#endif
#else
    vec3 r = a + s;
#endif
#endif
    dst[didx] = vec4(r, 1.0);
#if SKIN_NORMALS
    nmat[3 * didx] = vec4(nrm_m[0], 0.0);
    nmat[3 * didx + 1] = vec4(nrm_m[1], 0.0);
    nmat[3 * didx + 2] = vec4(nrm_m[2], 0.0);
#endif
}
