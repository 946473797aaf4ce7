#version 430 core
// End of the spring stage when the iterations do not resolve in their last dispatch (stages.spring: the energy
// and force schemes, or a frame without iterations): per control point, copy the instance's accepted state
// (after status.iterations steps) into the stage's target and keep the velocity (spring_resolve.glsl).
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"

#ifndef ITERATIONS_PER_DISPATCH
#define ITERATIONS_PER_DISPATCH 1
#endif


layout(std430, binding = B_STATUS) readonly buffer Status { DeformStatus status[]; };
layout(rgba32f, binding = I_SPRING_RING) readonly uniform image2D ring;  // three images stacked
layout(rgba32f, binding = I_SPRING_FRAME) readonly uniform image2D frame;  // SpringFrame

#include "spring_resolve.glsl"

void main() {
    uint g = gl_WorkGroupID.x;
    int k = instance_of_group(g);
    DeformInstance inst = instances[k];
    int i = local_index(inst, g);
    if (i >= inst.n_control) return;
    resolve_point(inst.dyn_base + i, status[k].iterations);
}
