// Shared by the deform compute stages: the instance table and the work-group -> instance map.
// A work group never spans two instances (each instance's range is padded to whole groups), so every
// invocation of a group reads the same instance record (uniform control flow per group).
// Control-domain stages bind the control group table at B_GROUPS; display-domain stages (copy, vertex
// normals) bind the display group table there, face-domain stages (face normals) the face group table; those
// two tables hold -1 for groups of no instance (the display/face pools keep holes where meshes were removed).
#include "generated/deform_layouts.glsl"

layout(std430, binding = B_INSTANCES) readonly buffer Instances { DeformInstance instances[]; };
layout(std430, binding = B_GROUPS) readonly buffer Groups { int group_instance[]; };

// Instance of pool work group g and the control index of this invocation inside its mesh.
int instance_of_group(uint g) { return group_instance[g]; }

int local_index(DeformInstance inst, uint g) {
    return (int(g) - inst.group_base) * LOCAL_SIZE + int(gl_LocalInvocationID.x);
}

// The display vertex / triangle of this invocation inside its mesh (display / face group tables bound).
int local_display_index(DeformInstance inst, uint g) {
    return (int(g) - inst.dgroup_base) * LOCAL_SIZE + int(gl_LocalInvocationID.x);
}

int local_face_index(DeformInstance inst, uint g) {
    return (int(g) - inst.fgroup_base) * LOCAL_SIZE + int(gl_LocalInvocationID.x);
}
