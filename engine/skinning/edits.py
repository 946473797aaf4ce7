"""Surface edits as data (research ch. 5.2 and 7.4): regions of interest, encoded targets, keyed weights.

A `SurfaceEdit` is a region of interest over control points, split into three disjoint index sets:

  kinematic  vertices the artist moved; each carries a target
  passive    free vertices the solver moves to follow the kinematic ones
  static     the ROI boundary (engine.skinning.roi: the ring just outside kinematic + passive), held in place

The spring deformer honours the sets: while an edit with stiffness > 0 is in the stack (whatever its keyed
weight, so a weight key passing through 0 causes no jump), its static vertices are held where the frame's
initial skinning puts them (no force, no step, no velocity; in the numpy reference and the shaders alike).
The static ring separates the region from the rest of the mesh in the spring graph, so only kinematic and
passive vertices move with the edit; vertices outside the region solve exactly as if the edit's targets were
the vertices' own positions. A vertex static in one edit but kinematic or passive in another is not held.
An edit without a static set holds nothing (then its influence spreads over the whole mesh).

Targets are not stored as world positions. As in the research ("encodes the kinematic vertex positions as
scale vector angles and lengths relative to their attachment points"), each kinematic target is stored as
the scale vector it asks for, expressed in the bind frame of the bone the vertex is attached to:

    target_local_i = R_i(edit pose)^T (v_edit_i - a_i(edit pose))

where a_i is the vertex's posed attachment point and R_i the rotation of its bone's parent joint relative to
bind. The direction of target_local is the scale vector's angle in the bone frame and its norm the length.
Decoding in any other pose gives v'_i = a_i(pose) + R_i(pose) target_local_i, so an edit made in one pose
follows the skeleton in every other pose.

Profiles (research 5.1, eq. 24, and 5.2): an edit may instead carry a `Profile` and, per kinematic vertex, its
stroke parameter t_i in [0, 1] and a unit direction encoded like the targets (R_i^T d). Then `target_local`
is the encoded rest place of the vertex and the target adds amount(t_i, time) along the direction:

  bulge  height * ease(1 - |2 t - 1|): 0 at the stroke's ends, `height` at its middle; the default easing
         "quadOut" is the research's parabola 1 - (2t - 1)^2 (its -(0.5 - t)^2 + 1.25 scale, as a height);
         any easing of Fig. 22 (EASINGS), or with ramp=True ease(t) rising along the whole stroke
  sine   height * sin(2 pi (waves t - speed time)): a wave travelling along the stroke over clip time
         (Fig. 26)

The direction is the surface normal at the stroke's middle ("normal") or each vertex's own scale vector
("radial", eq. 24's |s_i| scaled). An offset stroke (targets mapped by the stroke parameter, as joints are in
posing) gives plain targets: `offset_targets`.

Spread (issue 26 item 5): a profile edit may also carry, per passive vertex, its encoded rest place
`passive_local`, a stroke parameter `passive_param` and a direction `passive_direction` scaled by a falloff
w in [0, 1] (engine.skinning.roi.passive_falloff: 1 beside the handles, 0 at the held ring, zero slope at both);
the passive vertices are then pulled, with the edit's stiffness, towards rest + amount(t) w direction, so the
profile spreads over the region. Why: pulled by a band of handles alone, the springs answer with a ridge: the
bone, radial and length springs anchor every passive vertex to its own bone, so the region does not rise with
the handles but slides towards them, and the surface folds along the band's rim (on the humanoid's forearm at
80 mm: dihedral changes of 50+ deg, crumpled shading). engine.authoring.surface builds its profile edits this
way and measures the stroke parameters along the stroke extended to the held ring (`region_params`), so the
profile rises from the region's border instead of standing on a kink of its slope at the stroke's ends (the
parabola's 4 h / L there was the largest fold of small bulges). Everything is a ratio of lengths or an encoded
offset, so it holds in any units. An edit without these arrays (older files) pulls its handles only.

Every edit has a stiffness and a weight keyable over clip time (piecewise linear keys, clamped outside the
keyed range; no keys means weight 1), so a breathing edit can be animated.

`EditStack` holds several, possibly overlapping, edits. Per frame it reduces them to per-vertex arrays
(`EditTerms`): K_i = sum_e k_e w_e, C_i = sum_e k_e w_e v'_e,i and Q_i = sum_e k_e w_e |v'_e,i|^2, so the
attraction force sum_e k_e w_e (v'_e,i - v_i) = C_i - K_i v_i is exact for any overlap and is one vec4 per
vertex on the GPU, and the held flags of the static sets. Everything serialises to plain dicts of lists
(JSON/TOML friendly).

Why one file: the edit's data, its per-frame reduction and its file format (validation of every key as written)
change together whenever an edit gains a field (as the spread did); split, each change would touch three
modules that only make sense side by side.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from engine.skinning.springs.editterms import EditTerms
from engine.skinning.types import bone_endpoints, joint_rotations

__all__ = ["SurfaceEdit", "EditTerms", "EditStack", "encode_targets", "decode_targets", "EASINGS", "PROFILE_TYPES",
           "DIRECTIONS", "Profile", "offset_targets", "edit_pose", "EDITS_FORMAT", "EDITS_VERSION", "SurfaceEdits",
           "edits_document", "parse_edits_document", "read_edits_file", "MAX_EDITS_BYTES"]

MAX_STIFFNESS = 1e9  # per unit mass; far stiffer edits only overflow float32 on the GPU
MAX_TARGET = 1e6     # metres: an encoded target farther from its attachment is a broken file, not an edit
MAX_WEIGHT = 1e3     # keyed weights (negative ones invert an edit)
MAX_HEIGHT = 1e3     # profile heights, metres
EDITS_FORMAT = "skinengine-edits"
EDITS_VERSION = 1
PROFILE_TYPES = ("bulge", "sine", "offset")
DIRECTIONS = ("normal", "radial")


def _ease_in_out(f: Any) -> Any:
    return lambda u: np.where(u < 0.5, 0.5 * f(2.0 * u), 1.0 - 0.5 * f(2.0 - 2.0 * u))


#: Easing functions of the research's Fig. 22 (as web animation names them): [0, 1] -> [0, 1], 0 -> 0, 1 -> 1.
EASINGS: dict[str, Any] = {
    "linear": lambda u: u,
    "quadIn": lambda u: u ** 2,
    "quadOut": lambda u: 1.0 - (1.0 - u) ** 2,
    "quadInOut": _ease_in_out(lambda u: u ** 2),
    "cubicIn": lambda u: u ** 3,
    "cubicOut": lambda u: 1.0 - (1.0 - u) ** 3,
    "cubicInOut": _ease_in_out(lambda u: u ** 3),
    "quarticIn": lambda u: u ** 4,
    "quarticOut": lambda u: 1.0 - (1.0 - u) ** 4,
    "quarticInOut": _ease_in_out(lambda u: u ** 4),
    "sineIn": lambda u: 1.0 - np.cos(0.5 * np.pi * u),
    "sineOut": lambda u: np.sin(0.5 * np.pi * u),
    "sineInOut": lambda u: 0.5 - 0.5 * np.cos(np.pi * u),
}


def _finite(d: dict, key: str, default: float, where: str, *, positive: bool = False) -> float:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(float(v)):
        raise ValueError(f"{where}.{key} = {v!r}; valid: a finite number")
    if abs(float(v)) > MAX_HEIGHT * 1e3 or (key == "height" and abs(float(v)) > MAX_HEIGHT):
        raise ValueError(f"{where}.{key} = {v!r}; valid: a finite number of magnitude up to "
                         f"{MAX_HEIGHT if key == 'height' else MAX_HEIGHT * 1e3:g}")
    if positive and not float(v) > 0.0:
        raise ValueError(f"{where}.{key} = {v!r}; valid: a number > 0")
    return float(v)


@dataclass(frozen=True)
class Profile:
    """How an edit's kinematic vertices move along its stroke (see the module docstring).

    type "bulge" | "sine" | "offset"; height metres (bulge: at the middle; sine: amplitude); ease a name of
    EASINGS (bulge); ramp (bulge: rise along the stroke instead of towards its middle); direction "normal" |
    "radial"; waves (sine: wavelengths along the stroke, > 0); speed (sine: waves per second of clip time).
    "offset" has no amount: its targets come from an offset stroke (`offset_targets`).
    """

    type: str = "bulge"
    height: float = 0.0
    ease: str = "quadOut"
    ramp: bool = False
    direction: str = "normal"
    waves: float = 1.0
    speed: float = 0.0

    def __post_init__(self) -> None:
        if self.type not in PROFILE_TYPES:
            raise ValueError(f"profile type {self.type!r} is unknown; valid: {', '.join(PROFILE_TYPES)}")
        if self.ease not in EASINGS:
            raise ValueError(f"profile ease {self.ease!r} is unknown; valid: {', '.join(EASINGS)}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"profile direction {self.direction!r} is unknown; valid: {', '.join(DIRECTIONS)}")
        for key in ("height", "waves", "speed"):
            _finite({key: getattr(self, key)}, key, 0.0, "profile", positive=key == "waves")
        if not isinstance(self.ramp, (bool, np.bool_)):
            raise ValueError(f"profile.ramp = {self.ramp!r}; valid: true or false")

    def amount(self, t: np.ndarray, time: float = 0.0) -> np.ndarray:
        """Displacement (K,) in metres along the direction for stroke parameters t (K,) at clip ``time``."""
        u = np.clip(np.asarray(t, np.float64), 0.0, 1.0)
        if self.type == "bulge":
            return self.height * EASINGS[self.ease](u if self.ramp else 1.0 - np.abs(2.0 * u - 1.0))
        if self.type == "sine":
            return self.height * np.sin(2.0 * np.pi * (self.waves * u - self.speed * float(time)))
        return np.zeros_like(u)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"type": self.type, "height": self.height, "direction": self.direction}
        if self.type == "bulge":
            d.update(ease=self.ease, ramp=bool(self.ramp))
        elif self.type == "sine":
            d.update(waves=self.waves, speed=self.speed)
        return d

    @classmethod
    def from_dict(cls, d: Any, where: str = "profile") -> Profile:
        """Validate a profile as written in a strokes or edits file; ValueError naming the place and value."""
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected an object with a type ({', '.join(PROFILE_TYPES)}), got {d!r}")
        kind = d.get("type")
        if kind not in PROFILE_TYPES:
            raise ValueError(f"{where}.type: unknown profile type {kind!r}; valid: {', '.join(PROFILE_TYPES)}")
        known = {"bulge": {"type", "height", "ease", "ramp", "direction"},
                 "sine": {"type", "height", "waves", "speed", "direction"},
                 "offset": {"type", "height", "direction"}}[kind]
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r} for a {kind} profile; valid: {sorted(known)}")
        if kind != "offset" and "height" not in d:
            raise ValueError(f"{where}: a {kind} profile needs a height (metres)")
        height = _finite(d, "height", 0.0, where)
        waves = _finite(d, "waves", 1.0, where, positive=True)
        speed = _finite(d, "speed", 0.0, where)
        ease = d.get("ease", "quadOut")
        if ease not in EASINGS:
            raise ValueError(f"{where}.ease: unknown easing {ease!r}; valid: {', '.join(EASINGS)}")
        direction = d.get("direction", "normal")
        if direction not in DIRECTIONS:
            raise ValueError(f"{where}.direction: unknown direction {direction!r}; valid: {', '.join(DIRECTIONS)}")
        ramp = d.get("ramp", False)
        if not isinstance(ramp, bool):
            raise ValueError(f"{where}.ramp = {ramp!r}; valid: true or false")
        return cls(kind, height, ease, ramp, direction, waves, speed)


def offset_targets(points: np.ndarray, t: np.ndarray, baseline: Any, offset: Any,
                   reference: np.ndarray | None = None) -> np.ndarray:
    """Targets (K,3) of points (K,3) at baseline parameters t (K,) carried from a baseline stroke to an offset
    stroke (3D engine.input.strokes.Stroke), as joints are in line-of-action posing: with d = p - b(t) and
    R = F_o(t) F_b(t)^T (rotation-minimising frames from the same ``reference`` normal), p' = o(t) + R d."""
    p = np.asarray(points, np.float64)
    tt = np.asarray(t, np.float64).reshape(-1)
    fb = np.asarray(baseline.frames(tt, reference)).reshape(-1, 3, 3)
    fo = np.asarray(offset.frames(tt, reference)).reshape(-1, 3, 3)
    d = p - np.asarray(baseline.point(tt)).reshape(-1, 3)
    rot = np.einsum("kij,klj->kil", fo, fb)
    return np.asarray(offset.point(tt)).reshape(-1, 3) + np.einsum("kij,kj->ki", rot, d)


def edit_pose(binding: Any, bind_joints: np.ndarray, posed_joints: np.ndarray, *,
              index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(attach (V,3), rot (V,3,3)): every control point's posed attachment and the rotation of its bone relative
    to bind, for joint world matrices ``posed_joints`` (J,4,4): what edits are encoded against and decoded in
    (the spring deformer's `pose_frame` before its joint blend: ``plain_attach`` and ``bone_rot``; an edit
    follows its vertex's own bone rigidly, also near a joint). ``index``: only these rows are computed (the
    others are zero), e.g. the kinematic vertices of the edits, per frame."""
    posed = np.asarray(posed_joints, np.float64)
    p, c = bone_endpoints(binding.bones, posed)
    bone = np.asarray(binding.bone)
    n = bone.shape[0]
    rows = np.arange(n) if index is None else np.unique(np.asarray(index, np.int64))
    b = bone[rows]
    t = np.asarray(binding.t, np.float64)[rows, None]
    rot_bone = joint_rotations(bind_joints, posed)[binding.bones.parent_joint]
    if index is None:
        return p[b].astype(np.float64) + t * (c[b].astype(np.float64) - p[b]), rot_bone[b]
    attach, rot = np.zeros((n, 3)), np.zeros((n, 3, 3))
    attach[rows] = p[b].astype(np.float64) + t * (c[b].astype(np.float64) - p[b])
    rot[rows] = rot_bone[b]
    return attach, rot


def _index_array(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value if value is not None else [], dtype=np.int64).reshape(-1)
    if arr.size and arr.min() < 0:
        raise ValueError(f"{what} holds a negative vertex index {int(arr.min())}; valid: indices >= 0")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{what} repeats vertex indices; each vertex may appear once")
    return arr.astype(np.int32)


def encode_targets(targets: np.ndarray, attach: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """Encode world targets (K,3) of vertices with posed attachments (K,3) and bone rotations (K,3,3)
    as scale vectors in the bind frame of each vertex's bone: R^T (target - attach)."""
    return np.einsum("kji,kj->ki", np.asarray(rot, np.float64),
                     np.asarray(targets, np.float64) - np.asarray(attach, np.float64))


def decode_targets(target_local: np.ndarray, attach: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """Inverse of `encode_targets` in the current pose: attach + R target_local, (K,3)."""
    return np.asarray(attach, np.float64) + np.einsum("kij,kj->ki", np.asarray(rot, np.float64),
                                                      np.asarray(target_local, np.float64))


@dataclass
class SurfaceEdit:
    """One surface edit: ROI sets, encoded kinematic targets, stiffness and keyed weight.

    kinematic (K,) int, target_local (K,3) (see module docstring), passive (P,), static (S,) int,
    stiffness >= 0, keys (N,2) rows of (clip time in s, weight) with strictly increasing times. With a
    `profile`: param (K,) stroke parameters in [0, 1] and direction_local (K,3) encoded unit directions, and
    target_local is the rest place the profile's amount is added to.
    """

    kinematic: np.ndarray
    target_local: np.ndarray
    passive: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    static: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    stiffness: float = 5.0
    keys: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.float64))
    name: str = ""
    profile: Profile | None = None
    param: np.ndarray | None = None
    direction_local: np.ndarray | None = None
    passive_local: np.ndarray | None = None
    passive_param: np.ndarray | None = None
    passive_direction: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.kinematic = _index_array(self.kinematic, "SurfaceEdit.kinematic")
        self.passive = _index_array(self.passive, "SurfaceEdit.passive")
        self.static = _index_array(self.static, "SurfaceEdit.static")
        tl = np.asarray(self.target_local, np.float64)
        if tl.shape != (self.kinematic.size, 3):
            raise ValueError(f"SurfaceEdit.target_local has shape {tl.shape}; valid: ({self.kinematic.size}, 3), "
                             "one scale vector per kinematic vertex")
        if not np.all(np.isfinite(tl)) or (tl.size and float(np.abs(tl).max()) > MAX_TARGET):
            raise ValueError(f"SurfaceEdit.target_local holds non-finite values or values beyond {MAX_TARGET:g} m; "
                             "valid: finite floats (metres)")
        self.target_local = tl
        for a, b, na, nb in ((self.kinematic, self.passive, "kinematic", "passive"),
                             (self.kinematic, self.static, "kinematic", "static"),
                             (self.passive, self.static, "passive", "static")):
            both = np.intersect1d(a, b)
            if both.size:
                raise ValueError(f"SurfaceEdit {na} and {nb} sets share vertices {both[:8].tolist()}; "
                                 "valid: disjoint sets")
        k = float(self.stiffness)
        if not (math.isfinite(k) and 0.0 <= k <= MAX_STIFFNESS):
            raise ValueError(f"SurfaceEdit.stiffness = {self.stiffness!r}; valid: in [0, {MAX_STIFFNESS:g}]")
        self.stiffness = k
        keys = np.asarray(self.keys, np.float64)
        if keys.size == 0:
            keys = np.zeros((0, 2), np.float64)
        if keys.ndim != 2 or keys.shape[1] != 2:
            raise ValueError(f"SurfaceEdit.keys has shape {keys.shape}; valid: (N, 2) rows of (time, weight)")
        if not np.all(np.isfinite(keys)) or (keys.size and float(np.abs(keys[:, 1]).max()) > MAX_WEIGHT):
            raise ValueError(f"SurfaceEdit.keys holds non-finite values or weights beyond +-{MAX_WEIGHT:g}; valid: "
                             "finite (time, weight) pairs")
        if keys.shape[0] > 1 and np.any(np.diff(keys[:, 0]) <= 0.0):
            raise ValueError(f"SurfaceEdit.keys times {keys[:, 0].tolist()} are not strictly increasing")
        self.keys = keys
        if self.profile is not None:
            if not isinstance(self.profile, Profile):
                raise TypeError(f"SurfaceEdit.profile must be a Profile, got {type(self.profile).__name__}")
            k_count = self.kinematic.size
            par = np.asarray(self.param if self.param is not None else [], np.float64).reshape(-1)
            dirs = np.asarray(self.direction_local if self.direction_local is not None else np.zeros((0, 3)),
                              np.float64)
            if par.shape != (k_count,) or not np.all(np.isfinite(par)) or np.any((par < 0) | (par > 1)):
                raise ValueError(f"SurfaceEdit.param must be {k_count} stroke parameters in [0, 1] (one per "
                                 f"kinematic vertex), got shape {par.shape}")
            if dirs.shape != (k_count, 3) or not np.all(np.isfinite(dirs)):
                raise ValueError(f"SurfaceEdit.direction_local must be ({k_count}, 3) finite, got {dirs.shape}")
            self.param, self.direction_local = par, dirs
        elif self.param is not None or self.direction_local is not None:
            raise ValueError("SurfaceEdit.param and direction_local belong to a profile; give profile= too")
        self._check_spread()

    def _check_spread(self) -> None:
        """The passive targets (all three arrays or none, with a profile, one row per passive vertex)."""
        given = [a is not None for a in (self.passive_local, self.passive_param, self.passive_direction)]
        if not any(given):
            return
        if not all(given) or self.profile is None:
            raise ValueError("SurfaceEdit.passive_local, passive_param and passive_direction go together, with a "
                             "profile (the passive vertices' targets)")
        p = self.passive.size
        local = np.asarray(self.passive_local, np.float64).reshape(-1, 3) if p else np.zeros((0, 3))
        par = np.asarray(self.passive_param, np.float64).reshape(-1)
        dirs = np.asarray(self.passive_direction, np.float64).reshape(-1, 3) if p else np.zeros((0, 3))
        if local.shape != (p, 3) or dirs.shape != (p, 3) or par.shape != (p,):
            raise ValueError(f"SurfaceEdit.passive_local / passive_param / passive_direction must be ({p}, 3), ({p},) "
                             f"and ({p}, 3) (one row per passive vertex), got {local.shape}, {par.shape}, "
                             f"{dirs.shape}")
        if not (np.all(np.isfinite(local)) and np.all(np.isfinite(dirs)) and np.all((par >= 0) & (par <= 1))):
            raise ValueError("SurfaceEdit.passive_local / passive_direction must be finite and passive_param in "
                             "[0, 1]")
        if (local.size and float(np.abs(local).max()) > MAX_TARGET) or (dirs.size and float(np.abs(dirs).max()) > 1.0):
            raise ValueError(f"SurfaceEdit.passive_local beyond {MAX_TARGET:g} m or passive_direction longer than 1; "
                             "valid: finite metres, directions scaled by a falloff in [0, 1]")
        self.passive_local, self.passive_param, self.passive_direction = local, par, dirs

    @property
    def spreads(self) -> bool:
        """Whether the passive vertices carry targets too (the profile spread over the region, `from_profile`)."""
        return self.passive_local is not None and self.passive.size > 0

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def from_world(cls, kinematic: np.ndarray, targets: np.ndarray, attach: np.ndarray, rot: np.ndarray, *,
                   passive: np.ndarray | None = None, static: np.ndarray | None = None, stiffness: float = 5.0,
                   keys: np.ndarray | None = None, name: str = "") -> SurfaceEdit:
        """Make an edit from world-space targets (K,3) of `kinematic` vertices, given the pose the edit was
        made in as per-vertex posed attachments `attach` (V,3) and bone rotations `rot` (V,3,3)."""
        kin = _index_array(kinematic, "SurfaceEdit.kinematic")
        local = encode_targets(targets, np.asarray(attach)[kin], np.asarray(rot)[kin])
        return cls(kin, local, passive=passive if passive is not None else np.zeros(0, np.int32),
                   static=static if static is not None else np.zeros(0, np.int32), stiffness=stiffness,
                   keys=keys if keys is not None else np.zeros((0, 2)), name=name)

    # -- evaluation -----------------------------------------------------------------------------------------
    @property
    def lengths(self) -> np.ndarray:
        """Encoded scale-vector length of every kinematic target, (K,)."""
        return np.linalg.norm(self.target_local, axis=1)

    def weight(self, time: float) -> float:
        """Keyed weight at clip time `time` (linear between keys, held outside them; 1 without keys)."""
        if self.keys.shape[0] == 0:
            return 1.0
        return float(np.interp(float(time), self.keys[:, 0], self.keys[:, 1]))

    def local_targets(self, time: float = 0.0) -> np.ndarray:
        """Encoded targets (K,3) at clip ``time``: target_local plus the profile's amount along its direction."""
        if self.profile is None or self.param is None or self.direction_local is None:
            return self.target_local
        return self.target_local + self.profile.amount(self.param, time)[:, None] * self.direction_local

    def targets(self, attach: np.ndarray, rot: np.ndarray, time: float = 0.0) -> np.ndarray:
        """World targets (K,3) of the kinematic vertices for per-vertex posed attachments and rotations."""
        return decode_targets(self.local_targets(time), np.asarray(attach)[self.kinematic],
                              np.asarray(rot)[self.kinematic])

    def passive_targets(self, attach: np.ndarray, rot: np.ndarray, time: float = 0.0) -> np.ndarray:
        """World targets (P,3) of the passive vertices of a spreading edit (`spreads`): each one's encoded rest
        place plus the profile's amount at its stroke parameter along its falloff-scaled direction; (0,3) when
        the edit does not spread."""
        if not self.spreads or self.profile is None:
            return np.zeros((0, 3))
        assert self.passive_local is not None and self.passive_param is not None
        local = self.passive_local + self.profile.amount(self.passive_param, time)[:, None] * self.passive_direction
        return decode_targets(local, np.asarray(attach)[self.passive], np.asarray(rot)[self.passive])

    def redirected(self, direction: np.ndarray, rot: np.ndarray) -> SurfaceEdit:
        """A copy whose profile lifts along the world unit ``direction`` (3,), encoded with the bone rotations
        ``rot`` (V,3,3) of the pose it is given in; the passive directions keep their falloff (their length)."""
        d = np.asarray(direction, np.float64).reshape(3)
        r = np.asarray(rot, np.float64)
        out = replace(self, direction_local=np.einsum("kji,j->ki", r[self.kinematic], d))
        if self.spreads:
            assert self.passive_direction is not None
            w = np.linalg.norm(self.passive_direction, axis=1, keepdims=True)
            out = replace(out, passive_direction=np.einsum("kji,j->ki", r[self.passive], d) * w)
        return out

    def rest_places(self, base: np.ndarray, attach: np.ndarray, rot: np.ndarray) -> np.ndarray:
        """Control points (V,3) ``base`` with this profile edit's kinematic (and spread passive) vertices put back
        at their encoded rest places in the pose of ``attach`` / ``rot``: the surface without the edit, to
        rebuild it on (a new region). Non-profile edits store no rest: ``base`` unchanged."""
        out = np.array(base, np.float64)
        if self.profile is None:
            return out
        out[self.kinematic] = decode_targets(self.target_local, np.asarray(attach)[self.kinematic],
                                             np.asarray(rot)[self.kinematic])
        if self.spreads:
            assert self.passive_local is not None
            out[self.passive] = decode_targets(self.passive_local, np.asarray(attach)[self.passive],
                                               np.asarray(rot)[self.passive])
        return out

    @property
    def handles(self) -> np.ndarray:
        """The vertices this edit pulls towards targets: kinematic, and passive too when it spreads."""
        return np.concatenate([self.kinematic, self.passive]) if self.spreads else self.kinematic

    @classmethod
    def from_profile(cls, kinematic: np.ndarray, rest: np.ndarray, param: np.ndarray, profile: Profile,
                     attach: np.ndarray, rot: np.ndarray, *, normal: np.ndarray | None = None,
                     passive: np.ndarray | None = None, static: np.ndarray | None = None, stiffness: float = 5.0,
                     keys: np.ndarray | None = None, name: str = "", passive_rest: np.ndarray | None = None,
                     passive_param: np.ndarray | None = None, passive_weight: np.ndarray | None = None
                     ) -> SurfaceEdit:
        """An edit moving the `kinematic` vertices from their world places `rest` (K,3) by a profile along
        the stroke (stroke parameters `param` (K,)): along the world unit `normal` (3,) (direction "normal")
        or along each vertex's scale vector ("radial"). attach (V,3) / rot (V,3,3): the pose of `rest`.

        With `passive_rest` (P,3) (the passive vertices' world places), `passive_param` (P,) and
        `passive_weight` (P,) in [0, 1] (engine.skinning.roi.passive_falloff) the profile spreads over the
        passive region: each passive vertex is pulled towards its place plus weight x amount at its parameter
        (see the module docstring, "Spread")."""
        kin = _index_array(kinematic, "SurfaceEdit.kinematic")
        pas = _index_array(passive if passive is not None else [], "SurfaceEdit.passive")
        a, r = np.asarray(attach, np.float64)[kin], np.asarray(rot, np.float64)[kin]
        rest = np.asarray(rest, np.float64).reshape(-1, 3)

        def directions(places: np.ndarray, att: np.ndarray) -> np.ndarray:
            if profile.direction == "normal":
                n = np.asarray(normal if normal is not None else [np.nan] * 3, np.float64).reshape(-1)
                length = float(np.linalg.norm(n)) if n.shape == (3,) and np.all(np.isfinite(n)) else 0.0
                if not length > 0.0:
                    raise ValueError(f"a profile along the surface normal needs a finite non-zero normal, got "
                                     f"{normal!r}")
                return np.broadcast_to(n / length, places.shape)
            s = places - att
            ln = np.linalg.norm(s, axis=1, keepdims=True)
            return np.divide(s, ln, out=np.zeros_like(s), where=ln > 0.0)

        spread: dict[str, Any] = {}
        if passive_rest is not None:
            ap, rp = np.asarray(attach, np.float64)[pas], np.asarray(rot, np.float64)[pas]
            prest = np.asarray(passive_rest, np.float64).reshape(-1, 3)
            w = np.clip(np.asarray(passive_weight if passive_weight is not None else np.ones(pas.size),
                                   np.float64).reshape(-1), 0.0, 1.0)
            if prest.shape != (pas.size, 3) or w.shape != (pas.size,):
                raise ValueError(f"passive_rest / passive_weight must be ({pas.size}, 3) / ({pas.size},), got "
                                 f"{prest.shape} / {w.shape}")
            spread = dict(passive_local=encode_targets(prest, ap, rp),
                          passive_param=np.clip(np.asarray(passive_param, np.float64).reshape(-1), 0.0, 1.0),
                          passive_direction=np.einsum("kji,kj->ki", rp, directions(prest, ap)) * w[:, None])
        return cls(kin, encode_targets(rest, a, r), passive=pas,
                   static=static if static is not None else np.zeros(0, np.int32), stiffness=stiffness,
                   keys=keys if keys is not None else np.zeros((0, 2)), name=name, profile=profile,
                   param=np.asarray(param, np.float64),
                   direction_local=np.einsum("kji,kj->ki", r, directions(rest, a)), **spread)

    def check(self, n_vertices: int) -> None:
        """Raise ValueError when an index does not fit a mesh of `n_vertices` control points."""
        for name in ("kinematic", "passive", "static"):
            arr = getattr(self, name)
            if arr.size and int(arr.max()) >= n_vertices:
                raise ValueError(f"SurfaceEdit {self.name!r}.{name} index {int(arr.max())} out of range; "
                                 f"valid: 0..{n_vertices - 1}")

    # -- serialisation --------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Plain dict of lists and floats (JSON/TOML friendly)."""
        return {
            "name": self.name,
            "stiffness": self.stiffness,
            "kinematic": self.kinematic.tolist(),
            "target_local": self.target_local.tolist(),
            "passive": self.passive.tolist(),
            "static": self.static.tolist(),
            "keys": self.keys.tolist(),
            **({} if self.profile is None or self.param is None or self.direction_local is None else {
                "profile": self.profile.to_dict(), "param": self.param.tolist(),
                "direction_local": self.direction_local.tolist()}),
            **({} if self.passive_local is None or self.passive_param is None or self.passive_direction is None
               else {"passive_local": self.passive_local.tolist(), "passive_param": self.passive_param.tolist(),
                     "passive_direction": self.passive_direction.tolist()}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> SurfaceEdit:
        """Inverse of `to_dict`; raises ValueError naming a missing or unknown key."""
        if not isinstance(d, dict):
            raise ValueError(f"a surface edit must be a dict, got {type(d).__name__}")
        known = {"name", "stiffness", "kinematic", "target_local", "passive", "static", "keys", "profile", "param",
                 "direction_local", "passive_local", "passive_param", "passive_direction"}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown surface edit keys {sorted(unknown)}; valid: {sorted(known)}")
        for key in ("kinematic", "target_local"):
            if key not in d:
                raise ValueError(f"surface edit is missing {key!r}")
        tl = np.asarray(d["target_local"], np.float64)
        if tl.size == 0:
            tl = tl.reshape(0, 3)
        profile = Profile.from_dict(d["profile"]) if d.get("profile") is not None else None
        dirs = d.get("direction_local")
        dirs = None if dirs is None else np.asarray(dirs, np.float64).reshape(-1, 3)
        return cls(kinematic=d["kinematic"], target_local=tl, passive=d.get("passive", []),
                   static=d.get("static", []), stiffness=d.get("stiffness", 5.0),
                   keys=d.get("keys", []), name=str(d.get("name", "")), profile=profile,
                   param=d.get("param"), direction_local=dirs,
                   **{k: None if d.get(k) is None else np.asarray(d[k], np.float64)
                      for k in ("passive_local", "passive_param", "passive_direction")})


class EditStack:
    """An ordered list of surface edits whose attraction forces add up (research 5.2: each ROI's
    stiffness acts as its weight; overlapping edits sum)."""

    def __init__(self, edits: list[SurfaceEdit] | None = None) -> None:
        self.edits: list[SurfaceEdit] = list(edits or [])

    def add(self, edit: SurfaceEdit) -> SurfaceEdit:
        self.edits.append(edit)
        return edit

    def __len__(self) -> int:
        return len(self.edits)

    def __iter__(self) -> Iterator[SurfaceEdit]:
        return iter(self.edits)

    def terms(self, n_vertices: int, attach: np.ndarray, rot: np.ndarray, time: float = 0.0) -> EditTerms:
        """Reduce every edit at clip `time` to per-vertex `EditTerms` for posed attachments `attach` (V,3) and
        bone rotations `rot` (V,3,3). The Python loop is over edits (a handful), not vertices."""
        out = EditTerms.empty(n_vertices)
        out.held = self.held(n_vertices)
        for edit in self.edits:
            edit.check(n_vertices)
            k = edit.stiffness * edit.weight(time)
            if k == 0.0 or edit.kinematic.size == 0:
                continue
            tgt = edit.targets(attach, rot, time)
            idx = edit.kinematic  # unique within one edit, so fancy-index += is exact
            if edit.spreads:  # the passive vertices' targets (kinematic and passive are disjoint)
                tgt = np.concatenate([tgt, edit.passive_targets(attach, rot, time)])
                idx = edit.handles
            out.stiffness[idx] += k
            out.weighted_target[idx] += k * tgt
            out.q[idx] += k * np.einsum("ij,ij->i", tgt, tgt)
        return out

    def held(self, n_vertices: int) -> np.ndarray:
        """(V,) bool: static vertices of the edits with stiffness > 0 that no such edit makes kinematic or
        passive (weights do not matter, so a keyed weight through 0 does not release the boundary)."""
        held = np.zeros(n_vertices, bool)
        free = np.zeros(n_vertices, bool)
        for edit in self.edits:
            if edit.stiffness > 0.0 and edit.kinematic.size:
                edit.check(n_vertices)
                held[edit.static] = True
                free[edit.kinematic] = True
                free[edit.passive] = True
        return held & ~free

    def to_dict(self) -> dict:
        return {"edits": [e.to_dict() for e in self.edits]}

    @classmethod
    def from_dict(cls, d: dict) -> EditStack:
        if not isinstance(d, dict) or set(d) - {"edits"}:
            raise ValueError(f"an edit stack must be {{'edits': [...]}}, "
                             f"got keys {sorted(d) if isinstance(d, dict) else d!r}")
        return cls([SurfaceEdit.from_dict(e) for e in d.get("edits", [])])


@dataclass
class SurfaceEdits:
    """Component: a character's surface edits, one `EditStack` per skinned primitive (keyed by the primitive's
    engine.components.PrimitiveKey). Plain data; the session reduces it to spring forces every frame."""

    stacks: dict[Any, EditStack] = field(default_factory=dict)


def edits_document(stacks: dict[str, EditStack], *, asset: str = "", **meta: Any) -> dict:
    """The edits file (version EDITS_VERSION) for stacks keyed by export-frame primitive names
    (``node{n}_mesh{m}_prim{p}``): ``{"format": "skinengine-edits", "version": 1, "asset": NAME,
    "primitives": {KEY: {"edits": [SurfaceEdit.to_dict(), ...]}}, ...meta}``."""
    return {"format": EDITS_FORMAT, "version": EDITS_VERSION, "asset": asset, **meta,
            "primitives": {k: s.to_dict() for k, s in stacks.items()}}


#: largest edits file read (engine.textfile), and the most vertex indices / keys one edit may list
MAX_EDITS_BYTES = 256 << 20
MAX_INDEX = 2**31 - 1
_JSON_NUMBER = (int, float)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_number(v: Any, where: str, limit: float) -> None:
    ok = isinstance(v, _JSON_NUMBER) and not isinstance(v, bool) and (
        abs(v) <= limit if isinstance(v, int) else math.isfinite(v) and abs(v) <= limit)
    if not ok:
        raise ValueError(f"{where} = {_short(v)}; valid: a finite number within +-{limit:g}")


def _json_rows(v: Any, where: str, width: int | None, limit: float, *, integral: bool = False) -> None:
    """A list of numbers (width None) or of ``width``-number lists, each a JSON number within ``limit``;
    ``integral``: whole numbers (vertex indices) >= 0."""
    if not isinstance(v, list):
        raise ValueError(f"{where} = {_short(v)}; valid: a list")
    for i, row in enumerate(v):
        items = [(f"{where}[{i}]", row)]
        if width is not None:
            if not isinstance(row, list) or len(row) != width:
                raise ValueError(f"{where}[{i}] = {_short(row)}; valid: a list of {width} numbers")
            items = [(f"{where}[{i}][{j}]", x) for j, x in enumerate(row)]
        for at, x in items:
            if integral:
                if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= limit:
                    raise ValueError(f"{at} = {_short(x)}; valid: a whole vertex index in [0, {int(limit)}]")
            else:
                _json_number(x, at, limit)


def _check_edit_json(e: Any, where: str) -> None:
    """JSON types and ranges of one surface edit as written, before SurfaceEdit.from_dict converts it: indices
    whole and >= 0, numbers finite (strings and booleans are not numbers), rows of the right width."""
    if not isinstance(e, dict):
        raise ValueError(f"{where} = {_short(e)}; valid: an object (a surface edit)")
    if "name" in e and not isinstance(e["name"], str):
        raise ValueError(f"{where}.name = {_short(e['name'])}; valid: a string")
    if "stiffness" in e:
        _json_number(e["stiffness"], f"{where}.stiffness", MAX_STIFFNESS)
    for key in ("kinematic", "passive", "static"):
        if key in e:
            _json_rows(e[key], f"{where}.{key}", None, MAX_INDEX, integral=True)
    if "target_local" in e:
        _json_rows(e["target_local"], f"{where}.target_local", 3, MAX_TARGET)
    if "keys" in e:
        _json_rows(e["keys"], f"{where}.keys", 2, 1e9)
    if e.get("param") is not None:
        _json_rows(e["param"], f"{where}.param", None, 1.0)
    if e.get("direction_local") is not None:
        _json_rows(e["direction_local"], f"{where}.direction_local", 3, MAX_TARGET)
    if e.get("passive_local") is not None:
        _json_rows(e["passive_local"], f"{where}.passive_local", 3, MAX_TARGET)
    if e.get("passive_param") is not None:
        _json_rows(e["passive_param"], f"{where}.passive_param", None, 1.0)
    if e.get("passive_direction") is not None:
        _json_rows(e["passive_direction"], f"{where}.passive_direction", 3, 1.0)
    prof = e.get("profile")
    if isinstance(prof, dict):
        for k, v in prof.items():
            if k not in ("type", "ease", "direction", "ramp") and not isinstance(v, (str, bool)):
                _json_number(v, f"{where}.profile.{k}", MAX_HEIGHT * 1e3)


def read_edits_file(path: Any) -> dict[str, EditStack]:
    """Read an edits file the careful way (engine.textfile: a regular UTF-8 JSON file of at most
    MAX_EDITS_BYTES) and parse it (:func:`parse_edits_document`); ValueError ``NAME: place: ...``."""
    from pathlib import Path

    from engine.textfile import load_json

    p = Path(path)
    doc = load_json(p, "edits file", max_bytes=MAX_EDITS_BYTES)
    try:
        return parse_edits_document(doc)
    except ValueError as e:
        raise ValueError(f"{p.name}: {e}") from None


def parse_edits_document(doc: Any) -> dict[str, EditStack]:
    """Validate an edits file (see `edits_document`) and return its stacks by primitive name; ValueError
    naming the place of the first problem."""
    if not isinstance(doc, dict):
        raise ValueError(f"an edits file must be a JSON object, got {type(doc).__name__}")
    if doc.get("format") != EDITS_FORMAT:
        raise ValueError(f"format: expected {EDITS_FORMAT!r}, got {doc.get('format')!r}")
    if doc.get("version") != EDITS_VERSION:
        raise ValueError(f"version: unsupported version {doc.get('version')!r} (this engine reads "
                         f"version {EDITS_VERSION})")
    prims = doc.get("primitives")
    if not isinstance(prims, dict):
        raise ValueError(f"primitives: expected an object of primitive name -> edits, got {prims!r}")
    out = {}
    for key, stack in prims.items():
        if isinstance(stack, dict) and isinstance(stack.get("edits"), list):
            for i, e in enumerate(stack["edits"]):
                _check_edit_json(e, f"primitives.{key}.edits[{i}]")
        elif isinstance(stack, dict) and "edits" in stack:
            raise ValueError(f"primitives.{key}.edits = {_short(stack['edits'])}; valid: a list of surface edits")
        try:
            out[str(key)] = EditStack.from_dict(stack)
        except (ValueError, TypeError, OverflowError) as e:
            raise ValueError(f"primitives.{key}: {e}") from None
    return out
