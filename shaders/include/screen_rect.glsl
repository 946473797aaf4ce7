// A quad over a G-buffer's screen rectangle (ivec4 x0, y0, x1, y1 in pixels, x1/y1 exclusive; grown by the
// G-buffer pass's vertex stage, render/gbuffer.vert SCREEN_RECT): corner gl_VertexID (0..5, two triangles,
// counter-clockwise) in pixels. An empty rectangle (hi <= lo) collapses to a degenerate quad that draws
// nothing. Used by render/compose.vert and render/rect_clear.vert.
vec2 screen_rect_corner(ivec4 r, int vertex_id) {
    vec2 lo = vec2(r.xy), hi = vec2(max(r.zw, r.xy));
    const ivec2 corner[6] = ivec2[6](ivec2(0, 0), ivec2(1, 0), ivec2(1, 1), ivec2(0, 0), ivec2(1, 1), ivec2(0, 1));
    return mix(lo, hi, vec2(corner[vertex_id]));
}
