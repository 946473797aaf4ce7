#version 430 core
// Scene mesh pass, geometry stage: adds barycentric coordinates and the triangle index (the input
// primitive ID = index of the triangle in the mesh's index buffer) to every fragment. With the
// fragment's (primitive, barycentrics), a pixel names a pose-independent point of the surface.
layout(triangles) in;
layout(triangle_strip, max_vertices = 3) out;

in VertexData {
    vec3 world;
    vec3 normal;
    vec2 uv;
} g_in[];

out FragData {
    vec3 world;
    vec3 normal;
    vec2 uv;
    vec3 bary;
    flat uint prim;
} g_out;

void main() {
    for (int i = 0; i < 3; ++i) {
        g_out.world = g_in[i].world;
        g_out.normal = g_in[i].normal;
        g_out.uv = g_in[i].uv;
        g_out.bary = vec3(i == 0, i == 1, i == 2);
        g_out.prim = uint(gl_PrimitiveIDIn);
        gl_Position = gl_in[i].gl_Position;
        EmitVertex();
    }
    EndPrimitive();
}
