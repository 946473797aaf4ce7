#version 430 core
// Backdrop pass: the background gradient and the ground plane with its grid, lit by the scene lights,
// fading with distance. It depends only on the camera, the lights and the look, so the renderer redraws
// it only when one of those changes and the compose pass reads it (colour display-encoded, depth, and the
// depth once more as an R32F colour). Driven by engine/render/passes/backdrop.py.
#include "color.glsl"
#include "lighting.glsl"

in vec2 v_uv;

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

layout(location = 0) out vec4 o_color;
layout(location = 1) out float o_depth;  // the window depth again, as a colour the compositor can image-load

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
    float ground_depth = clamp(0.5 * gc.z / gc.w + 0.5, 0.0, 1.0);

    vec3 col = bg;
    float out_depth = 1.0;
    if (ground_hit) {
        vec3 up = vec3(0.0, 1.0, 0.0);
        vec3 lit = shade_surface(u_ground_albedo, up, -rd, 1.0) * u_exposure;
        lit = mix(lit, u_grid_color, max(0.35 * minor, 0.7 * major));
        float dist = length(hit.xz - u_fade_center.xz);
        float alpha = 1.0 - smoothstep(u_fade_range.x, u_fade_range.y, dist);
        col = mix(bg, lit, alpha);
        out_depth = alpha > 0.0 ? ground_depth : 1.0;
    }
    o_color = vec4(linear_to_srgb(tonemap_aces(col)), 1.0);
    gl_FragDepth = out_depth;
    o_depth = out_depth;
}
