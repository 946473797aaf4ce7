#version 430 core
// Spring Compute (research Algorithm 1; numpy reference engine.skinning.springs.spring_step): one spring
// iteration for every work group of the pool (the groups of stopped instances exit at entry; the loop state,
// the ring and the convergence check: spring_iterate.glsl).
// Reads state x_n (positions, velocities), writes x_{n+1}; per work group it reduces max |x_{n+1} - x_n|,
// max |F(x_n)| (atomicMax on float bits into the instance status) and the energy at x_n (partials[group]).
//
// The per-point forces and update (eq. 21-23, the integrators, step limiting): spring_force.glsl, shared with
// spring_tiled.comp (K iterations per dispatch); here a neighbour's position is the ring's x_n (nbr_x).
//
// Volume term (reference springs.spring_forces / fan_volumes, SpringInstance.k3.x = k_v): each point's share of
// its bone region's skeleton-relative volume V_i = sum over its faces (i, j, m) (the CSR slot's third corner) of
// det(x_i - a_i, x_j - a_i, x_m - a_i) / 18 and its area vector G_i = sum (x_j - a_i) x (x_m - a_i) / 18. The
// regions' sums live in B_VOLUME, per bone three fixed-point ints used in turn and a flag (1: a surface edit
// touches the region this frame, the term leaves it alone; records.volume_rows): dispatch n reads the sums of
// x_{n-1} (slot (n - 1) % 3; x_0's for n = 0, slot 0, summed by the pre-pass u_iteration = -1), adds x_n's
// (n >= 1) into slot n % 3 and the first point of each region clears slot (n + 1) % 3 for the next dispatch.
// F_v = k_v (V0_r - V_r) / S0_r unit(G_i).
//
// Why the inputs look like this: on llvmpipe the iteration's cost follows its memory instructions (an SSBO load
// is a per-lane loop with a branch per component, an image load one gather; gpu_layouts, "spring stage
// images"), so the work group's instance and every static input come from read-only images: one SpringHead per
// work group, the instance's SpringInstance, a SpringPoint per control point and a SpringSlot per CSR slot
// (neighbour + rest values); the state x_n / x_{n+1} (SpringState) and the frame's attachments (SpringFrame)
// are images as well (read-only / write-only here), so the neighbour gathers are image loads too. Edits
// (per lane, only with k_e), the status and the reductions stay in SSBOs.
layout(local_size_x = LOCAL_SIZE) in;

#include "generated/deform_layouts.glsl"
#include "deform_images.glsl"


layout(rgba32i, binding = I_SPRING_HEADS) readonly uniform iimage2D spring_heads;
layout(rgba32i, binding = I_SPRING_INSTANCES) readonly uniform iimage2D spring_instances;
layout(rgba32i, binding = I_SPRING_POINTS) readonly uniform iimage2D spring_points;
layout(rgba32i, binding = I_SPRING_SLOTS) readonly uniform iimage2D spring_slots;
// the SpringState ring: three images stacked in one, bound once per frame (spring_iterate.glsl)
layout(rgba32f, binding = I_SPRING_RING) uniform image2D ring;
layout(rgba32f, binding = I_SPRING_FRAME) readonly uniform image2D frame;  // SpringFrame
layout(std430, binding = B_STATUS) coherent buffer Status { DeformStatus status[]; };
layout(std430, binding = B_PARTIALS) coherent buffer Partials { float partials[]; };
layout(std430, binding = B_EDIT) readonly buffer Edit { SpringEdit edit[]; };
layout(std430, binding = B_VOLUME) coherent buffer Volume { int volume_sums[]; };

#include "spring_iterate.glsl"  // the loop state: u_iteration, u_record, the ring, the ticket and the check

shared float sh_disp[LOCAL_SIZE];
shared float sh_force[LOCAL_SIZE];
shared float sh_energy[LOCAL_SIZE];

vec3 nbr_x(int dj) { return ring_load(src_ring, record_texel(dj, SPRING_STATE_TEXELS, SPRING_STATE_X)).xyz; }
vec3 glue_x(int dj) { return nbr_x(dj); }  // a glued point's corners: x_n (spring_force.glsl, glue_target)

#include "spring_force.glsl"  // the per-point forces and update (lane_setup, lane_forces, ...)

vec3 state_texel(int i, int t) { return ring_load(src_ring, record_texel(i, SPRING_STATE_TEXELS, t)).xyz; }

void step_group(int g) {  // one iteration of work group g (main: spring_iterate.glsl)
    ivec4 head = imageLoad(spring_heads, record_texel(g, SPRING_HEAD_TEXELS, SPRING_HEAD_GROUP));
    int k = head.z;
    ivec4 run = inst_texel(k, SPRING_INSTANCE_RUN);
    int lid = int(gl_LocalInvocationID.x);
    float disp = 0.0, fmag = 0.0, energy = 0.0;
    bool live = lid < head.y && u_iteration < run.y;
    if (live) {
        int di = g * LOCAL_SIZE + lid;  // control ranges start at group_base * LOCAL_SIZE
        SpringLane L = lane_setup(head, k, run, di, head.x + lid);
        vec3 x = state_texel(di, SPRING_STATE_X);
        vec3 vel = state_texel(di, SPRING_STATE_V);
        vec3 f, gi;
        float vi;
        lane_forces(L, x, f, energy, vi, gi);
        if (L.vol_on) {
            vec4 pv = intBitsToFloat(point_texel(L.si, SPRING_POINT_VOL));  // V0_r, S0_r, fixed-point scale
            int n = u_iteration;
            int vbase = L.vbase;
            if (n != 0) volume_add(L.r.z, vbase + max(n, 0) % 3, int(round(vi / 18.0 * pv.z)));
            if (n >= 0) {
                if (L.r.w != 0) volume_sums[vbase + (n + 1) % 3] = 0;
                float vr = float(volume_sums[vbase + max(n - 1, 0) % 3]) / pv.z;
                lane_volume(L, pv, vr, gi, f, energy);
            }
        }
        if (u_iteration < 0) return;  // the volume pre-pass: sums only (the lanes outside `live` return below)
        vec3 xn, vn;
        lane_update(L, x, vel, f, lane_step(L), energy, xn, vn);
        if (L.glued) {  // on its face, placed from the corners' x_n (reference springs.touch.glue)
            xn = glue_target(L);
            vn = vec3(0.0);
        }
        ring_store(dst_ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X), vec4(xn, 1.0));
        ring_store(dst_ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_V), vec4(vn, 0.0));
#if RESOLVE_IN_LOOP
        if (u_last != 0) output_state(di, xn, vn);
#endif
        disp = length(xn - x);
        fmag = length(f);
        // non-finite values poison the maxima (NaN bits compare above +inf) so the check sees divergence
        if (isnan(disp) || isinf(disp)) disp = uintBitsToFloat(0x7fc00000u);
        if (isnan(fmag) || isinf(fmag)) fmag = uintBitsToFloat(0x7fc00000u);
    }
    if (u_iteration < 0) return;  // the pre-pass: every lane returns, so none waits at the barriers below
    sh_disp[lid] = disp;
    sh_force[lid] = fmag;
    sh_energy[lid] = energy;
    barrier();
    for (int stride = LOCAL_SIZE / 2; stride > 0; stride >>= 1) {
        if (lid < stride) {
            // compare as bits: keeps NaN markers (positive floats order like their bit patterns)
            sh_disp[lid] = uintBitsToFloat(max(floatBitsToUint(sh_disp[lid]), floatBitsToUint(sh_disp[lid + stride])));
            sh_force[lid] = uintBitsToFloat(max(floatBitsToUint(sh_force[lid]), floatBitsToUint(sh_force[lid + stride])));
            sh_energy[lid] += sh_energy[lid + stride];
        }
        barrier();
    }
    if (lid == 0 && u_record != 0) {
        atomicMax(status[k].max_disp_bits, floatBitsToUint(sh_disp[0]));
        atomicMax(status[k].max_force_bits, floatBitsToUint(sh_force[0]));
        partials[g] = sh_energy[0];
    }
}
