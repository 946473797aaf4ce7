"""A seeded family of test tubes (and their poses) for measuring skinning methods on shapes nobody tuned for.

`tube_family(n, seed)` draws `n` members varying radius, length, ring count, segments per ring, elbow position
and bone count (2-3 bones: 1-2 elbows); member 0 is always the tube of issue 13 (radius 0.5, length 4, 41 rings
of 32, elbow in the middle, 2 bones). Each member is an open tube along +x with a chain of joints on its axis,
smooth LBS/DQS weights over one diameter around every elbow, ring labels (for twist profiles) and a closed
variant (a centre point fanned onto each end ring) for volumes. `tube_poses()` lists the poses (bend 0-150 deg,
twist 0-180 deg, bend+twist, stretch) and `TubeMember.posed_joints` turns one into joint world matrices: every
elbow bends by angle / elbows about +z (so the total bend of the limb is the named angle), twists about its
bone by twist / elbows and scales the offset to its child by the stretch factor. `parts_limb` builds limbs made of
several mesh pieces.

Shapes and poses only: measuring skinning methods on them (`MemberRig`, `family_table`) is
engine/skinning/family.py (assets lie below skinning and import none of it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TubeMember", "TubePose", "tube_grid", "tube_member", "tube_family", "tube_poses", "PartsLimb",
           "parts_limb"]


@dataclass(frozen=True)
class TubePose:
    """A limb pose: total bend (deg, about +z, split over the elbows), total twist (deg, about the bone) and the
    stretch factor of the bone lengths."""

    name: str
    bend: float = 0.0
    twist: float = 0.0
    stretch: float = 1.0


@dataclass
class TubeMember:
    """One generated tube: control-ready arrays (no welding needed: one point per vertex)."""

    name: str
    radius: float
    length: float
    rings: int
    segments: int
    elbows: tuple[float, ...]  # elbow positions along x
    positions: np.ndarray      # (V,3) float32, ring-major
    triangles: np.ndarray      # (T,3) int32 over positions (open tube)
    ring: np.ndarray           # (V,) ring label 0..rings-1
    bind_joints: np.ndarray    # (J,4,4) float64, joint 0 at x=0, one per elbow, J = elbows + 1
    parents: np.ndarray        # (J,) int32
    joints: np.ndarray         # (V,4) uint16 LBS joint indices
    weights: np.ndarray        # (V,4) float32 LBS weights

    @property
    def closed_triangles(self) -> np.ndarray:
        """Triangles closing the tube with two extra points (indices V, V+1: the end-ring centres, see
        `closed_positions`), outward-facing, for volumes."""
        v = self.positions.shape[0]
        s = np.arange(self.segments)
        first = np.stack([np.full(self.segments, v), (s + 1) % self.segments, s], 1)
        top = (self.rings - 1) * self.segments
        last = np.stack([np.full(self.segments, v + 1), top + s, top + (s + 1) % self.segments], 1)
        return np.concatenate([self.triangles, first, last]).astype(np.int64)

    def closed_positions(self, x: np.ndarray) -> np.ndarray:
        """Points x (V,3) with the two end-ring centres appended (for `closed_triangles`)."""
        x = np.asarray(x, np.float64)
        return np.concatenate([x, x[self.ring == 0].mean(0)[None], x[self.ring == self.rings - 1].mean(0)[None]])

    def posed_joints(self, pose: TubePose) -> np.ndarray:
        """Joint world matrices (J,4,4) for `pose`."""
        n_el = len(self.elbows)
        bend = np.radians(pose.bend) / n_el
        twist = np.radians(pose.twist) / n_el
        local = np.tile(np.eye(4), (self.bind_joints.shape[0], 1, 1))
        local[0] = self.bind_joints[0]
        world = local.copy()
        for k in range(1, self.bind_joints.shape[0]):
            off = self.bind_joints[k, :3, 3] - self.bind_joints[k - 1, :3, 3]
            local[k, :3, :3] = _rot_z(bend) @ _rot_x(twist)
            local[k, :3, 3] = off * pose.stretch
            world[k] = world[self.parents[k]] @ local[k]
        return world


def _rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _rot_x(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def tube_grid(radius: float, length: float, rings: int, segments: int) -> tuple[np.ndarray, np.ndarray]:
    """An open tube along +x: `rings` rings of `segments` points (ring-major, (rings * segments, 3) float64,
    ring k at x = k length / (rings - 1)) and two triangles per quad ((T,3) int32, outward-facing)."""
    xs = np.linspace(0.0, length, rings)
    al = 2 * np.pi * np.arange(segments) / segments
    pos = np.stack(np.broadcast_arrays(xs[:, None], radius * np.cos(al)[None], radius * np.sin(al)[None]),
                   -1).reshape(-1, 3)
    k, m = (a.ravel() for a in np.meshgrid(np.arange(rings - 1), np.arange(segments), indexing="ij"))
    m1 = (m + 1) % segments
    a, b, c, d = k * segments + m, k * segments + m1, (k + 1) * segments + m1, (k + 1) * segments + m
    return pos, np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)]).astype(np.int32)


def tube_member(name: str, *, radius: float = 0.5, length: float = 4.0, rings: int = 41, segments: int = 32,
                elbows: tuple[float, ...] = (0.5,)) -> TubeMember:
    """One open tube along +x; `elbows` are the elbow positions as fractions of the length (1 or 2 of them,
    increasing, inside (0, 1)). LBS weights blend linearly over one diameter centred on each elbow."""
    if not (radius > 0 and length > 0):
        raise ValueError(f"radius and length must be > 0, got {radius!r}, {length!r}")
    if rings < 3 or segments < 3:
        raise ValueError(f"rings and segments must be >= 3, got {rings!r}, {segments!r}")
    fr = tuple(float(e) for e in elbows)
    if not (1 <= len(fr) <= 2) or any(not 0.0 < e < 1.0 for e in fr) or list(fr) != sorted(fr):
        raise ValueError(f"elbows must be 1-2 increasing fractions in (0, 1), got {elbows!r}")
    pos, tri = tube_grid(radius, length, rings, segments)
    ex = [e * length for e in fr]
    nj = len(ex) + 1
    bind_joints = np.tile(np.eye(4), (nj, 1, 1))
    bind_joints[1:, 0, 3] = ex
    parents = np.arange(-1, nj - 1).astype(np.int32)
    x = pos[:, 0]
    # weight of joint k+1 over joint k: linear ramp over one diameter around elbow k (weights sum to 1)
    ramps = [np.clip((x - (e - radius)) / (2 * radius), 0.0, 1.0) for e in ex]
    w_full = np.zeros((pos.shape[0], nj))
    prev = np.ones_like(x)
    for kk, r in enumerate(ramps):
        w_full[:, kk] = prev * (1.0 - r) if kk == 0 else (prev - r).clip(0.0)
        prev = r
    w_full[:, -1] = prev
    w_full = np.clip(w_full, 0.0, None)
    w_full /= w_full.sum(1, keepdims=True)
    order = np.argsort(-w_full, axis=1, kind="stable")[:, :4]
    joints = np.zeros((pos.shape[0], 4), np.uint16)
    weights = np.zeros((pos.shape[0], 4), np.float32)
    take = min(4, nj)
    joints[:, :take] = order[:, :take]
    weights[:, :take] = np.take_along_axis(w_full, order[:, :take], 1)
    return TubeMember(name, float(radius), float(length), int(rings), int(segments), tuple(ex),
                      pos.astype(np.float32), tri, np.repeat(np.arange(rings), segments), bind_joints, parents,
                      joints, weights)


def tube_family(n: int = 12, seed: int = 13) -> list[TubeMember]:
    """`n` (>= 1) seeded members; member 0 is issue 13's tube, the others draw radius 0.2-0.8, length 2.5-6
    (at least 3 diameters per bone), 24-61 rings, 12-40 segments, 1 elbow at 0.35-0.65 of the length or 2
    elbows (3 bones) at ~1/3 and ~2/3."""
    if int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    rng = np.random.default_rng(seed)
    out = [tube_member("t00-issue13")]
    for i in range(1, int(n)):
        bones = 3 if i % 3 == 2 else 2
        radius = float(rng.uniform(0.2, 0.8))
        length = float(max(rng.uniform(2.5, 6.0), bones * 6.0 * radius))
        rings = int(rng.integers(24, 62))
        segments = int(rng.integers(12, 41))
        if bones == 2:
            elbows: tuple[float, ...] = (float(rng.uniform(0.35, 0.65)),)
        else:
            elbows = (float(rng.uniform(0.3, 0.38)), float(rng.uniform(0.62, 0.7)))
        out.append(tube_member(f"t{i:02d}-r{radius:.2f}-l{length:.1f}-{rings}x{segments}-{bones}b",
                               radius=radius, length=length, rings=rings, segments=segments, elbows=elbows))
    return out


def tube_poses() -> list[TubePose]:
    """The measured poses: bends 0-150 deg, twists 45-180 deg, bend + twist, and a 1.3x stretch."""
    poses = [TubePose(f"bend{b:g}", bend=b) for b in (0.0, 45.0, 67.5, 90.0, 120.0, 135.0, 150.0)]
    poses += [TubePose(f"twist{t:g}", twist=t) for t in (45.0, 90.0, 135.0, 180.0)]
    poses += [TubePose("bend90+twist90", bend=90.0, twist=90.0), TubePose("stretch1.3", stretch=1.3)]
    return poses


# ---------------------------------------------------------------------------------------------------------
# multi-part limbs (rigs made of several mesh pieces, as real characters often are)
# ---------------------------------------------------------------------------------------------------------
@dataclass
class PartsLimb:
    """A three-joint limb (shoulder at x = 0, elbow, wrist; bones along +x) skinned by several separate open
    pieces. kind "panels": rigid panels (square tubes), each weighted to the one joint it rides on, with gaps at
    the joints; "shells": round open shells with rims that overlap across the joints, LBS weights ramping over
    one diameter around each joint. piece (V,) labels the pieces, rim (V,) marks their open boundary rings."""

    kind: str
    positions: np.ndarray   # (V,3) float32
    triangles: np.ndarray   # (T,3) int32
    piece: np.ndarray       # (V,) int64
    rim: np.ndarray         # (V,) bool
    bind_joints: np.ndarray  # (3,4,4)
    parents: np.ndarray     # (3,) int32
    joints: np.ndarray      # (V,4) uint16
    weights: np.ndarray     # (V,4) float32

    def posed_joints(self, elbow: float, wrist: float = 0.0) -> np.ndarray:
        """Joint world matrices with the elbow and wrist bent by the given angles (deg, about +z)."""
        world = self.bind_joints.copy()
        for k, deg in ((1, elbow), (2, wrist)):
            local = np.eye(4)
            local[:3, :3] = _rot_z(np.radians(deg))
            local[:3, 3] = self.bind_joints[k, :3, 3] - self.bind_joints[k - 1, :3, 3]
            world[k] = world[k - 1] @ local
        return world


def parts_limb(kind: str, *, radius: float = 0.3, upper: float = 2.0, fore: float = 1.8, hand: float = 0.8
               ) -> PartsLimb:
    """A `PartsLimb` of `kind` "panels" or "shells" (see there) with the given radius and bone lengths."""
    if kind not in ("panels", "shells"):
        raise ValueError(f"kind = {kind!r}; valid: panels, shells")
    if not (radius > 0 and min(upper, fore, hand) > 2 * radius):
        raise ValueError(f"radius {radius!r} must be > 0 and every bone longer than one diameter")
    ends = np.array([0.0, upper, upper + fore, upper + fore + hand])
    gap = 0.25 * radius
    if kind == "panels":  # (start, end, joint, radius): two panels per long bone, one on the hand
        spans = [(0.0, upper / 2 - gap, 0), (upper / 2, upper - gap, 0), (upper + gap, upper + fore / 2, 1),
                 (upper + fore / 2 + gap, ends[2] - gap, 1), (ends[2] + gap, ends[3], 2)]
        segments, shrink = 4, 0.97
    else:  # shells overlapping across the joints by one radius on each side
        spans = [(0.0, upper + radius, 0), (upper - radius, ends[2] + radius, 1), (ends[2] - radius, ends[3], 2)]
        segments, shrink = 16, 0.93
    pos_l, tri_l, piece_l, rim_l = [], [], [], []
    base = 0
    for k, (x0, x1, _) in enumerate(spans):
        rings = max(3, int(round((x1 - x0) / (0.5 * radius))) + 1)
        p, t = tube_grid(radius * shrink ** k, x1 - x0, rings, segments)
        p[:, 0] += x0
        pos_l.append(p)
        tri_l.append(t + base)
        piece_l.append(np.full(len(p), k))
        rim_l.append(np.isin(np.arange(len(p)) // segments, (0, rings - 1)))
        base += len(p)
    pos = np.concatenate(pos_l)
    x = pos[:, 0]
    bind_joints = np.tile(np.eye(4), (3, 1, 1))
    bind_joints[1:, 0, 3] = ends[1:3]
    w = np.zeros((len(pos), 3))
    piece = np.concatenate(piece_l)
    if kind == "panels":
        w[np.arange(len(pos)), np.array([s[2] for s in spans])[piece]] = 1.0
    else:  # ramps over one diameter around the elbow and the wrist
        r1 = np.clip((x - (ends[1] - radius)) / (2 * radius), 0.0, 1.0)
        r2 = np.clip((x - (ends[2] - radius)) / (2 * radius), 0.0, 1.0)
        w[:, 0], w[:, 1], w[:, 2] = 1.0 - r1, r1 - r2, r2
    joints = np.zeros((len(pos), 4), np.uint16)
    weights = np.zeros((len(pos), 4), np.float32)
    joints[:, :3] = np.arange(3)
    weights[:, :3] = w
    return PartsLimb(kind, pos.astype(np.float32), np.concatenate(tri_l).astype(np.int32), piece,
                     np.concatenate(rim_l), bind_joints, np.arange(-1, 2).astype(np.int32), joints, weights)
