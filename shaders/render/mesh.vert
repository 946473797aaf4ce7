#version 430 core
// Indexed mesh draws (shadow map; Phong tessellation of the G-buffer), vertex stage: pulls the deformed
// vertex from the SSBOs by gl_VertexID (the index buffer supplies it) and applies the view-projection;
// positions are already world space. With TESSELLATION the projection is left to the evaluation stage.
// The untessellated G-buffer pass uses render/gbuffer.vert instead (indexed draw over corner vertices).
// Driven by engine/render/passes/shadow.py and gbuffer.py.
#include "mesh_buffers.glsl"

uniform mat4 u_view_proj;

out VertexData {
    vec3 world;
    vec3 normal;
    vec2 uv;
} v_out;

void main() {
    vec4 p = positions[gl_VertexID];
    v_out.world = p.xyz;
    v_out.normal = normals[gl_VertexID].xyz;
#ifdef HAS_TEXCOORDS
    v_out.uv = texcoords[gl_VertexID];
#else
    v_out.uv = vec2(0.0);
#endif
#ifdef TESSELLATION
    gl_Position = vec4(p.xyz, 1.0);
#else
    gl_Position = u_view_proj * vec4(p.xyz, 1.0);
#endif
}
