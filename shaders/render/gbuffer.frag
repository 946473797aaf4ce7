#version 430 core
// Scene mesh pass, fragment stage: writes the G-buffer (albedo + packed ids, see gbuffer_codec.glsl, and
// a copy of the window depth that the compositor reads; the hardware depth buffer itself only serves
// the depth tests). World positions are reconstructed from the depth.
//
// Barycentrics and triangle: with CORNERS (the default, after render/gbuffer.vert: an indexed draw over
// corner vertices) the interpolated colour weights are permuted back to the triangle's corner order with
// the provoking corner's flat info word, which also holds the triangle index. Without it, a previous
// stage (Phong tessellation) supplies bary and prim. The mesh id comes flat from the vertex stage with
// CORNERS (one draw per material group, a mesh per instance), else from u_mesh_id (one draw per mesh).
//
// Cost matters here more than anywhere: on llvmpipe the mesh's small triangles are shaded in 4x4 blocks
// that are mostly partly covered, so every instruction runs for many more fragments than the mesh covers.
// Hence: the base-colour texture holds sqrt(linear albedo), the G-buffer's own encoding, in RGBA8 UNORM
// (the renderer converts it when the mesh is added; llvmpipe filters it markedly faster than an sRGB
// texture, which it decodes per texel) and is sampled bilinearly in one mip level; u_albedo_scale is
// sqrt(linear baseColorFactor); no normalize (the octahedral encoding divides by the L1 norm anyway);
// the wireframe coverage is computed only in the WIREFRAME variant. Driven by engine/render/passes/gbuffer.py.
#include "gbuffer_codec.glsl"
#ifdef CORNERS
in GBufferData {
    vec3 normal;
    vec2 uv;
    vec2 weight;
    flat uint info;
    flat uint mesh_id;
} f_in;
#else
in FragData {
    vec3 world;
    vec3 normal;
    vec2 uv;
    vec3 bary;
    flat uint prim;
} f_in;
#endif

uniform vec3 u_albedo_scale;      // sqrt of the linear RGB glTF baseColorFactor
uniform bool u_has_texture;
uniform sampler2D u_base_texture; // RGBA8 UNORM: sqrt(linear albedo) (albedo_levels in engine/render/meshes.py)
#ifndef CORNERS
uniform uint u_mesh_id;           // written as id + 1 so 0 means "no mesh"
#endif

layout(location = 0) out vec4 o_albedo;  // sqrt(linear rgb), a = wireframe edge coverage
layout(location = 1) out uvec4 o_ids;    // see gbuffer_codec.glsl
layout(location = 2) out float o_depth;  // window depth (0 is kept for "no surface")

void main() {
    vec3 albedo = u_albedo_scale;
    if (u_has_texture) {
        albedo = clamp(albedo * texture(u_base_texture, f_in.uv).rgb, 0.0, 1.0);
    }
#ifdef CORNERS
    uint info = f_in.info;
    vec3 w = vec3(1.0 - f_in.weight.x - f_in.weight.y, f_in.weight);
    vec3 bary;
    bary.y = w[(info >> 2) & 3u];
    bary.z = w[(info >> 4) & 3u];
    bary.x = 1.0 - bary.y - bary.z;
    uint prim = info >> CORNER_TRIANGLE_SHIFT;
    uint mesh_id = f_in.mesh_id;
#else
    uint mesh_id = u_mesh_id;
    uint prim = f_in.prim;
    vec3 bary = f_in.bary;
#endif
    vec3 n = gl_FrontFacing ? f_in.normal : -f_in.normal;  // inside of open meshes lit, as double-sided
#ifdef WIREFRAME
    vec3 d = max(fwidth(bary), vec3(1e-6));
    vec3 edge = bary / d;
    float wire = 1.0 - smoothstep(0.4, 1.4, min(edge.x, min(edge.y, edge.z)));
#else
    const float wire = 0.0;
#endif
    o_albedo = vec4(albedo, wire);
    o_ids = encode_ids(mesh_id, prim, bary, n);
    o_depth = max(gl_FragCoord.z, 1e-7);
}
