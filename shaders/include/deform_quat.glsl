// Quaternion helpers (x, y, z, w) for the deform stages.
vec4 quat_mul(vec4 a, vec4 b) {
    return vec4(a.w * b.xyz + b.w * a.xyz + cross(a.xyz, b.xyz), a.w * b.w - dot(a.xyz, b.xyz));
}

vec3 quat_rotate(vec4 q, vec3 v) {
    vec3 u = 2.0 * cross(q.xyz, v);
    return v + q.w * u + cross(q.xyz, u);
}

mat3 quat_to_mat3(vec4 q) {  // column-major: columns are the images of the axes
    float x = q.x, y = q.y, z = q.z, w = q.w;
    return mat3(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + z * w), 2.0 * (x * z - y * w),
                2.0 * (x * y - z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + x * w),
                2.0 * (x * z + y * w), 2.0 * (y * z - x * w), 1.0 - 2.0 * (x * x + y * y));
}

// q^f for a unit quaternion with w >= 0 (angle in [0, pi]); f may be negative.
vec4 quat_fraction(vec4 q, float f) {
    float s = length(q.xyz);
    float half_angle = atan(s, q.w);
    vec3 axis = s > 0.0 ? q.xyz / s : vec3(0.0);
    float a = f * half_angle;
    return vec4(axis * sin(a), cos(a));
}
