// The spring forces on one control point (research Algorithm 1, eq. 21/22; numpy reference
// engine.skinning.springs.spring_forces) and its update (eq. 23 / semi-implicit / heavy ball): one place for the
// per-point math of spring.comp (one iteration per dispatch) and spring_tiled.comp (K per dispatch).
//
// The including kernel declares the images and buffers of spring.comp and, before this file, defines
//   vec3 nbr_x(int dj)  // the state position of control point dj as this iteration sees it
// (spring.comp: the ring's x_n; spring_tiled.comp: the tile's current value in shared memory, or the halo's
// frozen one). Everything else a lane reads once per frame: lane_setup.
//
// Forces per CSR slot (i, j), eq. 21/22:  F_s edge length, F_l scale-vector length difference, F_t torsion
// between s_i and s_j (torque k_t w_ij dtheta -> |tau| / |s_i| orthogonal to s_i); an edit handle's neighbour
// forces are scaled by handle_weight before F_e = k_e (C_i - K_i x_i) is added; then bone torsion F_b and the
// radial spring F_r (lane_forces), and the volume term F_v = k_v (V0_r - V_r) / S0_r unit(G_i) (lane_volume;
// the kernels differ in where V_r comes from). The lane's fan volume share V_i = sum over its faces (i, j, m) of
// det(x_i - a_i, x_j - a_i, x_m - a_i) (/ 18 by the caller) and G_i = sum (x_j - a_i) x (x_m - a_i) come with
// the forces.
// Step limiting (FLAG_STEP_LIMIT, reference springs.step_sizes): dt_i = min(dt, STEP_SAFETY / lambda_i)
// (semi-implicit: min(dt, sqrt(2 STEP_SAFETY / lambda_i))), lambda_i the Gershgorin bound (lane_step).

const float SIN_EPS = 1e-9;

ivec4 inst_texel(int k, int t) { return imageLoad(spring_instances, record_texel(k, SPRING_INSTANCE_TEXELS, t)); }
ivec4 point_texel(int i, int t) { return imageLoad(spring_points, record_texel(i, SPRING_POINT_TEXELS, t)); }
ivec4 slot_texel(int h, int t) { return imageLoad(spring_slots, record_texel(h, SPRING_SLOT_TEXELS, t)); }
vec3 frame_texel(int i, int t) { return imageLoad(frame, record_texel(i, SPRING_FRAME_TEXELS, t)).xyz; }

// angle between unit vectors u, w (atan2(|perp|, cos), 0 for zero vectors), perp = w - cos u, its length
float angle_between(vec3 u, vec3 w, out vec3 perp, out float s) {
    float c = dot(u, w);
    perp = w - c * u;
    s = length(perp);
    return (s == 0.0 && c == 0.0) ? 0.0 : atan(s, c);
}

#include "spring_differential.glsl"  // the differential term (k_d): diff_slot, diff_force

// what a lane reads once per frame (per dispatch)
struct SpringLane {
    int k;          // instance
    int di;         // dynamic (state) index of the point
    int si;         // static index (SpringPoint)
    int d0;         // the instance's dynamic base
    uint flags;
    vec4 step;      // dt, tiny, handle_weight, damping / momentum
    vec4 ks;        // k_s, k_l, k_t, k_b
    vec2 ks2;       // k_r, k_e
    float k_v;
    float k_d;      // the differential term (spring_differential.glsl): k_d times the point's share
    vec3 dtarget;   // its turned bind offset R_i delta0_i (SpringFrame.diff)
    ivec4 r;        // SpringPoint adj: slot offset, count, region (-1 none), first point of its region
    int vbase;      // B_VOLUME row of the point's region
    bool vol_on;    // the volume term acts on the point this frame
    vec3 a;         // attachment
    vec4 sdir;      // s_dir, r
    vec4 srest;     // bone angle, |s| floor, ...
    int h0;         // first CSR slot
    bool held;      // a static point of an edit, a rigid or a glued point: no force, no step
    bool glued;     // a glued point (springs.touch): placed on its face after the update (glue_target)
    float k_edit;   // K_i of active surface edits (enters lambda_i)
    vec3 ck;        // the edit's target C_i in bind units
    float eq;       // the edit's Q_i in bind units
};

SpringLane lane_setup(ivec4 head, int k, ivec4 run, int di, int si) {
    SpringLane L;
    L.k = k;
    L.di = di;
    L.si = si;
    L.d0 = run.z;
    L.flags = uint(run.x);
    L.step = intBitsToFloat(inst_texel(k, SPRING_INSTANCE_STEP));
    L.ks = intBitsToFloat(inst_texel(k, SPRING_INSTANCE_K));
    L.ks2 = intBitsToFloat(inst_texel(k, SPRING_INSTANCE_K2).xy);
    vec4 ks3 = intBitsToFloat(inst_texel(k, SPRING_INSTANCE_K3));
    L.k_v = ks3.x;
    L.k_d = ks3.z;
    L.dtarget = vec3(0.0);
    if (L.k_d != 0.0) {  // SpringFrame.diff: R_i delta0_i and the point's share of k_d (springs.diff_scales)
        vec4 dt = imageLoad(frame, record_texel(di, SPRING_FRAME_TEXELS, SPRING_FRAME_DIFF));
        L.dtarget = dt.xyz;
        L.k_d *= dt.w;
    }
    L.r = point_texel(si, SPRING_POINT_ADJ);
    L.vbase = (int(ks3.y) + L.r.z) * 4;  // B_VOLUME row of the point's region (r.z: -1 for none)
    L.vol_on = L.k_v != 0.0 && L.r.z >= 0 && volume_sums[max(L.vbase, 0) + 3] == 0;
    L.a = frame_texel(di, SPRING_FRAME_ATTACH);
    L.sdir = intBitsToFloat(point_texel(si, SPRING_POINT_SDIR));
    L.srest = intBitsToFloat(point_texel(si, SPRING_POINT_REST));
    L.h0 = run.w + L.r.x;
    // static set of a surface edit, or a rigid point (SpringFrame bone_ref.w, spring_frame.comp): no force, no
    // step (reference springs.release_held)
    float hold = imageLoad(frame, record_texel(di, SPRING_FRAME_TEXELS, SPRING_FRAME_BONE_REF)).w;
    L.held = hold > 0.5;
    L.glued = hold > 1.5;
    L.k_edit = 0.0;
    L.ck = vec3(0.0);
    L.eq = 0.0;
    if (L.ks2.y != 0.0) {
        SpringEdit ed = edit[di];
        L.k_edit = ed.ck.w;
        L.held = L.held || ed.q.y != 0.0;
        // targets in scene units, the state in bind units (SpringFrame attach.w: u, spring_frame.comp)
        float un = imageLoad(frame, record_texel(di, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH)).w;
        L.ck = ed.ck.xyz / un;
        L.eq = ed.q.x / (un * un);
    }
    return L;
}

// every force but the volume term's at x (the lane's own position; neighbours through nbr_x), the energy, and
// the volume term's fan sums vi (x 18) and gi (x 18) when the term acts on the lane
void lane_forces(SpringLane L, vec3 x, out vec3 f, out float energy, out float vi, out vec3 gi) {
    float tiny = L.step.y;
    vec3 s = x - L.a;
    float slen = length(s);
    bool nz = slen > tiny;
    vec3 shat = nz ? s / slen : vec3(0.0);
    float sden = max(slen, L.srest.y);
    float k_s = L.ks.x, k_l = L.ks.y, k_t = L.ks.z, k_b = L.ks.w, k_r = L.ks2.x, k_e = L.ks2.y;
    f = vec3(0.0);
    energy = 0.0;
    vi = 0.0;
    gi = vec3(0.0);
    vec4 dsum = vec4(0.0);  // the differential term: sum_j w_ij (x_j, 1) over the one-ring
    for (int e = 0; e < L.r.y; ++e) {
        int h = L.h0 + e;
        ivec4 nbr = slot_texel(h, SPRING_SLOT_NBR);
        int dj = L.d0 + nbr.x;
        vec4 rs = intBitsToFloat(slot_texel(h, SPRING_SLOT_REST));
        vec3 xj = nbr_x(dj);
        if (L.k_d != 0.0) dsum += diff_slot(nbr, xj);
        if (L.vol_on && nbr.y >= 0) {
            vec3 c = cross(xj - L.a, nbr_x(L.d0 + nbr.y) - L.a);
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
    if (k_e != 0.0) {
        if (L.k_edit > 0.0) f *= L.step.z;
        f += k_e * (L.ck - L.k_edit * x);
        float ee = L.k_edit * dot(x, x) - 2.0 * dot(L.ck, x) + L.eq;
        energy += k_e * 0.5 * max(ee, 0.0);
    }
    if (k_b != 0.0) {
        vec3 perp;
        float sn;
        float phi = angle_between(shat, frame_texel(L.di, SPRING_FRAME_BONE_REF), perp, sn);
        float ref_angle = (L.flags & uint(FLAG_BONE_CONE)) != 0u ? L.srest.x : 0.0;
        float dphi = phi - ref_angle;
        float rr = L.sdir.w * L.sdir.w;
        if (sn > SIN_EPS && nz) f += (k_b * rr * dphi / (sden * sn)) * perp;
        energy += 0.5 * k_b * rr * dphi * dphi;
    }
    if (k_r != 0.0) {
        float dr = slen - L.sdir.w;
        f -= (k_r * dr) * shat;
        energy += 0.5 * k_r * dr * dr;
    }
    // after the edit's handle_weight scaling, as the reference (which adds it after the volume term: the same sum)
    if (L.k_d != 0.0) f += diff_force(x, dsum, L.dtarget, L.k_d, energy);
}

// the lane's fan volume share V_i (x 18) at x alone (no forces): the volume sums of a state not iterated on
float lane_fan(SpringLane L, vec3 x) {
    float vi = 0.0;
    for (int e = 0; e < L.r.y; ++e) {
        ivec4 nbr = slot_texel(L.h0 + e, SPRING_SLOT_NBR);
        if (nbr.y >= 0) vi += dot(x - L.a, cross(nbr_x(L.d0 + nbr.x) - L.a, nbr_x(L.d0 + nbr.y) - L.a));
    }
    return vi;
}

// the volume term for the region volume vr (in the state's units): F_v = k_v (V0_r - vr) / S0_r unit(gi)
void lane_volume(SpringLane L, vec4 pv, float vr, vec3 gi, inout vec3 f, inout float energy) {
    float delta = (pv.x - vr) / pv.y;
    float glen = length(gi);
    if (glen > 0.0) f += (L.k_v * delta / glen) * gi;
    energy += 0.5 * L.k_v * delta * delta;
}

// the lane's step dt_i
float lane_step(SpringLane L) {
    bool semi = (L.flags & uint(FLAG_SEMI_IMPLICIT)) != 0u;
    float h = L.step.x;
    if ((L.flags & uint(FLAG_STEP_LIMIT)) != 0u) {
        vec4 lamc = intBitsToFloat(point_texel(L.si, SPRING_POINT_LAM));
        float lam = dot(lamc, vec4(L.ks.x + L.ks.y, L.ks.z, L.ks.w, L.ks2.x)) + L.ks2.y * L.k_edit
            + (L.vol_on ? L.k_v * VOLUME_LAMBDA : 0.0) + L.k_d * DIFF_LAMBDA;
        if (lam > 0.0) h = min(h, semi ? sqrt(2.0 * STEP_SAFETY / lam) : STEP_SAFETY / lam);
    }
    return h;
}

// the update of (x, vel) by force f with step h (a held point's force and velocity are zeroed: it stays);
// energy gains the kinetic part
void lane_update(SpringLane L, vec3 x, vec3 vel, inout vec3 f, float h, inout float energy, out vec3 xn,
                 out vec3 vn) {
    if (L.held) {
        f = vec3(0.0);
        vel = vec3(0.0);
    }
    if ((L.flags & uint(FLAG_SEMI_IMPLICIT)) != 0u) {
        energy += 0.5 * dot(vel, vel);  // kinetic part of the energy scheme's total
        vn = (vel + h * f) * (1.0 - L.step.w);
        xn = x + h * vn;
    } else if ((L.flags & uint(FLAG_MOMENTUM)) != 0u) {
        vn = L.step.w * vel + h * f;  // heavy ball (reference springs.integrate): vel is the last step
        xn = x + vn;
    } else {
        vn = vel;
        xn = x + h * f;
    }
}

// A glued point's place (reference springs.touch.touch_targets; SpringPoint touch, touch2): the bind barycentric
// point of the face it touched at bind plus its bind offset in the face's frame (e1 = unit(b - a), e2 = n x e1,
// n = unit((b - a) x (c - a))), from the corners' positions glue_x (the includer's: the previous iterate, as the
// reference's `glue` with src). The caller sets x to it and the velocity to 0 after lane_update.
vec3 glue_target(SpringLane L) {
    ivec4 t = point_texel(L.si, SPRING_POINT_TOUCH);
    vec4 t2 = intBitsToFloat(point_texel(L.si, SPRING_POINT_TOUCH2));
    vec3 a = glue_x(L.d0 + t.x - 1), b = glue_x(L.d0 + t.y), c = glue_x(L.d0 + t.z);
    float b0 = intBitsToFloat(t.w);
    vec3 q = b0 * a + t2.x * b + (1.0 - b0 - t2.x) * c;
    vec3 e1 = normalize(b - a);
    vec3 n = normalize(cross(b - a, c - a));
    return q + t2.y * e1 + t2.z * cross(n, e1) + t2.w * n;
}
