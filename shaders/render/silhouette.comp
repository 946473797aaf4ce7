#version 430 core
// The silhouette filter of the last frame (research 7.3, after SilSketch), for the silhouette tool: one
// invocation per pixel; pixels outside the G-buffers' screen rectangles (where no surface can be) return at
// once. A pixel showing a surface of a selected mesh (bit mesh id of MeshMask, or any with u_all_meshes)
// whose filter value (include/silhouette.glsl) exceeds u_threshold is appended to Found as
// (x | y << 16 with y counted from the bottom, then the id texel's mesh id + 1, triangle and packed
// barycentrics): the only thing read back. u_write_edges also stores every surface pixel's filter value
// (0 elsewhere) in o_edges (tests, debugging). The frame's surfaces are read as the queries read them
// (engine/render/queries.py): the frame id and depth targets when the compositor wrote them, else the scene
// G-buffer with the backdrop's ground in front hiding it (u_ground_test). Driven by engine/render/silhouette.py;
// the numpy reference is engine.skinning.roi.silhouette_pixels over Session.gbuffer().
layout(local_size_x = 8, local_size_y = 8) in;

uniform usampler2D u_ids;      // id texels (gbuffer_codec.glsl)
uniform sampler2D u_depth;     // window depth, 0 = no surface
uniform sampler2D u_backdrop;  // the backdrop's window depth (read with u_ground_test)
uniform bool u_ground_test;
uniform mat4 u_inv_view_proj;
uniform vec2 u_inv_size;       // 1 / frame size
uniform int u_slots;           // screen rectangles in use: the scene G-buffer's, then the layers'
uniform float u_threshold;
uniform bool u_all_meshes;
uniform uint u_capacity;       // records Found holds
uniform bool u_write_edges;

layout(std430, binding = BINDING_SCREEN_RECTS) readonly buffer ScreenRects { ivec4 screen_rects[]; };
layout(std430, binding = SIL_BINDING_MASK) readonly buffer MeshMask { uint mesh_mask[]; };
layout(std430, binding = SIL_BINDING_FOUND) buffer Found { uvec4 found_count; uvec4 found[]; };
layout(r32f, binding = SIL_IMAGE_EDGES) writeonly uniform image2D o_edges;

bool surface_at(ivec2 p, out uvec4 ids, out float depth) {
    depth = texelFetch(u_depth, p, 0).r;
    ids = texelFetch(u_ids, p, 0);
    if (depth == 0.0 || ids.x == 0u) return false;
    return !u_ground_test || depth <= texelFetch(u_backdrop, p, 0).r;
}

vec3 world_at(vec2 frag, float depth) {
    vec4 w = u_inv_view_proj * vec4(frag * u_inv_size * 2.0 - 1.0, depth * 2.0 - 1.0, 1.0);
    return w.xyz / w.w;
}

#include "silhouette.glsl"

bool in_rects(ivec2 p) {
    for (int k = 0; k < u_slots; ++k) {
        ivec4 r = screen_rects[k];
        if (all(greaterThanEqual(p, r.xy)) && all(lessThan(p, r.zw))) return true;
    }
    return false;
}

bool selected(uint mesh_id) {
    if (u_all_meshes) return true;
    uint word = mesh_id >> 5;
    return word < uint(mesh_mask.length()) && (mesh_mask[word] & (1u << (mesh_id & 31u))) != 0u;
}

void main() {
    ivec2 size = textureSize(u_depth, 0);
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(p, size))) return;
    uvec4 ids;
    float depth;
    bool inside = in_rects(p) && surface_at(p, ids, depth);
    float e = inside ? silhouette_edge(p, size) : 0.0;
    if (u_write_edges) imageStore(o_edges, p, vec4(e));
    if (!inside || !(e > u_threshold) || !selected(ids.x - 1u)) return;
    uint k = atomicAdd(found_count.x, 1u);
    if (k < u_capacity) found[k] = uvec4(uint(p.x) | (uint(p.y) << 16), ids.x, ids.y, ids.z);
}
