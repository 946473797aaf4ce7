#version 430 core
// Contact-shadow blobs, vertex stage: one quad per blob (6 vertices, no vertex buffer) lying on the
// ground plane under an entity; the blob's ellipse comes from the Blobs SSBO (BLOB in layouts.py).
#include "generated/layouts.glsl"

layout(std430, binding = BINDING_BLOBS) readonly buffer Blobs { Blob blobs[]; };

uniform mat4 u_view_proj;
uniform float u_ground_height;

out vec2 v_local;
flat out float v_dark;

void main() {
    const vec2 corners[6] = vec2[](vec2(-1, -1), vec2(1, -1), vec2(1, 1), vec2(-1, -1), vec2(1, 1), vec2(-1, 1));
    Blob b = blobs[gl_InstanceID];
    vec2 c = corners[gl_VertexID];
    v_local = c;
    v_dark = b.params.x;
    vec3 w = vec3(b.ellipse.x + c.x * b.ellipse.z, u_ground_height + 0.002, b.ellipse.y + c.y * b.ellipse.w);
    gl_Position = u_view_proj * vec4(w, 1.0);
}
