"""Surface edits as data (research ch. 5.2 and 7.4): regions of interest, encoded targets, keyed weights.

A `SurfaceEdit` is a region of interest over control points, split into three disjoint index sets:

  kinematic  vertices the artist moved; each carries a target
  passive    free vertices the solver moves (the spring deformer moves every vertex anyway; the set
             matters to the Laplacian baseline and to tools that draw the ROI)
  static     the ROI boundary, held where it is by the Laplacian baseline

Targets are not stored as world positions. As in the research ("encodes the kinematic vertex positions as
scale vector angles and lengths relative to their attachment points"), each kinematic target is stored as
the scale vector it asks for, expressed in the bind frame of the bone the vertex is attached to:

    target_local_i = R_i(edit pose)^T (v_edit_i - a_i(edit pose))

where a_i is the vertex's posed attachment point and R_i the rotation of its bone's parent joint relative to
bind. The direction of target_local is the scale vector's angle in the bone frame and its norm the length.
Decoding in any other pose gives v'_i = a_i(pose) + R_i(pose) target_local_i, so an edit made in one pose
follows the skeleton in every other pose.

Every edit has a stiffness and a weight keyable over clip time (piecewise linear keys, clamped outside the
keyed range; no keys means weight 1), so a breathing edit can be animated.

`EditStack` holds several, possibly overlapping, edits. Per frame it reduces them to three per-vertex arrays
(`EditTerms`): K_i = sum_e k_e w_e, C_i = sum_e k_e w_e v'_e,i and Q_i = sum_e k_e w_e |v'_e,i|^2, so the
attraction force sum_e k_e w_e (v'_e,i - v_i) = C_i - K_i v_i is exact for any overlap and is one vec4 per
vertex on the GPU. Everything serialises to plain dicts of lists (JSON/TOML friendly).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SurfaceEdit", "EditTerms", "EditStack", "encode_targets", "decode_targets"]


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
    stiffness >= 0, keys (N,2) rows of (clip time in s, weight) with strictly increasing times.
    """

    kinematic: np.ndarray
    target_local: np.ndarray
    passive: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    static: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    stiffness: float = 5.0
    keys: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.float64))
    name: str = ""

    def __post_init__(self) -> None:
        self.kinematic = _index_array(self.kinematic, "SurfaceEdit.kinematic")
        self.passive = _index_array(self.passive, "SurfaceEdit.passive")
        self.static = _index_array(self.static, "SurfaceEdit.static")
        tl = np.asarray(self.target_local, np.float64)
        if tl.shape != (self.kinematic.size, 3):
            raise ValueError(f"SurfaceEdit.target_local has shape {tl.shape}; valid: ({self.kinematic.size}, 3), "
                             "one scale vector per kinematic vertex")
        if not np.all(np.isfinite(tl)):
            raise ValueError("SurfaceEdit.target_local holds non-finite values; valid: finite floats")
        self.target_local = tl
        for a, b, na, nb in ((self.kinematic, self.passive, "kinematic", "passive"),
                             (self.kinematic, self.static, "kinematic", "static"),
                             (self.passive, self.static, "passive", "static")):
            both = np.intersect1d(a, b)
            if both.size:
                raise ValueError(f"SurfaceEdit {na} and {nb} sets share vertices {both[:8].tolist()}; "
                                 "valid: disjoint sets")
        k = float(self.stiffness)
        if not (math.isfinite(k) and k >= 0.0):
            raise ValueError(f"SurfaceEdit.stiffness = {self.stiffness!r}; valid: finite and >= 0")
        self.stiffness = k
        keys = np.asarray(self.keys, np.float64)
        if keys.size == 0:
            keys = np.zeros((0, 2), np.float64)
        if keys.ndim != 2 or keys.shape[1] != 2:
            raise ValueError(f"SurfaceEdit.keys has shape {keys.shape}; valid: (N, 2) rows of (time, weight)")
        if not np.all(np.isfinite(keys)):
            raise ValueError("SurfaceEdit.keys holds non-finite values; valid: finite (time, weight) pairs")
        if keys.shape[0] > 1 and np.any(np.diff(keys[:, 0]) <= 0.0):
            raise ValueError(f"SurfaceEdit.keys times {keys[:, 0].tolist()} are not strictly increasing")
        self.keys = keys

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

    def targets(self, attach: np.ndarray, rot: np.ndarray) -> np.ndarray:
        """World targets (K,3) of the kinematic vertices for per-vertex posed attachments and rotations."""
        return decode_targets(self.target_local, np.asarray(attach)[self.kinematic],
                              np.asarray(rot)[self.kinematic])

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
        }

    @classmethod
    def from_dict(cls, d: dict) -> SurfaceEdit:
        """Inverse of `to_dict`; raises ValueError naming a missing or unknown key."""
        if not isinstance(d, dict):
            raise ValueError(f"a surface edit must be a dict, got {type(d).__name__}")
        known = {"name", "stiffness", "kinematic", "target_local", "passive", "static", "keys"}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown surface edit keys {sorted(unknown)}; valid: {sorted(known)}")
        for key in ("kinematic", "target_local"):
            if key not in d:
                raise ValueError(f"surface edit is missing {key!r}")
        tl = np.asarray(d["target_local"], np.float64)
        if tl.size == 0:
            tl = tl.reshape(0, 3)
        return cls(kinematic=d["kinematic"], target_local=tl, passive=d.get("passive", []),
                   static=d.get("static", []), stiffness=d.get("stiffness", 5.0),
                   keys=d.get("keys", []), name=str(d.get("name", "")))


@dataclass
class EditTerms:
    """Per-frame reduction of an edit stack: the F_e input of one spring iteration.

    stiffness (V,) K_i = sum k_e w_e; weighted_target (V,3) C_i = sum k_e w_e v'_i; q (V,) sum k_e w_e |v'_i|^2.
    F_e(i) = C_i - K_i v_i; energy = 0.5 sum_i (K_i |v_i|^2 - 2 C_i . v_i + Q_i) >= 0.
    """

    stiffness: np.ndarray
    weighted_target: np.ndarray
    q: np.ndarray

    @classmethod
    def empty(cls, n_vertices: int) -> EditTerms:
        return cls(np.zeros(n_vertices), np.zeros((n_vertices, 3)), np.zeros(n_vertices))

    @property
    def active(self) -> np.ndarray:
        """(V,) bool: vertices that are kinematic in at least one edit with non-zero weight x stiffness."""
        return self.stiffness > 0.0

    def force(self, x: np.ndarray) -> np.ndarray:
        return self.weighted_target - self.stiffness[:, None] * x

    def energy(self, x: np.ndarray) -> float:
        e = self.stiffness * np.einsum("ij,ij->i", x, x) - 2.0 * np.einsum("ij,ij->i", self.weighted_target, x) + self.q
        return 0.5 * float(np.sum(np.maximum(e, 0.0)))


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
        for edit in self.edits:
            edit.check(n_vertices)
            k = edit.stiffness * edit.weight(time)
            if k == 0.0 or edit.kinematic.size == 0:
                continue
            tgt = edit.targets(attach, rot)
            idx = edit.kinematic  # unique within one edit, so fancy-index += is exact
            out.stiffness[idx] += k
            out.weighted_target[idx] += k * tgt
            out.q[idx] += k * np.einsum("ij,ij->i", tgt, tgt)
        return out

    def to_dict(self) -> dict:
        return {"edits": [e.to_dict() for e in self.edits]}

    @classmethod
    def from_dict(cls, d: dict) -> EditStack:
        if not isinstance(d, dict) or set(d) - {"edits"}:
            raise ValueError(f"an edit stack must be {{'edits': [...]}}, "
                             f"got keys {sorted(d) if isinstance(d, dict) else d!r}")
        return cls([SurfaceEdit.from_dict(e) for e in d.get("edits", [])])
