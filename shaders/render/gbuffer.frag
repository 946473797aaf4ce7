#version 430 core
// Scene mesh pass, fragment stage: writes the G-buffer (albedo + packed ids, see gbuffer_codec.glsl, and
// a copy of the window depth that the compositor reads; the hardware depth buffer itself only serves
// the depth tests). World positions are reconstructed from the depth.
//
// Barycentrics: with EXPANDED (the default, after render/gbuffer.vert: a non-indexed draw of 3 vertices
// per triangle) each corner emits its unit barycentric, interpolated here (perspective-correct), and
// gl_PrimitiveID is the triangle's index. Without it, a previous stage (Phong tessellation, or
// render/mesh.geom) supplies bary and prim.
#include "color.glsl"
#include "gbuffer_codec.glsl"
#ifdef EXPANDED
in GBufferData {
    vec3 normal;
    vec2 uv;
    vec2 bary;
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

uniform vec4 u_base_color;       // linear RGBA (glTF baseColorFactor)
uniform bool u_has_texture;
uniform sampler2D u_base_texture; // sRGB-encoded RGBA8, decoded by the texture unit (SRGB8_ALPHA8)
uniform uint u_mesh_id;           // written as id + 1 so 0 means "no mesh"

layout(location = 0) out vec4 o_albedo;  // sqrt(linear rgb), a = wireframe edge coverage
layout(location = 1) out uvec4 o_ids;    // see gbuffer_codec.glsl
layout(location = 2) out float o_depth;  // window depth (0 is kept for "no surface")

void main() {
    vec4 base = u_base_color;
    if (u_has_texture) {
        base *= texture(u_base_texture, f_in.uv);
    }
#ifdef EXPANDED
    uint prim = uint(gl_PrimitiveID);
    vec3 bary = vec3(1.0 - f_in.bary.x - f_in.bary.y, f_in.bary);
#else
    uint prim = f_in.prim;
    vec3 bary = f_in.bary;
#endif
    vec3 n = normalize(f_in.normal);
    if (!gl_FrontFacing) n = -n;  // show the inside of open meshes lit, as double-sided
    vec3 d = max(fwidth(bary), vec3(1e-6));
    vec3 edge = bary / d;
    float wire = 1.0 - smoothstep(0.4, 1.4, min(edge.x, min(edge.y, edge.z)));
    o_albedo = vec4(sqrt(clamp(base.rgb, 0.0, 1.0)), wire);
    o_ids = encode_ids(u_mesh_id, prim, bary, n);
    o_depth = max(gl_FragCoord.z, 1e-7);
}
