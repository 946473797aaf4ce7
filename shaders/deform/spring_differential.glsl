// The springs' differential (bending) term (reference engine.skinning.springs.spring_forces, k_d; issue 26):
// F_i = k_d (m_i + R_i delta0_i - x_i), m_i the one-ring mean weighted by 1 / bind edge length^2
// (springs.ring_means; its own position where it has no weighted neighbour), R_i delta0_i the point's bind offset
// from that mean turned by its frame (SpringFrame.diff, written by spring_frame.comp); energy 0.5 k_d |.|^2.
// Step limiting adds k_d DIFF_LAMBDA to lambda_i (springs.limits).
//
// Used by the spring iteration in three places, kept apart from its other forces so a restructured kernel takes
// them over as they are:
//   before the loop:    float k_d = ks3.z;  vec4 dsum = vec4(0.0);
//   in the slot loop:   if (k_d != 0.0) dsum += diff_slot(nbr, xj);
//   after the forces:   if (k_d != 0.0) f += diff_force(x, dsum, frame_texel(di, SPRING_FRAME_DIFF), k_d, energy);
//                       (after the volume term, before held points lose their force: as the reference's order)
//   step limit:         lam += k_d * DIFF_LAMBDA;
// The slot weights are stored normalised per point (SpringSlot nbr.z, gpu_spring.diff_slot_weights), so dsum.w is
// about 1 and the mean is dsum.xyz / dsum.w.

// One slot's share of the weighted one-ring sum: w_ij (x_j, 1), w_ij the float bits in SpringSlot nbr.z.
vec4 diff_slot(ivec4 nbr, vec3 xj) {
    return intBitsToFloat(nbr.z) * vec4(xj, 1.0);
}

// The differential force on x from the weighted one-ring sum dsum (diff_slot summed) and the turned bind offset
// `target` (R_i delta0_i); adds the term's energy to `energy`.
vec3 diff_force(vec3 x, vec4 dsum, vec3 target, float k_d, inout float energy) {
    vec3 m = dsum.w > 0.0 ? dsum.xyz / dsum.w : x;
    vec3 d = m + target - x;
    energy += 0.5 * k_d * dot(d, d);
    return k_d * d;
}
