#version 430 core
// End of the spring stage: per control point, copy the instance's accepted state (after status.iterations
// steps: S0 for none, else ring[(iterations - 1) % 3]; SpringState images) into the stage's target and keep
// the velocity. The state is in bind units: the target is scaled back to scene units by u (SpringFrame
// attach.w, spring_frame.comp; reference SpringDeformer.solve).
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"


layout(std430, binding = B_STATUS) readonly buffer Status { DeformStatus status[]; };
layout(rgba32f, binding = I_SPRING_SRC) readonly uniform image2D s0;
layout(rgba32f, binding = I_SPRING_RING0) readonly uniform image2D ring0;
layout(rgba32f, binding = I_SPRING_RING1) readonly uniform image2D ring1;
layout(rgba32f, binding = I_SPRING_RING2) readonly uniform image2D ring2;
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
    ivec2 px = record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X);
    ivec2 pv = record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_V);
    vec4 x, v;
    int r = (it - 1) % 3;  // uniform per instance
    if (it == 0) { x = imageLoad(s0, px); v = imageLoad(s0, pv); }
    else if (r == 0) { x = imageLoad(ring0, px); v = imageLoad(ring0, pv); }
    else if (r == 1) { x = imageLoad(ring1, px); v = imageLoad(ring1, pv); }
    else { x = imageLoad(ring2, px); v = imageLoad(ring2, pv); }
    float u = imageLoad(frame, record_texel(di, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH)).w;
    target[di] = vec4(x.xyz * u, 1.0);
    vel_final[di] = v;
}
