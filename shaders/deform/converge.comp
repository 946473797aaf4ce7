#version 430 core
// Spring frame start (one work group): every instance's convergence state cleared and the loop state of the
// iteration dispatches (spring_iterate.glsl) set to dispatch u_start (-1 when the volume pre-pass runs first)
// with no ticket taken (the dispatch's and every instance's). The convergence check itself runs inside the iteration dispatches (the last work group
// of each, spring_iterate.glsl), so no pass of its own follows them.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"

layout(std430, binding = B_STATUS) writeonly buffer Status { DeformStatus status[]; };
layout(std430, binding = B_SPRING_LOOP) writeonly buffer Loop { int loop_state[]; };

uniform int u_n_instances;
uniform int u_start;

void main() {
    uint lid = gl_LocalInvocationID.x;
    for (int k = int(lid); k < u_n_instances; k += LOCAL_SIZE) {
        status[k].iterations = 0;
        status[k].converged = 0;
        status[k].reason = 0;
        status[k].max_disp_bits = 0u;
        status[k].max_force_bits = 0u;
        status[k].energy = 0.0;
        status[k].prev_energy = 0.0;
        status[k].last_disp = 0.0;
        loop_state[2 + k] = 0;  // the instance's ticket (spring_iterate.glsl)
    }
    if (lid == 0u) {
        loop_state[0] = u_start;
        loop_state[1] = 0;
    }
}
