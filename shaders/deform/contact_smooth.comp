#version 430 core
// Contact stage, one smoothing step over the mesh neighbours (the spring stage's CSR adjacency images; a point
// without neighbours keeps its own). The push buffer has two halves and a third part (u_stat): this dispatch reads
// push[u_read + p] and writes push[u_write + p] (p: the pool index).
//
// u_restore = 0, a smoothed pass (reference engine.skinning.contact.smooth_pushes): every control point takes the
// mean push of its neighbours; the pass's last smoothing (u_last = 1) also applies it: dst = src + push.
//
// u_restore = 1, the volume restore (reference restore_volume), (2 + R) K steps u_step (K = u_spread, R = u_rounds
// = CONTACT_ROUNDS; records
// (xyz, w), per point in the third part (q, c, z, A)); contact.comp wrote (dent, 1 - facing). Every step takes
// the neighbour mean of the record, then:
//   step 0:      (before the mean) A = mean squared bind length of the point's edges, q = A (-dent . n);
//   steps < K:   xyz: the dent smoothed (its direction around the point); w smoothed in the first u_smooth
//                steps only; at K - 1: c = w clamp(1 + 2 n . xyz / max(|xyz|, u_fade h), 0, 1), w = c;
//   steps < 2 K: w smoothed (z = S^K c); at 2 K - 1: w = q / z / degree (0 where z = 0);
//   then R rounds of K steps: w smoothed; at the round's end q = c w degree, w = q / z / degree, and after the
//                last round dst = src + q / A n.
// n = unit(x - a) (a: the posed attachment of this frame's SpringFrame); points without edges or area move by 0.
// Units: as contact.comp, in bind units (pushes and dents are; positions x / u, u: SpringFrame attach.w), the
// moves multiplied by u as they are added to the scene-unit positions.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"

layout(std430, binding = B_SRC) readonly buffer Src { vec4 src[]; };
layout(std430, binding = B_DST) writeonly buffer Dst { vec4 dst[]; };
layout(std430, binding = B_CONTACT_PUSH) buffer Push { vec4 push[]; };
layout(std430, binding = B_CONTACT_BIND) readonly buffer Bind { vec4 bind_pos[]; };  // static pool
layout(std430, binding = B_CONTACT_PARAMS) readonly buffer Params { vec4 params[]; };  // 2 per instance
layout(rgba32i, binding = I_SPRING_POINTS) readonly uniform iimage2D spring_points;  // SpringPoint (static)
layout(rgba32i, binding = I_SPRING_SLOTS) readonly uniform iimage2D spring_slots;    // SpringSlot (static)
layout(rgba32f, binding = I_SPRING_FRAME) readonly uniform image2D frame;            // SpringFrame (this frame's)

uniform int u_last;
uniform int u_read;     // first record of the half read
uniform int u_write;    // first record of the half written
uniform int u_restore;  // 1: a step of the volume restore
uniform int u_step;     // the restore's step, in [0, 4 u_spread)
uniform int u_spread;   // K: CONTACT_SPREAD
uniform int u_smooth;   // CONTACT_SMOOTH
uniform int u_stat;     // first record of the restore's per-point part
uniform int u_rounds;   // CONTACT_ROUNDS
uniform float u_fade;   // RESTORE_FADE

vec3 unit_or_zero(vec3 v) { float n = length(v); return n > 0.0 ? v / n : vec3(0.0); }

int neighbour(DeformInstance inst, ivec4 adj, int e) {
    return imageLoad(spring_slots, record_texel(inst.adj_base + adj.x + e, SPRING_SLOT_TEXELS, SPRING_SLOT_NBR)).x;
}

void main() {
    uint g = gl_WorkGroupID.x;
    DeformInstance inst = instances[instance_of_group(g)];
    int i = local_index(inst, g);
    if (i >= inst.n_control) return;
    int p = inst.dyn_base + i;
    ivec4 adj = imageLoad(spring_points, record_texel(inst.static_base + i, SPRING_POINT_TEXELS, SPRING_POINT_ADJ));
    vec4 own = push[u_read + p];
    vec4 sum = vec4(0.0);
    for (int e = 0; e < adj.y; ++e) sum += push[u_read + inst.dyn_base + neighbour(inst, adj, e)];
    vec4 mean = adj.y > 0 ? sum / float(adj.y) : own;
    if (u_restore == 0) {
        push[u_write + p] = vec4(mean.xyz, 0.0);
        if (u_last != 0) {
            float u = imageLoad(frame, record_texel(p, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH)).w;
            dst[p] = vec4(src[p].xyz + mean.xyz * u, 1.0);  // as contact.comp's plain pass
        }
        return;
    }
    vec4 f = imageLoad(frame, record_texel(p, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH));
    vec3 x = src[p].xyz / f.w;  // bind units, as the attachment f.xyz (contact.comp)
    vec3 n = unit_or_zero(x - f.xyz);
    float deg = float(adj.y);
    int k = u_spread;
    vec4 stat;
    if (u_step == 0) {
        vec3 b = bind_pos[inst.static_base + i].xyz;
        float sq = 0.0;
        for (int e = 0; e < adj.y; ++e) {
            vec3 d = b - bind_pos[inst.static_base + neighbour(inst, adj, e)].xyz;
            sq += dot(d, d);
        }
        float area = sq / max(deg, 1.0);
        stat = vec4(adj.y > 0 && area > 0.0 ? area * -dot(own.xyz, n) : 0.0, 0.0, 0.0, area);
    } else {
        stat = push[u_stat + p];
    }
    bool ok = adj.y > 0 && stat.w > 0.0;
    vec4 out_rec;
    if (u_step < k) {
        out_rec = vec4(mean.xyz, u_step < u_smooth ? mean.w : own.w);
        if (u_step == k - 1) {
            // the dents' direction, faded out below u_fade x the instance's thickness (params[2 k].y)
            float fade = max(length(out_rec.xyz), u_fade * params[2 * instance_of_group(g)].y);
            out_rec.w *= clamp(1.0 + 2.0 * dot(n, out_rec.xyz) / fade, 0.0, 1.0);
            stat.y = out_rec.w;
        }
    } else {
        out_rec = vec4(own.xyz, mean.w);
        float inv_deg = ok ? 1.0 / deg : 0.0;
        int r = (u_step + 1) / k - 3;  // the hand-out round a step ends (-1: the spread of c)
        if (u_step == 2 * k - 1) {
            stat.z = out_rec.w;
            out_rec.w = stat.z > 0.0 ? stat.x / stat.z * inv_deg : 0.0;
        } else if ((u_step + 1) % k == 0 && r >= 0) {
            float q = stat.y * out_rec.w * deg;
            out_rec.w = stat.z > 0.0 ? q / stat.z * inv_deg : 0.0;
            if (r == u_rounds - 1) dst[p] = vec4(src[p].xyz + (ok ? q / stat.w : 0.0) * f.w * n, 1.0);
        }
    }
    push[u_write + p] = out_rec;
    push[u_stat + p] = stat;
}
