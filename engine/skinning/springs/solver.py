"""Spring deformer: numpy reference of the research's spring-based skinning (ch. 4.2, eqs. 21-23, Algorithm 1,
and eq. 22 with the surface-edit force F_e of ch. 5.2).

One frame: skin the control points (attachment-rigid by default, or LBS/DQS through a caller's skinner), then
iterate `spring_step` until the convergence scheme says stop. Every vertex i has a posed attachment point a_i on
its bone and a scale vector s_i = v_i - a_i. The forces, each Hooke-like in the form of eq. 21,
F(i) = sum_j k(i,j) (Delta(i,j)_current - Delta(i,j)_bind), are:

  F_s  edge springs: Delta = |v_j - v_i|, along the edge (over- and under-stretch of the surface)
  F_l  scale-vector length springs: Delta = |s_i| - |s_j|, along -s_i (keeps the offset profile from the bone)
  F_t  torsion springs between adjacent scale vectors: Delta = angle(s_i, s_j). The torque
       tau = k_t w_ij (theta - theta_bind) becomes a linear force of magnitude |tau| / |s_i| orthogonal to s_i,
       towards s_j when the angle is too wide (away when too narrow). w_ij = min(r_i, r_j)^2 with r the bind
       lengths |s| is the per-pair coefficient k(i,j) of eq. 21: it makes k_t scale-free (its linear stiffness
       is ~k_t like the others, in any unit system) and keeps torque small for vertices sitting on the bone.
  F_b  bone springs: Delta = angle between s_i and a bone reference direction, torque k_b r_i^2 Delta turned
       into |tau|/|s_i| orthogonal to s_i, opposite the angular displacement. bone_mode "frame" (default) uses
       the bind direction of s_i carried by the bone's rotation (rest angle 0), which also holds the twist about
       the bone; "cone" uses the bone run c - p with the bind angle (the research's literal wording; it leaves
       the spin about the bone free, so a twisted limb can unwind).
  F_r  (extension, k_r = 0 gives the research's exact force set) radial offset spring holding |s_i| at its bind
       length r_i.
  F_e  surface edits: sum over edits of k_e k_edit w_edit (v'_i - v_i) (see edits.py). The static sets of
       the edits are held: their vertices get no force and no velocity, so they stay at the initial skinning.
  F_v  (extension, k_v = 0 turns it off) volume term, a pressure per bone region: region r (the points bound to
       one bone) has a skeleton-relative volume V_r = sum_i V_i, V_i = sum over the faces (i, j, m) of i of
       det(x_i - a_i, x_j - a_i, x_m - a_i) / 18 (tetrahedra from each point's own attachment; each face counted
       by its three corners), and F_i = k_v delta_r unit(G_i) with delta_r = (V0_r - V_r) / S0_r, the uniform
       offset along the normals G_i = dV_i/dx_i that restores the bind volume V0_r (S0_r the region's bind
       area). V_r is the previous iterate's (x_0's own for x_0), so the GPU sums it in the dispatch that uses
       the last sum. Regions enclosing nothing around their bone (|V0_r| <= VOLUME_MIN_RATIO S0_r^1.5: a flat
       panel), regions a surface edit touches (an edit changes the volume on purpose) and the energy scheme (a
       pressure has no energy to descend) go without. Without it the settled springs kept 0.93-0.96 of a
       tube's volume at 120-150 deg (the edge springs draw the stretched outer side in and nothing pushes the
       compressed inner side out); with k_v = 3 the family keeps >= 0.98.

Joint blending (`SpringParams.joint_blend`, on by default; off is the research's per-bone frames): near an
interior joint (one bone ending where another starts) a vertex's posed attachment, its bone reference and its
rigid start are turned about the joint by a share of the rotation between its own bone and the bone across the
joint: own weight w_i = 1/2 at the joint rising smoothly (smoothstep) to 1 at rho_i = JOINT_BLEND x its bind
|s_i| from it (at most half the bone). Both sides of a joint turn about one axis (the relative rotation is taken
from the lower-numbered bone to the higher one, so a 180 deg twist, whose shortest arc has no preferred sense,
does not tear the joint ring in two). Only mesh pieces spanning the joint blend: a separate piece bound to
one bone stays rigid with it (`joint_blend_weights`). At bind the blend is the identity (the bind pose stays a
fixed point).

Why the equilibrium folded without it (issue 13): with per-bone frames the attachment path is the skeleton
polyline, so the rigid start a_i + R s_i has the polyline's corner at the joint, and the bone springs pull
every scale vector back to its own bone's frame, which is the same corner: the whole turn of the limb happens
between two rings whatever the mesh resolution. On the inner side of a bend the surface there is compressed
to zero length and beyond, and the edge, length and torsion springs (which only see lengths and angles between
neighbours, not which side of each other they lie on) settle on the folded sheet: it is the minimum of their
energy around the bone springs' target, so rigid, LBS and DQS starts all land in it. With the frames blended,
a point at distance d from the joint on the inner side of a bend of angle theta moves along the curve
J + Rot(phi(d)) (d, r): its tangent is Rot(phi) (1 - phi' r, phi' d), so the inner surface keeps its
orientation while the frames turn slower than 1 / r per unit length. The smoothstep share peaks at
phi' = 0.75 theta / rho, so rho >= 0.75 pi r ~ 2.4 r keeps every bend up to 180 deg fold-free; JOINT_BLEND = 3
leaves a margin (a wider blend stays fold-free but bends more of the limb). Past the blend the limbs are the
posed bones' own straight cylinders, whose inner sides meet at r tan(theta / 2) from the joint: a bend stays
free of self-intersection when the blend reaches that far (theta <= 143 deg for rho = 3 r; shorter bones cap
rho at half the bone); beyond, only a contact force could keep the inner sides apart (research 8.2).

As in Algorithm 1 the neighbour forces (F_t, F_l, F_s) of a vertex that is a kinematic handle of an active edit
are multiplied by `handle_weight`, then F_e is added, then the per-vertex bone (and radial) forces. The
position update is eq. 23, v += dt F ("explicit"), or semi-implicit Euler with velocity damping.

All forces are minus the gradient of the spring energy E = sum_edges 1/2 k (Delta - Delta_bind)^2 + ... (up to
the handle weighting and the |s| floor below), which gives the "energy" convergence scheme and the stability
bound: for the explicit update dt * lambda_max < 1, lambda_max bounded per vertex by Gershgorin from the
per-pair stiffnesses (`safe_range`). Denominators |s_i| are floored at S_FLOOR * r_i.

Step limiting (`SpringParams.step_limit`, on by default; off is the research's plain update): every vertex
moves by dt_i F_i with its own step dt_i = min(dt, STEP_SAFETY / lambda_i) (explicit) or
min(dt, sqrt(2 STEP_SAFETY / lambda_i)) (semi-implicit), lambda_i = sum_p k_p c_p,i the Gershgorin row bound
of vertex i (`lambda_per_vertex`, with the surface-edit stiffness k_e K_i when edits are active). This is a
diagonal (Jacobi) preconditioner: the update is x += D F with D = diag(dt_i), whose linearised iteration
matrix I - D J has its eigenvalues (those of D^1/2 J D^1/2) inside the Gershgorin discs of D J, i.e. below
max_i dt_i lambda_i <= STEP_SAFETY < 1 (explicit; semi-implicit: dt_i^2 lambda_i <= 2 STEP_SAFETY < 4, a
mass matrix diag(1 / dt_i^2)). So the iteration is stable by construction on any mesh, whatever the valence
of its poles; vertices with lambda_i <= STEP_SAFETY / dt keep dt exactly, equilibria (F = 0) are unchanged and
the bind pose stays a fixed point. Only the path (and iteration count) to them changes, on stiff vertices.

GPU contract: `spring_step` is a pure function of arrays. Per vertex i it reads x_i, vel_i, a_i, bone_ref_i,
r_i, bone_angle_i, s_floor_i, the edit terms (K_i, C_i) and, for each CSR slot of i (adj_offset/adj_count,
neighbour j = adj_index), x_j, a_j, r_j and the slot's rest_len, rest_dlen, rest_angle, w_t. It writes the new
x_i, vel_i and the net force. With step limiting it also reads the vertex's Gershgorin coefficients
(`lambda_columns`, static) and computes dt_i from them, the stiffnesses and K_i. The numpy reference computes
in float64; a float32 shader matches it within tolerance.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from engine.math.quat import from_matrix as quat_from_matrix
from engine.skinning.contact import CONTACT_MAX_PASSES
from engine.skinning.edits import EditStack, EditTerms
from engine.skinning.types import Binding, MeshTopology, bone_endpoints

__all__ = [
    "INTEGRATORS", "ACCELERATIONS", "CONVERGENCE_SCHEMES", "MODES", "INITIAL_SKINNING", "BONE_MODES", "S_FLOOR",
    "SpringParams", "SpringRest", "PoseFrame", "SpringStats", "SpringState", "SpringDeformer",
    "csr_slots", "build_rest", "joint_rotations", "pose_frame", "spring_forces", "integrate", "spring_step",
    "safe_range", "STEP_SAFETY", "LAMBDA_COLUMNS", "lambda_columns", "lambda_per_vertex", "step_sizes",
    "release_held", "JOINT_BLEND", "joint_blend_weights", "mesh_islands", "blend_rotations", "rotation_share",
    "WARM_LIMIT", "pose_motion", "warm_scale", "warm_start_allowed", "carry",
    "VOLUME_LAMBDA", "VOLUME_MIN_RATIO", "volume_acts", "volume_points", "edited_regions", "slot_third_corners",
    "fan_volumes", "region_volumes", "volume_rest",
]

INTEGRATORS = ("explicit", "semi_implicit")
CONVERGENCE_SCHEMES = ("iterations", "displacement", "force", "energy")
MODES = ("independent", "dependent")
INITIAL_SKINNING = ("rigid", "lbs", "dqs")
BONE_MODES = ("frame", "cone")
ACCELERATIONS = ("none", "momentum")
S_FLOOR = 0.5  # |s_i| denominators are floored at S_FLOOR * r_i (bind length)
_SIN_EPS = 1e-9  # below this sine, the rotation direction of a torsion force is undefined: no force
STEP_SAFETY = 0.9
"""Step limiting keeps dt_i lambda_i <= STEP_SAFETY (explicit; semi-implicit dt_i^2 lambda_i <= 2 STEP_SAFETY):
a margin below the monotone bound 1 (instability starts at 2; semi-implicit 4)."""
JOINT_BLEND = 3.0
"""Joint blending reaches JOINT_BLEND x the bind |s_i| of a vertex from its joint (capped at half the bone); the
blended frames then turn slower than 1 / |s_i| per unit length for bends up to 180 deg (module docstring)."""
WARM_LIMIT = 0.4
"""Default `SpringParams.warm_limit` (radians): the largest change per frame of a joint's rotation relative to its
parent for which the warm start is used. Measured (`bench_springs --warm-sweep`: 3 family tubes, 3 base poses, one
frame's step of every elbow): iterations to the tolerance from the warm start over those from the usual start,
mean / worst, 0.44 / 0.64 at 0.2 rad, 0.61 / 0.80 at 0.39 rad, 0.70 / 0.87 at 0.59 rad, 0.83 / 0.94 at 1.1 rad.
Past ~0.4 rad (23 deg in one frame: a seek or a cut rather than motion) the saving shrinks under a fifth in the
worst case and the start is far enough from the pose's own equilibrium to risk settling elsewhere."""
LAMBDA_COLUMNS: tuple[tuple[str, ...], ...] = (("k_s", "k_l"), ("k_t",), ("k_b",), ("k_r",))
"""Stiffnesses multiplying each column of `lambda_columns` (edge and length springs share one coefficient)."""

_INF = math.inf
# name -> (low, high, low inclusive, high inclusive, integer)
_NUMERIC_RANGES: dict[str, tuple[float, float, bool, bool, bool]] = {
    "k_s": (0.0, _INF, True, False, False),
    "k_l": (0.0, _INF, True, False, False),
    "k_t": (0.0, _INF, True, False, False),
    "k_b": (0.0, _INF, True, False, False),
    "k_r": (0.0, _INF, True, False, False),
    "k_e": (0.0, _INF, True, False, False),
    "k_v": (0.0, _INF, True, False, False),
    "dt": (0.0, 10.0, False, True, False),
    "damping": (0.0, 1.0, True, False, False),
    "max_iterations": (1, 100_000, True, True, True),
    "displacement_rel": (0.0, 1.0, False, False, False),
    "force_tol": (0.0, _INF, False, False, False),
    "energy_rtol": (0.0, 1.0, True, False, False),
    "handle_weight": (0.0, 1.0, True, True, False),
    "divergence_rel": (0.0, _INF, False, False, False),
    "momentum": (0.0, 1.0, True, False, False),
    "warm_limit": (0.0, math.pi, False, True, False),
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "integrator": INTEGRATORS,
    "convergence": CONVERGENCE_SCHEMES,
    "mode": MODES,
    "initial_skinning": INITIAL_SKINNING,
    "bone_mode": BONE_MODES,
    "acceleration": ACCELERATIONS,
}
_STIFFNESS = ("k_s", "k_l", "k_t", "k_b", "k_r", "k_e", "k_v")
_SWITCH = {"k_s": "use_s", "k_l": "use_l", "k_t": "use_t", "k_b": "use_b", "k_r": "use_r", "k_e": "use_e",
           "k_v": "use_v"}
VOLUME_LAMBDA = 2.0
"""Step-limiting coefficient of the volume term per unit k_v (its force moves a vertex by k_v delta_r along its
normal; delta_r depends on the vertex itself and, through the region's volume, on every other vertex of the region
with weights summing to about one: 1 + 1)."""
VOLUME_MIN_RATIO = 1e-3
"""A bone region's volume term is on when its bind |V0_r| > VOLUME_MIN_RATIO S0_r^1.5 (a sphere: 0.094; a flat
panel lying along its bone: ~0): regions that enclose nothing around their bone get no pressure."""
_BOOLS: tuple[str, ...] = ("step_limit", "joint_blend", "warm_start")  # switches besides the use_* ones
# the optional contact term (engine/skinning/contact.py): its switch and parameters
_BOOLS += ("contact",)
_NUMERIC_RANGES.update({"contact_thickness": (0.0, 2.0, False, True, False),
                        "contact_passes": (1, CONTACT_MAX_PASSES, True, True, True)})


def _range_text(lo: float, hi: float, lo_inc: bool, hi_inc: bool) -> str:
    return f"{'[' if lo_inc else '('}{lo:g}, {hi:g}{']' if hi_inc else ')'}"


@dataclass(frozen=True)
class SpringParams:
    """Parameters of the spring deformer. Stiffnesses are per unit mass (accelerations per metre or radian).

    Defaults: semi-implicit Euler at the largest stable step per vertex (dt = 1 capped by step limiting at
    sqrt(2 STEP_SAFETY / lambda_i)) with velocity damping 0.3, at most 50 iterations, stop early when the
    largest position change falls below AABB_min_extent * 1e-4; rigid initial skinning; frame-independent mode.
    The research's update is integrator = "explicit", dt = 1/30 (eq. 23): the same equilibria (F = 0), but its
    50 iterations do not settle the soft modes (the scale vectors' directions, held by k_b alone), so rigid, LBS
    and DQS starts end 2-5 % of the diagonal apart (issue 13); the damped semi-implicit steps reach one
    equilibrium from every start within 0.05 % (tests/unit/test_springs_family.py).

    step_limit (default on) moves each vertex by its own step dt_i = min(dt, STEP_SAFETY / lambda_i) (see the
    module docstring), which makes any dt and stiffness stable on any mesh (no set-up warning then); off gives
    the research's plain update x += dt F, warned about at set-up when dt is past the stable range.

    joint_blend (default on) turns attachments, bone references and the rigid start near an interior joint by a
    share of the rotation across it (see the module docstring); off gives the research's per-bone frames.

    contact (default off) pushes facing sheets of the surface apart after the iterations (contact.py): the gap
    contact_thickness x the mean bind edge length, contact_passes Jacobi passes.

    acceleration (default "none", explicit integrator only): "momentum" is the heavy-ball update
    u' = momentum u + dt_i F, x' = x + u' (u: the last step, zero at the start of every frame), with the
    per-vertex steps dt_i kept. Its fixed points are those of the plain update (F = 0, u = 0); the linearised
    iteration is stable for dt_i lambda_i < 2 (1 + momentum), which step limiting keeps below 0.9.

    warm_start (default off; frame-independent mode only, the dependent mode always carries): iterate from the
    previous frame's output carried by the skeleton's motion (`carry`: moved with each point's joint-blended frame,
    so only its deviation from the rigid start is carried along) instead of the initial skinning, when the pose
    moved little:
    every joint's rotation relative to its parent changed by at most warm_limit radians since the last frame and
    its offset from the parent by at most warm_limit x the median bind |s| (`warm_start_allowed`); else, and on
    the first frame or after `SpringDeformer.reset`, the usual start. A still pose reproduces the last output and
    stops after one iteration; a rigid motion of the whole skeleton (a teleport) carries it exactly. The result
    is the same equilibrium within the convergence tolerance, but no longer bit-for-bit a function of the pose
    alone: bakes and comparisons turn it off.
    """

    k_s: float = 0.5
    k_l: float = 0.25
    k_t: float = 0.5
    k_b: float = 0.25
    k_r: float = 1.0
    k_e: float = 1.0
    k_v: float = 3.0  # volume term: pressure per bone region restoring its skeleton-relative volume (0: off)
    use_s: bool = True
    use_l: bool = True
    use_t: bool = True
    use_b: bool = True
    use_r: bool = True
    use_e: bool = True
    use_v: bool = True
    dt: float = 1.0  # the research's 1/30 with integrator "explicit"; step limiting caps it per vertex
    integrator: str = "semi_implicit"
    damping: float = 0.2
    max_iterations: int = 50
    convergence: str = "displacement"
    displacement_rel: float = 1e-4
    force_tol: float | None = None  # None: displacement threshold / dt
    energy_rtol: float = 1e-7
    mode: str = "independent"
    initial_skinning: str = "rigid"
    bone_mode: str = "frame"
    handle_weight: float = 0.5
    divergence_rel: float = 0.25  # a step moving a vertex further than this x bbox diagonal is divergence
    step_limit: bool = True  # per-vertex steps dt_i = min(dt, STEP_SAFETY / lambda_i); False: plain dt
    joint_blend: bool = True  # attachments, bone references and rigid start blended across joints
    acceleration: str = "none"  # "momentum": heavy-ball on the explicit update (see the class docstring)
    momentum: float = 0.5  # heavy-ball coefficient of acceleration="momentum", in [0, 1)
    warm_start: bool = False  # independent mode: start from last frame's output when the pose moved little
    warm_limit: float = WARM_LIMIT  # radians of relative joint rotation per frame past which warm start is off
    # contact term (engine/skinning/contact.py), off by default: facing sheets pushed apart after the iterations
    contact: bool = False
    contact_thickness: float = 0.5  # gap kept between facing sheets, in mean bind edge lengths, (0, 2]
    contact_passes: int = 8  # Jacobi contact passes per frame, [1, CONTACT_MAX_PASSES = 64]

    def validate(self) -> SpringParams:
        """Raise ValueError naming the first bad parameter, its value and the valid range; return self."""
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.startswith("use_") or f.name in _BOOLS:
                if not isinstance(v, (bool, np.bool_)):
                    raise ValueError(f"SpringParams.{f.name} = {v!r}; valid: true or false")
            elif f.name in _CHOICES:
                if v not in _CHOICES[f.name]:
                    raise ValueError(f"SpringParams.{f.name} = {v!r}; valid: {', '.join(_CHOICES[f.name])}")
            elif f.name in _NUMERIC_RANGES:
                if f.name == "force_tol" and v is None:
                    continue
                lo, hi, lo_inc, hi_inc, integer = _NUMERIC_RANGES[f.name]
                valid = _range_text(lo, hi, lo_inc, hi_inc)
                kind = "an integer" if integer else "a number"
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                    raise ValueError(f"SpringParams.{f.name} = {v!r}; valid: {kind} in {valid}")
                if integer and int(v) != v:
                    raise ValueError(f"SpringParams.{f.name} = {v!r}; valid: {kind} in {valid}")
                fv = float(v)
                ok = math.isfinite(fv) and (fv >= lo if lo_inc else fv > lo) and (fv <= hi if hi_inc else fv < hi)
                if not ok:
                    raise ValueError(f"SpringParams.{f.name} = {v!r} is out of range; valid: {valid}")
        if self.acceleration != "none" and self.integrator != "explicit":
            raise ValueError(f"SpringParams.acceleration = {self.acceleration!r} needs integrator 'explicit', "
                             f"got {self.integrator!r} (semi-implicit Euler with damping is already a momentum "
                             "method)")
        return self

    def replace(self, **changes: Any) -> SpringParams:
        """A validated copy with `changes` applied."""
        return replace(self, **changes).validate()

    def stiffness(self, name: str) -> float:
        """Effective stiffness of force `name` ("k_s", ...): 0 when its switch is off."""
        return float(getattr(self, name)) if getattr(self, _SWITCH[name]) else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["force_tol"] is None:
            del d["force_tol"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SpringParams:
        """Build and validate from a dict; unknown keys raise ValueError listing the valid ones."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown spring parameter(s) {unknown}; valid: {sorted(names)}")
        return cls(**d).validate()


@dataclass
class SpringRest:
    """Rest state recorded at bind (the spring deformer's "initialisation step"), all float64.

    rows, cols (H,)  CSR slots: vertex rows[h] sees neighbour cols[h] (rows sorted; H = sum adj_count)
    rest_len   (H,)  bind edge length |v_j - v_i|
    rest_dlen  (H,)  bind |s_i| - |s_j|
    rest_angle (H,)  bind angle between s_i and s_j (radians, [0, pi])
    w_t        (H,)  torsion pair coefficient min(r_i, r_j)^2
    r          (V,)  bind |s_i|
    bone_angle (V,)  bind angle between s_i and its bone direction (cone mode); frame mode uses 0
    s_dir      (V,3) bind unit scale vectors (frame mode reference, carried by the bone rotation)
    s_floor    (V,)  floor of |s_i| in denominators
    degree     (V,)  neighbour count
    lam_cols   (V,4) Gershgorin coefficients per unit stiffness, columns as LAMBDA_COLUMNS (`lambda_columns`)
    blend_other (V,) joint blending: the bone across the nearer interior joint, -1 for none
    blend_end   (V,) 0 when that joint is the parent end of the vertex's bone, 1 the child end
    blend_w     (V,) own weight in [1/2, 1] (1: no blending)
    vol_third   (H,) volume term: the third corner m of the face (rows[h], cols[h], m) in winding order, -1 none
    vol_region  (V,) volume term: the vertex's bone region (its binding bone), -1 where the region is off
    vol_v0      (R,) bind skeleton-relative volume of each bone region (`fan_volumes` summed)
    vol_s0      (R,) bind surface area of each bone region (3 sum |G_i|, `fan_volumes`)
    """

    rows: np.ndarray
    cols: np.ndarray
    rest_len: np.ndarray
    rest_dlen: np.ndarray
    rest_angle: np.ndarray
    w_t: np.ndarray
    r: np.ndarray
    bone_angle: np.ndarray
    s_dir: np.ndarray
    s_floor: np.ndarray
    degree: np.ndarray
    tiny: float
    lam_cols: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    blend_other: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    blend_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    blend_w: np.ndarray = field(default_factory=lambda: np.zeros(0))
    vol_third: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vol_region: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vol_v0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    vol_s0: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def n_vertices(self) -> int:
        return int(self.r.shape[0])


@dataclass
class PoseFrame:
    """Per-vertex pose data for one frame: posed attachments (V,3), the rotation of each vertex's frame relative
    to bind (V,3,3; its bone's, turned by the joint blend), and the bone reference direction the bone springs
    pull towards (V,3, unit). bone_attach / bone_rot: the plain attachment on the bone and the bone's rotation
    (what the frame-dependent start carries the last output with); None when equal to attach / rot."""

    attach: np.ndarray
    rot: np.ndarray
    bone_ref: np.ndarray
    bone_attach: np.ndarray | None = None
    bone_rot: np.ndarray | None = None

    @property
    def plain_attach(self) -> np.ndarray:
        return self.attach if self.bone_attach is None else self.bone_attach

    @property
    def plain_rot(self) -> np.ndarray:
        return self.rot if self.bone_rot is None else self.bone_rot


@dataclass
class SpringStats:
    """What one solve did. iterations: accepted position updates; reason: why it stopped."""

    iterations: int = 0
    converged: bool = False
    diverged: bool = False
    reason: str = ""
    max_displacement: float = 0.0
    max_force: float = 0.0
    energy: float = 0.0
    initial_energy: float = 0.0
    warm: bool = False  # started from last frame's carried output (SpringParams.warm_start)


@dataclass
class SpringState:
    """Between-frame state: last output, velocities (semi-implicit), the frame they belong to and its joints."""

    positions: np.ndarray | None = None
    velocities: np.ndarray | None = None
    frame: PoseFrame | None = None
    joints: np.ndarray | None = None  # posed joint world matrices (J,4,4) of that frame (warm start's motion)
    frames: int = 0
    last: SpringStats = field(default_factory=SpringStats)


# ---------------------------------------------------------------------------------------------------------
# pure array functions (the GPU contract)
# ---------------------------------------------------------------------------------------------------------
def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Dot product of two 1-D arrays without BLAS (BLAS threads stall on a busy machine; this is tiny work)."""
    return float(np.einsum("i,i->", a, b))


def _norm(a: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("...i,...i->...", a, a))


def _unit(a: np.ndarray, tiny: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unit vectors or 0, lengths, nonzero mask)."""
    n = _norm(a)
    nz = n > tiny
    return a * (nz / np.where(nz, n, 1.0))[..., None], n, nz


def _angle(u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Angle between unit vectors u and w, the component of w orthogonal to u, and its length (sine)."""
    cos = np.einsum("...i,...i->...", u, w)
    perp = w - cos[..., None] * u
    sin = _norm(perp)
    return np.arctan2(sin, cos), perp, sin


def csr_slots(adj_offset: np.ndarray, adj_count: np.ndarray, adj_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flatten CSR adjacency into slot arrays (rows, cols): slot h is vertex rows[h] seeing cols[h]."""
    count = np.asarray(adj_count, np.int64)
    rows = np.repeat(np.arange(count.shape[0], dtype=np.int64), count)
    start = np.cumsum(count) - count
    local = np.arange(rows.shape[0], dtype=np.int64) - np.repeat(start, count)
    flat = np.asarray(adj_offset, np.int64)[rows] + local
    return rows, np.asarray(adj_index, np.int64)[flat]


def build_rest(topology: MeshTopology, binding: Binding, bind_joints: np.ndarray) -> SpringRest:
    """Record the bind-pose rest state: edge lengths, scale-vector lengths and angles, bone angles."""
    x = np.asarray(topology.positions, np.float64)
    s = np.asarray(binding.scale, np.float64)
    diag = float(np.linalg.norm(x.max(0) - x.min(0))) if x.shape[0] else 1.0
    tiny = 1e-12 * max(diag, 1e-30)
    rows, cols = csr_slots(topology.adj_offset, topology.adj_count, topology.adj_index)
    shat, r, nz = _unit(s, tiny)
    theta, _, _ = _angle(shat[rows], shat[cols])
    p, c = bone_endpoints(binding.bones, np.asarray(bind_joints, np.float64))
    bdir, _, _ = _unit((c - p).astype(np.float64), tiny)
    bone_angle, _, _ = _angle(shat, bdir[binding.bone])
    rmin = np.minimum(r[rows], r[cols])
    rest = SpringRest(
        rows=rows, cols=cols,
        rest_len=_norm(x[cols] - x[rows]),
        rest_dlen=r[rows] - r[cols],
        rest_angle=theta,
        w_t=rmin * rmin,
        r=r,
        bone_angle=np.where(nz, bone_angle, 0.0),
        s_dir=shat,
        s_floor=np.maximum(S_FLOOR * r, tiny),
        degree=np.asarray(topology.adj_count, np.int64),
        tiny=tiny,
    )
    rest.lam_cols = lambda_columns(rest)
    rest.blend_other, rest.blend_end, rest.blend_w = joint_blend_weights(binding, bind_joints, r,
                                                                         mesh_islands(topology))
    volume_rest(rest, topology, binding)
    return rest


def slot_third_corners(topology: MeshTopology, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(H,) per CSR slot (i, j): the third corner m of the face (i, j, m) in winding order, -1 where no face has
    the directed edge i -> j (a boundary, or a face of the other winding). Each face appears once per corner, so
    summing over a vertex's slots visits each of its faces once; a directed edge shared by two faces (non-manifold
    or inconsistent winding) keeps the first."""
    tri = np.asarray(topology.triangles, np.int64).reshape(-1, 3)
    n = int(topology.n_control)
    out = np.full(rows.shape[0], -1, np.int64)
    if tri.shape[0] == 0 or rows.shape[0] == 0:
        return out
    i = np.concatenate([tri[:, 0], tri[:, 1], tri[:, 2]])
    j = np.concatenate([tri[:, 1], tri[:, 2], tri[:, 0]])
    m = np.concatenate([tri[:, 2], tri[:, 0], tri[:, 1]])
    ok = (i != j) & (j != m) & (i != m)
    key = i[ok] * n + j[ok]
    keys = rows * n + cols
    order = np.argsort(keys, kind="stable")
    pos = np.searchsorted(keys[order], key)
    pos = np.minimum(pos, keys.shape[0] - 1)
    hit = keys[order][pos] == key
    slot = order[pos[hit]]
    third = m[ok][hit]
    first = np.unique(slot, return_index=True)[1]  # the first face of each directed edge
    out[slot[first]] = third[first]
    return out


def fan_volumes(x: np.ndarray, attach: np.ndarray, rest: SpringRest) -> tuple[np.ndarray, np.ndarray]:
    """Per vertex i (V_i, G_i): its share of its bone region's skeleton-relative volume, V_i = sum over its faces
    (i, j, m) of det(x_i - a_i, x_j - a_i, x_m - a_i) / 18 (the tetrahedra from its own attachment a_i; each face
    is counted by its three corners, hence 18 = 6 x 3), and G_i = dV_i / dx_i = sum (x_j - a_i) x (x_m - a_i) / 18,
    whose direction is the vertex's outward normal and 3 |G_i| its share of the surface area."""
    n = x.shape[0]
    h = rest.vol_third >= 0
    i, j, m = rest.rows[h], rest.cols[h], rest.vol_third[h]
    ai = attach[i]
    c = np.cross(x[j] - ai, x[m] - ai)
    det = np.einsum("ij,ij->i", x[i] - ai, c)
    v = np.bincount(i, weights=det, minlength=n) / 18.0
    g = np.stack([np.bincount(i, weights=c[:, k], minlength=n) for k in range(3)], 1) / 18.0
    return v, g


def region_volumes(x: np.ndarray, attach: np.ndarray, rest: SpringRest) -> np.ndarray:
    """(R,) skeleton-relative volume of every bone region at positions x (0 for the regions that are off)."""
    v, _ = fan_volumes(x, attach, rest)
    on = rest.vol_region >= 0
    return np.bincount(rest.vol_region[on], weights=v[on], minlength=rest.vol_v0.shape[0])


def volume_rest(rest: SpringRest, topology: MeshTopology, binding: Binding) -> None:
    """Set up the volume term in `rest`: slot third corners, bind volume and area per bone region, and which
    regions take part (|V0_r| > VOLUME_MIN_RATIO S0_r^1.5)."""
    rest.vol_third = slot_third_corners(topology, rest.rows, rest.cols)
    n = rest.n_vertices
    bone = np.asarray(binding.bone, np.int64)
    n_reg = int(binding.bones.count) if n else 0
    rest.vol_region = np.full(n, -1, np.int64)
    rest.vol_v0 = np.zeros(n_reg)
    rest.vol_s0 = np.zeros(n_reg)
    if n == 0 or n_reg == 0:
        return
    x = np.asarray(topology.positions, np.float64)
    v, g = fan_volumes(x, np.asarray(binding.attach, np.float64), rest)
    rest.vol_v0 = np.bincount(bone, weights=v, minlength=n_reg)
    rest.vol_s0 = 3.0 * np.bincount(bone, weights=_norm(g), minlength=n_reg)
    on = (rest.vol_s0 > 0.0) & (np.abs(rest.vol_v0) > VOLUME_MIN_RATIO * rest.vol_s0 ** 1.5)
    rest.vol_region = np.where(on[bone], bone, -1)


def mesh_islands(topology: MeshTopology) -> np.ndarray:
    """(V,) label of the connected piece (over the mesh edges) every control point belongs to."""
    v = topology.n_control
    e = np.asarray(topology.edges, np.int64).reshape(-1, 2)
    graph = coo_matrix((np.ones(e.shape[0], np.int8), (e[:, 0], e[:, 1])), shape=(v, v))
    return np.asarray(connected_components(graph, directed=False)[1], np.int64)


def joint_blend_weights(binding: Binding, bind_joints: np.ndarray, r: np.ndarray, island: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per vertex (other bone or -1, joint end 0 = parent / 1 = child, own weight) of joint blending.

    The nearer end of a vertex's bone is an interior joint when another bone ends there (parent end: a bone whose
    child joint is this bone's parent joint; child end: exactly one bone starting at the child joint). A vertex at
    distance d from that joint along its bone, with rho = min(JOINT_BLEND r_i, half the bone), gets the own
    weight w = 1/2 + 1/2 smoothstep(d / rho) (1 at and past rho).

    island (V,): mesh piece labels (`mesh_islands`). A vertex blends only when its piece also has points bound to
    the bone across the joint: a separate piece bound to one bone (a rigid panel, a shell ending before the
    joint) follows its bone rigidly, as LBS keeps it, instead of being bent by a joint it does not span."""
    bones = binding.bones
    nb = bones.count
    p, c = bone_endpoints(bones, np.asarray(bind_joints, np.float64))
    length = _norm((c - p).astype(np.float64))
    pj, cj = np.asarray(bones.parent_joint), np.asarray(bones.child_joint)
    parent_bone = np.full(nb, -1, np.int64)
    child_bone = np.full(nb, -1, np.int64)
    for k in range(nb):  # set-up only, per bone
        m = np.nonzero((cj == pj[k]) & (cj >= 0))[0]
        if m.size:
            parent_bone[k] = m[0]
        if cj[k] >= 0:
            m = np.nonzero(pj == cj[k])[0]
            if m.size == 1:
                child_bone[k] = m[0]
    b = np.asarray(binding.bone, np.int64)
    t = np.asarray(binding.t, np.float64)
    end = (t >= 0.5).astype(np.int64)
    other = np.where(end == 0, parent_bone[b], child_bone[b])
    d = np.where(end == 0, t, 1.0 - t) * length[b]
    rho = np.minimum(JOINT_BLEND * np.asarray(r, np.float64), 0.5 * length[b])
    u = np.clip(d / np.where(rho > 0, rho, 1.0), 0.0, 1.0)
    spans = other >= 0
    if island is not None:  # the vertex's piece has points on the other bone
        lab = np.asarray(island, np.int64)
        present = np.unique(lab * nb + b)
        spans &= np.isin(lab * nb + np.where(other >= 0, other, 0), present)
    w = np.where(spans & (rho > 0), 0.5 + 0.5 * u * u * (3.0 - 2.0 * u), 1.0)
    other = np.where(w < 1.0, other, -1)
    return other, end, w


def rotation_share(rel: np.ndarray, f: np.ndarray) -> np.ndarray:
    """(V,3,3) rotations by the share f (V,) (any sign) of the rotations rel (V,3,3): rel's unit quaternion
    (w >= 0, Shepperd's method, exact near a half turn) as axis and angle, the angle times f, by Rodrigues'
    formula (identity where f = 0 or rel is the identity)."""
    q = quat_from_matrix(np.asarray(rel, np.float64))  # xyzw, w >= 0
    sin_half = _norm(q[:, :3])
    ok = sin_half > _SIN_EPS
    axis = q[:, :3] * (ok / np.where(ok, sin_half, 1.0))[:, None]
    ang = 2.0 * np.arctan2(sin_half, q[:, 3]) * np.asarray(f, np.float64)
    k = np.zeros(q.shape[:1] + (3, 3))
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    k[:, 1, 0], k[:, 2, 0], k[:, 2, 1] = axis[:, 2], -axis[:, 1], axis[:, 0]
    kk = np.einsum("vij,vjk->vik", k, k)
    return np.eye(3)[None] + np.sin(ang)[:, None, None] * k + (1.0 - np.cos(ang))[:, None, None] * kk


def blend_rotations(own: np.ndarray, other: np.ndarray, w: np.ndarray, own_first: np.ndarray) -> np.ndarray:
    """(V,3,3) rotations turning by the share 1 - w of the rotation from `own` to `other` (both (V,3,3)).

    Both sides of a joint turn about one axis: the relative rotation is always taken from the lower-numbered
    bone of the pair to the higher one (own_first (V,) bool: the vertex's own bone is the lower one), and the
    higher bone's vertices turn by the negative share. Away from a half turn this equals the share of
    other own^T; at a half turn (a 180 deg twist, where the shortest arc has no preferred sense) it keeps the
    two sides of the joint turning the same way instead of 180 deg apart."""
    first = np.asarray(own_first, bool)
    fwd = np.einsum("vij,vkj->vik", other, own)  # other own^T
    rel = np.where(first[:, None, None], fwd, np.transpose(fwd, (0, 2, 1)))
    share = 1.0 - np.asarray(w, np.float64)
    return rotation_share(rel, np.where(first, share, -share))


def joint_rotations(bind_joints: np.ndarray, posed_joints: np.ndarray) -> np.ndarray:
    """Rotation of every joint relative to bind, (J,3,3): the polar (closest rotation) factor of the 3x3 block
    of posed @ inv(bind), so joint scale does not leak into the scale vectors."""
    m = np.asarray(posed_joints, np.float64) @ np.linalg.inv(np.asarray(bind_joints, np.float64))
    u, _, vt = np.linalg.svd(m[:, :3, :3])
    d = np.sign(np.linalg.det(u @ vt))
    u[:, :, 2] *= d[:, None]
    return u @ vt


def pose_frame(binding: Binding, bind_joints: np.ndarray, posed_joints: np.ndarray, rest: SpringRest,
               bone_mode: str = "frame", joint_blend: bool = False) -> PoseFrame:
    """Posed attachments a_i = p + t_i (c - p), per-vertex bone rotations and bone reference directions; with
    joint_blend, attachments, rotations and references near interior joints turned about the joint J by
    `blend_rotations` (a_i = J + B (a_i - J), rot = B R, ref = B ref)."""
    posed = np.asarray(posed_joints, np.float64)
    p, c = bone_endpoints(binding.bones, posed)
    p = p.astype(np.float64)
    c = c.astype(np.float64)
    b = binding.bone
    t = np.asarray(binding.t, np.float64)[:, None]
    attach = p[b] + t * (c[b] - p[b])
    rot = joint_rotations(bind_joints, posed)[binding.bones.parent_joint][b]
    if bone_mode == "frame":
        ref = np.einsum("vij,vj->vi", rot, rest.s_dir)
    else:
        bdir, _, _ = _unit(c - p, rest.tiny)
        ref = bdir[b]
    if not joint_blend or rest.blend_w.shape[0] != b.shape[0] or not np.any(rest.blend_other >= 0):
        return PoseFrame(attach=attach, rot=rot, bone_ref=ref)
    has = rest.blend_other >= 0
    jrot = joint_rotations(bind_joints, posed)[binding.bones.parent_joint]
    other = np.where(has, rest.blend_other, b)
    turn = blend_rotations(rot, jrot[other], np.where(has, rest.blend_w, 1.0), b < other)
    joint = np.where((rest.blend_end == 0)[:, None], p[b], c[b])
    return PoseFrame(attach=joint + np.einsum("vij,vj->vi", turn, attach - joint),
                     rot=np.einsum("vij,vjk->vik", turn, rot), bone_ref=np.einsum("vij,vj->vi", turn, ref),
                     bone_attach=attach, bone_rot=rot)


def pose_motion(bind_joints: np.ndarray, parents: np.ndarray, prev_joints: np.ndarray, posed_joints: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """How much of a pose change the carrying of the last output does not follow, per joint (J,): the angle
    (radians) by which the joint's rotation relative to its parent changed from prev_joints to posed_joints, and
    the distance its offset from the parent, in the parent's (polar) frame, moved (scene units). Roots (parent -1)
    give 0: a rigid motion of a whole skeleton carries every bone's points exactly. Works on stacked skeletons
    (parents indexing the stack)."""
    par = np.asarray(parents, np.int64).reshape(-1)
    posed = np.asarray(posed_joints, np.float64)
    prev = np.asarray(prev_joints, np.float64)
    rn, rp = joint_rotations(bind_joints, posed), joint_rotations(bind_joints, prev)
    has = par >= 0
    pj = np.where(has, par, np.arange(par.shape[0]))
    rel_n = np.einsum("vji,vjk->vik", rn[pj], rn)  # R_parent^T R
    rel_p = np.einsum("vji,vjk->vik", rp[pj], rp)
    cos = 0.5 * (np.einsum("vij,vij->v", rel_n, rel_p) - 1.0)  # trace(rel_n rel_p^T) = 1 + 2 cos
    angle = np.arccos(np.clip(cos, -1.0, 1.0))
    off_n = np.einsum("vji,vj->vi", rn[pj], posed[:, :3, 3] - posed[pj, :3, 3])
    off_p = np.einsum("vji,vj->vi", rp[pj], prev[:, :3, 3] - prev[pj, :3, 3])
    return np.where(has, angle, 0.0), np.where(has, _norm(off_n - off_p), 0.0)


def warm_scale(r: np.ndarray) -> float:
    """Length that turns SpringParams.warm_limit (radians) into the joint-offset bound of the warm start: the
    median bind |s| of the points off their bone (1 when none)."""
    r = np.asarray(r, np.float64)
    r = r[r > 0.0]
    return float(np.median(r)) if r.size else 1.0


def warm_start_allowed(params: SpringParams, angle: np.ndarray, offset: np.ndarray, scale: float) -> bool:
    """Whether a frame-independent solve may start from the carried last output (`pose_motion`'s angle and
    offset of the joints since that output, `warm_scale` of the mesh): the pose moved by at most warm_limit."""
    if not params.warm_start or params.mode != "independent":
        return False
    a = float(np.max(angle)) if np.size(angle) else 0.0
    o = float(np.max(offset)) if np.size(offset) else 0.0
    return a <= params.warm_limit and o <= params.warm_limit * scale


def carry(positions: np.ndarray, prev: PoseFrame, now: PoseFrame, *, plain: bool = False) -> np.ndarray:
    """Points of the frame `prev` moved by the motion of each vertex's frame since then: a' + F' F^T (x - a) with
    the joint-blended attachments and rotations (the warm start: a result at the blended rigid start carries to
    the blended rigid start of `now`, only its deviation from it is carried along); plain: on the bones (the
    dependent mode, as the GPU's differential skinning does)."""
    a_p, r_p = (prev.plain_attach, prev.plain_rot) if plain else (prev.attach, prev.rot)
    a_n, r_n = (now.plain_attach, now.plain_rot) if plain else (now.attach, now.rot)
    delta = np.einsum("vij,vkj->vik", r_n, r_p)  # F_now F_prev^T
    return a_n + np.einsum("vij,vj->vi", delta, np.asarray(positions, np.float64) - a_p)


def spring_forces(x: np.ndarray, attach: np.ndarray, bone_ref: np.ndarray, rest: SpringRest,
                  params: SpringParams, edit: EditTerms | None = None, volume: np.ndarray | None = None
                  ) -> tuple[np.ndarray, float]:
    """Net force (V,3) on every vertex (eq. 22 with F_e, weighted as in Algorithm 1) and the spring energy.

    volume: the bone regions' volumes (`region_volumes`) of the state one iteration earlier (x_0's own for x_0),
    for the volume term (k_v): F_i = k_v delta_r unit(G_i), delta_r = (V0_r - V_r) / S0_r, the uniform offset
    along the normals that would restore region r's bind volume; energy 0.5 k_v delta_r^2 per vertex. None
    (one-off evaluations): no volume term. The lag lets the GPU sum a region over every work group in the same
    dispatch that uses the last sum (spring.comp; a pre-pass sums x_0)."""
    n = x.shape[0]
    rows, cols = rest.rows, rest.cols
    shat, slen, nz = _unit(x - attach, rest.tiny)
    sden = np.maximum(slen, rest.s_floor)
    slot = np.zeros((rows.shape[0], 3))
    energy = 0.0
    k_s, k_l, k_t = params.stiffness("k_s"), params.stiffness("k_l"), params.stiffness("k_t")
    k_b, k_r, k_e = params.stiffness("k_b"), params.stiffness("k_r"), params.stiffness("k_e")
    if k_s:
        e = x[cols] - x[rows]
        length = _norm(e)
        ok = length > rest.tiny
        stretch = length - rest.rest_len
        slot += (k_s * stretch * ok / np.where(ok, length, 1.0))[:, None] * e
        energy += 0.25 * k_s * _dot(stretch, stretch)  # each edge appears in two slots
    if k_l:
        dl = (slen[rows] - slen[cols]) - rest.rest_dlen
        slot -= (k_l * dl)[:, None] * shat[rows]
        energy += 0.25 * k_l * _dot(dl, dl)
    if k_t:
        theta, perp, sin = _angle(shat[rows], shat[cols])
        dth = theta - rest.rest_angle
        ok = (sin > _SIN_EPS) & nz[rows] & nz[cols]
        torque = k_t * rest.w_t * dth
        slot += (torque * ok / (sden[rows] * np.where(ok, sin, 1.0)))[:, None] * perp
        energy += 0.25 * k_t * _dot(rest.w_t, dth * dth)
    force = np.empty((n, 3))
    for a in range(3):  # scatter slot forces into their vertex (CSR segment sum)
        force[:, a] = np.bincount(rows, weights=slot[:, a], minlength=n)
    if edit is not None and k_e:
        active = edit.active
        if np.any(active):
            force[active] *= params.handle_weight
            force += k_e * edit.force(x)
            energy += k_e * edit.energy(x)
    if k_b:
        phi, perp, sin = _angle(shat, bone_ref)
        ref_angle = rest.bone_angle if params.bone_mode == "cone" else 0.0
        dphi = phi - ref_angle
        ok = (sin > _SIN_EPS) & nz
        torque = k_b * rest.r * rest.r * dphi
        force += (torque * ok / (sden * np.where(ok, sin, 1.0)))[:, None] * perp
        energy += 0.5 * k_b * _dot(rest.r * rest.r, dphi * dphi)
    if k_r:
        dr = slen - rest.r
        force -= (k_r * dr)[:, None] * shat
        energy += 0.5 * k_r * _dot(dr, dr)
    k_v = params.stiffness("k_v")
    if k_v and volume is not None:
        on = volume_points(rest, params, edit)
        if np.any(on):
            _, g = fan_volumes(x, attach, rest)
            reg = rest.vol_region[on]
            delta = (rest.vol_v0 - np.asarray(volume, np.float64))[reg] / rest.vol_s0[reg]
            glen = _norm(g[on])
            ok = glen > 0.0
            force[on] += (k_v * delta * ok / np.where(ok, glen, 1.0))[:, None] * g[on]
            energy += 0.5 * k_v * _dot(delta, delta)
    if edit is not None and k_e and edit.any_held:
        force[edit.held] = 0.0  # the ROI boundary is held: no force moves it (edits.py, "the sets")
    return force, energy


def release_held(vel: np.ndarray, edit: EditTerms | None, params: SpringParams) -> np.ndarray:
    """Velocities with those of held vertices (surface-edit static sets) zeroed: with their force zeroed too,
    the update leaves them exactly in place, whatever the integrator."""
    if edit is None or not params.stiffness("k_e") or not edit.any_held:
        return vel
    vel = np.array(vel, np.float64)
    vel[edit.held] = 0.0
    return vel


def integrate(x: np.ndarray, vel: np.ndarray, force: np.ndarray, params: SpringParams,
              step: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Position update: eq. 23 (v += dt F) or semi-implicit Euler (unit mass) with velocity damping; explicit
    with acceleration "momentum": the heavy-ball step (vel is then the last step, not a velocity).

    step: per-vertex time steps dt_i (V,) from `step_sizes` (step limiting); None uses params.dt everywhere
    (the plain update)."""
    h = params.dt if step is None else np.asarray(step, np.float64)[:, None]
    if params.integrator == "explicit":
        if params.acceleration == "momentum":
            vel = params.momentum * vel + h * force  # heavy ball: vel carries the last step
            return x + vel, vel
        return x + h * force, vel
    vel = (vel + h * force) * (1.0 - params.damping)
    return x + h * vel, vel


def spring_step(x: np.ndarray, vel: np.ndarray, attach: np.ndarray, bone_ref: np.ndarray, rest: SpringRest,
                params: SpringParams, edit: EditTerms | None = None, *, step: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One iteration (what one dispatch of the spring compute shader does): (x', vel', force at x, energy at x).

    step: per-vertex steps; None computes them with `step_sizes` (the plain dt when params.step_limit is off).
    A caller iterating many times passes them in (they depend on the rest state, params and edits only)."""
    force, energy = spring_forces(x, attach, bone_ref, rest, params, edit)
    vel = release_held(vel, edit, params)
    if step is None:
        step = step_sizes(rest, params, edit)
    x_new, vel_new = integrate(x, vel, force, params, step)
    return x_new, vel_new, force, energy


def lambda_columns(rest: SpringRest) -> np.ndarray:
    """(V,4) per-vertex Gershgorin bounds of the force Jacobian per unit stiffness (linearised at bind), one
    column per group of LAMBDA_COLUMNS: edge/length springs 2 deg_i (each neighbour adds k on the diagonal and
    k off it), torsion sum_j w_ij (1/r_i^2 + 1/(r_i r_j)), bone (r_i / max(r_i, s_floor_i))^2 (1, or 0 for a
    vertex on its bone), radial 1 (r_i: bind |s_i| floored like the force denominators). The surface-edit term
    k_e K_i changes per frame and is added by `lambda_per_vertex`."""
    n = rest.n_vertices
    sref = np.maximum(rest.r, rest.s_floor)
    deg2 = 2.0 * rest.degree.astype(np.float64)
    tor = rest.w_t * (1.0 / sref[rest.rows] ** 2 + 1.0 / (sref[rest.rows] * sref[rest.cols]))
    return np.stack([deg2, np.bincount(rest.rows, weights=tor, minlength=n), (rest.r / sref) ** 2,
                     np.ones(n)], 1)


def _lambda_coefficients(rest: SpringRest, edit: EditTerms | None) -> dict[str, np.ndarray]:
    """Per-vertex Gershgorin bounds of the force Jacobian per unit of each stiffness (linearised at bind)."""
    cols = rest.lam_cols if rest.lam_cols.shape[0] == rest.n_vertices else lambda_columns(rest)
    out = {p: cols[:, c] for c, group in enumerate(LAMBDA_COLUMNS) for p in group}
    out["k_e"] = (np.asarray(edit.stiffness, np.float64).copy() if edit is not None
                  else np.zeros(rest.n_vertices))
    out["k_v"] = VOLUME_LAMBDA * (rest.vol_region >= 0) if rest.vol_region.shape[0] == rest.n_vertices \
        else np.zeros(rest.n_vertices)
    return out


def volume_acts(params: SpringParams) -> bool:
    """Whether the volume term runs: k_v on and not the energy scheme (the term is a pressure with no energy to
    descend; that scheme accepts descending steps only)."""
    return bool(params.stiffness("k_v")) and params.convergence != "energy"


def edited_regions(region: np.ndarray, stiffness: np.ndarray, held: np.ndarray | None) -> np.ndarray:
    """Volume regions (sorted, unique) holding a surface-edit handle (K_i > 0) or a held vertex: the volume term
    leaves them alone (an edit changes the volume on purpose: a bulge, a breathing chest; the pressure would
    deflate the rest of the region to undo it). region (V,) as SpringRest.vol_region."""
    touched = np.asarray(stiffness) > 0.0
    if held is not None:
        touched = touched | (np.asarray(held) > 0)
    return np.unique(region[touched & (region >= 0)])


def volume_points(rest: SpringRest, params: SpringParams, edit: EditTerms | None) -> np.ndarray:
    """(V,) bool: the points the volume term acts on (their region takes part and no acting edit touches it)."""
    region = rest.vol_region if rest.vol_region.shape[0] == rest.n_vertices else np.full(rest.n_vertices, -1)
    on = region >= 0
    if not volume_acts(params):
        return np.zeros_like(on)
    if edit is not None and params.stiffness("k_e"):
        on &= ~np.isin(region, edited_regions(region, edit.stiffness, edit.held))
    return on


def lambda_per_vertex(rest: SpringRest, params: SpringParams, edit: EditTerms | None = None) -> np.ndarray:
    """(V,) lambda_i = sum_p k_p c_p,i: the Gershgorin bound of vertex i's row of the force Jacobian for the
    current stiffnesses (switches applied), with k_e K_i of active surface edits."""
    cols = rest.lam_cols if rest.lam_cols.shape[0] == rest.n_vertices else lambda_columns(rest)
    k = np.array([sum(params.stiffness(p) for p in group) for group in LAMBDA_COLUMNS])
    lam = np.einsum("vc,c->v", cols, k)  # no BLAS (see _dot)
    lam = lam + params.stiffness("k_v") * VOLUME_LAMBDA * volume_points(rest, params, edit)
    k_e = params.stiffness("k_e")
    if edit is not None and k_e:
        lam = lam + k_e * np.asarray(edit.stiffness, np.float64)
    return lam


def step_sizes(rest: SpringRest, params: SpringParams, edit: EditTerms | None = None, *,
               lam: np.ndarray | None = None) -> np.ndarray | None:
    """Per-vertex steps (V,) of step limiting: min(dt, STEP_SAFETY / lambda_i) (explicit) or
    min(dt, sqrt(2 STEP_SAFETY / lambda_i)) (semi-implicit); dt where lambda_i = 0. None when
    params.step_limit is off (the plain update). lam: a precomputed `lambda_per_vertex`."""
    if not params.step_limit:
        return None
    lam = lambda_per_vertex(rest, params, edit) if lam is None else np.asarray(lam, np.float64)
    pos = lam > 0.0
    bound = np.full(lam.shape, _INF)
    np.divide(STEP_SAFETY if params.integrator == "explicit" else 2.0 * STEP_SAFETY, lam, out=bound, where=pos)
    if params.integrator != "explicit":
        bound = np.sqrt(bound)
    return np.minimum(params.dt, bound)


def safe_range(rest: SpringRest, params: SpringParams, edit: EditTerms | None = None,
               shortest_edge: float | None = None) -> dict[str, float]:
    """Largest stable dt for the current stiffnesses, and the largest value of each stiffness for the current
    dt and other stiffnesses. Rule: explicit dt * lambda_max < 1 (monotone, no overshoot; instability starts
    at 2), semi-implicit dt^2 * lambda_max < 2 (instability at 4), with lambda_max <= max_i sum_p k_p c_p,i
    (Gershgorin over the per-pair stiffnesses). Also returns lambda_max and the mesh's shortest edge (the
    stiffnesses are per metre, so the bound itself does not depend on it; it is reported for context).

    The range is that of the plain update (params.step_limit off). With step limiting every dt and stiffness
    is stable: vertices past the range move with their own smaller step (`step_sizes`) instead."""
    coef = _lambda_coefficients(rest, edit)
    ks = {p: params.stiffness(p) for p in _STIFFNESS}
    lam_i = np.asarray(sum(ks[p] * coef[p] for p in _STIFFNESS))
    lam = float(lam_i.max()) if lam_i.size else 0.0
    explicit = params.integrator == "explicit"
    # 2 / dt / dt, not 2 / dt ** 2: dt ** 2 underflows to 0 for an absurdly small dt (refused by the caller)
    budget = 1.0 / params.dt if explicit else 2.0 / params.dt / params.dt
    out: dict[str, float] = {"lambda_max": lam}
    if lam <= 0.0:
        out["dt"] = _INF
    else:
        out["dt"] = 1.0 / lam if explicit else math.sqrt(2.0 / lam)
    for p in _STIFFNESS:
        c = coef[p]
        mask = c > 0.0
        if not np.any(mask):
            out[p] = _INF
            continue
        others = lam_i - ks[p] * c
        out[p] = float(max(0.0, np.min((budget - others[mask]) / c[mask])))
    out["shortest_edge"] = float(shortest_edge if shortest_edge is not None else
                                 (rest.rest_len.min() if rest.rest_len.size else 0.0))
    return out


# ---------------------------------------------------------------------------------------------------------
# the deformer
# ---------------------------------------------------------------------------------------------------------
Skinner = Callable[[str, np.ndarray], np.ndarray]


def _weights_skinner(topology: MeshTopology, bind_joints: np.ndarray, joints: np.ndarray,
                     weights: np.ndarray) -> Skinner:
    """LBS/DQS of the control points through skinning.skin_control_points (glTF JOINTS_0/WEIGHTS_0)."""
    def skin(method: str, posed_joints: np.ndarray) -> np.ndarray:
        from engine.skinning.skinning import skin_control_points

        return skin_control_points(method, topology, bind_joints, posed_joints, joints=joints, weights=weights)

    return skin


def _check_ranges(params: SpringParams, rest: SpringRest) -> None:
    """The mesh-derived parameter ranges the GPU graph also applies (engine.skinning.config imports this module,
    hence the local import): the same parameters are refused on both devices."""
    from engine.skinning.config import check_spring_ranges

    check_spring_ranges(params, rest)


class SpringDeformer:
    """Spring-based skinning of one mesh's control points.

    topology, binding: from meshprep / binding; bind_joints (J,4,4) joint world matrices at bind; parents (J,);
    skinner(method, posed_joints) -> (V,3) control-point positions, needed only for initial_skinning "lbs" or
    "dqs"; or give joints/weights ((D,4) or (V,4), glTF JOINTS_0/WEIGHTS_0) and skinning.py's LBS/DQS is
    used; a caller may also pass `initial=` to `solve`.
    """

    def __init__(self, topology: MeshTopology, binding: Binding, bind_joints: np.ndarray, parents: np.ndarray,
                 params: SpringParams | None = None, *, skinner: Skinner | None = None,
                 joints: np.ndarray | None = None, weights: np.ndarray | None = None) -> None:
        self.params = (params or SpringParams()).validate()
        if skinner is None and joints is not None and weights is not None:
            skinner = _weights_skinner(topology, np.asarray(bind_joints), joints, weights)
        v = topology.n_control
        for name, arr, shape in (("binding.bone", binding.bone, (v,)), ("binding.t", binding.t, (v,)),
                                 ("binding.attach", binding.attach, (v, 3)), ("binding.scale", binding.scale, (v, 3))):
            if np.shape(arr) != shape:
                raise ValueError(f"{name} has shape {np.shape(arr)}; valid: {shape} for {v} control points")
        bind_joints = np.asarray(bind_joints, np.float64)
        parents = np.asarray(parents)
        if bind_joints.ndim != 3 or bind_joints.shape[1:] != (4, 4) or parents.shape != (bind_joints.shape[0],):
            raise ValueError(f"bind_joints {bind_joints.shape} / parents {parents.shape}; valid: (J,4,4) and (J,)")
        self.topology = topology
        self.binding = binding
        self.bind_joints = bind_joints
        self.parents = parents
        self.skinner = skinner
        self.rest = build_rest(topology, binding, bind_joints)
        _check_ranges(self.params, self.rest)
        x = np.asarray(topology.positions, np.float64)
        ext = x.max(0) - x.min(0) if v else np.ones(3)
        pos_ext = ext[ext > 0.0]
        self.aabb_min_extent = float(pos_ext.min()) if pos_ext.size else 1.0
        self.bbox_diag = float(np.linalg.norm(ext)) or 1.0
        self.warm_scale = warm_scale(self.rest.r)  # SpringParams.warm_limit x this bounds joint offset changes
        self.state = SpringState()
        self._lam = lambda_per_vertex(self.rest, self.params)
        self._warn_if_unsafe()

    # -- parameters ---------------------------------------------------------------------------------------
    @property
    def displacement_threshold(self) -> float:
        """Largest position change that counts as converged: AABB_min_extent * displacement_rel."""
        return self.aabb_min_extent * self.params.displacement_rel

    @property
    def force_threshold(self) -> float:
        p = self.params
        return p.force_tol if p.force_tol is not None else self.displacement_threshold / p.dt

    def set_params(self, params: SpringParams) -> None:
        params = params.validate()
        _check_ranges(params, self.rest)
        self.params = params
        self._lam = lambda_per_vertex(self.rest, self.params)
        self._warn_if_unsafe()

    def step_sizes(self, edit: EditTerms | None = None) -> np.ndarray | None:
        """Per-vertex steps dt_i (V,) for the current params (None: step_limit off, dt everywhere). The
        stiffness part of lambda_i is computed at set-up and in `set_params`; active surface edits add
        k_e K_i (they change per frame)."""
        p = self.params
        if not p.step_limit:
            return None
        lam = self._lam
        k_e = p.stiffness("k_e")
        if edit is not None and k_e:
            lam = lambda_per_vertex(self.rest, p, edit)  # k_e K_i, and no volume term in the edited regions
        return step_sizes(self.rest, p, lam=lam)

    def safe_range(self, edit: EditTerms | None = None) -> dict[str, float]:
        """See module function `safe_range`."""
        return safe_range(self.rest, self.params, edit)

    def _culprit(self, edit: EditTerms | None) -> tuple[str, dict[str, float]]:
        """The stiffness contributing most at the stiffest vertex, and the safe range."""
        rng = safe_range(self.rest, self.params, edit)
        coef = _lambda_coefficients(self.rest, edit)
        contrib = {p: self.params.stiffness(p) * coef[p] for p in _STIFFNESS}
        worst = int(np.argmax(sum(contrib.values())))
        return max(_STIFFNESS, key=lambda p: float(contrib[p][worst])), rng

    def _advice(self, edit: EditTerms | None) -> str:
        p, rng = self._culprit(edit)
        if rng[p] > 0.0:
            other = f"`{p}` (now {getattr(self.params, p):g}, safe < {rng[p]:.4g})"
        else:  # the other stiffnesses alone already use up the budget of this dt
            other = f"`{p}` (now {getattr(self.params, p):g}; at this dt no value of it alone is enough)"
        return f"lower `dt` (now {self.params.dt:g}, safe < {rng['dt']:.4g}) or {other}"

    def _warn_if_unsafe(self) -> None:
        """Warn at set-up when the plain update is selected (step_limit off) and dt is past twice the monotone
        bound: there explicit Euler is no longer guaranteed stable (dt * lambda < 2; the bound over-estimates
        lambda, so this is a caution, and the per-iteration divergence check stays the safety net). Never with
        step_limit on: every vertex's step is then inside its own stable range by construction."""
        if self.params.step_limit:
            return
        rng = safe_range(self.rest, self.params)
        factor = 2.0 if self.params.integrator == "explicit" else math.sqrt(2.0)
        if self.params.dt > factor * rng["dt"]:
            warnings.warn(f"spring parameters may be unstable on this mesh (divergence is watched for): "
                          f"{self._advice(None)}", RuntimeWarning, stacklevel=3)

    # -- per frame ----------------------------------------------------------------------------------------
    def frame(self, posed_joints: np.ndarray) -> PoseFrame:
        """Per-vertex pose data (attachments, rotations, bone references) for joint world matrices."""
        posed = np.asarray(posed_joints, np.float64)
        if posed.shape != self.bind_joints.shape:
            raise ValueError(f"posed_joints has shape {posed.shape}; valid: {self.bind_joints.shape}")
        return pose_frame(self.binding, self.bind_joints, posed, self.rest, self.params.bone_mode,
                          self.params.joint_blend)

    def rigid(self, frame: PoseFrame, *, plain: bool = False) -> np.ndarray:
        """Attachment-based rigid skinning (research 4.1, first stage): v = a' + R s, (V,3), in the vertex's
        (joint-blended) frame; plain: on the bone itself, a' + R(parent joint) s (what `skinning.rigid` does)."""
        a, r = (frame.plain_attach, frame.plain_rot) if plain else (frame.attach, frame.rot)
        return a + np.einsum("vij,vj->vi", r, np.asarray(self.binding.scale, np.float64))

    def edit_terms(self, edits: EditStack | EditTerms | None, frame: PoseFrame, time: float = 0.0) -> EditTerms | None:
        if edits is None or isinstance(edits, EditTerms):
            return edits
        return edits.terms(self.topology.n_control, frame.attach, frame.rot, time)

    def forces(self, x: np.ndarray, frame: PoseFrame, edit: EditTerms | None = None) -> tuple[np.ndarray, float]:
        return spring_forces(np.asarray(x, np.float64), frame.attach, frame.bone_ref, self.rest, self.params, edit)

    def step(self, x: np.ndarray, frame: PoseFrame, *, vel: np.ndarray | None = None,
             edit: EditTerms | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """One iteration from positions x: (x', vel', force at x, energy at x)."""
        x = np.asarray(x, np.float64)
        vel = np.zeros_like(x) if vel is None else np.asarray(vel, np.float64)
        return spring_step(x, vel, frame.attach, frame.bone_ref, self.rest, self.params, edit,
                           step=self.step_sizes(edit))

    def initial_positions(self, posed_joints: np.ndarray, frame: PoseFrame, *, edit: EditTerms | None = None
                          ) -> np.ndarray:
        """Where iteration starts: the chosen initial skinning ("independent", or first "dependent" frame), or
        last frame's output moved by the differential bone transforms ("dependent"; "independent" with
        warm_start when `warm_allowed`). Rigid is the joint-blended rigid skinning (`rigid`) in "independent"
        mode, plain rigid on the bones in "dependent" mode (the GPU's frame-dependent loop carries its output on
        the bones). A warm start keeps the points an edit holds (edits.py static sets) at the initial skinning."""
        return self._start(posed_joints, frame, edit)[0]

    def warm_allowed(self, posed_joints: np.ndarray) -> bool:
        """Whether the next frame-independent solve for this pose starts warm (SpringParams.warm_start): there is
        a last output and the pose moved little since (`warm_start_allowed`)."""
        st = self.state
        if not self.params.warm_start or st.positions is None or st.frame is None or st.joints is None:
            return False
        angle, offset = pose_motion(self.bind_joints, self.parents, st.joints, posed_joints)
        return warm_start_allowed(self.params, angle, offset, self.warm_scale)

    def _start(self, posed_joints: np.ndarray, frame: PoseFrame, edit: EditTerms | None
               ) -> tuple[np.ndarray, bool]:
        """(start positions, whether they are the warm start)."""
        st = self.state
        dependent = self.params.mode == "dependent"
        if dependent and st.positions is not None and st.frame is not None:
            return carry(st.positions, st.frame, frame, plain=True), False
        if not dependent and self.warm_allowed(posed_joints):
            assert st.positions is not None and st.frame is not None
            x = carry(st.positions, st.frame, frame)
            if edit is not None and self.params.stiffness("k_e") and edit.any_held:
                x[edit.held] = self._cold_start(posed_joints, frame)[edit.held]
            return x, True
        return self._cold_start(posed_joints, frame), False

    def _cold_start(self, posed_joints: np.ndarray, frame: PoseFrame) -> np.ndarray:
        """The initial skinning (module docstring of `initial_positions`)."""
        dependent = self.params.mode == "dependent"
        method = self.params.initial_skinning
        if method == "rigid":
            return self.rigid(frame, plain=dependent)
        if self.skinner is None:
            raise ValueError(f"initial_skinning = {method!r} needs a skinner(method, posed_joints) or "
                             "solve(..., initial=positions); valid without one: 'rigid'")
        x0 = np.asarray(self.skinner(method, np.asarray(posed_joints)), np.float64)
        if x0.shape != (self.topology.n_control, 3):
            raise ValueError(f"skinner returned shape {x0.shape}; valid: ({self.topology.n_control}, 3)")
        return x0

    def iterate(self, x: np.ndarray, frame: PoseFrame, *, vel: np.ndarray | None = None,
                edit: EditTerms | None = None, max_iterations: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, SpringStats]:
        """Run iterations from x until the convergence scheme (or max_iterations) stops them.

        Schemes: "iterations" runs max_iterations; "displacement" stops after the first step whose largest
        position change is below `displacement_threshold`; "force" stops before stepping once the largest
        net force is below `force_threshold`; "energy" stops at a local minimum of the total energy (a step
        that does not lower it by energy_rtol is rejected if it raised the energy). Divergence (non-finite
        values or a step longer than divergence_rel x bbox diagonal) keeps the last good state and warns.
        With step limiting, the per-vertex steps are computed once here (edits included) for all iterations.
        """
        p = self.params
        n_max = p.max_iterations if max_iterations is None else int(max_iterations)
        x = np.array(x, np.float64)
        vel = np.zeros_like(x) if vel is None or p.integrator == "explicit" else np.array(vel, np.float64)
        vel = release_held(vel, edit, p)
        a, ref = frame.attach, frame.bone_ref
        # the volume term uses the regions' volumes of the previous state, x_0's own for x_0
        with_volume = bool(np.any(volume_points(self.rest, p, edit)))
        volume = region_volumes(x, a, self.rest) if with_volume else None
        force, energy = spring_forces(x, a, ref, self.rest, p, edit, volume)
        step = self.step_sizes(edit)
        kinetic = 0.5 * float(np.einsum("ij,ij->", vel, vel))
        stats = SpringStats(initial_energy=energy, energy=energy, reason="max_iterations")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(force))):
            raise ValueError("spring solve started from non-finite positions or forces")
        thr_d, thr_f = self.displacement_threshold, self.force_threshold
        limit = p.divergence_rel * self.bbox_diag
        for it in range(n_max):
            fmax = float(_norm(force).max()) if force.size else 0.0
            stats.max_force = fmax
            if p.convergence == "force" and fmax < thr_f:
                stats.converged, stats.reason = True, "force"
                break
            x_new, vel_new = integrate(x, vel, force, p, step)
            disp = float(_norm(x_new - x).max()) if x.size else 0.0
            bad = ""
            if not np.all(np.isfinite(x_new)):
                bad = "non-finite positions"
            elif disp > limit:
                bad = f"a vertex moved {disp:.3g} in one step, limit {limit:.3g}"
            if not bad:
                f_new, e_new = spring_forces(x_new, a, ref, self.rest, p, edit, volume)
                if not (np.all(np.isfinite(f_new)) and math.isfinite(e_new)):
                    bad = "non-finite forces"
            if bad:
                stats.diverged, stats.reason = True, "diverged"
                warnings.warn(f"spring deformer diverged at iteration {it + 1} ({bad}); kept the last good "
                              f"state: {self._advice(edit)}", RuntimeWarning, stacklevel=2)
                break
            k_new = 0.5 * float(np.einsum("ij,ij->", vel_new, vel_new))
            if p.convergence == "energy":
                total, total_new = energy + kinetic, e_new + k_new
                if total_new >= total - p.energy_rtol * abs(total):
                    stats.converged, stats.reason = True, "energy"
                    if total_new <= total:  # a (tiny) descent: take it
                        x, vel, force, energy, kinetic = x_new, vel_new, f_new, e_new, k_new
                        stats.iterations += 1
                        stats.max_displacement = disp
                    break
            x, vel, force, energy, kinetic = x_new, vel_new, f_new, e_new, k_new
            if with_volume:
                volume = region_volumes(x, a, self.rest)
            stats.iterations += 1
            stats.max_displacement = disp
            if p.convergence == "displacement" and disp < thr_d:
                stats.converged, stats.reason = True, "displacement"
                break
        else:
            stats.converged = p.convergence == "iterations"
        stats.energy = energy
        stats.max_force = float(_norm(force).max()) if force.size else 0.0
        return x, vel, stats

    def solve(self, posed_joints: np.ndarray, *, edits: EditStack | EditTerms | None = None, time: float = 0.0,
              initial: np.ndarray | None = None) -> tuple[np.ndarray, SpringStats]:
        """Deform for one pose: initial skinning, then spring iterations. Returns float32 (V,3) and stats.

        edits: an EditStack (evaluated at clip `time`) or ready EditTerms. initial: start positions overriding
        the initial skinning (e.g. LBS from skinning.py)."""
        posed = np.asarray(posed_joints, np.float64)
        fr = self.frame(posed)
        terms = self.edit_terms(edits, fr, time)
        warm = False
        if initial is not None:
            x0 = np.asarray(initial, np.float64)
            if x0.shape != (self.topology.n_control, 3):
                raise ValueError(f"initial has shape {x0.shape}; valid: ({self.topology.n_control}, 3)")
        else:
            x0, warm = self._start(posed, fr, terms)
        vel = None
        if self.params.mode == "dependent" and self.state.velocities is not None:
            vel = self.state.velocities
        x, vel_out, stats = self.iterate(x0, fr, vel=vel, edit=terms)
        carried = x
        if self.params.contact:  # the optional contact term after the iterations (contact.py)
            x = self.contact(x, fr)
            # as the GPU graph: the frame-dependent loop feeds back the contact's output, a warm start carries
            # the spring stage's own
            carried = x if self.params.mode == "dependent" else carried
        stats.warm = warm
        self.state = SpringState(positions=carried, velocities=vel_out, frame=fr, joints=posed.copy(),
                                 frames=self.state.frames + 1, last=stats)
        with np.errstate(under="ignore"):  # components below float32's range (e.g. 1e-50) become 0: harmless
            return x.astype(np.float32), stats

    def contact(self, x: np.ndarray, frame: PoseFrame) -> np.ndarray:
        """The contact term's passes (engine.skinning.contact) over positions x (V,3) in `frame`, with this
        deformer's contact parameters (whether or not `params.contact` is on)."""
        from engine.skinning.contact import contact_rest, resolve_contacts

        p = self.params
        key = (p.contact_thickness, p.contact_passes)
        if getattr(self, "_contact_key", None) != key:
            self._contact_rest = contact_rest(self.topology, float(p.contact_thickness), int(p.contact_passes))
            self._contact_key = key
        return resolve_contacts(x, frame.attach, self._contact_rest)[0]

    def reset(self) -> None:
        """Forget last frame (dependent mode, and a warm start, start again from the initial skinning: call it
        after a seek or a clip change when the pose may have jumped by less than warm_limit)."""
        self.state = SpringState()
