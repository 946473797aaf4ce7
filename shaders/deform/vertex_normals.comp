#version 430 core
// Vertex normals (research 6.4; numpy reference engine.skinning.meshprep.vertex_normals) of every instance
// of the batch, one invocation per pooled display slot d (display group table at B_GROUPS):
//   ref(d) = sum of area-weighted normals of the display triangles that use d (its smoothing group);
//   n(d)   = normalize(sum over triangles f around d's control point with angle(f, ref(d)) <= crease).
// Area weighting: faces[] hold unit normal and |cross| (= twice the area), so n*|cross| is the raw cross.
// A display vertex in no triangle gets a zero normal.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"

layout(std430, binding = B_FACES) readonly buffer Faces { vec4 faces[]; };
layout(std430, binding = B_MAP) readonly buffer Map { int control_of_display[]; };
layout(std430, binding = B_DFACE) readonly buffer DFace { ivec2 dface[]; };        // (offset, count) per display vertex
layout(std430, binding = B_DFACE_INDEX) readonly buffer DFaceIdx { int dface_index[]; };
layout(std430, binding = B_CFACE) readonly buffer CFace { ivec2 cface[]; };        // (offset, count) per control point
layout(std430, binding = B_CFACE_INDEX) readonly buffer CFaceIdx { int cface_index[]; };
layout(std430, binding = B_DST) writeonly buffer Normals { vec4 normals[]; };

uniform float u_cos_crease;  // cos(crease angle) - 1e-9; <= -2 keeps every face (no crease test)

void main() {
    uint g = gl_WorkGroupID.x;
    int k = instance_of_group(g);
    if (k < 0) return;  // a hole of the pool (removed mesh, alignment gap)
    DeformInstance inst = instances[k];
    int d = local_display_index(inst, g);
    if (d >= inst.n_display) return;
    int o = inst.display_base + d;
    ivec2 dr = dface[inst.display_static + d];
    if (dr.y == 0) { normals[o] = vec4(0.0); return; }
    int fb = inst.face_base;
    vec3 uref = vec3(0.0);
    if (u_cos_crease > -2.0) {  // the smoothing group's reference normal matters only with a crease test
        vec3 ref = vec3(0.0);
        for (int e = 0; e < dr.y; ++e) {
            vec4 f = faces[fb + dface_index[inst.dface_static + dr.x + e]];
            ref += f.xyz * f.w;
        }
        float rl = length(ref);
        uref = rl > 0.0 ? ref / rl : vec3(0.0);
    }
    int c = control_of_display[inst.display_static + d];
    ivec2 cr = cface[inst.static_base + c];
    vec3 acc = vec3(0.0);
    for (int e = 0; e < cr.y; ++e) {
        vec4 f = faces[fb + cface_index[inst.cface_static + cr.x + e]];
        if (dot(uref, f.xyz) >= u_cos_crease) acc += f.xyz * f.w;
    }
    float al = length(acc);
    normals[o] = al > 0.0 ? vec4(acc / al, 0.0) : vec4(0.0);
}
