#version 430 core
// Vertex copy (research 6.4): control points -> display vertices of every instance of the batch, one
// invocation per pooled display slot (display group table at B_GROUPS).
// dst[display_base + d] = src[base + control_of_display[display_static + d]], w forced to 1 (a position).
// SKINNED_NORMALS = 1 (skin node option normals = "skinned"): also normals[display_base + d] =
// normalize(N_c * bind_normal[d]) with N_c the normal transform the skin stage blended for the display
// vertex's control point c (3 vec4 columns; numpy references skinning.lbs_normals / dqs_normals).
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"

layout(std430, binding = B_SRC) readonly buffer Src { vec4 src[]; };
layout(std430, binding = B_MAP) readonly buffer Map { int control_of_display[]; };
layout(std430, binding = B_DST) writeonly buffer Dst { vec4 dst[]; };
#if SKINNED_NORMALS
layout(std430, binding = B_NMAT) readonly buffer NMat { vec4 nmat[]; };            // 3 per control point
layout(std430, binding = B_BIND_NORMALS) readonly buffer BindNormals { vec4 bind_normals[]; };
layout(std430, binding = B_DST_NORMALS) writeonly buffer DstNormals { vec4 dst_normals[]; };
#endif

uniform int u_source_static;  // 1: src is indexed like the static pool (bind positions), 0: like the dynamic pool
uniform int u_normals_pooled;  // 1: bind_normals is the morph stage's output (display pool), 0: the static pool

void main() {
    uint g = gl_WorkGroupID.x;
    int k = instance_of_group(g);
    if (k < 0) return;  // a hole of the pool (removed mesh, alignment gap)
    DeformInstance inst = instances[k];
    int d = local_display_index(inst, g);
    if (d >= inst.n_display) return;
    int c = control_of_display[inst.display_static + d];
    vec3 p = src[(u_source_static != 0 ? inst.static_base : inst.dyn_base) + c].xyz;
    int o = inst.display_base + d;
    dst[o] = vec4(p, 1.0);
#if SKINNED_NORMALS
    int m = 3 * (inst.dyn_base + c);
    vec3 nb = bind_normals[(u_normals_pooled != 0 ? inst.display_base : inst.display_static) + d].xyz;
    vec3 n = nmat[m].xyz * nb.x + nmat[m + 1].xyz * nb.y + nmat[m + 2].xyz * nb.z;
    float len = length(n);
    dst_normals[o] = len > 0.0 ? vec4(n / len, 0.0) : vec4(0.0);
#endif
}
