#version 430 core
// Vertex marks, fragment stage: round points, hidden where the frame's surface lies in front of the vertex
// (the frame depth target holds the window depth of the drawn surface, 0 where there is none).
// Driven by engine/render/marks.py; vertex stage render/marks.vert.

in vec4 v_color;
uniform sampler2D u_frame_depth;
uniform float u_depth_bias;  // window-depth slack: the marked vertex lies on that very surface

out vec4 o_color;

void main() {
    vec2 c = gl_PointCoord * 2.0 - 1.0;
    if (dot(c, c) > 1.0) discard;
    float surface = texelFetch(u_frame_depth, ivec2(gl_FragCoord.xy), 0).r;
    if (surface > 0.0 && gl_FragCoord.z > surface + u_depth_bias) discard;
    o_color = v_color;
}
