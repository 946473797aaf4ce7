#version 430 core
// G-buffer clear, vertex stage: a quad over the screen rectangle that G-buffer u_rect_slot's surfaces covered
// in the LAST frame (the previous of the two rectangle buffers, see engine/render/targets.py), at the far
// plane (window depth 1). Drawn with the depth test set to always, it puts back zcopy = 0 and depth = 1
// where the last frame drew, the only pixels that differ from a cleared G-buffer: on a software rasteriser
// a full clear of the two targets costs ~0.9 ms at 1280x720 whatever the characters cover.
// Driven by engine/render/passes/gbuffer.py; fragment stage render/rect_clear.frag.
#include "screen_rect.glsl"

layout(std430, binding = BINDING_SCREEN_RECTS) readonly buffer ScreenRects { ivec4 screen_rects[]; };

uniform int u_rect_slot;
uniform vec2 u_viewport;  // framebuffer size in pixels

void main() {
    vec2 px = screen_rect_corner(screen_rects[u_rect_slot], gl_VertexID);
    gl_Position = vec4(px / u_viewport * 2.0 - 1.0, 1.0, 1.0);
}
