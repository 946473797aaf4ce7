#version 430 core
// Face normals (research 6.4) of every instance of the batch: one invocation per pooled triangle slot
// (face group table at B_GROUPS). faces[face_base + t] = (unit normal, |cross|) where |cross| = twice the
// area; zero-area triangles give (0, 0).
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"

layout(std430, binding = B_SRC) readonly buffer Positions { vec4 pos[]; };
layout(std430, binding = B_TRIS) readonly buffer Tris { ivec4 tris[]; };   // xyz display indices (per mesh)
layout(std430, binding = B_FACES) writeonly buffer Faces { vec4 faces[]; };

void main() {
    uint g = gl_WorkGroupID.x;
    int k = instance_of_group(g);
    if (k < 0) return;  // a hole of the pool (removed mesh, alignment gap)
    DeformInstance inst = instances[k];
    int t = local_face_index(inst, g);
    if (t >= inst.n_tris) return;
    ivec4 f = tris[inst.tri_static + t] + inst.display_base;
    vec3 a = pos[f.x].xyz, b = pos[f.y].xyz, c = pos[f.z].xyz;
    vec3 n = cross(b - a, c - a);
    float len = length(n);
    faces[inst.face_base + t] = len > 0.0 ? vec4(n / len, len) : vec4(0.0);
}
