#version 430 core
// Scene mesh pass (engine/render/passes/gbuffer.py), vertex stage of the G-buffer program (no
// tessellation): an indexed draw over the mesh's CORNER VERTICES (engine/render/corners.py). Corner vertex
// i is display vertex in_corner.x with a colour 0..2 that differs between the three corners of every
// triangle, so the unit vector of the colour, interpolated, gives each fragment the barycentrics of its
// triangle (in colour order); the provoking (last) corner of each triangle belongs to it alone and passes,
// flat, the triangle index and the colours of its corners 1 and 2, with which the fragment stage restores
// the corner order. This replaces gl_PrimitiveID (which sends llvmpipe's draw module down a slow
// primitive-assembly path) and the earlier expanded draw of 3 vertices per triangle; the triangles' strip
// order lets llvmpipe's vertex cache shade ~1.2 corner vertices per triangle (CesiumMan: 5.7k invocations,
// expanded: 14k). The corner vertices' static data (info word, texcoords) arrive as vertex attributes,
// which llvmpipe fetches several times faster than SSBO loads; the deformed positions and normals, written
// per display vertex by the deformers, are pulled from the SSBOs through in_corner.x.
//
// One draw covers a MATERIAL GROUP (engine/render/meshes.py DrawGroup): meshes sharing the corner vertices,
// texture and base colour whose deformed vertices lie in one pair of pooled buffers, each an instance. Row
// u_instance_base + gl_InstanceID of u_instances says where that instance's vertices start in the bound
// positions / normals ranges and which mesh id it writes (passed flat to the fragment stage); the pass
// reads the array's length from the program and uploads the rows in blocks of it.
#include "mesh_buffers.glsl"

uniform mat4 u_view_proj;
uniform uvec4 u_instances[128];  // (first positions element, first normals element, mesh id, 0) per instance
uniform int u_instance_base;     // row of gl_InstanceID 0 (the draw's first instance within the block)

#ifdef SCREEN_RECT
// The screen rectangle of the G-buffer's surfaces, grown by every vertex: the pixel bounds of its
// projection, one pixel wider on each side, clamped to the viewport; a vertex at or behind the eye
// plane (w <= 0) makes it the whole viewport. Every pixel a triangle covers lies in the bounds of its
// corners' projections when all of them have w > 0 (clipping keeps the covered part inside), so the
// rectangle is exact and conservative whatever the deformers did, with no read-back. The atomics run
// only for vertices outside the current rectangle: that is safe only when the read returns this frame's
// values (any of them: they only grow), never older contents of the buffer. Hence `coherent`: without it
// an NVIDIA driver served a read from a cache line of an earlier frame (a rectangle larger than this
// frame's so far), skipped a needed atomicMax, and the next frame's clear left a strip of stale surface
// behind (seen on an H100 under load; tests/gl/test_render_perf.py). llvmpipe has no such cache.
layout(std430, binding = BINDING_SCREEN_RECTS) coherent buffer ScreenRects { ivec4 screen_rects[]; };
uniform int u_rect_slot;
uniform vec2 u_viewport;  // framebuffer size in pixels

void grow_rect(vec4 clip) {
    ivec4 r = ivec4(0, 0, ivec2(u_viewport));
    if (clip.w > 1e-6) {
        vec2 px = (clip.xy / clip.w * 0.5 + 0.5) * u_viewport;
        r = ivec4(clamp(floor(px) - 1.0, vec2(0.0), u_viewport), clamp(ceil(px) + 1.0, vec2(0.0), u_viewport));
    }
    ivec4 cur = screen_rects[u_rect_slot];
    if (r.x < cur.x) atomicMin(screen_rects[u_rect_slot].x, r.x);
    if (r.y < cur.y) atomicMin(screen_rects[u_rect_slot].y, r.y);
    if (r.z > cur.z) atomicMax(screen_rects[u_rect_slot].z, r.z);
    if (r.w > cur.w) atomicMax(screen_rects[u_rect_slot].w, r.w);
}
#endif

in uvec2 in_corner;  // (display vertex, info word: see mesh_buffers.glsl)
#ifdef HAS_TEXCOORDS
in vec2 in_uv;       // TEXCOORD_0 of the corner's display vertex
#endif

out GBufferData {
    vec3 normal;
    vec2 uv;
    vec2 weight;     // weights of the corners of colours 1 and 2 (colour 0: 1 - x - y)
    flat uint info;  // the provoking corner's info word
    flat uint mesh_id;
} v_out;

void main() {
    uvec4 inst = u_instances[u_instance_base + gl_InstanceID];
    uint v = in_corner.x;
    uint colour = in_corner.y & 3u;
    v_out.normal = normals[inst.y + v].xyz;
#ifdef HAS_TEXCOORDS
    v_out.uv = in_uv;
#else
    v_out.uv = vec2(0.0);
#endif
    v_out.weight = vec2(colour == 1u, colour == 2u);
    v_out.info = in_corner.y;
    v_out.mesh_id = inst.z;
    gl_Position = u_view_proj * vec4(positions[inst.x + v].xyz, 1.0);
#ifdef SCREEN_RECT
    grow_rect(gl_Position);
#endif
}
