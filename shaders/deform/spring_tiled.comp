#version 430 core
// Spring Compute with K = ITERATIONS_PER_DISPATCH Jacobi iterations per dispatch (issue 24, step 5; numpy
// reference engine.skinning.springs.tiles and SpringDeformer.iterate(block=K)). The loop state, the ring, the
// ticket and the convergence check are spring.comp's (spring_iterate.glsl: u_iteration is the block's first
// iteration dK, u_block its index d, the check runs after the block's last iteration); the per-point forces and
// update are spring_force.glsl's.
//
// A work group owns its LOCAL_SIZE control points; its tiles are the group's points of one bone region each
// (SpringPoint adj.z; springs.tiles.tile_ids). The group keeps its points' positions in shared memory and runs
// K iterations with a barrier between them: a neighbour in the point's tile is read from shared memory (its
// current value), any other (the halo) from the ring's block-start state x_dK, frozen for the block. After the
// K iterations each point's state is written once into the ring image of block d. Lanes past the instance's
// iteration cap stop (the state written is the one at the cap; the cap is per instance, so per group).
//
// The volume term (springs.tiles): the block's base is the previous block's start x_b, b = max(d - 1, 0) K,
// whose region sums dispatch d - 1 added (B_VOLUME slot (d - 1) % 3; the pre-pass sums x_0 into slot 0); this
// dispatch adds x_dK's at its first iteration into slot d % 3 and the first point of a region clears slot
// (d + 1) % 3, as spring.comp does per iteration. At iteration n each lane's region volume is
//   V_r(b) + N_r / n_t * sum over its tile of (V_i(x_n) - V_i(x_b))
// (the tile's change since the base in fixed point, reduced in shared memory every iteration; N_r: points of
// the region, SpringPoint vol.w; n_t: points of the tile). x_b lies in the ring image (d - 2) mod 3 (image 2,
// x_0, for d <= 1).
//
// With the semi-implicit update a tile's boundary points (a neighbour outside the tile) step by BOUNDARY_STEP of
// their dt_i (springs.tiles: a full step diverges at K >= 3).
//
// The status maxima and the energy partial are those of the lane's last iteration (the check reads them once per
// dispatch; the energy and force schemes run spring.comp, K = 1).
layout(local_size_x = LOCAL_SIZE) in;

#include "generated/deform_layouts.glsl"
#include "deform_images.glsl"

layout(rgba32i, binding = I_SPRING_HEADS) readonly uniform iimage2D spring_heads;
layout(rgba32i, binding = I_SPRING_INSTANCES) readonly uniform iimage2D spring_instances;
layout(rgba32i, binding = I_SPRING_POINTS) readonly uniform iimage2D spring_points;
layout(rgba32i, binding = I_SPRING_SLOTS) readonly uniform iimage2D spring_slots;
layout(rgba32f, binding = I_SPRING_RING) uniform image2D ring;  // three images stacked (spring_iterate.glsl)
layout(rgba32f, binding = I_SPRING_FRAME) readonly uniform image2D frame;  // SpringFrame
layout(std430, binding = B_STATUS) coherent buffer Status { DeformStatus status[]; };
layout(std430, binding = B_PARTIALS) coherent buffer Partials { float partials[]; };
layout(std430, binding = B_EDIT) readonly buffer Edit { SpringEdit edit[]; };
layout(std430, binding = B_VOLUME) coherent buffer Volume { int volume_sums[]; };

#include "spring_iterate.glsl"  // the loop state, the ring, the ticket and the check

#ifndef BOUNDARY_STEP
#define BOUNDARY_STEP 0.5  // springs.tiles.BOUNDARY_STEP (the stage passes it)
#endif

// ping-pong halves (iteration m reads half m & 1, writes the other): one barrier per iteration (two with the
// volume term: its tile sums complete before they are read)
shared vec4 sh_x[2 * LOCAL_SIZE];  // the group's current positions
shared int sh_region[LOCAL_SIZE];  // each lane's region (its tile within the group); -2: no point
shared int sh_dv[2 * LOCAL_SIZE];  // per tile (indexed by its first lane): the tile's volume change, fixed point
shared float sh_disp[LOCAL_SIZE];
shared float sh_force[LOCAL_SIZE];
shared float sh_energy[LOCAL_SIZE];

int t_base;        // the group's first dynamic index
int t_lid;         // this lane
int t_half;        // the sh_x half this iteration reads (0 or LOCAL_SIZE)
ivec2 base_ring;   // ring image of the volume base x_b
bool read_base;    // nbr_x reads the base state (the lane's V_i(x_b)) instead of the block's positions

vec3 nbr_x(int dj) {
    if (read_base) return ring_load(base_ring, record_texel(dj, SPRING_STATE_TEXELS, SPRING_STATE_X)).xyz;
    int lj = dj - t_base;
    if (lj >= 0 && lj < LOCAL_SIZE && sh_region[lj] == sh_region[t_lid]) return sh_x[t_half + lj].xyz;  // in tile
    return ring_load(src_ring, record_texel(dj, SPRING_STATE_TEXELS, SPRING_STATE_X)).xyz;  // the frozen halo
}

// a glued point's corners: the block start (the reference's halo.frozen), whichever tile they are in
vec3 glue_x(int dj) { return ring_load(src_ring, record_texel(dj, SPRING_STATE_TEXELS, SPRING_STATE_X)).xyz; }

#include "spring_force.glsl"  // the per-point forces and update

void step_group(int g) {  // K iterations of work group g (main: spring_iterate.glsl)
    ivec4 head = imageLoad(spring_heads, record_texel(g, SPRING_HEAD_TEXELS, SPRING_HEAD_GROUP));
    int k = head.z;
    ivec4 run = inst_texel(k, SPRING_INSTANCE_RUN);
    int lid = int(gl_LocalInvocationID.x);
    t_lid = lid;
    t_base = g * LOCAL_SIZE;  // control ranges start at group_base * LOCAL_SIZE
    int d = u_block;
    bool valid = lid < head.y;
    int di = t_base + lid;
    read_base = false;
    SpringLane L;
    vec3 x = vec3(0.0), vel = vec3(0.0);
    if (valid) {
        L = lane_setup(head, k, run, di, head.x + lid);
        x = ring_load(src_ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X)).xyz;
        vel = ring_load(src_ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_V)).xyz;
    }
    t_half = 0;
    sh_x[lid] = vec4(x, 1.0);
    sh_region[lid] = valid ? L.r.z : -2;
    sh_dv[lid] = 0;
    barrier();
    if (d < 0) {  // the volume pre-pass: x_0's sums into slot 0 (every input is the ring's x_0)
        if (valid && L.vol_on) {
            vec4 pv = intBitsToFloat(point_texel(L.si, SPRING_POINT_VOL));
            volume_add(L.r.z, L.vbase, int(round(lane_fan(L, x) / 18.0 * pv.z)));
        }
        return;  // every lane returns: none waits at the barriers below
    }
    // the lane's tile: its first lane (the tile's slot in sh_dv) and size
    int first = lid, n_tile = 0;
    for (int j = LOCAL_SIZE - 1; j >= 0; --j) {
        if (sh_region[j] == sh_region[lid]) {
            first = j;
            n_tile += 1;
        }
    }
    vec4 pv = vec4(0.0);
    float vr_base = 0.0, tile_scale = 0.0;
    int vi_base = 0;
    bool vol = valid && L.vol_on;
    if (vol) {
        pv = intBitsToFloat(point_texel(L.si, SPRING_POINT_VOL));  // V0_r, S0_r, fixed-point scale, N_r
        vr_base = float(volume_sums[L.vbase + max(d - 1, 0) % 3]) / pv.z;
        tile_scale = pv.w / float(n_tile);
        // V_i at the base state x_b (all of it from the ring)
        base_ring = ivec2(0, (d <= 1 ? 2 : (d - 2) % 3) * (imageSize(ring).y / 3));
        read_base = true;
        vec3 xb = ring_load(base_ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X)).xyz;
        vi_base = int(round(lane_fan(L, xb) / 18.0 * pv.z));
        read_base = false;
    }
    float h = valid ? lane_step(L) : 0.0;
    if (valid && (L.flags & uint(FLAG_SEMI_IMPLICIT)) != 0u) {  // a boundary point's half step (springs.tiles)
        bool boundary = false;
        for (int e = 0; e < L.r.y; ++e) {
            int lj = L.d0 + slot_texel(L.h0 + e, SPRING_SLOT_NBR).x - t_base;
            boundary = boundary || lj < 0 || lj >= LOCAL_SIZE || sh_region[lj] != sh_region[lid];
        }
        if (boundary) h *= BOUNDARY_STEP;
    }
    float disp = 0.0, fmag = 0.0, energy = 0.0;
    // the volume term's barrier: uniform per group (the instance's k_v), whichever lanes it acts on
    bool any_vol = intBitsToFloat(inst_texel(k, SPRING_INSTANCE_K3)).x != 0.0;
    for (int m = 0; m < ITERATIONS_PER_DISPATCH; ++m) {
        if (u_iteration + m >= run.y) break;  // past the instance's cap: uniform per group
        t_half = (m & 1) * LOCAL_SIZE;
        int next = LOCAL_SIZE - t_half;
        vec3 f = vec3(0.0), gi = vec3(0.0);
        float e = 0.0, vi = 0.0;
        if (valid) {
            lane_forces(L, x, f, e, vi, gi);
            if (vol) {
                int vfix = int(round(vi / 18.0 * pv.z));
                if (m == 0) {
                    if (d != 0) volume_add(L.r.z, L.vbase + d % 3, vfix);  // x_dK's exact sums
                    if (L.r.w != 0) volume_sums[L.vbase + (d + 1) % 3] = 0;
                }
                atomicAdd(sh_dv[t_half + first], vfix - vi_base);
            }
        }
        if (any_vol) barrier();  // the tiles' volume changes summed
        vec3 xn = x, vn = vel;
        if (valid) {
            if (vol) lane_volume(L, pv, vr_base + tile_scale * float(sh_dv[t_half + first]) / pv.z, gi, f, e);
            lane_update(L, x, vel, f, h, e, xn, vn);
            if (L.glued) {  // on its face from the block start's corners (reference springs.touch.glue)
                xn = glue_target(L);
                vn = vec3(0.0);
            }
            disp = length(xn - x);
            fmag = length(f);
            energy = e;
        }
        x = xn;
        vel = vn;
        sh_x[next + lid] = vec4(x, 1.0);
        sh_dv[next + lid] = 0;  // the next iteration's sums (its half was last read before this one's barrier)
        barrier();  // the new positions in the other half; this half's reads done
    }
    if (valid) {
        ring_store(dst_ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X), vec4(x, 1.0));
        ring_store(dst_ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_V), vec4(vel, 0.0));
#if RESOLVE_IN_LOOP
        if (u_last != 0) output_state(di, x, vel);
#endif
    }
    // non-finite values poison the maxima (NaN bits compare above +inf) so the check sees divergence
    if (isnan(disp) || isinf(disp)) disp = uintBitsToFloat(0x7fc00000u);
    if (isnan(fmag) || isinf(fmag)) fmag = uintBitsToFloat(0x7fc00000u);
    sh_disp[lid] = disp;
    sh_force[lid] = fmag;
    sh_energy[lid] = energy;
    barrier();
    for (int stride = LOCAL_SIZE / 2; stride > 0; stride >>= 1) {
        if (lid < stride) {
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
