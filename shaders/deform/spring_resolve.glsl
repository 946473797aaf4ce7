// The spring stage's output (stages.spring): an instance's accepted state after `it` iterations into the stage's
// target (scaled back from bind units by u, SpringFrame attach.w: spring_frame.comp; reference
// SpringDeformer.solve) and its velocity for the next frame. Used by resolve.comp (a pass of its own) and by the
// iteration's last dispatch (spring_iterate.glsl, RESOLVE_IN_LOOP): there each lane writes the state it has just
// computed, the groups of a stopped instance copy their accepted state, and an instance whose check accepts an
// older state (divergence, an iteration cap below the frame's) is copied again by the group that ran its check.
// The includer declares the ring and frame images and ITERATIONS_PER_DISPATCH (K).
layout(std430, binding = B_DST) writeonly buffer Target { vec4 target[]; };
layout(std430, binding = B_VEL) writeonly buffer VelFinal { vec4 vel_final[]; };

// the dispatch that ran the it-th iteration, (it + K - 1) / K - 1 (-1: none ran, x_0)
int accepted_block(int it) { return (it + ITERATIONS_PER_DISPATCH - 1) / ITERATIONS_PER_DISPATCH - 1; }

// control point di's state x (bind units) and velocity v as the stage's output
void output_state(int di, vec3 x, vec3 v) {
    float u = imageLoad(frame, record_texel(di, SPRING_FRAME_TEXELS, SPRING_FRAME_ATTACH)).w;
    target[di] = vec4(x * u, 1.0);
    vel_final[di] = vec4(v, 0.0);
}

// control point di's state after `it` iterations: ring image (accepted_block(it) + 3) mod 3 (x_0 in image 2)
void resolve_point(int di, int it) {
    ivec2 slot = ivec2(0, (accepted_block(it) + 3) % 3 * (imageSize(ring).y / 3));
    vec3 x = imageLoad(ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_X) + slot).xyz;
    vec3 v = imageLoad(ring, record_texel(di, SPRING_STATE_TEXELS, SPRING_STATE_V) + slot).xyz;
    output_state(di, x, v);
}
