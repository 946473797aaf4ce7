#version 430 core
// Compose pass, vertex stage: a quad over the screen rectangle that G-buffer u_rect_slot's surfaces
// cover (written by the G-buffer pass's vertex stage, render/gbuffer.vert SCREEN_RECT), at the far plane
// so that the early depth test against that G-buffer's depth runs compose.frag only on its surfaces.
// Skipping the rest of the screen matters on software rasterisers, where the early depth test of a
// fullscreen triangle alone costs milliseconds (3.4 ms at 1280x720 on llvmpipe for 8 characters that
// cover 6% of the frame inside a rectangle of 14%). An empty rectangle (hi <= lo) draws nothing.
// Driven by engine/render/passes/compose.py.
#include "screen_rect.glsl"

layout(std430, binding = BINDING_SCREEN_RECTS) readonly buffer ScreenRects { ivec4 screen_rects[]; };

uniform int u_rect_slot;
uniform vec2 u_viewport;  // framebuffer size in pixels
uniform float u_depth;    // window depth of the quad mapped to NDC z
uniform mat4 u_inv_view_proj;
uniform vec3 u_eye;
out vec2 v_uv;
out vec3 v_ray;           // eye -> the far-plane point of the pixel (affine in screen space: interpolated)

void main() {
    vec2 px = screen_rect_corner(screen_rects[u_rect_slot], gl_VertexID);
    v_uv = px / u_viewport;
    gl_Position = vec4(v_uv * 2.0 - 1.0, u_depth, 1.0);
    vec4 far = u_inv_view_proj * vec4(gl_Position.xy, 1.0, 1.0);
    v_ray = far.xyz / far.w - u_eye;
}
