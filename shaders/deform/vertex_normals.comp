#version 430 core
// Vertex normals (research 6.4; numpy reference engine.skinning.meshprep.vertex_normals) of one mesh
// instance, one invocation per display vertex d:
//   ref(d) = sum of area-weighted normals of the display triangles that use d (its smoothing group);
//   n(d)   = normalize(sum over triangles f around d's control point with angle(f, ref(d)) <= crease).
// Area weighting: faces[] hold unit normal and |cross| (= twice the area), so n*|cross| is the raw cross.
// A display vertex in no triangle gets a zero normal.
layout(local_size_x = LOCAL_SIZE) in;

layout(std430, binding = B_FACES) readonly buffer Faces { vec4 faces[]; };
layout(std430, binding = B_MAP) readonly buffer Map { int control_of_display[]; };
layout(std430, binding = B_DFACE) readonly buffer DFace { ivec2 dface[]; };        // (offset, count) per display vertex
layout(std430, binding = B_DFACE_INDEX) readonly buffer DFaceIdx { int dface_index[]; };
layout(std430, binding = B_CFACE) readonly buffer CFace { ivec2 cface[]; };        // (offset, count) per control point
layout(std430, binding = B_CFACE_INDEX) readonly buffer CFaceIdx { int cface_index[]; };
layout(std430, binding = B_DST) writeonly buffer Normals { vec4 normals[]; };

uniform int u_n_display;
uniform int u_map_base;    // first display vertex of the asset (map, dface)
uniform int u_ctrl_base;   // first control point of the asset (cface)
uniform int u_dface_base;  // first entry of the asset in dface_index
uniform int u_cface_base;  // first entry of the asset in cface_index
uniform float u_cos_crease;  // cos(crease angle) - 1e-9; <= -2 keeps every face (no crease test)

void main() {
    int d = int(gl_GlobalInvocationID.x);
    if (d >= u_n_display) return;
    ivec2 dr = dface[u_map_base + d];
    if (dr.y == 0) { normals[d] = vec4(0.0); return; }
    vec3 ref = vec3(0.0);
    for (int e = 0; e < dr.y; ++e) {
        vec4 f = faces[dface_index[u_dface_base + dr.x + e]];
        ref += f.xyz * f.w;
    }
    float rl = length(ref);
    vec3 uref = rl > 0.0 ? ref / rl : vec3(0.0);
    int c = control_of_display[u_map_base + d];
    ivec2 cr = cface[u_ctrl_base + c];
    vec3 acc = vec3(0.0);
    for (int e = 0; e < cr.y; ++e) {
        vec4 f = faces[cface_index[u_cface_base + cr.x + e]];
        if (dot(uref, f.xyz) >= u_cos_crease) acc += f.xyz * f.w;
    }
    float al = length(acc);
    normals[d] = al > 0.0 ? vec4(acc / al, 0.0) : vec4(0.0);
}
