"""A seeded family of test tubes (and their poses) for measuring skinning methods on shapes nobody tuned for.

`tube_family(n, seed)` draws `n` members varying radius, length, ring count, segments per ring, elbow position
and bone count (2-3 bones: 1-2 elbows); member 0 is always the tube of issue 13 (radius 0.5, length 4, 41 rings
of 32, elbow in the middle, 2 bones). Each member is an open tube along +x with a chain of joints on its axis,
smooth LBS/DQS weights over one diameter around every elbow, ring labels (for twist profiles) and a closed
variant (a centre point fanned onto each end ring) for volumes. `tube_poses()` lists the poses (bend 0-150 deg,
twist 0-180 deg, bend+twist, stretch) and `TubeMember.posed_joints` turns one into joint world matrices: every
elbow bends by angle / elbows about +z (so the total bend of the limb is the named angle), twists about its
bone by twist / elbows and scales the offset to its child by the stretch factor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TubeMember", "TubePose", "tube_grid", "tube_member", "tube_family", "tube_poses", "METHODS", "MemberRig",
           "family_table", "format_family_table", "TABLE_COLUMNS", "PartsLimb", "parts_limb",
           "CONTACT_METHOD"]


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
# measuring methods on the family (the table of issue 13)
# ---------------------------------------------------------------------------------------------------------
METHODS = ("lbs", "dqs", "springs")
"""Methods `deform_member` runs: glTF-weight LBS and DQS, and the spring deformer (numpy reference)."""
CONTACT_METHOD = "springs+contact"
"""The spring deformer with its contact term on (`SpringParams.contact`), also accepted by `MemberRig.deform`."""


class MemberRig:
    """A member's control mesh and attachment binding as a new user gets them (meshprep, binding with the
    default config: planar dividers and smoothing), and its spring deformers per parameter set."""

    def __init__(self, member: TubeMember) -> None:
        from engine.skinning.binding import bind
        from engine.skinning.meshprep import prepare_mesh

        self.member = member
        self.topology = prepare_mesh(member.positions, member.triangles)
        if self.topology.n_control != member.positions.shape[0]:
            raise ValueError(f"{member.name}: meshprep welded points; a tube member has one point per vertex")
        self.binding = bind(self.topology, member.bind_joints.astype(np.float32), member.parents)
        self.bind_positions = member.positions.astype(np.float64)
        self.bind_volume = _closed_volume(member, self.bind_positions)

    def deform(self, pose: TubePose, method: str, params: Any = None) -> np.ndarray:
        """(V,3) float64 control points of `method` (one of METHODS, or CONTACT_METHOD) in `pose`; params:
        SpringParams for "springs" and "springs+contact" (None: the defaults; the latter switches contact on)."""
        from engine.skinning.skinning import dqs, lbs
        from engine.skinning.springs import SpringDeformer, SpringParams

        m = self.member
        posed = m.posed_joints(pose)
        if method in ("lbs", "dqs"):
            skin = (posed @ np.linalg.inv(m.bind_joints)).astype(np.float32)
            fn = lbs if method == "lbs" else dqs
            return np.asarray(fn(m.positions, m.joints, m.weights, skin), np.float64)
        if method not in ("springs", CONTACT_METHOD):
            raise ValueError(f"method = {method!r}; valid: {', '.join(METHODS + (CONTACT_METHOD,))}")
        p = params or SpringParams()
        if method == CONTACT_METHOD:
            p = p.replace(contact=True)
        d = SpringDeformer(self.topology, self.binding, m.bind_joints, m.parents, p,
                           joints=m.joints, weights=m.weights)
        x, _ = d.solve(posed)
        return np.asarray(x, np.float64)

    def measure(self, x: np.ndarray, pose: TubePose) -> dict:
        """`engine.skinning.metrics.deformation_metrics` of x (ring twist included) with the closed volume
        ratio ("volume_ratio"), the twist reaching the tip ("twist_tip", deg: the pose's twist of the tip bone plus
        the tip ring's own turn about that bone, so a ring that follows its bone reads the full twist; the
        metrics' "twist_total" is the turn between the first and the last ring, which also counts any drift of
        the root ring), the smallest
        distance to the posed skeleton over the radius within one diameter of an elbow ("radius_min", 1 = kept)
        and the largest relative spread of a ring's distances from its centre ("ring_spread", 0 = round)."""
        from engine.skinning.metrics import deformation_metrics

        m = self.member
        x = np.asarray(x, np.float64)
        out = deformation_metrics(x, self.bind_positions, self.topology.triangles, rings=m.ring)
        out["volume_ratio"] = _closed_volume(m, x) / self.bind_volume
        joints = m.posed_joints(pose)
        out["twist_tip"] = abs(pose.twist + _ring_turn(x, self.bind_positions, m.ring == m.rings - 1,
                                                        joints[-1] @ np.linalg.inv(m.bind_joints[-1])))
        posed = joints[:, :3, 3]
        near = np.min(np.abs(self.bind_positions[:, 0][:, None] - np.asarray(m.elbows)[None]), 1) <= 2 * m.radius
        out["radius_min"] = float(_polyline_distance(x[near], posed).min()) / m.radius
        spread = 0.0
        for k in range(m.rings):
            pts = x[m.ring == k]
            d = np.linalg.norm(pts - pts.mean(0), axis=1)
            spread = max(spread, float((d.max() - d.min()) / d.mean()))
        out["ring_spread"] = spread
        return out


def _ring_turn(x: np.ndarray, bind: np.ndarray, ring: np.ndarray, skin: np.ndarray) -> float:
    """Degrees the points `ring` of x turned about the tube's axis (+x at bind) beyond the rigid motion `skin`
    (4,4): x mapped back through skin^-1, each point's angle about the ring centre against bind, averaged."""
    inv = np.linalg.inv(skin)
    back = x[ring] @ inv[:3, :3].T + inv[:3, 3]
    pb, px = bind[ring] - bind[ring].mean(0), back - back.mean(0)
    turn = np.arctan2(px[:, 2], px[:, 1]) - np.arctan2(pb[:, 2], pb[:, 1])
    return float(np.degrees(np.angle(np.exp(1j * turn).mean())))


def _closed_volume(member: TubeMember, x: np.ndarray) -> float:
    from engine.skinning.metrics import volume

    return volume(member.closed_positions(x), member.closed_triangles)


def _polyline_distance(points: np.ndarray, joints: np.ndarray) -> np.ndarray:
    """(N,) distance of every point to the polyline through the joint positions (J,3) in order."""
    best = np.full(points.shape[0], np.inf)
    for a, b in zip(joints[:-1], joints[1:]):
        d = b - a
        t = np.clip((points - a) @ d / max(float(d @ d), 1e-300), 0.0, 1.0)
        best = np.minimum(best, np.linalg.norm(points - (a + t[:, None] * d), axis=1))
    return best


def family_table(members: list[TubeMember], poses: list[TubePose], methods: tuple[str, ...] = METHODS,
                 params: Any = None) -> list[dict]:
    """One row per member, pose and method: {"member", "pose", "method"} and the `MemberRig.measure` values."""
    rows = []
    for m in members:
        rig = MemberRig(m)
        for pose in poses:
            for method in methods:
                row = {"member": m.name, "pose": pose.name, "method": method}
                row.update(rig.measure(rig.deform(pose, method, params), pose))
                rows.append(row)
    return rows


TABLE_COLUMNS = (("intersecting_pairs", "pairs", "{:d}"), ("crease_max", "crease", "{:.1f}"),
                 ("twist_step_max", "twist/ring", "{:.1f}"), ("twist_tip", "twist tip", "{:.1f}"),
                 ("radius_min", "r min/R", "{:.3f}"), ("volume_ratio", "volume", "{:.3f}"),
                 ("ring_spread", "ring spread", "{:.3f}"))


_SHORT = {CONTACT_METHOD: "contact"}  # column labels of methods whose first 7 letters are another's


def format_family_table(rows: list[dict]) -> str:
    """The rows as a fixed-width text table, one line per member and pose, the methods side by side."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    keyed = {(r["member"], r["pose"], r["method"]): r for r in rows}
    head = f"{'member':34s} {'pose':15s} " + " | ".join(
        " ".join(f"{_SHORT.get(method, method[:7]) + ' ' + label:>17s}" for _, label, _ in TABLE_COLUMNS[:1]) + " " +
        " ".join(f"{label:>11s}" for _, label, _ in TABLE_COLUMNS[1:]) for method in methods)
    lines = [head]
    for member, pose in dict.fromkeys((r["member"], r["pose"]) for r in rows):
        cells = []
        for method in methods:
            r = keyed[(member, pose, method)]
            first = TABLE_COLUMNS[0]
            cells.append(f"{first[2].format(r[first[0]]):>17s} " +
                         " ".join(f"{fmt.format(r[key]):>11s}" for key, _, fmt in TABLE_COLUMNS[1:]))
        lines.append(f"{member[:34]:34s} {pose:15s} " + " | ".join(cells))
    return "\n".join(lines)


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
