#version 430 core
// One triangle covering the viewport (no vertex buffer): uv in [0,1]^2 over the visible part.
out vec2 v_uv;

void main() {
    vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
    v_uv = p;
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
