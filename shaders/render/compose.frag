#version 430 core
// Compose pass (deferred lighting + depth compositor): one fullscreen triangle that lights the
// G-buffer and composites it by depth with an analytic ground plane (grid fading with distance) over a
// background gradient. Writes the final display colour (sRGB-encoded) and the scene depth.
#include "color.glsl"
#include "lighting.glsl"

in vec2 v_uv;

uniform sampler2D g_albedo;
uniform sampler2D g_normal;
uniform sampler2D g_bary;
uniform sampler2D g_position;
uniform sampler2D g_depth;

uniform mat4 u_inv_view_proj;
uniform mat4 u_view_proj;
uniform vec3 u_eye;
uniform float u_exposure;

uniform vec3 u_bg_top;        // linear
uniform vec3 u_bg_horizon;    // linear
uniform vec3 u_bg_bottom;     // linear

uniform bool u_ground;
uniform float u_ground_height;
uniform vec3 u_ground_albedo;  // linear
uniform vec3 u_grid_color;     // linear
uniform vec3 u_fade_center;
uniform vec2 u_fade_range;     // ground fades out between these distances from u_fade_center (m)
uniform vec2 u_grid_spacing;   // (minor, major) line spacing in metres

uniform bool u_wireframe;
uniform vec3 u_wire_color;     // linear

uniform bool u_shadow_enabled;
uniform sampler2DShadow u_shadow_map;
uniform mat4 u_shadow_matrix;  // world -> shadow texture space [0,1]^3
uniform float u_shadow_texel;

layout(location = 0) out vec4 o_color;

// Percentage-closer filtered key-light visibility of a world point (1 = lit).
float shadow_at(vec3 world, vec3 n) {
    if (!u_shadow_enabled) return 1.0;
    vec4 s = u_shadow_matrix * vec4(world + n * 0.02, 1.0);
    vec3 p = s.xyz / s.w;
    if (any(lessThan(p, vec3(0.0))) || any(greaterThan(p, vec3(1.0)))) return 1.0;
    float sum = 0.0;
    // 3x3 taps of the hardware-filtered comparison, 1.5 texels apart: soft edges at 9 fetches.
    for (int y = -1; y <= 1; ++y)
        for (int x = -1; x <= 1; ++x)
            sum += texture(u_shadow_map, vec3(p.xy + vec2(x, y) * u_shadow_texel * 1.5, p.z - 0.002));
    return sum / 9.0;
}

// Coverage of grid lines `spacing` apart around `coord` (anti-aliased, fading where cells get tiny).
float grid_lines(vec2 coord, float spacing, float width_px) {
    vec2 c = coord / spacing;
    vec2 d = max(fwidth(c), vec2(1e-6));
    vec2 g = abs(fract(c - 0.5) - 0.5) / d;
    float line = 1.0 - min(min(g.x, g.y) / width_px, 1.0);
    return line * (1.0 - smoothstep(0.08, 0.35, max(d.x, d.y)));
}

vec3 background(vec3 rd) {
    float h = rd.y;
    vec3 up = mix(u_bg_horizon, u_bg_top, smoothstep(0.0, 0.7, h));
    return mix(up, u_bg_bottom, smoothstep(0.0, -0.5, h));
}

void main() {
    ivec2 px = ivec2(gl_FragCoord.xy);
    vec2 ndc = v_uv * 2.0 - 1.0;
    vec4 pn = u_inv_view_proj * vec4(ndc, -1.0, 1.0);
    vec4 pf = u_inv_view_proj * vec4(ndc, 1.0, 1.0);
    vec3 ro = pn.xyz / pn.w;
    vec3 rd = normalize(pf.xyz / pf.w - ro);
    vec3 bg = background(rd);

    // Ground plane, evaluated for every pixel so its derivatives stay defined.
    float denom = (abs(rd.y) > 1e-6) ? rd.y : -1e-6;
    float t = (u_ground_height - ro.y) / denom;
    bool ground_hit = u_ground && t > 0.0 && u_eye.y > u_ground_height;
    vec3 hit = ro + max(t, 0.0) * rd;
    float minor = grid_lines(hit.xz, u_grid_spacing.x, 1.0);
    float major = grid_lines(hit.xz, u_grid_spacing.y, 1.5);
    vec4 gc = u_view_proj * vec4(hit, 1.0);
    float ground_depth = ground_hit ? clamp(0.5 * gc.z / gc.w + 0.5, 0.0, 1.0) : 2.0;

    float depth = texelFetch(g_depth, px, 0).r;
    bool mesh = depth < 1.0 && depth <= ground_depth;
    vec3 col = bg;
    float out_depth = 1.0;
    if (mesh) {
        vec3 albedo = texelFetch(g_albedo, px, 0).rgb;
        vec3 n = normalize(texelFetch(g_normal, px, 0).xyz);
        vec3 p = texelFetch(g_position, px, 0).xyz;
        vec3 v = normalize(u_eye - p);
        col = shade_surface(albedo, n, v, shadow_at(p, n)) * u_exposure;
        if (u_wireframe) {
            float e = texelFetch(g_bary, px, 0).w;
            col = mix(col, u_wire_color, 0.6 * (1.0 - smoothstep(0.4, 1.4, e)));
        }
        out_depth = depth;
    } else if (ground_hit) {
        vec3 up = vec3(0.0, 1.0, 0.0);
        vec3 lit = shade_surface(u_ground_albedo, up, -rd, shadow_at(hit, up)) * u_exposure;
        lit = mix(lit, u_grid_color, max(0.35 * minor, 0.7 * major));
        float dist = length(hit.xz - u_fade_center.xz);
        float alpha = 1.0 - smoothstep(u_fade_range.x, u_fade_range.y, dist);
        col = mix(bg, lit, alpha);
        out_depth = alpha > 0.0 ? ground_depth : 1.0;
    }
    o_color = vec4(linear_to_srgb(tonemap_aces(col)), 1.0);
    gl_FragDepth = out_depth;
}
