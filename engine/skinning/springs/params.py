"""Spring parameters: `SpringParams` (defaults, ranges, validation, dict form) and the deformer's constants.

The constants are shared with the GPU stages (engine/skinning/gpu/layouts.py turns STEP_SAFETY and VOLUME_LAMBDA
into GLSL defines), so they are defined once, here. What each force and switch does: docs/springs.md.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from engine.skinning.contact import CONTACT_MAX_PASSES

__all__ = [
    "INTEGRATORS", "ACCELERATIONS", "CONVERGENCE_SCHEMES", "MODES", "INITIAL_SKINNING", "BONE_MODES", "S_FLOOR",
    "STEP_SAFETY", "JOINT_BLEND", "WARM_LIMIT", "LAMBDA_COLUMNS", "STIFFNESSES", "VOLUME_LAMBDA", "VOLUME_MIN_RATIO",
    "VOLUME_MIN_POINTS", "RIGID_WEIGHT", "TOUCH", "TOUCH_CORNER", "DIFF_LAMBDA", "DIFF_FULL",
    "SpringParams",
]

INTEGRATORS = ("explicit", "semi_implicit")
CONVERGENCE_SCHEMES = ("iterations", "displacement", "force", "energy")
MODES = ("independent", "dependent")
INITIAL_SKINNING = ("rigid", "lbs", "dqs")
BONE_MODES = ("frame", "cone")
ACCELERATIONS = ("none", "momentum")
S_FLOOR = 0.5  # |s_i| denominators are floored at S_FLOOR * r_i (bind length)
STEP_SAFETY = 0.9
"""Step limiting keeps dt_i lambda_i <= STEP_SAFETY (explicit; semi-implicit dt_i^2 lambda_i <= 2 STEP_SAFETY):
a margin below the monotone bound 1 (instability starts at 2; semi-implicit 4)."""
JOINT_BLEND = 3.0
"""Joint blending reaches JOINT_BLEND x the bind |s_i| of a vertex from its joint (capped at half the bone); the
blended frames then turn slower than 1 / |s_i| per unit length for bends up to 180 deg (docs/springs.md)."""
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
    "k_d": (0.0, _INF, True, False, False),
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
STIFFNESSES = ("k_s", "k_l", "k_t", "k_b", "k_r", "k_e", "k_v", "k_d")
"""The stiffness parameters, one per force (each with its switch `use_*`)."""
_SWITCH = {"k_s": "use_s", "k_l": "use_l", "k_t": "use_t", "k_b": "use_b", "k_r": "use_r", "k_e": "use_e",
           "k_v": "use_v", "k_d": "use_d"}
VOLUME_LAMBDA = 2.0
"""Step-limiting coefficient of the volume term per unit k_v (its force moves a vertex by k_v delta_r along its
normal; delta_r depends on the vertex itself and, through the region's volume, on every other vertex of the region
with weights summing to about one: 1 + 1)."""
DIFF_LAMBDA = 2.0
"""Step-limiting coefficient of the differential term per unit k_d (its force k_d (m_i + R_i delta0_i - x_i)
has -1 on the diagonal and neighbour weights summing to 1 off it: 1 + 1)."""
DIFF_FULL = 1.0
"""The differential term acts fully (k_d) at a point whose mean bind edge length h_i is at least DIFF_FULL times its
bind distance r_i from its bone, and with k_d (h_i / (DIFF_FULL r_i))^DIFF_POWER below (`rest.diff_scales`): an
edge as long as the limb's radius is where one face spans the cross-section (a cylinder of six sides or fewer)."""
DIFF_POWER = 3.0
"""How fast the differential term's share falls where the limb is sampled finer than DIFF_FULL (measured in
docs/springs.md, "The differential term's share": with 2 and k_d = 10 the Khronos rigs kept two poses worse than
LBS, with 3 and k_d = 20 none, and the tube family's claims hold with both)."""
VOLUME_MIN_RATIO = 1e-3
VOLUME_MIN_POINTS = 24
"""A bone region's volume term needs at least this many points of its shell (a closed sleeve of three rings of
eight): on coarser regions (a low-poly rig's 2-14 points per bone) the skeleton-relative volume is dominated by
the region's open borders with its neighbours, and the pressure bent faces that LBS keeps flat (issue 26:
Khronos' Fox)."""
TOUCH = 0.1
"""A control point lying within this share of its mean bind edge length of a face it is not a corner of touches
that face at bind and is glued to it (`springs.touch`): sheets modelled touching (a coarse rig's boxes) move
together there instead of crossing."""
TOUCH_CORNER = 0.5
"""... and lies within this share of its distance to the face's nearest corner from the face: on the face, not
beside one of its points (two points a sliver's short edge apart, or on two rings of a coarse limb, are as near
every face around either)."""
RIGID_WEIGHT = 0.999
"""A control point is bound to one joint when its largest skin weight is at least this share of its weights' sum
(`rest.rigid_points`); a blend of one byte step (1/255) is still a blend."""
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

    step_limit (default on) moves each vertex by its own step dt_i = min(dt, STEP_SAFETY / lambda_i) (see
    docs/springs.md), which makes any dt and stiffness stable on any mesh (no set-up warning then); off gives
    the research's plain update x += dt F, warned about at set-up when dt is past the stable range.

    joint_blend (default on) turns attachments, bone references and the rigid start near an interior joint by a
    share of the rotation across it (see docs/springs.md); off gives the research's per-bone frames.

    k_d (default 20; 0: off; both devices, the GPU's in shaders/deform/spring_differential.glsl) is the
    differential (bending) term: F_i = k_d c_i (m_i + R_i delta0_i - x_i), m_i the mean of the one-ring weighted by
    1 / bind edge length^2, delta0_i = x0_i - m0_i its bind value, R_i the point's frame rotation (`PoseFrame.rot`)
    and c_i = min(1, (h_i / (DIFF_FULL r_i))^DIFF_POWER) its share (`rest.diff_scales`: full where one edge spans
    the limb's radius, fading where the limb is sampled finely): it keeps each point's offset from its neighbours'
    mean as at bind, turned with its frame, which the edge and scale-vector springs alone do not (a flat quad folds
    along its diagonal without changing any edge length; see docs/springs.md, "Why the springs fold the Khronos
    rigs" and "The differential term's share").

    contact (default off) pushes facing sheets of the surface apart after the iterations (contact.py): the gap
    contact_thickness x the mean bind edge length, contact_passes Jacobi passes, then the volume the passes took
    given back on the flanks. Off by default for its cost (docs/springs.md, "Default: off": 1.2x the spring
    iterations' time on every frame where nothing meets, 10-13x where it acts, on llvmpipe).

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
    k_d: float = 20.0  # differential (bending) term, times each point's share rest.diff_scales (0: off)
    use_s: bool = True
    use_l: bool = True
    use_t: bool = True
    use_b: bool = True
    use_r: bool = True
    use_e: bool = True
    use_v: bool = True
    use_d: bool = True
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
