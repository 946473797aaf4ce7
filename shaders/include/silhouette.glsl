// The silhouette filter (research 7.3, after SilSketch): the magnitude of the 4-neighbour Laplacian of a
// G-buffer channel, summed over its components; border pixels replicate (clamped neighbours). The GLSL side of
// engine.skinning.roi.laplacian_edges (the numpy reference, which filters Session.gbuffer()'s channels).
// Shared by render/silhouette.comp (the tool's filter, read back as a pixel list) and render/compose.frag (the
// "silhouette" debug view). The including file defines, before including this:
//   bool surface_at(ivec2 p, out uvec4 ids, out float depth)   the frame's surface at pixel p (ids texel,
//                                                               window depth); false where it shows none
//   vec3 world_at(vec2 frag, float depth)                       the world point of window point frag at depth
// and the uniform u_sil_channel: SIL_NORMAL, SIL_DEPTH or SIL_POSITION (defines from engine/gpu/layouts.py).
// Channel values where no surface shows are the reference's: normal 0, depth 1, position 0.
#include "gbuffer_codec.glsl"

uniform int u_sil_channel;

vec3 silhouette_channel(ivec2 p) {
    uvec4 ids;
    float depth;
    bool hit = surface_at(p, ids, depth);
    if (u_sil_channel == SIL_NORMAL) return hit ? decode_normal(ids) : vec3(0.0);
    if (u_sil_channel == SIL_DEPTH) return vec3(hit ? depth : 1.0, 0.0, 0.0);
    return hit ? world_at(vec2(p) + 0.5, depth) : vec3(0.0);  // SIL_POSITION
}

// |Laplacian| of the channel at pixel p of a size.x x size.y frame.
float silhouette_edge(ivec2 p, ivec2 size) {
    ivec2 hi = size - 1;
    vec3 lap = silhouette_channel(clamp(p + ivec2(0, 1), ivec2(0), hi))
             + silhouette_channel(clamp(p - ivec2(0, 1), ivec2(0), hi))
             + silhouette_channel(clamp(p - ivec2(1, 0), ivec2(0), hi))
             + silhouette_channel(clamp(p + ivec2(1, 0), ivec2(0), hi))
             - 4.0 * silhouette_channel(p);
    return abs(lap.x) + abs(lap.y) + abs(lap.z);
}
