#version 430 core
// Present pass: copies the finished frame (already display-encoded) to the window's framebuffer
// (engine/render/passes/present.py).
in vec2 v_uv;
uniform sampler2D u_frame;
layout(location = 0) out vec4 o_color;

void main() {
    o_color = texture(u_frame, v_uv);
}
