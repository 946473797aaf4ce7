#version 430 core
// End of the spring stage: per control point, copy the instance's accepted state (after status.iterations
// steps: ring image (iterations - 1) mod 3 with one iteration per dispatch, of the dispatch that ran the last
// iteration with K per dispatch, x_0 lying in the third; SpringState images, spring_iterate.glsl) into the
// stage's target and keep the velocity. The state is in bind units: the target is scaled back to scene units
// by u (SpringFrame attach.w, spring_frame.comp; reference SpringDeformer.solve).
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"

#ifndef ITERATIONS_PER_DISPATCH
#define ITERATIONS_PER_DISPATCH 1
#endif


layout(std430, binding = B_STATUS) readonly buffer Status { DeformStatus status[]; };
layout(rgba32f, binding = I_SPRING_RING) readonly uniform image2D ring;  // three images stacked
layout(rgba32f, binding = I_SPRING_FRAME) readonly uniform image2D frame;  // SpringFrame
layout(std430, binding = B_DST) writeonly buffer Target { vec4 target[]; };
layout(std430, binding = B_VEL) writeonly buffer VelFinal { vec4 vel_final[]; };

void main() {
    uint g = gl_WorkGroupID.x;
    int k = instance_of_group(g);
    DeformInstance inst = instances[k];
    int i = local_index(inst, g);
    if (i >= inst.n_control) return;
    int di = inst.dyn_base + i;
    int it = status[k].iterations;
    // the state after `it` iterations lies in the image of the dispatch that ran the it-th, (it + K - 1) / K - 1
    // (K iterations per dispatch; x_0 in image 2): image (it - 1) mod 3 for K = 1
    int b = (it + ITERATIONS_PER_DISPATCH - 1) / ITERATIONS_PER_DISPATCH;
    ivec2 slot = ivec2(0, (b + 2) % 3 * (imageSize(ring).y / 3));
    vec4 x = imageLoad(ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X) + slot);
    vec4 v = imageLoad(ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_V) + slot);
    float u = imageLoad(frame, record_texel(di, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH)).w;
    target[di] = vec4(x.xyz * u, 1.0);
    vel_final[di] = v;
}
