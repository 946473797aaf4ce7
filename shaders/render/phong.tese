#version 430 core
// Phong tessellation, evaluation stage: the flat point p(u,v,w) is projected onto the tangent plane of
// each corner, the projections are interpolated with the same barycentrics and blended with p by the
// shape factor alpha (0 = flat, 0.75 recommended). The G-buffer keeps the ORIGINAL triangle's index
// (gl_PrimitiveID = patch number) and the barycentrics in it (gl_TessCoord), so queries stay valid.
layout(triangles, equal_spacing, ccw) in;

in VertexData {
    vec3 world;
    vec3 normal;
    vec2 uv;
} e_in[];

out FragData {
    vec3 world;
    vec3 normal;
    vec2 uv;
    vec3 bary;
    flat uint prim;
} e_out;

uniform mat4 u_view_proj;
uniform float u_phong_alpha;

vec3 project_to_plane(vec3 q, vec3 p, vec3 n) {
    return q - dot(q - p, n) * n;
}

void main() {
    vec3 b = gl_TessCoord;
    vec3 p0 = e_in[0].world, p1 = e_in[1].world, p2 = e_in[2].world;
    vec3 flat_p = b.x * p0 + b.y * p1 + b.z * p2;
    vec3 n0 = normalize(e_in[0].normal), n1 = normalize(e_in[1].normal), n2 = normalize(e_in[2].normal);
    vec3 curved = b.x * project_to_plane(flat_p, p0, n0) + b.y * project_to_plane(flat_p, p1, n1)
                + b.z * project_to_plane(flat_p, p2, n2);
    vec3 p = mix(flat_p, curved, u_phong_alpha);
    e_out.world = p;
    e_out.normal = b.x * n0 + b.y * n1 + b.z * n2;
    e_out.uv = b.x * e_in[0].uv + b.y * e_in[1].uv + b.z * e_in[2].uv;
    e_out.bary = b;
    e_out.prim = uint(gl_PrimitiveID);
    gl_Position = u_view_proj * vec4(p, 1.0);
}
