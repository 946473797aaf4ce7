#version 430 core
// One triangle covering the viewport (no vertex buffer): uv in [0,1]^2 over the visible part.
// u_depth is its window depth mapped to NDC z (0 by default); the compose pass draws it at the far
// plane so that the early depth test against a G-buffer's depth runs it only on that G-buffer's surfaces.
uniform float u_depth;
out vec2 v_uv;

void main() {
    vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
    v_uv = p;
    gl_Position = vec4(p * 2.0 - 1.0, u_depth, 1.0);
}
