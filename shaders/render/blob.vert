#version 430 core
// Contact-shadow blobs, vertex stage: one octagon per blob (a fan of 6 triangles = 18 vertices, no
// vertex buffer) lying on the ground plane under an entity; the blob's ellipse comes from the Blobs
// SSBO (BLOB in layouts.py). The octagon circumscribes the unit circle outside which the blob is
// transparent: 17% fewer blended fragments than the bounding square.
#include "generated/layouts.glsl"

layout(std430, binding = BINDING_BLOBS) readonly buffer Blobs { Blob blobs[]; };

uniform mat4 u_view_proj;
uniform float u_ground_height;

out vec2 v_local;
flat out float v_dark;

void main() {
    // fan triangle t = (corner 0, corner t + 1, corner t + 2), corners at radius 1 / cos(pi / 8)
    int t = gl_VertexID / 3, k = gl_VertexID % 3;
    int corner = k == 0 ? 0 : t + k;
    float a = (float(corner) + 0.5) * 0.78539816;
    vec2 c = vec2(cos(a), sin(a)) * 1.08239220;
    Blob b = blobs[gl_InstanceID];
    v_local = c;
    v_dark = b.params.x;
    vec3 w = vec3(b.ellipse.x + c.x * b.ellipse.z, u_ground_height + 0.002, b.ellipse.y + c.y * b.ellipse.w);
    gl_Position = u_view_proj * vec4(w, 1.0);
}
