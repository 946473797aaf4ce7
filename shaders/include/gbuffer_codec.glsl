// Packing of the G-buffer's id attachment (RGBA32UI), shared by the mesh pass, the compositor and the
// debug views; engine/render/surface.py (decode_ids) decodes the same layout with numpy:
//   x = mesh id + 1 (0 = no surface; the mesh's id in engine/render/meshes.py, a SurfacePoint's mesh_id),
//   y = triangle index in the mesh's index buffer,
//   z = packUnorm2x16(barycentric.yz) (x = 1 - y - z), w = packSnorm2x16(octahedral unit normal).
// The albedo attachment (RGBA8) holds sqrt(linear albedo) (a cheap gamma 2 that keeps dark tones) and,
// in alpha, the wireframe coverage of the fragment (1 on an edge, 0 inside the triangle).
// Neither attachment is cleared between frames: a texel is valid only where the G-buffer's depth copy
// (zcopy) is non-zero, and readers test that first.

vec2 oct_wrap(vec2 v) {
    return (1.0 - abs(v.yx)) * vec2(v.x >= 0.0 ? 1.0 : -1.0, v.y >= 0.0 ? 1.0 : -1.0);
}

vec2 oct_encode(vec3 n) {
    n /= (abs(n.x) + abs(n.y) + abs(n.z));
    return n.z >= 0.0 ? n.xy : oct_wrap(n.xy);
}

vec3 oct_decode(vec2 e) {
    vec3 n = vec3(e, 1.0 - abs(e.x) - abs(e.y));
    float t = max(-n.z, 0.0);
    n.xy += vec2(n.x >= 0.0 ? -t : t, n.y >= 0.0 ? -t : t);
    return normalize(n);
}

uvec4 encode_ids(uint mesh_id, uint triangle, vec3 bary, vec3 n) {
    return uvec4(mesh_id + 1u, triangle, packUnorm2x16(bary.yz), packSnorm2x16(oct_encode(n)));
}

vec3 decode_bary(uvec4 ids) {
    vec2 yz = unpackUnorm2x16(ids.z);
    return vec3(1.0 - yz.x - yz.y, yz);
}

vec3 decode_normal(uvec4 ids) {
    return oct_decode(unpackSnorm2x16(ids.w));
}
