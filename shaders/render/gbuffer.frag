#version 430 core
// Scene mesh pass, fragment stage: writes the G-buffer (MRT); the compose pass lights it.
#include "color.glsl"

in FragData {
    vec3 world;
    vec3 normal;
    vec2 uv;
    vec3 bary;
    flat uint prim;
} f_in;

uniform vec4 u_base_color;       // linear RGBA (glTF baseColorFactor)
uniform bool u_has_texture;
uniform sampler2D u_base_texture; // sRGB-encoded RGBA8, decoded here
uniform uint u_mesh_id;           // written as id + 1 so 0 means "no mesh"

layout(location = 0) out vec4 o_albedo;    // linear rgb, a = coverage
layout(location = 1) out vec4 o_normal;    // unit world normal (facing the eye), w = 1
layout(location = 2) out vec4 o_position;  // world position, w = 1
layout(location = 3) out uvec2 o_ids;      // (mesh id + 1, triangle index)
layout(location = 4) out vec4 o_bary;      // barycentrics, w = distance to the nearest edge in pixels

void main() {
    vec4 base = u_base_color;
    if (u_has_texture) {
        vec4 t = texture(u_base_texture, f_in.uv);
        base *= vec4(srgb_to_linear(t.rgb), t.a);
    }
    vec3 n = normalize(f_in.normal);
    if (!gl_FrontFacing) n = -n;  // show the inside of open meshes lit, as double-sided
    vec3 d = fwidth(f_in.bary);
    vec3 edge = f_in.bary / max(d, vec3(1e-6));
    o_albedo = vec4(base.rgb, 1.0);
    o_normal = vec4(n, 1.0);
    o_position = vec4(f_in.world, 1.0);
    o_ids = uvec2(u_mesh_id + 1u, f_in.prim);
    o_bary = vec4(f_in.bary, min(edge.x, min(edge.y, edge.z)));
}
