// The springs' differential (bending) term (reference engine.skinning.springs.spring_forces, k_d; issue 26):
// F_i = k_d c_i (m_i + R_i delta0_i - x_i), m_i the one-ring mean weighted by 1 / bind edge length^2
// (springs.ring_means; its own position where it has no weighted neighbour), R_i delta0_i the point's bind offset
// from that mean turned by its frame and c_i its share (SpringFrame.diff xyz and w, written by spring_frame.comp
// from SpringVertex.diff0; springs.diff_scales); energy 0.5 k_d c_i |.|^2. Step limiting adds k_d c_i
// DIFF_LAMBDA to lambda_i (springs.limits). lane_setup folds c_i into the lane's k_d.
//
// Used in three places of spring_force.glsl (so spring.comp and the tiled spring_tiled.comp both have it; in the
// tiled kernel the neighbours' x_j are the tile's, the halo frozen at the block start, as the reference's tiles):
// lane_setup reads k_d (SpringInstance k3.z) times c_i and R_i delta0_i (SpringFrame.diff); lane_forces sums diff_slot over
// the slot loop and adds diff_force after the other forces (after the edit's handle_weight scaling; the
// reference adds it after the volume term: the same sum); lane_step adds k_d DIFF_LAMBDA to lambda_i.
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
