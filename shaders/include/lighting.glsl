// Soft studio lighting that shows deformation well: directional lights with a wrapped diffuse term and
// a broad specular lobe, a sky/ground hemisphere ambient and a faint rim. Lights come from an SSBO of
// the Light struct generated from engine/render/layouts.py.
#include "generated/layouts.glsl"

layout(std430, binding = BINDING_LIGHTS) readonly buffer Lights { Light lights[]; };

uniform int u_light_count;
uniform vec3 u_sky_color;      // linear, hemisphere ambient from above
uniform vec3 u_ground_color;   // linear, hemisphere ambient from below
uniform float u_rim_strength;

vec3 hemisphere(vec3 n) {
    return mix(u_ground_color, u_sky_color, 0.5 + 0.5 * n.y);
}

// albedo linear; n unit world normal; v unit vector from the surface to the eye; shadow in [0,1]
// multiplies the first (key) light only.
vec3 shade_surface(vec3 albedo, vec3 n, vec3 v, float shadow) {
    vec3 col = albedo * hemisphere(n);
    for (int i = 0; i < min(u_light_count, MAX_LIGHTS); ++i) {
        vec3 l = normalize(lights[i].direction.xyz);
        float wrap = lights[i].color.a;
        float ndl = dot(n, l);
        float diff = max(0.0, (ndl + wrap) / (1.0 + wrap));
        vec3 h = normalize(l + v);
        float spec = pow(max(dot(n, h), 0.0), 40.0) * 0.12 * step(0.0, ndl);
        float vis = (i == 0) ? shadow : 1.0;
        col += lights[i].color.rgb * vis * (albedo * diff + vec3(spec));
    }
    float rim = pow(1.0 - max(dot(n, v), 0.0), 3.0);
    col += u_rim_strength * rim * u_sky_color;
    return col;
}
