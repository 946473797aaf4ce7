#version 430 core
// Spring Compute (research Algorithm 1; numpy reference engine.skinning.springs.spring_step): one spring
// iteration for every work group of the pool (the groups of stopped instances exit at entry; the loop state,
// the ring and the convergence check: spring_iterate.glsl).
// Reads state x_n (positions, velocities), writes x_{n+1}; per work group it reduces max |x_{n+1} - x_n|,
// max |F(x_n)| (atomicMax on float bits into the instance status) and the energy at x_n (partials[group]).
//
// Forces per CSR slot (i, j), eq. 21/22:  F_s edge length, F_l scale-vector length difference, F_t torsion
// between s_i and s_j (torque k_t w_ij dtheta -> |tau| / |s_i| orthogonal to s_i); an edit handle's
// neighbour forces are scaled by handle_weight before F_e = k_e (C_i - K_i x_i) is added; then bone torsion
// F_b and the radial spring F_r, and the volume term F_v (below). Update: eq. 23 x += dt F, or semi-implicit
// Euler with damping, or (explicit,
// FLAG_MOMENTUM) the heavy ball u' = beta u + dt_i F, x' = x + u' with beta in the damping slot (step.w).
// Step limiting (FLAG_STEP_LIMIT, reference springs.step_sizes): each vertex steps by its own
// dt_i = min(dt, STEP_SAFETY / lambda_i) (semi-implicit: min(dt, sqrt(2 STEP_SAFETY / lambda_i))), lambda_i the
// Gershgorin bound from the static coefficients SpringVertex.lam, the stiffnesses and the edit stiffness K_i.
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
// Differential term (reference springs.spring_forces, SpringInstance.k3.z = k_d): spring_differential.glsl.
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
#include "spring_differential.glsl"  // the differential term (k_d): diff_slot, diff_force

const float SIN_EPS = 1e-9;

shared float sh_disp[LOCAL_SIZE];
shared float sh_force[LOCAL_SIZE];
shared float sh_energy[LOCAL_SIZE];

ivec4 inst_texel(int k, int t) { return imageLoad(spring_instances, record_texel(k, SPRING_INSTANCE_TEXELS, t)); }
ivec4 point_texel(int i, int t) { return imageLoad(spring_points, record_texel(i, SPRING_POINT_TEXELS, t)); }
ivec4 slot_texel(int h, int t) { return imageLoad(spring_slots, record_texel(h, SPRING_SLOT_TEXELS, t)); }
vec3 state_texel(int i, int t) { return ring_load(src_ring, record_texel(i, SPRING_STATE_TEXELS, t)).xyz; }
vec3 frame_texel(int i, int t) { return imageLoad(frame, record_texel(i, SPRING_FRAME_TEXELS, t)).xyz; }

// angle between unit vectors u, w (atan2(|perp|, cos), 0 for zero vectors), perp = w - cos u, its length
float angle_between(vec3 u, vec3 w, out vec3 perp, out float s) {
    float c = dot(u, w);
    perp = w - c * u;
    s = length(perp);
    return (s == 0.0 && c == 0.0) ? 0.0 : atan(s, c);
}

void step_group(int g) {  // one iteration of work group g (main: spring_iterate.glsl)
    ivec4 head = imageLoad(spring_heads, record_texel(g, SPRING_HEAD_TEXELS, SPRING_HEAD_GROUP));
    int k = head.z;
    ivec4 run = inst_texel(k, SPRING_INSTANCE_RUN);
    int lid = int(gl_LocalInvocationID.x);
    float disp = 0.0, fmag = 0.0, energy = 0.0;
    bool live = lid < head.y && u_iteration < run.y;
    if (live) {
        vec4 step = intBitsToFloat(inst_texel(k, SPRING_INSTANCE_STEP));
        vec4 ks = intBitsToFloat(inst_texel(k, SPRING_INSTANCE_K));
        vec2 ks2 = intBitsToFloat(inst_texel(k, SPRING_INSTANCE_K2).xy);
        uint flags = uint(run.x);
        float tiny = step.y;
        int d0 = run.z;
        int di = g * LOCAL_SIZE + lid;  // control ranges start at group_base * LOCAL_SIZE
        int si = head.x + lid;
        vec3 x = state_texel(di, SPRING_STATE_X);
        vec3 vel = state_texel(di, SPRING_STATE_V);
        vec3 a = frame_texel(di, SPRING_FRAME_ATTACH);
        vec3 s = x - a;
        float slen = length(s);
        bool nz = slen > tiny;
        vec3 shat = nz ? s / slen : vec3(0.0);
        ivec4 r = point_texel(si, SPRING_POINT_ADJ);
        vec4 sdir = intBitsToFloat(point_texel(si, SPRING_POINT_SDIR));
        vec4 srest = intBitsToFloat(point_texel(si, SPRING_POINT_REST));
        float sden = max(slen, srest.y);
        float k_s = ks.x, k_l = ks.y, k_t = ks.z, k_b = ks.w, k_r = ks2.x, k_e = ks2.y;
        vec4 ks3 = intBitsToFloat(inst_texel(k, SPRING_INSTANCE_K3));
        float k_v = ks3.x;
        float k_d = ks3.z;
        vec4 dsum = vec4(0.0);  // differential term: sum_j w_ij (x_j, 1) over the one-ring
        int vbase = (int(ks3.y) + r.z) * 4;  // B_VOLUME row of the point's region (r.z: -1 for none)
        bool vol_on = k_v != 0.0 && r.z >= 0 && volume_sums[max(vbase, 0) + 3] == 0;
        float vi = 0.0;
        vec3 gi = vec3(0.0);
        vec3 f = vec3(0.0);
        int h0 = run.w + r.x;
        for (int e = 0; e < r.y; ++e) {
            int h = h0 + e;
            ivec4 nbr = slot_texel(h, SPRING_SLOT_NBR);
            int dj = d0 + nbr.x;
            vec4 rs = intBitsToFloat(slot_texel(h, SPRING_SLOT_REST));
            vec3 xj = state_texel(dj, SPRING_STATE_X);
            if (k_d != 0.0) dsum += diff_slot(nbr, xj);
            if (vol_on && nbr.y >= 0) {
                vec3 c = cross(xj - a, state_texel(d0 + nbr.y, SPRING_STATE_X) - a);
                vi += dot(s, c);
                gi += c;
            }
            if (k_s != 0.0) {
                vec3 ed = xj - x;
                float len = length(ed);
                float stretch = len - rs.x;
                if (len > tiny) f += (k_s * stretch / len) * ed;
                energy += 0.25 * k_s * stretch * stretch;
            }
            if (k_l != 0.0 || k_t != 0.0) {
                vec3 sj = xj - frame_texel(dj, SPRING_FRAME_ATTACH);
                float sjlen = length(sj);
                bool nzj = sjlen > tiny;
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
        // static set of a surface edit, or a rigid point (SpringFrame bone_ref.w, spring_frame.comp): no force, no
        // step (reference springs.release_held)
        bool held = imageLoad(frame, record_texel(di, SPRING_FRAME_TEXELS, SPRING_FRAME_BONE_REF)).w > 0.5;
        if (k_e != 0.0) {
            SpringEdit ed = edit[di];
            k_edit = ed.ck.w;
            held = held || ed.q.y != 0.0;
            if (ed.ck.w > 0.0) f *= step.z;
            // targets in scene units, the state in bind units (SpringFrame attach.w: u, spring_frame.comp)
            float un = imageLoad(frame, record_texel(di, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH)).w;
            vec3 ck = ed.ck.xyz / un;
            f += k_e * (ck - ed.ck.w * x);
            float ee = ed.ck.w * dot(x, x) - 2.0 * dot(ck, x) + ed.q.x / (un * un);
            energy += k_e * 0.5 * max(ee, 0.0);
        }
        if (k_b != 0.0) {
            vec3 perp;
            float sn;
            float phi = angle_between(shat, frame_texel(di, SPRING_FRAME_BONE_REF), perp, sn);
            float ref_angle = (flags & uint(FLAG_BONE_CONE)) != 0u ? srest.x : 0.0;
            float dphi = phi - ref_angle;
            float rr = sdir.w * sdir.w;
            if (sn > SIN_EPS && nz) f += (k_b * rr * dphi / (sden * sn)) * perp;
            energy += 0.5 * k_b * rr * dphi * dphi;
        }
        if (k_r != 0.0) {
            float dr = slen - sdir.w;
            f -= (k_r * dr) * shat;
            energy += 0.5 * k_r * dr * dr;
        }
        if (vol_on) {
            vec4 pv = intBitsToFloat(point_texel(si, SPRING_POINT_VOL));  // V0_r, S0_r, fixed-point scale
            int n = u_iteration;
            if (n != 0) volume_add(r.z, vbase + max(n, 0) % 3, int(round(vi / 18.0 * pv.z)));
            if (n >= 0) {
                if (r.w != 0) volume_sums[vbase + (n + 1) % 3] = 0;
                float vr = float(volume_sums[vbase + max(n - 1, 0) % 3]) / pv.z;
                float delta = (pv.x - vr) / pv.y;
                float glen = length(gi);
                if (glen > 0.0) f += (k_v * delta / glen) * gi;
                energy += 0.5 * k_v * delta * delta;
            }
        }
        if (k_d != 0.0) f += diff_force(x, dsum, frame_texel(di, SPRING_FRAME_DIFF), k_d, energy);
        if (u_iteration < 0) return;  // the volume pre-pass: sums only (the lanes outside `live` return below)
        if (held) {
            f = vec3(0.0);
            vel = vec3(0.0);
        }
        bool semi = (flags & uint(FLAG_SEMI_IMPLICIT)) != 0u;
        float h = step.x;
        if ((flags & uint(FLAG_STEP_LIMIT)) != 0u) {
            vec4 lamc = intBitsToFloat(point_texel(si, SPRING_POINT_LAM));
            float lam = dot(lamc, vec4(k_s + k_l, k_t, k_b, k_r)) + k_e * k_edit + (vol_on ? k_v * VOLUME_LAMBDA : 0.0);
            lam += k_d * DIFF_LAMBDA;
            if (lam > 0.0) h = min(h, semi ? sqrt(2.0 * STEP_SAFETY / lam) : STEP_SAFETY / lam);
        }
        vec3 xn, vn;
        if (semi) {
            energy += 0.5 * dot(vel, vel);  // kinetic part of the energy scheme's total
            vn = (vel + h * f) * (1.0 - step.w);
            xn = x + h * vn;
        } else if ((flags & uint(FLAG_MOMENTUM)) != 0u) {
            vn = step.w * vel + h * f;  // heavy ball (reference springs.integrate): vel is the last step
            xn = x + vn;
        } else {
            vn = vel;
            xn = x + h * f;
        }
        ring_store(dst_ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X), vec4(xn, 1.0));
        ring_store(dst_ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_V), vec4(vn, 0.0));
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
