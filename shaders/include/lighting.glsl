// Soft studio lighting that shows deformation well: directional lights with a wrapped diffuse term and
// a broad specular lobe, a sky/ground hemisphere ambient and a faint rim. Lights come from the uniform
// block of the Light struct generated from engine/render/layouts.py (two vec4: std140 = std430 there).
// LIGHT_COUNT (a define; the renderer compiles one variant per count) unrolls the light loop with
// constant indices; without it the loop runs to u_light_count. Powers use repeated squaring: pow() costs
// an exp2 and a log2 per call on software rasterisers, where this runs for every covered pixel.
#include "generated/layouts.glsl"

layout(std140, binding = BINDING_LIGHTS) uniform Lights { Light lights[MAX_LIGHTS]; };

uniform int u_light_count;
uniform vec3 u_sky_color;      // linear, hemisphere ambient from above
uniform vec3 u_ground_color;   // linear, hemisphere ambient from below
uniform float u_rim_strength;

vec3 hemisphere(vec3 n) {
    return mix(u_ground_color, u_sky_color, 0.5 + 0.5 * n.y);
}

float pow40(float x) {
    float x2 = x * x, x4 = x2 * x2, x8 = x4 * x4, x16 = x8 * x8;
    return x16 * x16 * x8;
}

// albedo linear; n unit world normal; v unit vector from the surface to the eye; shadow in [0,1]
// multiplies the first (key) light only. Light directions are unit vectors (set_lights normalises).
vec3 shade_surface(vec3 albedo, vec3 n, vec3 v, float shadow) {
    vec3 col = albedo * hemisphere(n);
#ifdef LIGHT_COUNT
    for (int i = 0; i < LIGHT_COUNT; ++i) {
#else
    for (int i = 0; i < min(u_light_count, MAX_LIGHTS); ++i) {
#endif
        vec3 l = lights[i].direction.xyz;
        float wrap = lights[i].color.a;
        float ndl = dot(n, l);
        float diff = max(0.0, (ndl + wrap) / (1.0 + wrap));
        vec3 h = normalize(l + v);
        float spec = pow40(max(dot(n, h), 0.0)) * 0.12 * step(0.0, ndl);
        float vis = (i == 0) ? shadow : 1.0;
        col += lights[i].color.rgb * vis * (albedo * diff + vec3(spec));
    }
    float r = 1.0 - max(dot(n, v), 0.0);
    col += u_rim_strength * (r * r * r) * u_sky_color;
    return col;
}
