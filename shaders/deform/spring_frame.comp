#version 430 core
// Spring stage, once per frame before the iterations: per control point of every instance, the posed
// attachment a_i = p' + t_i (c' - p') and the bone reference direction (reference springs.pose_frame), and the
// initial state S0 = (skinned position, initial velocity). Both go to the images the iterations read
// (SpringFrame, SpringState: gpu_layouts, "spring stage images").
// Joint blending (reference springs.pose_frame / blend_rotations, on when inst.k2.z > 0): a control point near an
// interior joint J (SpringVertex.rest.z = +-(other bone + 1), + the parent end of its bone, - the child end; 0
// none; rest.w its own weight w) turns its attachment, frame and bone reference about J by the share 1 - w of
// the rotation from its bone to the other one. inst.k2.w > 0 (rigid initial skinning, independent mode): the
// start is the (blended) rigid skinning a + B R s with s = r * s_dir (reference SpringDeformer.rigid), computed
// here from the bone records (the skin stage's output is not read for it).
// Rigid points (SpringVertex.rigid.w = bone + 1, reference springs.rigid_points / pose_frame): x_0 is their
// joint's rigid motion P' + R (bind offset) and SpringFrame bone_ref.w = 1 holds them there (spring.comp).
// Differential term (DeformInstance k3.y = k_d != 0): SpringFrame.diff = (B R delta0, the share c_i) (SpringVertex.diff0; reference
// springs.PoseFrame.diff), in bind units like the state (a rotation of a bind-unit offset).
// Units (reference springs.pose_unit, SpringDeformer.solve): DeformBone.c.w holds the pose's scene units per bind
// unit u (1 unless the mesh is given in other units than its joints are posed in); the stage solves in bind
// units: attachments and x_0 divided by u (about the origin), u kept in SpringFrame attach.w for the edit
// targets (spring.comp) and the final scaling back (resolve.comp).
// Warm start (DeformBone.p.w = 1, decided per instance by the pose upload: reference springs.warm_start_allowed):
// x_0 is the stage's last output carried by the motion of the point's (joint-blended) frame since last frame
// (reference springs.carry; last frame's frames from last frame's bone records): a + F F_prev^T (x_prev - a_prev)
// with F = B R; points an edit holds keep the usual start (reference SpringDeformer.initial_positions).
// Frame start (work group 0, before anything else): every instance's convergence state cleared and the loop state of
// the iteration dispatches (spring_iterate.glsl) set to dispatch u_start (-1 when the volume pre-pass runs first)
// with no ticket taken (the dispatch's and every instance's). No pass of this frame reads either before the
// barrier after this one (stages.spring), so this needs no dispatch of its own.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"
#include "deform_quat.glsl"

// Unit quaternion (x, y, z, w), w >= 0, of a rotation matrix by Shepperd's method (the largest of 4w^2, 4x^2,
// 4y^2, 4z^2 picks the formula; exact near a half turn; reference engine.math.quat.from_matrix).
vec4 quat_of_rotation(mat3 m) {
    // m is column-major: m[c][r] is row r, column c
    float m00 = m[0][0], m11 = m[1][1], m22 = m[2][2];
    float a = m[1][2] - m[2][1], b = m[2][0] - m[0][2], c = m[0][1] - m[1][0];  // 4wx, 4wy, 4wz
    float d = m[1][0] + m[0][1], e = m[2][0] + m[0][2], f = m[2][1] + m[1][2];  // 4xy, 4xz, 4yz
    vec4 big = vec4(1.0 + m00 + m11 + m22, 1.0 + m00 - m11 - m22, 1.0 - m00 + m11 - m22, 1.0 - m00 - m11 + m22);
    float top = max(max(big.x, big.y), max(big.z, big.w));
    float s = 2.0 * sqrt(max(top, 1e-30));
    vec4 q;
    if (big.x == top) q = vec4(a / s, b / s, c / s, 0.25 * s);
    else if (big.y == top) q = vec4(0.25 * s, d / s, e / s, a / s);
    else if (big.z == top) q = vec4(d / s, 0.25 * s, f / s, b / s);
    else q = vec4(e / s, f / s, 0.25 * s, c / s);
    q = normalize(q);
    return q.w < 0.0 ? -q : q;
}

// Rotation by the share f (any sign) of the rotation `rel` (reference springs.rotation_share).
mat3 rotation_share(mat3 rel, float f) {
    return quat_to_mat3(quat_fraction(quat_of_rotation(rel), f));
}

// SpringVertex (static per control point) comes from generated/deform_layouts.glsl (gpu_layouts.SPRING_VERTEX)

layout(std430, binding = B_BONES) readonly buffer Bones { DeformBone bones[]; };
layout(std430, binding = B_ATTACH) readonly buffer Attach { vec4 attach[]; };   // w = t
layout(std430, binding = B_BONE_OF) readonly buffer BoneOf { int bone_of[]; };
layout(std430, binding = B_VSTATIC) readonly buffer VStatic { SpringVertex vstatic[]; };
layout(std430, binding = B_SKINNED) readonly buffer Skinned { vec4 skinned[]; };
layout(std430, binding = B_VEL) readonly buffer VelFinal { vec4 vel_final[]; };
layout(std430, binding = B_WARM) readonly buffer Warm { vec4 last_output[]; };
layout(std430, binding = B_BONES_PREV) readonly buffer BonesPrev { DeformBone bones_prev[]; };
// SpringEdit rows (generated/deform_layouts.glsl): q.y 1 = held (an edit's static set)
layout(std430, binding = B_EDIT) readonly buffer Edit { SpringEdit edit[]; };
layout(rgba32f, binding = I_SPRING_FRAME) writeonly uniform image2D frame;  // SpringFrame
layout(std430, binding = B_STATUS) writeonly buffer Status { DeformStatus status[]; };
layout(std430, binding = B_SPRING_LOOP) writeonly buffer Loop { int loop_state[]; };

uniform int u_n_instances;
uniform int u_start;

// Work group 0: the frame start of the convergence and loop state (stages.spring).
void reset_loop() {
    uint lid = gl_LocalInvocationID.x;
    for (int k = int(lid); k < u_n_instances; k += LOCAL_SIZE) {
        status[k].iterations = 0;
        status[k].converged = 0;
        status[k].reason = 0;
        status[k].max_disp_bits = 0u;
        status[k].max_force_bits = 0u;
        status[k].energy = 0.0;
        status[k].prev_energy = 0.0;
        status[k].last_disp = 0.0;
        loop_state[2 + k] = 0;  // the instance's ticket (spring_iterate.glsl)
    }
    if (lid == 0u) {
        loop_state[0] = u_start;
        loop_state[1] = 0;
    }
}
layout(rgba32f, binding = I_SPRING_RING) writeonly uniform image2D s0;      // SpringState ring: x_0 -> third

// The attachment of control point sidx on bone records b and the turn B about its joint (reference
// springs.pose_frame / blend_rotations; the identity where it does not blend): its frame's rotation is B R_own.
// other_rot: R_now of the bone across the joint (of the same records).
void vertex_frame(DeformBone b, mat3 other_rot, int sidx, bool blend, out vec3 a, out mat3 turn) {
    a = b.p.xyz + attach[sidx].w * (b.c.xyz - b.p.xyz);
    turn = mat3(1.0);
    if (!blend) return;
    float code = vstatic[sidx].rest.z;
    int other = int(abs(code) + 0.5) - 1;
    mat3 own = mat3(b.rot_now);
    // from the lower-numbered bone of the pair to the higher (reference springs.blend_rotations): both sides
    // of the joint turn about one axis, also at a half turn
    mat3 rel = other_rot * transpose(own);
    float share = 1.0 - vstatic[sidx].rest.w;
    bool own_first = bone_of[sidx] < other;
    turn = rotation_share(own_first ? rel : transpose(rel), own_first ? share : -share);
    vec3 joint = code > 0.0 ? b.p.xyz : b.c.xyz;
    a = joint + turn * (a - joint);
}

void main() {
    uint g = gl_WorkGroupID.x;
    if (g == 0u) reset_loop();
    DeformInstance inst = instances[instance_of_group(g)];
    int i = local_index(inst, g);
    if (i >= inst.n_control) return;
    int sidx = inst.static_base + i;
    int didx = inst.dyn_base + i;
    DeformBone b = bones[inst.bone_base + bone_of[sidx]];
    float code = vstatic[sidx].rest.z;
    bool blend = inst.k2.z > 0.0 && code != 0.0;
    int other = inst.bone_base + (blend ? int(abs(code) + 0.5) - 1 : 0);
    vec3 a;
    mat3 turn;
    vertex_frame(b, blend ? mat3(bones[other].rot_now) : mat3(1.0), sidx, blend, a, turn);
    vec3 ref;
    if ((inst.flags & uint(FLAG_BONE_CONE)) != 0u) {
        vec3 d = b.c.xyz - b.p.xyz;
        float n = length(d);
        ref = n > inst.tiny ? d / n : vec3(0.0);
    } else {
        ref = mat3(b.rot_now) * vstatic[sidx].sdir.xyz;
    }
    if (blend) ref = turn * ref;
    float u = b.c.w > 0.0 ? b.c.w : 1.0;
    imageStore(frame, record_texel(didx, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH), vec4(a / u, u));
    // a rigid point (reference springs.rigid_points): held at its joint's rigid motion, flagged in bone_ref.w
    vec4 rig = vstatic[sidx].rigid;
    bool rigid = rig.w > 0.5;
    // bone_ref.w: 1 a rigid point, 2 a glued one (SpringVertex.rigid.w = -1; springs.touch), 0 free
    float hold = rigid ? 1.0 : (rig.w < -0.5 ? 2.0 : 0.0);
    imageStore(frame, record_texel(didx, SPRING_FRAME_TEXELS, SPRING_FRAME_BONE_REF), vec4(ref, hold));
    if (inst.k3.y != 0.0) {  // the differential term's target offset R_i delta0_i, R_i = B R (springs.PoseFrame.diff)
        vec3 off = turn * (mat3(b.rot_now) * vstatic[sidx].diff0.xyz);
        imageStore(frame, record_texel(didx, SPRING_FRAME_TEXELS, SPRING_FRAME_DIFF), vec4(off, vstatic[sidx].diff0.w));
    }
    vec3 v0 = (inst.flags & uint(FLAG_KEEP_VELOCITY)) != 0u ? vel_final[didx].xyz : vec3(0.0);
    vec3 x0;
    if (inst.k2.w > 0.0) {
        // the blended rigid start in bind units, a / u + B R s (reference SpringDeformer.rigid), computed here
        // rather than moved from the skin stage's a_b + R s: that difference cancels the scene-unit attachments
        // against each other and loses about two digits when the pose unit u is 100
        vec3 rs = mat3(b.rot_now) * (vstatic[sidx].sdir.w * vstatic[sidx].sdir.xyz);
        x0 = a / u + turn * rs;
    } else {
        x0 = skinned[didx].xyz / u;
    }
    if (b.p.w > 0.5 && !(inst.k2.y != 0.0 && edit[didx].q.y != 0.0)) {
        // warm start: last output carried in the vertex's frame, a + B R (B_prev R_prev)^T (x_prev - a_prev)
        DeformBone bp = bones_prev[inst.bone_base + bone_of[sidx]];
        vec3 a_prev;
        mat3 turn_prev;
        vertex_frame(bp, blend ? mat3(bones_prev[other].rot_now) : mat3(1.0), sidx, blend, a_prev, turn_prev);
        mat3 carry = (turn * mat3(b.rot_now)) * transpose(turn_prev * mat3(bp.rot_now));
        x0 = (a + carry * (last_output[didx].xyz - a_prev)) / u;
    }
    if (rigid) {
        DeformBone br = bones[inst.bone_base + int(rig.w + 0.5) - 1];
        x0 = br.p.xyz / u + mat3(br.rot_now) * rig.xyz;
    }
    ivec2 third = ivec2(0, imageSize(s0).y / 3 * 2);  // the ring's third image (stages.spring)
    imageStore(s0, record_texel(didx, SPRING_STATE_TEXELS, SPRING_STATE_X) + third, vec4(x0, 1.0));
    imageStore(s0, record_texel(didx, SPRING_STATE_TEXELS, SPRING_STATE_V) + third, vec4(v0, 0.0));
}
