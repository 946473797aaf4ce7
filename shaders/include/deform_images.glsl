// Read-only images of vec4 records (engine/skinning/gpu_layouts.py, "fused skin_copy stage" and "spring stage
// images"): record i of an image with `texels` texels per record lies in row i >> IMAGE_ROW_SHIFT, its texel t
// at x = texels * (i mod IMAGE_ROW_ITEMS) + t (gpu_layouts.image_rows packs them so).
ivec2 record_texel(int i, int texels, int t) {
    return ivec2(texels * (i & ((1 << IMAGE_ROW_SHIFT) - 1)) + t, i >> IMAGE_ROW_SHIFT);
}
