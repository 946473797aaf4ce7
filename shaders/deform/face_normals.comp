#version 430 core
// Face normals (research 6.4) of every instance of the batch: one invocation per pooled triangle slot.
// faces[slot] = (unit normal, |cross|) where |cross| = twice the area; zero-area triangles give (0, 0).
// The work group's NormalsHead (static triangle of lane 0, valid lanes, the instance's display_base) and the
// triangle's corners come from read-only images (one gather each on llvmpipe instead of the group table,
// instance record and index loads through SSBOs; gpu_layouts, "surface normal stages"); the positions are the
// pooled display SSBO the renderer binds. The result goes to the face pool (the resource) and to its image copy,
// which vertex normals gather from.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_images.glsl"

layout(rgba32i, binding = I_NORMALS_HEADS) readonly uniform iimage2D heads;  // NormalsHead per face group
layout(rgba32i, binding = I_NORMAL_TRIS) readonly uniform iimage2D tris;     // NormalTri per static triangle
layout(std430, binding = B_SRC) readonly buffer Positions { vec4 pos[]; };
layout(std430, binding = B_FACES) writeonly buffer Faces { vec4 faces[]; };
layout(rgba32f, binding = I_FACE_IMAGE) writeonly uniform image2D face_image;  // the same values, for vertex normals

void main() {
    int g = int(gl_WorkGroupID.x);
    ivec4 head = imageLoad(heads, record_texel(g, NORMALS_HEAD_TEXELS, NORMALS_HEAD_GROUP));
    int lane = int(gl_LocalInvocationID.x);
    if (lane >= head.y) return;  // past the mesh's last triangle, or a hole of the pool (uniform per group)
    ivec4 f = imageLoad(tris, record_texel(head.x + lane, NORMAL_TRI_TEXELS, NORMAL_TRI_CORNERS)) + head.z;
    vec3 a = pos[f.x].xyz, b = pos[f.y].xyz, c = pos[f.z].xyz;
    vec3 n = cross(b - a, c - a);
    float len = length(n);
    vec4 out_face = len > 0.0 ? vec4(n / len, len) : vec4(0.0);
    int o = g * LOCAL_SIZE + lane;  // face ranges start at fgroup_base * LOCAL_SIZE
    faces[o] = out_face;
    imageStore(face_image, record_texel(o, NORMAL_FACE_TEXELS, NORMAL_FACE_NORMAL), out_face);
}
