#version 430 core
// Compose pass (research Stage 5, the depth compositor), run once per G-buffer: the scene's, then each
// layer's. The pass of G-buffer g draws one quad over g's screen rectangle (compose.vert) at the far
// plane against g's own hardware depth, so the early depth test runs this shader only where g has a
// surface (no discard here: with one, llvmpipe took about twice as long for this pass, 7.8 vs 3.7 ms for
// 8 CesiumMen at 720p, even with layout(early_fragment_tests)). Per pixel the nearest surface of all
// G-buffers wins (ties: the earlier G-buffer, the scene first), unless the backdrop's ground is in front.
// The winner is lit (or shown as a debug channel when VIEW != 0) and writes the display colour and, with
// FRAME_IDS (layers, shadow map), the scene-level id texel (same packing as the G-buffer) and its window
// depth; a pixel covered by several G-buffers computes the same result in each of their passes. Without
// FRAME_IDS the scene G-buffer itself is the scene-level id buffer (the renderer's queries apply the same
// ground test). Pixels without any surface keep the backdrop (and contact shadows) drawn into the frame
// beforehand. So the cost grows with the pixels the meshes cover and with the number of layers, not with
// the number of meshes.
// Per-pixel cost: without layers the scene G-buffer and the backdrop depth are read with imageLoad
// (on llvmpipe about 40% cheaper than texelFetch; image units are too few for 9 G-buffers, so layers
// use texelFetch), and the view vector comes from an interpolated ray instead of unprojecting the
// depth (the world position is reconstructed only for shadow-map taps and debug views).
// Driven by engine/render/passes/compose.py.
#include "color.glsl"
#include "lighting.glsl"
#include "gbuffer_codec.glsl"

#ifndef LAYER_COUNT
#define LAYER_COUNT 0
#endif
#ifndef VIEW
#define VIEW 0
#endif
#ifndef SHADOW_TAPS
#define SHADOW_TAPS 0
#endif
#define GBUFFERS (LAYER_COUNT + 1)

in vec2 v_uv;
in vec3 v_ray;                         // eye -> far-plane point of this pixel (world)

#if LAYER_COUNT == 0
layout(r32f, binding = IMAGE_GBUFFER_ZCOPY) readonly uniform image2D i_zcopy;
layout(rgba8, binding = IMAGE_GBUFFER_ALBEDO) readonly uniform image2D i_albedo;
layout(rgba32ui, binding = IMAGE_GBUFFER_IDS) readonly uniform uimage2D i_ids;
layout(r32f, binding = IMAGE_BACKDROP_DEPTH) readonly uniform image2D i_backdrop_depth;
#define ZCOPY(j) imageLoad(i_zcopy, px).r
#define ALBEDO(j) imageLoad(i_albedo, px)
#define IDS(j) imageLoad(i_ids, px)
#define BACKDROP_DEPTH() imageLoad(i_backdrop_depth, px).r
#else
uniform sampler2D g_zcopy[GBUFFERS];   // window depth, 0 = no surface; [0] = scene, then the layers
uniform sampler2D g_albedo[GBUFFERS];
uniform usampler2D g_ids[GBUFFERS];
uniform sampler2D u_backdrop_depth_copy;  // the backdrop's window depth (R32F)
#define ZCOPY(j) texelFetch(g_zcopy[j], px, 0).r
#define ALBEDO(j) texelFetch(g_albedo[j], px, 0)
#define IDS(j) texelFetch(g_ids[j], px, 0)
#define BACKDROP_DEPTH() texelFetch(u_backdrop_depth_copy, px, 0).r
#endif
uniform sampler2D u_backdrop;          // display-encoded background + ground

uniform mat4 u_inv_view_proj;
uniform vec2 u_inv_size;               // 1 / framebuffer size
uniform vec3 u_eye;
uniform float u_exposure;
uniform bool u_wireframe;
uniform vec3 u_wire_color;             // linear

uniform sampler2DShadow u_shadow_map;
uniform mat4 u_shadow_matrix;          // world -> shadow texture space [0,1]^3
uniform float u_shadow_texel;

// Debug views (VIEW): 1 albedo, 2 normal, 3 position, 4 depth, 5 triangle, 6 barycentric, 7 mesh,
// 8 silhouette (the silhouette filter's value, include/silhouette.glsl: grey below u_sil_threshold, yellow above).
uniform vec3 u_bounds_lo;              // scene box, maps positions to colours
uniform vec3 u_bounds_hi;
uniform vec2 u_depth_range;            // eye distances mapped to white .. black

layout(location = 0) out vec4 o_color;
#ifdef FRAME_IDS
// The scene-level id buffer and depth, written when there are layers (or for the shadow-map ground
// pass). Without layers the scene G-buffer is that buffer already (queries read it and test the
// backdrop depth as this pass does), so only the colour is written.
layout(location = 1) out uvec4 o_ids;
layout(location = 2) out float o_depth;
#endif

vec3 world_at(vec2 frag, float depth) {
    vec4 c = vec4(frag * u_inv_size * 2.0 - 1.0, depth * 2.0 - 1.0, 1.0);
    vec4 w = u_inv_view_proj * c;
    return w.xyz / w.w;
}

#if VIEW == 8
// The silhouette view filters the frame's surface at the neighbouring pixels too: the nearest surface at
// pixel px as main() picks it, hidden by the ground in front.
bool surface_at(ivec2 px, out uvec4 ids, out float depth) {
    depth = 2.0;
    ids = uvec4(0u);
    for (int j = 0; j < GBUFFERS; ++j) {
        float dj = ZCOPY(j);
        if (dj != 0.0 && dj < depth) {
            depth = dj;
            ids = IDS(j);
        }
    }
    return depth <= BACKDROP_DEPTH() && ids.x > 0u;
}
uniform float u_sil_threshold;
#include "silhouette.glsl"
#endif

#if SHADOW_TAPS > 0
// Key-light visibility from the shadow map (1 = lit): SHADOW_TAPS hardware-filtered comparisons.
float shadow_at(vec3 world, vec3 n) {
    vec4 s = u_shadow_matrix * vec4(world + n * 0.02, 1.0);
    vec3 p = s.xyz / s.w;
    if (any(lessThan(p, vec3(0.0))) || any(greaterThan(p, vec3(1.0)))) return 1.0;
#if SHADOW_TAPS == 1
    return texture(u_shadow_map, vec3(p.xy, p.z - 0.002));
#else
    const int S = SHADOW_TAPS == 9 ? 3 : 2;  // 2x2 or 3x3 taps, 1.5 texels apart
    float sum = 0.0;
    for (int y = 0; y < S; ++y)
        for (int x = 0; x < S; ++x) {
            vec2 o = (vec2(x, y) - 0.5 * float(S - 1)) * 1.5 * u_shadow_texel;
            sum += texture(u_shadow_map, vec3(p.xy + o, p.z - 0.002));
        }
    return sum / float(S * S);
#endif
}
#else
float shadow_at(vec3 world, vec3 n) { return 1.0; }
#endif

vec3 false_color(uint k) {
    uint h = k * 2654435761u;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    return vec3(float(h & 255u), float((h >> 8) & 255u), float((h >> 16) & 255u)) / 255.0 * 0.8 + 0.2;
}

void main() {
    ivec2 px = ivec2(gl_FragCoord.xy);
    float depth = 2.0;
    uvec4 ids = uvec4(0u);
    vec4 alb = vec4(0.0);
    for (int j = 0; j < GBUFFERS; ++j) {
        float dj = ZCOPY(j);
        if (dj != 0.0 && dj < depth) {
            depth = dj;
            ids = IDS(j);
            alb = ALBEDO(j);
        }
    }
    float back = BACKDROP_DEPTH();
    if (back < depth) {  // the ground is in front (or, defensively, no surface at all)
#if VIEW == 0
        o_color = texelFetch(u_backdrop, px, 0);
#else
        o_color = vec4(vec3(0.08), 1.0);
#endif
#ifdef FRAME_IDS
        o_ids = uvec4(0u);
        o_depth = 0.0;
#endif
        return;
    }
#if VIEW == 0
    vec3 n = decode_normal(ids);
    vec3 v = normalize(-v_ray);
#if SHADOW_TAPS > 0
    float lit = shadow_at(world_at(gl_FragCoord.xy, depth), n);
#else
    const float lit = 1.0;
#endif
    vec3 col = shade_surface(alb.rgb * alb.rgb, n, v, lit) * u_exposure;
    if (u_wireframe) col = mix(col, u_wire_color, 0.6 * alb.a);
    o_color = vec4(linear_to_srgb_fast(tonemap_aces(col)), 1.0);
#else
#if VIEW == 1
    vec3 col = alb.rgb;
#elif VIEW == 2
    vec3 col = decode_normal(ids) * 0.5 + 0.5;
#elif VIEW == 3
    vec3 col = clamp((world_at(gl_FragCoord.xy, depth) - u_bounds_lo) / max(u_bounds_hi - u_bounds_lo, vec3(1e-6)),
                     0.0, 1.0);
#elif VIEW == 4
    float dist = length(world_at(gl_FragCoord.xy, depth) - u_eye);
    vec3 col = vec3(1.0 - clamp((dist - u_depth_range.x) / max(u_depth_range.y - u_depth_range.x, 1e-6), 0.0, 1.0));
#elif VIEW == 5
    vec3 col = false_color(ids.y * 7919u + ids.x);
#elif VIEW == 6
    vec3 col = decode_bary(ids);
#elif VIEW == 8
    float e = silhouette_edge(px, ivec2(round(1.0 / u_inv_size)));
    vec3 col = e > u_sil_threshold ? vec3(1.0, 0.8, 0.1) : vec3(0.12 + 0.5 * clamp(e / u_sil_threshold, 0.0, 1.0));
#else
    vec3 col = false_color(ids.x);
#endif
    if (u_wireframe) col = mix(col, u_wire_color, 0.6 * alb.a);
    o_color = vec4(col, 1.0);
#endif
#ifdef FRAME_IDS
    o_ids = ids;
    o_depth = depth;
#endif
}
