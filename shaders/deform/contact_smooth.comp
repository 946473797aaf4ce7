#version 430 core
// Contact stage, one smoothing of the pushes of a smoothed pass (reference engine.skinning.contact.smooth_pushes):
// every control point takes the mean push of its mesh neighbours (the spring stage's CSR adjacency images; a point
// without neighbours keeps its own). The push buffer has two halves: this dispatch reads push[u_read + p] and writes
// push[u_write + p] (p: the pool index). The pass's last smoothing (u_last = 1) also applies it: dst = src + push.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"

layout(std430, binding = B_SRC) readonly buffer Src { vec4 src[]; };
layout(std430, binding = B_DST) writeonly buffer Dst { vec4 dst[]; };
layout(std430, binding = B_CONTACT_PUSH) buffer Push { vec4 push[]; };
layout(rgba32i, binding = I_SPRING_POINTS) readonly uniform iimage2D spring_points;  // SpringPoint (static)
layout(rgba32i, binding = I_SPRING_SLOTS) readonly uniform iimage2D spring_slots;    // SpringSlot (static)

uniform int u_last;
uniform int u_read;   // first record of the half read
uniform int u_write;  // first record of the half written

void main() {
    uint g = gl_WorkGroupID.x;
    DeformInstance inst = instances[instance_of_group(g)];
    int i = local_index(inst, g);
    if (i >= inst.n_control) return;
    int p = inst.dyn_base + i;
    ivec4 adj = imageLoad(spring_points, record_texel(inst.static_base + i, SPRING_POINT_TEXELS, SPRING_POINT_ADJ));
    vec3 sum = vec3(0.0);
    for (int e = 0; e < adj.y; ++e) {
        int nbr = imageLoad(spring_slots, record_texel(inst.adj_base + adj.x + e, SPRING_SLOT_TEXELS,
                                                       SPRING_SLOT_NBR)).x;
        sum += push[u_read + inst.dyn_base + nbr].xyz;
    }
    vec3 mean = adj.y > 0 ? sum / float(adj.y) : push[u_read + p].xyz;
    push[u_write + p] = vec4(mean, 0.0);
    if (u_last != 0) dst[p] = vec4(src[p].xyz + mean, 1.0);
}
