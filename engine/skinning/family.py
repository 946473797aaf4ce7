"""Measuring skinning methods on the generated tube family (the table of issue 13): LBS, DQS and the spring
deformer (numpy reference) deform every member of `engine.assets.gen.family.tube_family` in every pose of
`tube_poses()`, and `MemberRig.measure` reads the deformation metrics, the closed volume, the twist reaching the
tip, the radius kept at the elbows and the roundness of the rings.

The shapes and poses are generated in engine/assets/gen/family.py; this evaluation harness deforms them, so it
lives with the deformers it runs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.assets.gen.family import TubeMember, TubePose
from engine.skinning.binding import bind
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.metrics import deformation_metrics, volume
from engine.skinning.skinning import dqs, lbs
from engine.skinning.springs import SpringDeformer, SpringParams

__all__ = ["METHODS", "CONTACT_METHOD", "MemberRig", "family_table", "format_family_table", "TABLE_COLUMNS"]

METHODS = ("lbs", "dqs", "springs")
"""Methods `deform_member` runs: glTF-weight LBS and DQS, and the spring deformer (numpy reference)."""
CONTACT_METHOD = "springs+contact"
"""The spring deformer with its contact term on (`SpringParams.contact`), also accepted by `MemberRig.deform`."""


class MemberRig:
    """A member's control mesh and attachment binding as a new user gets them (meshprep, binding with the
    default config: planar dividers and smoothing), and its spring deformers per parameter set."""

    def __init__(self, member: TubeMember) -> None:
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
