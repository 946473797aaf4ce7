// The iteration loop of spring.comp without a pass of its own (stages.spring, research ch. 5): every dispatch of
// the frame runs the same program over every control work group with nothing uploaded between them.
//
// * Loop state (B_SPRING_LOOP, reset by spring_frame.comp): [0] the index n of the dispatch now running (-1: the
//   volume pre-pass), [1] the dispatch's ticket counter, [2 + k] instance k's ticket counter. Each group reads n at
//   entry. When dispatch n records a check (u_record), every group of an active instance takes its instance's
//   ticket after its own status maxima, partials and volume sums are written; the instance's last group has seen
//   all of them finish: its lanes sum the instance's energy partials together (strided loads, a shared-memory
//   tree) and lane 0 runs that instance's convergence check. The instances' checks so run in parallel, each in
//   one of its own groups (one lane walking every group's partial was serial work on the critical path of every
//   dispatch: ~0.5 us per work group on an H100). Then every group takes the dispatch's ticket; its last group
//   advances [0] to n + 1 and clears that ticket for the next dispatch.
// * Groups of an instance that stopped (status.converged) exit at entry, taking only their ticket.
// * Volume sums (B_VOLUME) are reduced per work group in shared memory: each lane adds its share to its region's
//   entry of a shared table (volume_add; a shared atomic), and after the iteration each non-zero entry goes out
//   with one atomic (volume_flush): one per group and region instead of one per point, the same fixed-point
//   sums. Regions past the table's size (instances of more than VOLUME_TABLE bones) add straight to B_VOLUME.
//   VOLUME_REDUCE 0 (the node's volume_reduce, stages.spring): one atomic per point instead.
// * The SpringState ring is one image bound once: three images stacked (image r from row r * height / 3, so a
//   slot is an offset, not a branch). x_0 lies in image 2 (spring_frame writes it there), dispatch n reads x_n
//   from image (n - 1) mod 3 (2 for n <= 0) and writes x_{n+1} to image n % 3; resolve.comp reads an
//   instance's accepted state after `iterations` steps from image (iterations - 1) mod 3; x_{n-1} stays intact
//   while dispatch n runs (the energy scheme may still reject x_n).
// * RESOLVE_IN_LOOP (stages.spring: every scheme but energy and force): the last dispatch of the frame is also the
//   stage's resolve (spring_resolve.glsl), no pass of its own: each lane writes the state it computed to the
//   target, the groups of an instance stopped earlier copy their accepted state, and the group that checks an
//   instance whose check accepts an older state copies that instead.
// The check is engine.skinning.springs.SpringDeformer.iterate's schemes (iterations, displacement, force,
// energy; divergence), unchanged from the former converge pass.
#include "deform_common.glsl"

layout(std430, binding = B_SPRING_LOOP) coherent buffer Loop { int loop_state[]; };

uniform int u_dispatches;    // iterations of this frame's dispatches, K per dispatch (the last one always records)
uniform int u_check_every;   // record (and check) after every u_check_every-th iteration (a multiple of K)

// this dispatch, read from the loop state in main (plain globals: the iteration body keeps its former names)
int u_iteration;  // index n of this dispatch's first iteration (all active instances are at step n); -1: the
                  // volume pre-pass
int u_block;      // index d of this dispatch (n = d K); -1: the pre-pass
int u_record;     // 1: the last group checks convergence after this dispatch; record the maxima
ivec2 src_ring;   // texel offset of the ring image holding x_n
ivec2 dst_ring;   // texel offset of the ring image receiving x_{n+1}

shared int sh_last;
shared int sh_inst_last;
shared float sh_esum[LOCAL_SIZE];  // the last group of an instance: its energy partials, reduced
#ifndef ITERATIONS_PER_DISPATCH
#define ITERATIONS_PER_DISPATCH 1  // K: spring_tiled.comp runs K iterations per dispatch, spring.comp one
#endif
#ifndef VOLUME_REDUCE
#define VOLUME_REDUCE 1
#endif
#ifndef RESOLVE_IN_LOOP
#define RESOLVE_IN_LOOP 0  // 1: the last dispatch writes the stage's output (no resolve pass; stages.spring)
#endif
#if RESOLVE_IN_LOOP
#include "spring_resolve.glsl"
shared int sh_accepted;  // the instance's accepted iteration count after the last dispatch's check
#endif
int u_last;       // 1: the frame's last dispatch, resolving (RESOLVE_IN_LOOP): every lane writes its output
#define VOLUME_TABLE 128
shared int sh_vol_row[VOLUME_TABLE];  // per region (bone of the instance): its B_VOLUME index this dispatch
shared int sh_vol_sum[VOLUME_TABLE];  // and the group's fixed-point sum

const uint FINITE_MAX = 0x7f7fffffu;  // bits of the largest finite float; above: inf or NaN

vec4 ring_load(ivec2 slot, ivec2 p) { return imageLoad(ring, p + slot); }

void ring_store(ivec2 slot, ivec2 p, vec4 v) { imageStore(ring, p + slot, v); }

// this lane's share of region `region`'s volume sum, B_VOLUME index `row` (added per group by volume_flush)
void volume_add(int region, int row, int value) {
    if (VOLUME_REDUCE == 0 || region >= VOLUME_TABLE) {
        atomicAdd(volume_sums[row], value);
        return;
    }
    sh_vol_row[region] = row;  // every lane of the region writes the same index
    atomicAdd(sh_vol_sum[region], value);
}

void volume_clear(int lid) {
    for (int j = lid; j < VOLUME_TABLE; j += LOCAL_SIZE) sh_vol_sum[j] = 0;
    barrier();
}

// one atomic per region of the group (a zero sum adds nothing and is skipped)
void volume_flush(int lid) {
    barrier();  // every lane's share in the table
    for (int j = lid; j < VOLUME_TABLE; j += LOCAL_SIZE) {
        if (sh_vol_sum[j] != 0) atomicAdd(volume_sums[sh_vol_row[j]], sh_vol_sum[j]);
    }
}

void stop(int k, int reason) { status[k].converged = 1; status[k].reason = reason; }

// instance k after `done` dispatches of this frame (the one just finished read x_{done-1}, wrote x_done), `e` its
// total energy at the input of that dispatch (the sum of its groups' partials)
void check(int k, int done, float e) {
    DeformInstance inst = instances[k];
    DeformStatus st = status[k];
    if (st.converged != 0) return;
    int n = done - 1;  // index of the dispatch just finished: it read x_n and wrote x_{n+1}
    float disp = uintBitsToFloat(st.max_disp_bits);
    float fmax = uintBitsToFloat(st.max_force_bits);
    bool bad_force = st.max_force_bits > FINITE_MAX;
    bool bad_step = st.max_disp_bits > FINITE_MAX || disp > inst.limit;
    status[k].max_disp_bits = 0u;
    status[k].max_force_bits = 0u;
    status[k].prev_energy = st.energy;
    status[k].energy = e;
    int cap = inst.max_iterations;
    if (n >= 1 && bad_force) {  // F(x_n) not finite: x_n is rejected
        status[k].iterations = min(n - 1, cap);
        stop(k, REASON_DIVERGED);
        return;
    }
    if (inst.scheme == SCHEME_ENERGY) {
        // x_n was produced by step n-1; keep it only if the total energy went down (a local minimum stops)
        if (n >= 1) {
            float prev = st.energy;
            if (e >= prev - inst.energy_rtol * abs(prev)) {
                status[k].iterations = e <= prev ? min(n, cap) : min(n - 1, cap);
                stop(k, REASON_ENERGY);
                return;
            }
            status[k].iterations = min(n, cap);
            status[k].last_disp = st.last_disp;
        }
        if (n >= cap) { stop(k, REASON_MAX_ITERATIONS); return; }
        if (bad_step) { stop(k, REASON_DIVERGED); return; }
        status[k].last_disp = disp;
        return;
    }
    if (inst.scheme == SCHEME_FORCE && fmax < inst.thr_force) {
        status[k].iterations = min(n, cap);
        stop(k, REASON_FORCE);
        return;
    }
    if (bad_step) {
        status[k].iterations = min(n, cap);
        stop(k, REASON_DIVERGED);
        return;
    }
    status[k].iterations = min(n + 1, cap);
    status[k].last_disp = disp;
    if (inst.scheme == SCHEME_DISPLACEMENT && disp < inst.thr_disp) { stop(k, REASON_DISPLACEMENT); return; }
    if (n + 1 >= cap) stop(k, REASON_MAX_ITERATIONS);
}

void step_group(int g);  // spring.comp: one iteration of work group g

void main() {
    int g = int(gl_WorkGroupID.x);
    int lid = int(gl_LocalInvocationID.x);
    // the first iteration of this dispatch, the same for every group (the last group advances it only after all
    // took tickets); n: the last one it runs (K = ITERATIONS_PER_DISPATCH per dispatch, spring_tiled.comp): the
    // ticket section checks after it and advances the loop state to n + 1
    int n0 = loop_state[0];
    int n = n0 < 0 ? n0 : n0 + ITERATIONS_PER_DISPATCH - 1;
    u_iteration = n0;
    u_block = n0 < 0 ? -1 : n0 / ITERATIONS_PER_DISPATCH;
    u_record = (n >= 0 && ((n + 1) % u_check_every == 0 || n + 1 == u_dispatches)) ? 1 : 0;
    u_last = (RESOLVE_IN_LOOP != 0 && n >= 0 && n + 1 == u_dispatches) ? 1 : 0;
    int rows = imageSize(ring).y / 3;
    src_ring = ivec2(0, (u_block <= 0 ? 2 : (u_block - 1) % 3) * rows);
    dst_ring = ivec2(0, max(u_block, 0) % 3 * rows);
    int k = instance_of_group(uint(g));
    bool running = status[k].converged == 0;  // uniform per group: a stopped instance's groups exit here
    if (running) {
        if (VOLUME_REDUCE != 0) volume_clear(lid);
        step_group(g);
        if (VOLUME_REDUCE != 0) volume_flush(lid);
    }
#if RESOLVE_IN_LOOP
    else if (u_last != 0) {  // a stopped instance's groups: its accepted state is final, each lane copies its own
        DeformInstance inst = instances[k];
        int i = local_index(inst, uint(g));
        if (i < inst.n_control) resolve_point(inst.dyn_base + i, status[k].iterations);
    }
#endif
    memoryBarrierBuffer();  // this group's maxima, partials and volume sums before its tickets
    barrier();
    if (running && u_record != 0) {
        DeformInstance inst = instances[k];
        if (lid == 0) sh_inst_last = int(atomicAdd(loop_state[2 + k], 1) == inst.n_groups - 1);
        barrier();
        if (sh_inst_last != 0) {  // every group of instance k has written its part: check it here
            memoryBarrierBuffer();
            float part = 0.0;
            for (int gi = lid; gi < inst.n_groups; gi += LOCAL_SIZE) part += partials[inst.group_base + gi];
            sh_esum[lid] = part;
            barrier();
            for (int stride = LOCAL_SIZE / 2; stride > 0; stride >>= 1) {
                if (lid < stride) sh_esum[lid] += sh_esum[lid + stride];
                barrier();
            }
            if (lid == 0) {
                check(k, n + 1, sh_esum[0]);
                loop_state[2 + k] = 0;  // for the next recording dispatch
                memoryBarrierBuffer();  // the instance's status before the dispatch's ticket
#if RESOLVE_IN_LOOP
                sh_accepted = status[k].iterations;
#endif
            }
#if RESOLVE_IN_LOOP
            // the lanes wrote this dispatch's state as the output; where the check accepts an older one
            // (divergence, an iteration cap below the frame's), this group copies the whole instance's from the
            // ring (written by earlier dispatches: visible after their barriers)
            if (u_last != 0) {
                barrier();
                int it = sh_accepted;
                if (accepted_block(it) != u_block) {
                    for (int i = lid; i < inst.n_control; i += LOCAL_SIZE) resolve_point(inst.dyn_base + i, it);
                }
            }
#endif
        }
    }
    if (lid == 0) sh_last = int(atomicAdd(loop_state[1], 1) == int(gl_NumWorkGroups.x) - 1);
    barrier();
    if (sh_last != 0 && lid == 0) {
        loop_state[0] = n + 1;
        loop_state[1] = 0;
    }
}
