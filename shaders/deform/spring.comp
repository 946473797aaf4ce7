#version 430 core
// Spring Compute (research Algorithm 1; numpy reference engine.skinning.springs.spring_step): one spring
// iteration for the active work groups of every instance (indirect dispatch; converged instances have none).
// Reads state x_n (positions, velocities), writes x_{n+1}; per work group it reduces max |x_{n+1} - x_n|,
// max |F(x_n)| (atomicMax on float bits into the instance status) and the energy at x_n (partials[group]).
//
// Forces per CSR slot (i, j), eq. 21/22:  F_s edge length, F_l scale-vector length difference, F_t torsion
// between s_i and s_j (torque k_t w_ij dtheta -> |tau| / |s_i| orthogonal to s_i); an edit handle's
// neighbour forces are scaled by handle_weight before F_e = k_e (C_i - K_i x_i) is added; then bone torsion
// F_b and the radial spring F_r. Update: eq. 23 x += dt F, or semi-implicit Euler with damping.
// Step limiting (FLAG_STEP_LIMIT, reference springs.step_sizes): each vertex steps by its own
// dt_i = min(dt, STEP_SAFETY / lambda_i) (semi-implicit: min(dt, sqrt(2 STEP_SAFETY / lambda_i))), lambda_i the
// Gershgorin bound from the static coefficients SpringVertex.lam, the stiffnesses and the edit stiffness K_i.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"

struct SpringState { vec4 x; vec4 v; };
struct SpringFrame { vec4 attach; vec4 bone_ref; };
struct SpringEdit { vec4 ck; vec4 q; };  // ck: xyz C_i, w K_i; q.x Q_i

layout(std430, binding = B_STATUS) buffer Status { DeformStatus status[]; };
layout(std430, binding = B_ACTIVE) readonly buffer Active { int active_groups[]; };
layout(std430, binding = B_PARTIALS) writeonly buffer Partials { float partials[]; };
layout(std430, binding = B_SRC) readonly buffer Src { SpringState src[]; };
layout(std430, binding = B_DST) writeonly buffer Dst { SpringState dst[]; };
layout(std430, binding = B_FRAME) readonly buffer Frame { SpringFrame frame[]; };
layout(std430, binding = B_VSTATIC) readonly buffer VStatic { SpringVertex vstatic[]; };
layout(std430, binding = B_ADJ) readonly buffer Adj { ivec2 adj[]; };          // (offset, count) per control point
layout(std430, binding = B_ADJ_INDEX) readonly buffer AdjIdx { int adj_index[]; };
layout(std430, binding = B_REST) readonly buffer Rest { vec4 rest[]; };       // rest_len, rest_dlen, rest_angle, w_t
layout(std430, binding = B_EDIT) readonly buffer Edit { SpringEdit edit[]; };

uniform int u_iteration;  // index n of this dispatch in the frame (all active instances are at step n)
uniform int u_record;     // 1: a convergence check follows this dispatch; record the maxima

const float SIN_EPS = 1e-9;

shared float sh_disp[LOCAL_SIZE];
shared float sh_force[LOCAL_SIZE];
shared float sh_energy[LOCAL_SIZE];

// angle between unit vectors u, w (atan2(|perp|, cos), 0 for zero vectors), perp = w - cos u, its length
float angle_between(vec3 u, vec3 w, out vec3 perp, out float s) {
    float c = dot(u, w);
    perp = w - c * u;
    s = length(perp);
    return (s == 0.0 && c == 0.0) ? 0.0 : atan(s, c);
}

void main() {
    int g = active_groups[gl_WorkGroupID.x];
    int k = instance_of_group(uint(g));
    DeformInstance inst = instances[k];
    int i = local_index(inst, uint(g));
    uint lid = gl_LocalInvocationID.x;
    float disp = 0.0, fmag = 0.0, energy = 0.0;
    bool live = i < inst.n_control && u_iteration < inst.max_iterations + (inst.scheme == SCHEME_ENERGY ? 1 : 0);
    if (live) {
        int d0 = inst.dyn_base, s0 = inst.static_base;
        int di = d0 + i, si = s0 + i;
        vec3 x = src[di].x.xyz;
        vec3 vel = src[di].v.xyz;
        vec3 a = frame[di].attach.xyz;
        vec3 s = x - a;
        float slen = length(s);
        bool nz = slen > inst.tiny;
        vec3 shat = nz ? s / slen : vec3(0.0);
        SpringVertex sv = vstatic[si];
        float sden = max(slen, sv.rest.y);
        float k_s = inst.k.x, k_l = inst.k.y, k_t = inst.k.z, k_b = inst.k.w, k_r = inst.k2.x, k_e = inst.k2.y;
        vec3 f = vec3(0.0);
        ivec2 r = adj[si];
        for (int e = 0; e < r.y; ++e) {
            int h = inst.adj_base + r.x + e;
            int dj = d0 + adj_index[h];
            vec4 rs = rest[h];
            vec3 xj = src[dj].x.xyz;
            if (k_s != 0.0) {
                vec3 ed = xj - x;
                float len = length(ed);
                float stretch = len - rs.x;
                if (len > inst.tiny) f += (k_s * stretch / len) * ed;
                energy += 0.25 * k_s * stretch * stretch;
            }
            if (k_l != 0.0 || k_t != 0.0) {
                vec3 sj = xj - frame[dj].attach.xyz;
                float sjlen = length(sj);
                bool nzj = sjlen > inst.tiny;
                vec3 sjhat = nzj ? sj / sjlen : vec3(0.0);
                if (k_l != 0.0) {
                    float dl = (slen - sjlen) - rs.y;
                    f -= (k_l * dl) * shat;
                    energy += 0.25 * k_l * dl * dl;
                }
                if (k_t != 0.0) {
                    vec3 perp;
                    float sn;
                    float th = angle_between(shat, sjhat, perp, sn);
                    float dth = th - rs.z;
                    if (sn > SIN_EPS && nz && nzj) f += (k_t * rs.w * dth / (sden * sn)) * perp;
                    energy += 0.25 * k_t * rs.w * dth * dth;
                }
            }
        }
        float k_edit = 0.0;  // K_i of active surface edits (enters lambda_i)
        if (inst.k2.y != 0.0) {
            SpringEdit ed = edit[di];
            k_edit = ed.ck.w;
            if (ed.ck.w > 0.0) f *= inst.handle_weight;
            f += k_e * (ed.ck.xyz - ed.ck.w * x);
            float ee = ed.ck.w * dot(x, x) - 2.0 * dot(ed.ck.xyz, x) + ed.q.x;
            energy += k_e * 0.5 * max(ee, 0.0);
        }
        if (k_b != 0.0) {
            vec3 perp;
            float sn;
            float phi = angle_between(shat, frame[di].bone_ref.xyz, perp, sn);
            float ref_angle = (inst.flags & uint(FLAG_BONE_CONE)) != 0u ? sv.rest.x : 0.0;
            float dphi = phi - ref_angle;
            float rr = sv.sdir.w * sv.sdir.w;
            if (sn > SIN_EPS && nz) f += (k_b * rr * dphi / (sden * sn)) * perp;
            energy += 0.5 * k_b * rr * dphi * dphi;
        }
        if (k_r != 0.0) {
            float dr = slen - sv.sdir.w;
            f -= (k_r * dr) * shat;
            energy += 0.5 * k_r * dr * dr;
        }
        bool semi = (inst.flags & uint(FLAG_SEMI_IMPLICIT)) != 0u;
        float h = inst.dt;
        if ((inst.flags & uint(FLAG_STEP_LIMIT)) != 0u) {
            float lam = dot(sv.lam, vec4(k_s + k_l, k_t, k_b, k_r)) + k_e * k_edit;
            if (lam > 0.0) h = min(h, semi ? sqrt(2.0 * STEP_SAFETY / lam) : STEP_SAFETY / lam);
        }
        vec3 xn, vn;
        if (semi) {
            energy += 0.5 * dot(vel, vel);  // kinetic part of the energy scheme's total
            vn = (vel + h * f) * (1.0 - inst.damping);
            xn = x + h * vn;
        } else {
            vn = vel;
            xn = x + h * f;
        }
        dst[di] = SpringState(vec4(xn, 1.0), vec4(vn, 0.0));
        disp = length(xn - x);
        fmag = length(f);
        // non-finite values poison the maxima (NaN bits compare above +inf) so the check sees divergence
        if (isnan(disp) || isinf(disp)) disp = uintBitsToFloat(0x7fc00000u);
        if (isnan(fmag) || isinf(fmag)) fmag = uintBitsToFloat(0x7fc00000u);
    }
    sh_disp[lid] = disp;
    sh_force[lid] = fmag;
    sh_energy[lid] = energy;
    barrier();
    for (uint stride = uint(LOCAL_SIZE) / 2u; stride > 0u; stride >>= 1) {
        if (lid < stride) {
            // compare as bits: keeps NaN markers (positive floats order like their bit patterns)
            sh_disp[lid] = uintBitsToFloat(max(floatBitsToUint(sh_disp[lid]), floatBitsToUint(sh_disp[lid + stride])));
            sh_force[lid] = uintBitsToFloat(max(floatBitsToUint(sh_force[lid]), floatBitsToUint(sh_force[lid + stride])));
            sh_energy[lid] += sh_energy[lid + stride];
        }
        barrier();
    }
    if (lid == 0u && u_record != 0) {
        atomicMax(status[k].max_disp_bits, floatBitsToUint(sh_disp[0]));
        atomicMax(status[k].max_force_bits, floatBitsToUint(sh_force[0]));
        partials[g] = sh_energy[0];
    }
}
