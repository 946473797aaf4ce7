#version 430 core
// Spring convergence check (one work group, no CPU read-back): after spring dispatch n, decide per instance
// whether it stops (the schemes of engine.skinning.springs.SpringDeformer.iterate: iterations, displacement,
// force, energy; divergence), count its accepted iterations, then rebuild the list of active work groups and
// the indirect dispatch arguments of the next spring dispatch (zero groups once every instance stopped).
// u_mode 0 = frame start (reset every instance, all groups active); 1 = check after dispatch u_done - 1.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"

layout(std430, binding = B_STATUS) buffer Status { DeformStatus status[]; };
layout(std430, binding = B_PARTIALS) readonly buffer Partials { float partials[]; };
layout(std430, binding = B_ACTIVE) writeonly buffer Active { int active_groups[]; };
layout(std430, binding = B_INDIRECT) writeonly buffer Indirect { uint indirect[]; };

uniform int u_mode;
uniform int u_done;          // spring dispatches completed this frame
uniform int u_n_instances;
uniform int u_n_groups;

shared uint sh_count;

const uint FINITE_MAX = 0x7f7fffffu;  // bits of the largest finite float; above: inf or NaN

void stop(int k, int reason) { status[k].converged = 1; status[k].reason = reason; }

void check(int k) {
    DeformInstance inst = instances[k];
    DeformStatus st = status[k];
    if (st.converged != 0) return;
    int n = u_done - 1;  // index of the dispatch just finished: it read x_n and wrote x_{n+1}
    float disp = uintBitsToFloat(st.max_disp_bits);
    float fmax = uintBitsToFloat(st.max_force_bits);
    bool bad_force = st.max_force_bits > FINITE_MAX;
    bool bad_step = st.max_disp_bits > FINITE_MAX || disp > inst.limit;
    float e = 0.0;
    for (int gi = 0; gi < inst.n_groups; ++gi) e += partials[inst.group_base + gi];
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

void main() {
    uint lid = gl_LocalInvocationID.x;
    if (lid == 0u) sh_count = 0u;
    for (int k = int(lid); k < u_n_instances; k += LOCAL_SIZE) {
        if (u_mode == 0) {
            status[k].iterations = 0;
            status[k].converged = 0;
            status[k].reason = 0;
            status[k].max_disp_bits = 0u;
            status[k].max_force_bits = 0u;
            status[k].energy = 0.0;
            status[k].prev_energy = 0.0;
            status[k].last_disp = 0.0;
        } else {
            check(k);
        }
    }
    memoryBarrierBuffer();
    barrier();
    for (int g = int(lid); g < u_n_groups; g += LOCAL_SIZE) {
        if (status[instance_of_group(uint(g))].converged == 0) {
            uint slot = atomicAdd(sh_count, 1u);
            active_groups[slot] = g;
        }
    }
    barrier();
    if (lid == 0u) {
        indirect[0] = sh_count;
        indirect[1] = 1u;
        indirect[2] = 1u;
    }
}
