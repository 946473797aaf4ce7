#version 430 core
// Contact-shadow blobs, fragment stage: a soft elliptical darkening, multiplied into the frame
// (blend: dst * (1 - alpha)) on pixels that show no mesh (the frame's id buffer says which).
in vec2 v_local;
flat in float v_dark;
uniform usampler2D u_frame_ids;
layout(location = 0) out vec4 o_color;

void main() {
    if (texelFetch(u_frame_ids, ivec2(gl_FragCoord.xy), 0).x != 0u) discard;
    float r2 = dot(v_local, v_local);
    float a = v_dark * (1.0 - smoothstep(0.15, 1.0, r2));
    o_color = vec4(0.0, 0.0, 0.0, a);
}
