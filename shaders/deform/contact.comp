#version 430 core
// Contact stage, one Jacobi pass (reference engine.skinning.contact.contact_pass): every control point of an
// instance with contact on sums the pushes of the pairs it forms with the points of the 27 grid cells around its
// own (contact_grid.comp) and moves by sum w c / max(sum w, 1). For a pair (i, j) within reach: n = unit(x - a)
// (a: the posed attachment of the spring frame), m = unit(n_j - n_i), gap g = (x_i - x_j) . m, lateral offset
// l = |x_i - x_j - g m|, push c = max(h - g, 0) / 2 m, weight w = w_face w_side w_lat w_bind w_reach (see the
// reference's module docstring). Passes n < P (u_passes) are the smoothed ones: the push goes to B_CONTACT_PUSH
// and contact_smooth.comp smooths and applies it; later passes apply it at once. An instance takes part in its
// own first contact_passes passes of each phase; in the others, with contact off, or once a pass moved no point
// (moved[k * (2 P + 1) + n] == 0, reset by contact_grid.comp) it pushes nothing and copies through (this dispatch
// always runs; the grid and smoothing dispatches of a pass nobody takes part in get zero groups). A pass that moves a point sets
// the next flag; an instance sitting a pass out carries its flag over.
// Pass n = 2 P is the volume restore (reference restore_volume): an instance takes part when its first pass moved
// a point (moved[k * (2 P + 1) + 1]); every point then writes (x - x0, 1 - min(sum w, 1)) to the push buffer (x0:
// the spring stage's result, the total displacement of the passes; sum w over every facing pair within reach,
// pushing or not: the reference's facing_share) and copies its position through; contact_smooth.comp does the
// rest. Points of instances that sit it out write zeros (their restore offsets are exactly zero).
// Units (reference SpringDeformer.solve): the pass runs in bind units, where its lengths (params) are measured:
// positions are divided by the pose unit u (SpringFrame attach.w, spring_frame.comp; 1 unless the mesh is given
// in other units than its joints are posed in) as they are read, the attachments are SpringFrame's own (bind
// units), pushes and dents stay in bind units and are multiplied by u as they are added to the positions.
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"

layout(std430, binding = B_SRC) readonly buffer Src { vec4 src[]; };
layout(std430, binding = B_DST) writeonly buffer Dst { vec4 dst[]; };
layout(std430, binding = B_CONTACT_PUSH) writeonly buffer Push { vec4 push_out[]; };  // first half: smoothed passes
layout(std430, binding = B_CONTACT_BIND) readonly buffer Bind { vec4 bind_pos[]; };  // static pool
layout(std430, binding = B_CONTACT_PARAMS) readonly buffer Params { vec4 params[]; };  // 2 per instance
// the grid (contact_grid.comp): bucket starts at grid[T + h], the pass flags from grid[2T + 1]
layout(std430, binding = B_CONTACT_GRID) buffer Grid { uint grid[]; };
layout(std430, binding = B_CONTACT_ENTRIES) readonly buffer Entries { int entries[]; };
layout(std430, binding = B_CONTACT_ORIGIN) readonly buffer Origin { vec4 origin[]; };  // the spring stage's result
layout(rgba32f, binding = I_SPRING_FRAME) readonly uniform image2D frame;  // SpringFrame (this frame's)

uniform int u_pass;    // n, in [0, 2 P]: 2 P is the volume restore
uniform int u_passes;  // P: the largest contact_passes of the batch
uniform uint u_table;

#include "contact_hash.glsl"

// grid index of pass flag f (contact_grid.comp: start[h] = grid[T + h], flags from grid[2T + 1])
uint flag_index(int f) { return 2u * u_table + 1u + uint(f); }

// the attachment in bind units (xyz) and the pose unit u (w): SpringFrame attach (spring_frame.comp)
vec4 attach_of(int p) { return imageLoad(frame, record_texel(p, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH)); }

vec3 unit_or_zero(vec3 v) { float n = length(v); return n > 0.0 ? v / n : vec3(0.0); }

void main() {
    uint g = gl_WorkGroupID.x;
    int k = instance_of_group(g);
    DeformInstance inst = instances[k];
    int i = local_index(inst, g);
    if (i >= inst.n_control) return;
    int p = inst.dyn_base + i;
    vec4 fi = attach_of(p);
    float u = fi.w;  // one per instance (every bone record of an instance holds it): j's too
    vec3 xi = src[p].xyz / u;
    vec4 geom = params[2 * k];     // reach, thickness, lateral, exclude
    vec4 more = params[2 * k + 1];  // edge, passes, on, 0
    bool restore = u_pass == 2 * u_passes;
    bool smoothed = u_pass < u_passes;
    int flag = k * (2 * u_passes + 1) + (restore ? 1 : u_pass);
    bool live = more.z > 0.0 && grid[flag_index(flag)] != 0u;
    bool takes_part = live && (restore || (smoothed ? u_pass : u_pass - u_passes) < int(more.y));
    if (restore && !takes_part) {
        push_out[p] = vec4(0.0);
        dst[p] = vec4(src[p].xyz, 1.0);
        return;
    }
    if (!takes_part) {
        if (live && i == 0) atomicOr(grid[flag_index(flag + 1)], 1u);  // sitting out: the next pass still runs
        if (smoothed) push_out[p] = vec4(0.0);
        dst[p] = vec4(src[p].xyz, 1.0);  // a smoothed pass's smoothing (if it runs) rewrites it with src + 0
        return;
    }
    float reach = geom.x, thick = geom.y, lat2 = geom.z * geom.z, excl = geom.w, e = more.x;
    vec3 ai = fi.xyz;
    vec3 ni = unit_or_zero(xi - ai);
    vec3 bi = bind_pos[inst.static_base + i].xyz;
    ivec3 c = contact_cell(xi, reach);
    vec3 acc = vec3(0.0);
    float wsum = 0.0;
    float fsum = 0.0;  // the restore's facing sum: every pair with a positive weight
    for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx) {
        ivec3 cc = c + ivec3(dx, dy, dz);
        uint h = contact_bucket(cc, k, u_table);
        for (uint s = grid[u_table + h]; s < grid[u_table + h + 1u]; ++s) {
            int q = entries[s];
            int j = q - inst.dyn_base;
            if (j == i || j < 0 || j >= inst.n_control) continue;  // itself, or a point of another instance
            vec3 xj = src[q].xyz / u;  // as contact_grid.comp computes q's cell
            vec3 d = xi - xj;
            float dist = length(d);
            float w = clamp((reach - dist) / e, 0.0, 1.0);
            if (w <= 0.0) continue;  // most candidates: out of reach
            if (contact_cell(xj, reach) != cc) continue;  // another cell hashed into the same bucket
            w *= clamp((length(bi - bind_pos[inst.static_base + j].xyz) - excl) / e, 0.0, 1.0);
            if (w <= 0.0) continue;
            vec3 aj = attach_of(q).xyz;
            vec3 nj = unit_or_zero(xj - aj);
            w *= clamp(-2.0 * dot(ni, nj), 0.0, 1.0);
            w *= clamp(min(dot(xj - ai, ni), dot(xi - aj, nj)) / e, 0.0, 1.0);
            vec3 m = unit_or_zero(nj - ni);
            float gap = dot(d, m);
            vec3 l = d - gap * m;
            w *= clamp(1.0 - dot(l, l) / lat2, 0.0, 1.0);
            float push = 0.5 * max(thick - gap, 0.0);
            if (w > 0.0) fsum += w;
            if (w <= 0.0 || push <= 0.0) continue;
            acc += w * push * m;
            wsum += w;
        }
    }
    if (restore) {
        push_out[p] = vec4(xi - origin[p].xyz / u, 1.0 - min(fsum, 1.0));
        dst[p] = vec4(src[p].xyz, 1.0);
        return;
    }
    vec3 push = acc / max(wsum, 1.0);
    if (smoothed) push_out[p] = vec4(push, 0.0); else dst[p] = vec4(src[p].xyz + push * u, 1.0);
    if (wsum > 0.0) atomicOr(grid[flag_index(flag + 1)], 1u);
}
