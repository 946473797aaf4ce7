#version 430 core
// Contact stage, the hashed uniform grid of the deformed control points (reference engine.skinning.contact,
// which finds the same pairs with a k-d tree). Per contact pass, one dispatch per mode (u_mode):
// One uint buffer holds count[h] = grid[h] (T buckets), start[h] = grid[T + h] (T + 1) and the flags moved[f] =
// grid[2T + 1 + f]:
//   0 clear:   (first pass of a frame only) count[h] = 0 for every bucket of the table (T = u_table buckets, a power
//              of two) and the per-instance "a pass moved points" flags moved[k * (2 P + 1) + n] = (n == 0);
//   1 count:   per control point p of an instance with contact on, its cell c = floor(x / reach) (reach: the
//              instance's search radius, so every point within reach lies in the 27 cells around c) and its
//              bucket h = hash(c, instance); count[h] += 1;
//   2 scan:    ONE work group: start[h] = sum of count below h (exclusive prefix, start[T] = total);
//   3 scatter: entries[start[h] + --count[h]] = p (so count is 0 again for the next pass);
//   4 gate:    ONE work group, first in every pass: the indirect dispatch arguments of the pass's count, scan,
//              scatter and smoothing dispatches, (u_groups, 1, 1) and (1, 1, 1) when some instance takes part in
//              the pass, zero groups otherwise (then only contact.comp runs, copying every point through).
// contact.comp then walks the buckets of the 27 cells around each point. An instance whose last pass moved no point
// (moved[k * (2 P + 1) + u_pass] == 0) or that sits this pass out (contact.comp) is left out: every later pass
// would leave it as it is (the reference stops).
// Units: cells are of the points in bind units, x / u (u: the pose unit in SpringFrame attach.w, spring_frame.comp),
// where the reach is measured (contact.comp divides alike).
layout(local_size_x = LOCAL_SIZE) in;

#include "deform_common.glsl"
#include "deform_images.glsl"

layout(std430, binding = B_SRC) readonly buffer Src { vec4 src[]; };
layout(std430, binding = B_CONTACT_PARAMS) readonly buffer Params { vec4 params[]; };  // 2 per instance
// the grid: bucket counts grid[0, T), bucket starts grid[T, 2T] and the per-instance pass flags from grid[2T + 1]
layout(std430, binding = B_CONTACT_GRID) buffer Grid { uint grid[]; };
layout(std430, binding = B_CONTACT_ENTRIES) writeonly buffer Entries { int entries[]; };
layout(std430, binding = B_INDIRECT) writeonly buffer Indirect { uint indirect[]; };  // 2 x (x, y, z)
layout(rgba32f, binding = I_SPRING_FRAME) readonly uniform image2D frame;  // SpringFrame (this frame's): u in w

uniform int u_mode;
uniform uint u_table;
uniform int u_pass;       // n, in [0, 2 P]: P smoothed passes, P plain ones, then the volume restore
uniform int u_passes;     // P: the largest contact_passes of the batch
uniform int u_instances;  // instances of the batch
uniform uint u_groups;    // control work groups of the pool

// grid index of pass flag f (count[h] = grid[h], start[h] = grid[T + h], flags from grid[2T + 1])
uint flag_index(int f) { return 2u * u_table + 1u + uint(f); }

// Instance k takes part in pass u_pass: contact on, one of its own first contact_passes passes of the phase, and
// its last pass moved a point (contact.comp decides the same way).
// The volume restore (u_pass = 2 P): contact on and its first pass moved a point.
bool takes_part(int k) {
    vec4 more = params[2 * k + 1];
    if (u_pass == 2 * u_passes) return more.z > 0.0 && grid[flag_index(k * (2 * u_passes + 1) + 1)] != 0u;
    int local_pass = u_pass < u_passes ? u_pass : u_pass - u_passes;
    return more.z > 0.0 && local_pass < int(more.y) && grid[flag_index(k * (2 * u_passes + 1) + u_pass)] != 0u;
}

#include "contact_hash.glsl"

shared uint sh_sum[LOCAL_SIZE];
shared uint sh_live;

void main() {
    uint lane = gl_LocalInvocationID.x;
    if (u_mode == 0) {
        uint h = gl_WorkGroupID.x * uint(LOCAL_SIZE) + lane;
        if (h < u_table) grid[h] = 0u;
        uint stride = uint(2 * u_passes + 1);
        if (u_pass == 0 && h < uint(u_instances) * stride) grid[flag_index(int(h))] = (h % stride == 0u) ? 1u : 0u;
        return;
    }
    if (u_mode == 2) {  // one work group: chunked exclusive scan of the table
        uint chunk = (u_table + uint(LOCAL_SIZE) - 1u) / uint(LOCAL_SIZE);
        uint lo = min(lane * chunk, u_table), hi = min(lo + chunk, u_table);
        uint s = 0u;
        for (uint h = lo; h < hi; ++h) s += grid[h];
        sh_sum[lane] = s;
        barrier();
        if (lane == 0u) {
            uint run = 0u;
            for (uint t = 0u; t < uint(LOCAL_SIZE); ++t) { uint v = sh_sum[t]; sh_sum[t] = run; run += v; }
            grid[2u * u_table] = run;  // start[T]: the total
        }
        barrier();
        uint run = sh_sum[lane];
        for (uint h = lo; h < hi; ++h) { grid[u_table + h] = run; run += grid[h]; }
        return;
    }
    if (u_mode == 4) {  // one work group: does any instance take part in this pass?
        if (lane == 0u) sh_live = 0u;
        barrier();
        for (int k = int(lane); k < u_instances; k += LOCAL_SIZE) {
            if (takes_part(k)) atomicOr(sh_live, 1u);
        }
        barrier();
        if (lane == 0u) {
            bool live = sh_live != 0u;
            indirect[0] = live ? u_groups : 0u; indirect[1] = 1u; indirect[2] = 1u;
            indirect[3] = live ? 1u : 0u; indirect[4] = 1u; indirect[5] = 1u;
        }
        return;
    }
    uint g = gl_WorkGroupID.x;
    int k = instance_of_group(g);
    DeformInstance inst = instances[k];
    int i = local_index(inst, g);
    vec4 geom = params[2 * k];
    if (i >= inst.n_control || !takes_part(k)) return;
    int p = inst.dyn_base + i;
    float u = imageLoad(frame, record_texel(p, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH)).w;
    uint h = contact_bucket(contact_cell(src[p].xyz / u, geom.x), k, u_table);
    if (u_mode == 1) {
        atomicAdd(grid[h], 1u);
    } else {
        entries[grid[u_table + h] + atomicAdd(grid[h], 0xFFFFFFFFu) - 1u] = p;  // grid[h]-- (returns the old value)
    }
}
