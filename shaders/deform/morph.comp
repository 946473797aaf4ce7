#version 430 core
// Morph targets (glTF 3.7.2.2), before skinning: the instance's morph weights applied to its asset's target
// deltas. Numpy reference: engine.skinning.morph.morph / morph_normals.
// MORPH_NORMALS = 0: one invocation per control point of every instance of the batch (control group table at
// B_GROUPS): dst[dyn_base + i] = bind[static_base + i] + sum_m w_m * delta_m[i].
// MORPH_NORMALS = 1: one invocation per display vertex (display group table at B_GROUPS): the morphed bind
// normal, renormalised, at dst[display_base + d] (what the copy stage transforms with skinned normals).
// Table row k (instance k of the batch): x first position-delta row, y target count M, z first weight,
// w first normal-delta row (-1: the asset has no normal deltas); deltas are target-major (m * n + i).
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"

layout(std430, binding = B_SRC) readonly buffer Src { vec4 src[]; };        // bind positions / bind normals
layout(std430, binding = B_DST) writeonly buffer Dst { vec4 dst[]; };
layout(std430, binding = B_MORPH_DELTAS) readonly buffer Deltas { vec4 deltas[]; };
layout(std430, binding = B_MORPH_TABLE) readonly buffer Table { ivec4 morph_table[]; };
layout(std430, binding = B_MORPH_WEIGHTS) readonly buffer Weights { float morph_weights[]; };

void main() {
    uint g = gl_WorkGroupID.x;
    int k = instance_of_group(g);
    if (k < 0) return;  // a hole of the display pool
    DeformInstance inst = instances[k];
    ivec4 t = morph_table[k];
#if MORPH_NORMALS
    int i = local_display_index(inst, g);
    if (i >= inst.n_display) return;
    vec3 p = src[inst.display_static + i].xyz;
    if (t.w >= 0) {
        for (int m = 0; m < t.y; ++m) {
            float w = morph_weights[t.z + m];
            if (w != 0.0) p += w * deltas[t.w + m * inst.n_display + i].xyz;
        }
        float len = length(p);
        p = len > 0.0 ? p / len : vec3(0.0);
    }
    dst[inst.display_base + i] = vec4(p, 0.0);
#else
    int i = local_index(inst, g);
    if (i >= inst.n_control) return;
    vec3 p = src[inst.static_base + i].xyz;
    for (int m = 0; m < t.y; ++m) {
        float w = morph_weights[t.z + m];
        if (w != 0.0) p += w * deltas[t.x + m * inst.n_control + i].xyz;
    }
    dst[inst.dyn_base + i] = vec4(p, 1.0);
#endif
}
