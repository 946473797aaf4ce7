#version 430 core
// Face normals (research 6.4) of one mesh instance: one invocation per display triangle.
// faces[t] = (unit normal, |cross|) where |cross| = twice the area; zero-area triangles give (0, 0).
layout(local_size_x = LOCAL_SIZE) in;

layout(std430, binding = B_SRC) readonly buffer Positions { vec4 pos[]; };
layout(std430, binding = B_TRIS) readonly buffer Tris { ivec4 tris[]; };   // xyz display indices
layout(std430, binding = B_FACES) writeonly buffer Faces { vec4 faces[]; };

uniform int u_tri_base;   // first triangle of the asset in the triangle buffer
uniform int u_n_tris;

void main() {
    int t = int(gl_GlobalInvocationID.x);
    if (t >= u_n_tris) return;
    ivec4 f = tris[u_tri_base + t];
    vec3 a = pos[f.x].xyz, b = pos[f.y].xyz, c = pos[f.z].xyz;
    vec3 n = cross(b - a, c - a);
    float len = length(n);
    faces[t] = len > 0.0 ? vec4(n / len, len) : vec4(0.0);
}
