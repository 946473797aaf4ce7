#version 430 core
// Vertex copy (research 6.4): control points -> display vertices of one mesh instance.
// dst[d] = src[src_base + control_of_display[d]], w forced to 1 (a position).
layout(local_size_x = LOCAL_SIZE) in;

layout(std430, binding = B_SRC) readonly buffer Src { vec4 src[]; };
layout(std430, binding = B_MAP) readonly buffer Map { int control_of_display[]; };
layout(std430, binding = B_DST) writeonly buffer Dst { vec4 dst[]; };

uniform int u_src_base;   // first control point of the instance in the source pool
uniform int u_map_base;   // first display vertex of the asset in the map buffer
uniform int u_n_display;

void main() {
    int d = int(gl_GlobalInvocationID.x);
    if (d >= u_n_display) return;
    vec3 p = src[u_src_base + control_of_display[u_map_base + d]].xyz;
    dst[d] = vec4(p, 1.0);
}
