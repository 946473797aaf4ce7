#version 430 core
// Fused skin + vertex copy (gpu_plan fusion of a bind-mode LBS/DQS skin node and the copy that alone reads its
// target): one invocation per pooled display slot skins its display vertex with the joints and weights of the
// vertex's control point and writes the display position, and with SKINNED_NORMALS = 1 the skinned bind normal,
// directly. Same arithmetic per vertex as skin.comp (SKIN_NORMALS) + copy.comp (SKINNED_NORMALS); numpy
// references skinning.lbs / dqs and lbs_normals / dqs_normals.
//
// Why it looks like this: on llvmpipe the cost follows the memory instructions, not the arithmetic, and an
// SSBO load there is a per-lane loop with a branch per component while an image load is one gather. So every
// input is an image of vec4 records (engine/skinning/gpu_layouts.py, "fused skin_copy stage"): one head per
// work group instead of the group -> instance table plus instance-record fields, three texels per display vertex
// (bind position with the packed joint ids, weights, bind normal) and the joint records of the whole batch.
// Only the outputs, which the renderer binds as ranges, are SSBOs.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_quat.glsl"
#include "deform_images.glsl"

layout(rgba32ui, binding = I_SKIN_VERTS) readonly uniform uimage2D skin_verts;   // SkinVertex per display vertex
layout(rgba32f, binding = I_SKIN_JOINTS) readonly uniform image2D skin_joints;   // SkinJointLbs / Dqs per joint
layout(rgba32i, binding = I_SKIN_HEADS) readonly uniform iimage2D skin_heads;    // SkinHead per display group
layout(std430, binding = B_DST) writeonly buffer Dst { vec4 dst[]; };
#if SKINNED_NORMALS
layout(std430, binding = B_DST_NORMALS) writeonly buffer DstNormals { vec4 dst_normals[]; };
#endif

#if METHOD == METHOD_LBS
#define JOINT_TEXELS SKIN_JOINT_LBS_TEXELS
#else
#define JOINT_TEXELS SKIN_JOINT_DQS_TEXELS
#endif

vec4 joint_texel(int j, int t) { return imageLoad(skin_joints, record_texel(j, JOINT_TEXELS, t)); }

// cof(A) = det(A) A^-T: columns cross(a1, a2), cross(a2, a0), cross(a0, a1) (the normal transform, no inverse)
mat3 cofactor(mat3 a) { return mat3(cross(a[1], a[2]), cross(a[2], a[0]), cross(a[0], a[1])); }

vec4 unit_or_zero(vec3 n) {
    float len = length(n);
    return len > 0.0 ? vec4(n / len, 0.0) : vec4(0.0);
}

void main() {
    int g = int(gl_WorkGroupID.x);
    ivec4 head = imageLoad(skin_heads, record_texel(g, SKIN_HEAD_TEXELS, SKIN_HEAD_GROUP));
    int lane = int(gl_LocalInvocationID.x);
    if (lane >= head.y) return;  // past the mesh's last vertex, or a hole of the pool (uniform per group)
    int s = head.x + lane;
    uvec4 bj = imageLoad(skin_verts, record_texel(s, SKIN_VERTEX_TEXELS, SKIN_VERTEX_BIND_JOINTS));
    vec4 w = uintBitsToFloat(imageLoad(skin_verts, record_texel(s, SKIN_VERTEX_TEXELS, SKIN_VERTEX_WEIGHTS)));
    vec3 v = uintBitsToFloat(bj.xyz);
    ivec4 j = ivec4(bitfieldExtract(bj.w, 0, JOINT_ID_BITS), bitfieldExtract(bj.w, JOINT_ID_BITS, JOINT_ID_BITS),
                    bitfieldExtract(bj.w, 2 * JOINT_ID_BITS, JOINT_ID_BITS),
                    bitfieldExtract(bj.w, 3 * JOINT_ID_BITS, JOINT_ID_BITS)) + head.z;
    int o = g * LOCAL_SIZE + lane;  // display slot: instance ranges start at dgroup_base * LOCAL_SIZE
#if SKINNED_NORMALS
    vec3 nb = uintBitsToFloat(imageLoad(skin_verts, record_texel(s, SKIN_VERTEX_TEXELS, SKIN_VERTEX_NORMAL)).xyz);
#endif
#if METHOD == METHOD_LBS
    // rows of the blended matrix B = sum w_k M_k
    vec4 r[3];
    for (int k = 0; k < 3; ++k) {
        int t = SKIN_JOINT_LBS_ROWS + k;
        r[k] = w.x * joint_texel(j.x, t) + w.y * joint_texel(j.y, t) + w.z * joint_texel(j.z, t)
             + w.w * joint_texel(j.w, t);
    }
    vec4 p = vec4(v, 1.0);
    dst[o] = vec4(dot(r[0], p), dot(r[1], p), dot(r[2], p), 1.0);
#if SKINNED_NORMALS
    dst_normals[o] = unit_or_zero(cofactor(transpose(mat3(r[0].xyz, r[1].xyz, r[2].xyz))) * nb);
#endif
#else
    // stretch first (linear blend of the symmetric factors), identity for rigid skin matrices
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), q[4], d[4];
    for (int k = 0; k < 4; ++k) {
        s0 += w[k] * joint_texel(j[k], SKIN_JOINT_DQS_STRETCH);
        s1 += w[k] * joint_texel(j[k], SKIN_JOINT_DQS_STRETCH + 1);
        q[k] = joint_texel(j[k], SKIN_JOINT_DQS_QR);
        d[k] = joint_texel(j[k], SKIN_JOINT_DQS_QD);
    }
    mat3 st = mat3(s0.x, s0.y, s0.z, s0.y, s0.w, s1.x, s0.z, s1.x, s1.y);
    v = st * v;
    // antipodality: flip every influence into the hemisphere of the largest-weight joint (first on ties)
    vec4 pivot = q[0];
    float wmax = w.x;
    for (int k = 1; k < 4; ++k) if (w[k] > wmax) { pivot = q[k]; wmax = w[k]; }
    vec4 br = vec4(0.0), bd = vec4(0.0);
    for (int k = 0; k < 4; ++k) {
        float sw = dot(q[k], pivot) < 0.0 ? -w[k] : w[k];
        br += sw * q[k];
        bd += sw * d[k];
    }
    float n = length(br);
    if (n > 0.0) { br /= n; bd /= n; } else { br = vec4(0, 0, 0, 1); bd = vec4(0.0); }
    vec3 t = 2.0 * (br.w * bd.xyz - bd.w * br.xyz + cross(br.xyz, bd.xyz));
    dst[o] = vec4(quat_rotate(br, v) + t, 1.0);
#if SKINNED_NORMALS
    dst_normals[o] = unit_or_zero(quat_to_mat3(br) * (cofactor(st) * nb));
#endif
#endif
}
