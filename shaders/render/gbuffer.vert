#version 430 core
// Scene mesh pass, vertex stage of the G-buffer program (no tessellation): an EXPANDED, non-indexed
// draw of 3 vertices per triangle. Vertex k of the draw is corner k % 3 of triangle k / 3; it pulls its
// display vertex through the mesh's index buffer (an SSBO) and then the deformed vertex from the SSBOs.
// Each corner also emits the unit barycentric of its corner, so the fragment stage gets the
// (perspective-correct) barycentrics of its triangle as an ordinary varying and the triangle index as
// gl_PrimitiveID, instead of re-reading the triangle's three corners per fragment: on software
// rasterisers, whose many small triangles shade mostly partial 4x4 blocks, that per-fragment gather
// costs more than shading each corner once per triangle here (bench/bench_render.py measures both).
#include "mesh_buffers.glsl"

uniform mat4 u_view_proj;

out GBufferData {
    vec3 normal;
    vec2 uv;
    vec2 bary;  // barycentrics of corners 1 and 2 (corner 0 = 1 - x - y)
} v_out;

void main() {
    int corner = gl_VertexID % 3;
    uint v = indices[gl_VertexID];
    v_out.normal = normals[v].xyz;
#ifdef HAS_TEXCOORDS
    v_out.uv = texcoords[v];
#else
    v_out.uv = vec2(0.0);
#endif
    v_out.bary = vec2(corner == 1, corner == 2);
    gl_Position = u_view_proj * vec4(positions[v].xyz, 1.0);
}
