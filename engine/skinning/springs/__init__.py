"""Spring deformer: the numpy reference of the research's spring-based skinning (ch. 4.2, eqs. 21-23, Algorithm 1,
with the surface-edit force F_e of ch. 5.2). Every control point hangs from its attachment on a bone by a scale
vector; per frame the points start at a skinning of the pose and iterate under edge, length, torsion, bone,
radial, edit, volume and (opt-in) differential springs towards equilibrium. The GPU spring stage
(engine/skinning/gpu) computes the same steps in float32.

The forces, joint blending, step limiting and the GPU contract are described in docs/springs.md. Modules:
params (parameters, ranges, constants), editterms (the edits as the solver sees them), rest (bind-time rest state
and volume regions), touch (points glued to a face they touch at bind), frames (per-frame attachment frames, joint
blending, carrying), limits (Gershgorin bounds, step limiting, safe ranges), forces (the force terms and one
iteration), solver (`SpringDeformer`), vec (small vector helpers).
"""
from engine.skinning.springs.editterms import EditSource, EditTerms
from engine.skinning.springs.forces import integrate, release_held, spring_forces, spring_step
from engine.skinning.springs.frames import (
    PoseFrame,
    blend_rotations,
    carry,
    pose_frame,
    pose_motion,
    pose_unit,
    root_units,
    rotation_share,
    to_pose_unit,
    warm_scale,
    warm_start_allowed,
)
from engine.skinning.springs.limits import (
    FLOAT32_STEP,
    check_spring_ranges,
    lambda_per_vertex,
    safe_range,
    spring_advice,
    spring_ranges,
    step_sizes,
)
from engine.skinning.springs.params import (
    ACCELERATIONS,
    BONE_MODES,
    CONVERGENCE_SCHEMES,
    DIFF_LAMBDA,
    INITIAL_SKINNING,
    INTEGRATORS,
    JOINT_BLEND,
    LAMBDA_COLUMNS,
    MODES,
    RIGID_WEIGHT,
    S_FLOOR,
    STEP_SAFETY,
    STIFFNESSES,
    VOLUME_LAMBDA,
    VOLUME_MIN_POINTS,
    VOLUME_MIN_RATIO,
    WARM_LIMIT,
    SpringParams,
)
from engine.skinning.springs.rest import (
    SpringRest,
    build_rest,
    csr_slots,
    diff_weights,
    edited_regions,
    fan_volumes,
    joint_blend_weights,
    lambda_columns,
    mesh_islands,
    region_volumes,
    rigid_points,
    ring_means,
    slot_third_corners,
    volume_acts,
    volume_points,
    volume_rest,
)
from engine.skinning.springs.solver import Skinner, SpringDeformer, SpringState, SpringStats

__all__ = [
    "INTEGRATORS", "RIGID_WEIGHT", "ACCELERATIONS", "CONVERGENCE_SCHEMES", "MODES", "INITIAL_SKINNING",
    "BONE_MODES", "S_FLOOR",
    "STIFFNESSES", "SpringParams", "SpringRest", "PoseFrame", "SpringStats", "SpringState", "SpringDeformer",
    "Skinner", "EditTerms", "EditSource",
    "csr_slots", "build_rest", "pose_frame", "spring_forces", "integrate", "spring_step",
    "safe_range", "STEP_SAFETY", "LAMBDA_COLUMNS", "lambda_columns", "lambda_per_vertex", "step_sizes",
    "release_held", "JOINT_BLEND", "joint_blend_weights", "mesh_islands", "blend_rotations", "rotation_share",
    "WARM_LIMIT", "pose_motion", "pose_unit", "root_units", "to_pose_unit", "warm_scale", "warm_start_allowed",
    "carry",
    "VOLUME_LAMBDA", "VOLUME_MIN_POINTS", "VOLUME_MIN_RATIO", "volume_acts", "volume_points", "edited_regions",
    "slot_third_corners",
    "fan_volumes", "region_volumes", "volume_rest", "rigid_points", "DIFF_LAMBDA", "diff_weights", "ring_means",
    "FLOAT32_STEP", "spring_ranges", "check_spring_ranges", "spring_advice",
]
