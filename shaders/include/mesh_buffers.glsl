// Deformed vertex data of one mesh, as std430 SSBOs (engine/render/layouts.py holds the bindings).
// The renderer pulls from them by gl_VertexID; the deformer graph's compute shaders write the same
// buffers: define MESH_BUFFER_ACCESS as writeonly / coherent (or empty) before including for that.
// positions[i] = (x, y, z, 1) world space; normals[i] = (nx, ny, nz, 0); texcoords[i] = TEXCOORD_0.
// With BINDING_INDICES defined, the mesh's index buffer is readable too (3 uints per triangle).
// The G-buffer's corner vertices (engine/render/corners.py, render/gbuffer.vert) carry an info word:
// bits 0-1 = the corner's colour, and for the provoking corner of a triangle bits 2-3 / 4-5 = the
// colours of the triangle's corners 1 / 2, bits CORNER_TRIANGLE_SHIFT (6) and up = the triangle index.
#ifndef BINDING_POSITIONS
#error "pass the GLSL constants of engine.render.layouts (BINDING_POSITIONS, BINDING_NORMALS, BINDING_TEXCOORDS) as defines"
#endif
#ifndef MESH_BUFFER_ACCESS
#define MESH_BUFFER_ACCESS readonly
#endif

layout(std430, binding = BINDING_POSITIONS) MESH_BUFFER_ACCESS buffer DeformedPositions { vec4 positions[]; };
layout(std430, binding = BINDING_NORMALS) MESH_BUFFER_ACCESS buffer DeformedNormals { vec4 normals[]; };
layout(std430, binding = BINDING_TEXCOORDS) readonly buffer Texcoords { vec2 texcoords[]; };
#ifdef BINDING_INDICES
layout(std430, binding = BINDING_INDICES) readonly buffer TriangleIndices { uint indices[]; };
#endif
