#version 430 core
// End of the spring stage: per control point, copy the instance's accepted state (after status.iterations
// steps: S0 for none, else ring[(iterations - 1) % 3]) into the stage's target and keep the velocity.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"

struct SpringState { vec4 x; vec4 v; };

layout(std430, binding = B_STATUS) readonly buffer Status { DeformStatus status[]; };
layout(std430, binding = B_SRC) readonly buffer S0 { SpringState s0[]; };
layout(std430, binding = B_RING0) readonly buffer Ring0 { SpringState ring0[]; };
layout(std430, binding = B_RING1) readonly buffer Ring1 { SpringState ring1[]; };
layout(std430, binding = B_RING2) readonly buffer Ring2 { SpringState ring2[]; };
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
    SpringState s;
    if (it == 0) s = s0[di];
    else {
        int r = (it - 1) % 3;
        s = r == 0 ? ring0[di] : (r == 1 ? ring1[di] : ring2[di]);
    }
    target[di] = vec4(s.x.xyz, 1.0);
    vel_final[di] = s.v;
}
