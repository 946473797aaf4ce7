// Colour-space helpers: sRGB transfer functions and the tone curve of the scene renderer.

vec3 srgb_to_linear(vec3 c) {
    return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), step(vec3(0.04045), c));
}

vec3 linear_to_srgb(vec3 c) {
    c = clamp(c, 0.0, 1.0);
    return mix(c * 12.92, 1.055 * pow(c, vec3(1.0 / 2.4)) - 0.055, step(vec3(0.0031308), c));
}

// Narkowicz's fit of the ACES filmic curve: soft highlights, keeps mid-tones close to linear.
vec3 tonemap_aces(vec3 x) {
    const float a = 2.51, b = 0.03, c = 2.43, d = 0.59, e = 0.14;
    return clamp((x * (a * x + b)) / (x * (c * x + d) + e), 0.0, 1.0);
}

// linear_to_srgb within 0.002 using square roots only (cheap on software rasterisers): Ian Taylor's fit.
vec3 linear_to_srgb_fast(vec3 c) {
    c = clamp(c, 0.0, 1.0);
    vec3 s1 = sqrt(c), s2 = sqrt(s1), s3 = sqrt(s2);
    return clamp(0.662002687 * s1 + 0.684122060 * s2 - 0.323583601 * s3 - 0.0225411470 * c, 0.0, 1.0);
}
