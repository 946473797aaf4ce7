#version 430 core
// Contact-shadow blobs, fragment stage: a soft elliptical darkening, multiplied into the frame colour
// (blend: dst * (1 - alpha)) before the compositor overwrites the pixels that show a mesh.
// Drawn by ContactShadows in engine/render/passes/compose.py.
in vec2 v_local;
flat in float v_dark;
layout(location = 0) out vec4 o_color;

void main() {
    float r2 = dot(v_local, v_local);
    float a = v_dark * (1.0 - smoothstep(0.15, 1.0, r2));
    o_color = vec4(0.0, 0.0, 0.0, a);
}
