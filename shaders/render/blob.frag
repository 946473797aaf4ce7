#version 430 core
// Contact-shadow blobs, fragment stage: a soft elliptical darkening, multiplied into the frame
// (blend: dst * (1 - alpha)) on pixels that show no mesh (the frame's depth is 0 there).
in vec2 v_local;
flat in float v_dark;
uniform sampler2D u_frame_depth;
layout(location = 0) out vec4 o_color;

void main() {
    if (texelFetch(u_frame_depth, ivec2(gl_FragCoord.xy), 0).r != 0.0) discard;
    float r2 = dot(v_local, v_local);
    float a = v_dark * (1.0 - smoothstep(0.15, 1.0, r2));
    o_color = vec4(0.0, 0.0, 0.0, a);
}
