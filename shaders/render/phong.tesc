#version 430 core
// Phong tessellation (Boubekeur & Alexa 2008), control stage: one patch per triangle, a uniform level.
layout(vertices = 3) out;

in VertexData {
    vec3 world;
    vec3 normal;
    vec2 uv;
} c_in[];

out VertexData {
    vec3 world;
    vec3 normal;
    vec2 uv;
} c_out[];

uniform float u_tess_level;

void main() {
    c_out[gl_InvocationID].world = c_in[gl_InvocationID].world;
    c_out[gl_InvocationID].normal = c_in[gl_InvocationID].normal;
    c_out[gl_InvocationID].uv = c_in[gl_InvocationID].uv;
    if (gl_InvocationID == 0) {
        gl_TessLevelOuter[0] = u_tess_level;
        gl_TessLevelOuter[1] = u_tess_level;
        gl_TessLevelOuter[2] = u_tess_level;
        gl_TessLevelInner[0] = u_tess_level;
    }
}
