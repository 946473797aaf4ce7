#version 430 core
// End of the spring stage: per control point, copy the instance's accepted state (after status.iterations
// steps: ring image (iterations - 1) mod 3, x_0 lying in the third; SpringState images, spring_iterate.glsl) into the
// stage's target and keep the velocity.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"


layout(std430, binding = B_STATUS) readonly buffer Status { DeformStatus status[]; };
layout(rgba32f, binding = I_SPRING_RING) readonly uniform image2D ring;  // three images stacked
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
    ivec2 slot = ivec2(0, (it + 2) % 3 * (imageSize(ring).y / 3));  // image (it - 1) mod 3 of the ring
    vec4 x = imageLoad(ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X) + slot);
    vec4 v = imageLoad(ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_V) + slot);
    target[di] = vec4(x.xyz, 1.0);
    vel_final[di] = v;
}
