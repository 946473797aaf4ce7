#version 430 core
// Vertex marks, vertex stage: one point per marked vertex (a region of interest's kinematic / passive / static
// sets), pulled from the mesh's DEFORMED positions on the GPU (no read-back), coloured by its set.
// Driven by engine/render/marks.py (an overlay of the ui pass); fragment stage render/marks.frag.

layout(std430, binding = BINDING_POSITIONS) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = BINDING_MARKS) readonly buffer Marks { ivec2 marks[]; };  // (vertex, set)

uniform mat4 u_view_proj;
uniform float u_point_size;
uniform vec4 u_colors[4];  // rgba per set

out vec4 v_color;

void main() {
    ivec2 m = marks[gl_VertexID];
    gl_Position = u_view_proj * vec4(positions[m.x].xyz, 1.0);
    gl_PointSize = u_point_size;
    v_color = u_colors[clamp(m.y, 0, 3)];
}
