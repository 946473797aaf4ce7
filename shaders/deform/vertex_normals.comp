#version 430 core
// Vertex normals (research 6.4; numpy reference engine.skinning.meshprep.vertex_normals) of every instance
// of the batch, one invocation per pooled display slot:
//   ref(d) = sum of area-weighted normals of the display triangles that use d (its smoothing group);
//   n(d)   = normalize(sum over triangles f around d's control point with angle(f, ref(d)) <= crease).
// Area weighting: faces[] hold unit normal and |cross| (= twice the area), so n*|cross| is the raw cross.
// A display vertex in no triangle gets a zero normal.
// Inputs as images where they are static (gpu_layouts, "surface normal stages"): the work group's NormalsHead,
// the vertex's NormalVertex (its two triangle lists) and the lists themselves, NORMAL_LIST_WIDTH triangles per
// texel (one gather per four triangles); the face normals come from the image copy face normals write.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_images.glsl"

layout(rgba32i, binding = I_NORMALS_HEADS) readonly uniform iimage2D heads;   // NormalsHead per display group
layout(rgba32i, binding = I_NORMAL_VERTS) readonly uniform iimage2D verts;    // NormalVertex per display vertex
layout(rgba32i, binding = I_NORMAL_FACES) readonly uniform iimage2D lists;    // NormalFaces texels
layout(rgba32f, binding = I_FACE_IMAGE) readonly uniform image2D face_image;  // NormalFace per face slot
layout(std430, binding = B_DST) writeonly buffer Normals { vec4 normals[]; };

uniform float u_cos_crease;  // cos(crease angle) - 1e-9; <= -2 keeps every face (no crease test)

ivec4 list_texel(int t) { return imageLoad(lists, record_texel(t, NORMAL_FACES_TEXELS, NORMAL_FACES_TRIS)); }
vec4 face(int i) { return imageLoad(face_image, record_texel(i, NORMAL_FACE_TEXELS, NORMAL_FACE_NORMAL)); }

void main() {
    int g = int(gl_WorkGroupID.x);
    ivec4 head = imageLoad(heads, record_texel(g, NORMALS_HEAD_TEXELS, NORMALS_HEAD_GROUP));
    int lane = int(gl_LocalInvocationID.x);
    if (lane >= head.y) return;  // past the mesh's last vertex, or a hole of the pool (uniform per group)
    int o = g * LOCAL_SIZE + lane;  // display ranges start at dgroup_base * LOCAL_SIZE
    ivec4 r = imageLoad(verts, record_texel(head.x + lane, NORMAL_VERTEX_TEXELS, NORMAL_VERTEX_LISTS));
    if (r.y == 0) { normals[o] = vec4(0.0); return; }
    int fb = head.z;
    vec3 uref = vec3(0.0);
    if (u_cos_crease > -2.0) {  // the smoothing group's reference normal matters only with a crease test
        vec3 ref = vec3(0.0);
        for (int e = 0; e < r.y; e += NORMAL_LIST_WIDTH) {
            ivec4 t = list_texel(head.w + r.x + e / NORMAL_LIST_WIDTH);
            for (int c = 0; c < NORMAL_LIST_WIDTH && e + c < r.y; ++c) {
                vec4 f = face(fb + t[c]);
                ref += f.xyz * f.w;
            }
        }
        float rl = length(ref);
        uref = rl > 0.0 ? ref / rl : vec3(0.0);
    }
    vec3 acc = vec3(0.0);
    for (int e = 0; e < r.w; e += NORMAL_LIST_WIDTH) {
        ivec4 t = list_texel(head.w + r.z + e / NORMAL_LIST_WIDTH);
        for (int c = 0; c < NORMAL_LIST_WIDTH && e + c < r.w; ++c) {
            vec4 f = face(fb + t[c]);
            if (dot(uref, f.xyz) >= u_cos_crease) acc += f.xyz * f.w;
        }
    }
    float al = length(acc);
    normals[o] = al > 0.0 ? vec4(acc / al, 0.0) : vec4(0.0);
}
