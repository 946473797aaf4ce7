#version 430 core
// End of the spring stage: per control point, copy the instance's accepted state (after status.iterations
// steps: ring (iterations - 1) mod 3, x_0 lying in ring2; SpringState images, spring_iterate.glsl) into the
// stage's target and keep the velocity.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"


layout(std430, binding = B_STATUS) readonly buffer Status { DeformStatus status[]; };
layout(rgba32f, binding = I_SPRING_RING0) readonly uniform image2D ring0;
layout(rgba32f, binding = I_SPRING_RING1) readonly uniform image2D ring1;
layout(rgba32f, binding = I_SPRING_RING2) readonly uniform image2D ring2;
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
    ivec2 px = record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X);
    ivec2 pv = record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_V);
    vec4 x, v;
    int r = (it + 2) % 3;  // (it - 1) mod 3, uniform per instance
    if (r == 0) { x = imageLoad(ring0, px); v = imageLoad(ring0, pv); }
    else if (r == 1) { x = imageLoad(ring1, px); v = imageLoad(ring1, pv); }
    else { x = imageLoad(ring2, px); v = imageLoad(ring2, pv); }
    target[di] = vec4(x.xyz, 1.0);
    vel_final[di] = v;
}
