#version 430 core
// Spring stage, once per frame before the iterations: per control point of every instance, the posed
// attachment a_i = p' + t_i (c' - p') and the bone reference direction (reference springs.pose_frame), and the
// initial state S0 = (skinned position, initial velocity). Both go to the images the iterations read
// (SpringFrame, SpringState: gpu_layouts, "spring stage images").
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"

// SpringVertex (static per control point) comes from generated/deform_layouts.glsl (gpu_layouts.SPRING_VERTEX)

layout(std430, binding = B_BONES) readonly buffer Bones { DeformBone bones[]; };
layout(std430, binding = B_ATTACH) readonly buffer Attach { vec4 attach[]; };   // w = t
layout(std430, binding = B_BONE_OF) readonly buffer BoneOf { int bone_of[]; };
layout(std430, binding = B_VSTATIC) readonly buffer VStatic { SpringVertex vstatic[]; };
layout(std430, binding = B_SKINNED) readonly buffer Skinned { vec4 skinned[]; };
layout(std430, binding = B_VEL) readonly buffer VelFinal { vec4 vel_final[]; };
layout(rgba32f, binding = I_SPRING_FRAME) writeonly uniform image2D frame;  // SpringFrame
layout(rgba32f, binding = I_SPRING_DST) writeonly uniform image2D s0;       // SpringState x_0

void main() {
    uint g = gl_WorkGroupID.x;
    DeformInstance inst = instances[instance_of_group(g)];
    int i = local_index(inst, g);
    if (i >= inst.n_control) return;
    int sidx = inst.static_base + i;
    int didx = inst.dyn_base + i;
    DeformBone b = bones[inst.bone_base + bone_of[sidx]];
    vec3 a = b.p.xyz + attach[sidx].w * (b.c.xyz - b.p.xyz);
    vec3 ref;
    if ((inst.flags & uint(FLAG_BONE_CONE)) != 0u) {
        vec3 d = b.c.xyz - b.p.xyz;
        float n = length(d);
        ref = n > inst.tiny ? d / n : vec3(0.0);
    } else {
        ref = mat3(b.rot_now) * vstatic[sidx].sdir.xyz;
    }
    imageStore(frame, record_texel(didx, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH), vec4(a, 0.0));
    imageStore(frame, record_texel(didx, SPRING_FRAME_TEXELS, SPRING_FRAME_BONE_REF), vec4(ref, 0.0));
    vec3 v0 = (inst.flags & uint(FLAG_KEEP_VELOCITY)) != 0u ? vel_final[didx].xyz : vec3(0.0);
    imageStore(s0, record_texel(didx, SPRING_STATE_TEXELS, SPRING_STATE_X), vec4(skinned[didx].xyz, 1.0));
    imageStore(s0, record_texel(didx, SPRING_STATE_TEXELS, SPRING_STATE_V), vec4(v0, 0.0));
}
