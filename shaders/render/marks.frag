#version 430 core
// Vertex marks, fragment stage: round points, hidden where the frame's surface lies in front of the vertex
// (the frame depth target holds the window depth of the drawn surface, 0 where there is none). Each point is
// an opaque rim around a translucent disc (blended), so the surface the region describes shows through it.
// Driven by engine/render/marks.py; vertex stage render/marks.vert.

in vec4 v_color;
uniform sampler2D u_frame_depth;
uniform float u_depth_bias;  // window-depth slack: the marked vertex lies on that very surface

out vec4 o_color;

const float RIM_INNER2 = 0.45;  // squared radius where the opaque rim starts
const float DISC_ALPHA = 0.5;   // opacity inside the rim

void main() {
    vec2 c = gl_PointCoord * 2.0 - 1.0;
    float r2 = dot(c, c);
    if (r2 > 1.0) discard;
    float surface = texelFetch(u_frame_depth, ivec2(gl_FragCoord.xy), 0).r;
    if (surface > 0.0 && gl_FragCoord.z > surface + u_depth_bias) discard;
    o_color = vec4(v_color.rgb, v_color.a * (r2 > RIM_INNER2 ? 1.0 : DISC_ALPHA));
}
