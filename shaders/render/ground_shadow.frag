#version 430 core
// Key-light shadow map on the ground (shadows = "map"): darkens, by multiplication, the frame's ground
// pixels (backdrop depth < 1, no mesh: frame depth 0) that the shadow map says are in shadow.
// Drawn at the end of the compose pass (engine/render/passes/compose.py).

in vec2 v_uv;
uniform sampler2D u_frame_depth;
uniform sampler2D u_backdrop_depth;
uniform sampler2DShadow u_shadow_map;
uniform mat4 u_shadow_matrix;
uniform mat4 u_inv_view_proj;
uniform vec2 u_inv_size;
uniform float u_ground_shadow;
layout(location = 0) out vec4 o_color;

void main() {
    ivec2 px = ivec2(gl_FragCoord.xy);
    float d = texelFetch(u_backdrop_depth, px, 0).r;
    if (d >= 1.0 || texelFetch(u_frame_depth, px, 0).r != 0.0) discard;
    vec4 c = u_inv_view_proj * vec4(gl_FragCoord.xy * u_inv_size * 2.0 - 1.0, d * 2.0 - 1.0, 1.0);
    vec4 s = u_shadow_matrix * vec4(c.xyz / c.w + vec3(0.0, 0.02, 0.0), 1.0);
    vec3 p = s.xyz / s.w;
    float vis = (any(lessThan(p, vec3(0.0))) || any(greaterThan(p, vec3(1.0)))) ? 1.0
              : texture(u_shadow_map, vec3(p.xy, p.z - 0.002));
    o_color = vec4(0.0, 0.0, 0.0, u_ground_shadow * (1.0 - vis));
}
