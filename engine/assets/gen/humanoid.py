"""The project's person: a ~1.75 m figure in an A-pose (facing +Z, feet on y = 0), 21 joints.

Surface: a smooth union of tapered capsules and ellipsoids (see ``sdf``), sampled on a grid of step
``cell`` and meshed with naive surface nets (``isosurface``), then relaxed: a few rounds of Laplacian
smoothing each followed by a Newton projection back onto the implicit surface. Normals are the
normalised field gradient; UVs a front planar projection (no seam).

Weights: every primitive belongs to a joint. At each vertex the joint distance is the smallest distance
of its primitives; weights start as exp(-(d_j - d_min) / sigma) restricted to the closest joint and its
skeleton neighbours (so a thigh never pulls the other thigh), are diffused over the mesh graph for
about ``sigma`` of surface distance (so they never jump across a gap), then cut to the top 4 and
normalised.

Clips (keyframed at 30 fps, LINEAR, first key == last key so they loop): idle (breathing), walk (in
place), wave (right arm), stretch (arms overhead).
"""
from __future__ import annotations

import numpy as np

from engine.assets.gen import sdf
from engine.assets.gen.isosurface import ambiguity_counts, make_manifold, surface_nets, triangulate_quads
from engine.assets.gen.meshutil import topology_report, vertex_adjacency
from engine.assets.gen.rig import (
    Character,
    Rig,
    key_times,
    quat_track,
    rotation_track,
    scale_track,
    smoothstep,
    top4,
    translation_track,
)
from engine.math import quat

HEIGHT = 1.75
ARM_ANGLE = np.radians(42.0)  # A-pose: arms this far from hanging straight down
DEFAULT_CELL = 0.0123  # ~16k vertices
DENSE_CELL = 0.0052  # ~90k vertices

_MIRROR = np.array([-1.0, 1.0, 1.0])


def _arm_dir(side: float) -> np.ndarray:
    return np.array([side * np.sin(ARM_ANGLE), -np.cos(ARM_ANGLE), 0.0])


def skeleton_positions() -> tuple[list[str], list[int], np.ndarray]:
    """Joint names, parents (parents first) and world rest positions (J,3)."""
    d = _arm_dir(1.0)
    shoulder = np.array([0.185, 1.43, -0.015])
    elbow = shoulder + 0.285 * d
    wrist = elbow + 0.255 * d
    left = {
        "shoulder": np.array([0.035, 1.43, -0.01]), "upper_arm": shoulder, "forearm": elbow, "hand": wrist,
        "thigh": np.array([0.10, 0.93, 0.0]), "shin": np.array([0.10, 0.51, 0.012]),
        "foot": np.array([0.105, 0.085, -0.02]), "toe": np.array([0.105, 0.025, 0.125]),
    }
    names = ["hips", "spine", "chest", "neck", "head"]
    parents = [-1, 0, 1, 2, 3]
    pos = [np.array([0, 0.97, 0.0]), np.array([0, 1.08, -0.005]), np.array([0, 1.27, -0.01]),
           np.array([0, 1.47, -0.01]), np.array([0, 1.575, 0.0])]
    for chain, root_parent in ((("shoulder", "upper_arm", "forearm", "hand"), 2),
                               (("thigh", "shin", "foot", "toe"), 0)):
        for side, mirror in (("L", 1.0), ("R", -1.0)):
            for k, part in enumerate(chain):
                names.append(f"{part}_{side}")
                parents.append(root_parent if k == 0 else len(names) - 2)
                pos.append(left[part] * np.array([mirror, 1.0, 1.0]))
    return names, parents, np.array(pos)


def primitives() -> list[sdf.Primitive]:
    """The body as signed-distance primitives, each owned by a joint (left side mirrored to the right)."""
    E, C = sdf.Ellipsoid, sdf.RoundCone
    names, _, jp = skeleton_positions()
    J = {n: jp[i] for i, n in enumerate(names)}
    body = [
        E("hips", 0.05, center=np.array([0, 0.965, -0.005]), radii=np.array([0.158, 0.125, 0.108])),
        E("spine", 0.09, center=np.array([0, 1.11, 0.0]), radii=np.array([0.138, 0.14, 0.098])),
        E("chest", 0.09, center=np.array([0, 1.30, -0.005]), radii=np.array([0.158, 0.16, 0.108])),
        E("chest", 0.05, center=np.array([0, 1.325, 0.035]), radii=np.array([0.13, 0.09, 0.08])),
        C("neck", 0.035, a=np.array([0, 1.42, -0.018]), b=np.array([0, 1.59, -0.005]), ra=0.058, rb=0.05),
        E("head", 0.03, center=np.array([0, 1.645, 0.012]), radii=np.array([0.082, 0.106, 0.1])),
        E("head", 0.035, center=np.array([0, 1.585, 0.04]), radii=np.array([0.062, 0.05, 0.062])),
        E("head", 0.012, center=np.array([0, 1.632, 0.112]), radii=np.array([0.014, 0.026, 0.02])),
    ]
    left: list[sdf.Primitive] = [
        E("hips", 0.04, center=np.array([0.068, 0.93, -0.045]), radii=np.array([0.085, 0.1, 0.075])),
        E("head", 0.01, center=np.array([0.082, 1.64, 0.0]), radii=np.array([0.014, 0.03, 0.02])),
        C("shoulder_L", 0.05, a=np.array([0.03, 1.445, -0.02]), b=J["upper_arm_L"], ra=0.058, rb=0.055),
        C("upper_arm_L", 0.03, a=J["upper_arm_L"], b=J["forearm_L"], ra=0.052, rb=0.04),
        C("forearm_L", 0.025, a=J["forearm_L"], b=J["hand_L"], ra=0.04, rb=0.029),
    ]
    d = _arm_dir(1.0)
    n = np.array([np.cos(ARM_ANGLE), np.sin(ARM_ANGLE), 0.0])  # palm normal (toward the body is -n)
    z = np.array([0.0, 0.0, 1.0])
    w = J["hand_L"]
    left += [
        E("hand_L", 0.02, center=w + 0.085 * d, radii=np.array([0.02, 0.09, 0.045]),
          axes=np.stack([n, d, z], axis=1)),
        C("hand_L", 0.012, a=w + 0.03 * d + 0.03 * z - 0.01 * n, b=w + 0.085 * d + 0.058 * z - 0.012 * n,
          ra=0.016, rb=0.012),
        C("thigh_L", 0.04, a=J["thigh_L"], b=J["shin_L"], ra=0.078, rb=0.053),
        C("shin_L", 0.03, a=J["shin_L"], b=J["foot_L"], ra=0.05, rb=0.034),
        E("shin_L", 0.03, center=np.array([0.10, 0.37, -0.018]), radii=np.array([0.048, 0.11, 0.05])),
        E("foot_L", 0.03, floor=0.0, center=np.array([0.105, 0.045, 0.03]), radii=np.array([0.045, 0.05, 0.1])),
        E("toe_L", 0.025, floor=0.0, center=np.array([0.105, 0.03, 0.145]), radii=np.array([0.043, 0.03, 0.06])),
    ]
    right = []
    for p in left:
        q = _mirror(p)
        right.append(q)
    return body + left + right


def _mirror(p: sdf.Primitive) -> sdf.Primitive:
    import dataclasses

    joint = p.joint[:-2] + "_R" if p.joint.endswith("_L") else p.joint
    if isinstance(p, sdf.RoundCone):
        return dataclasses.replace(p, joint=joint, a=p.a * _MIRROR, b=p.b * _MIRROR)
    if isinstance(p, sdf.Ellipsoid):
        return dataclasses.replace(p, joint=joint, center=p.center * _MIRROR, axes=_MIRROR[:, None] * p.axes)
    raise TypeError(f"cannot mirror {type(p).__name__}")


# ------------------------------------------------------------------------------------------ meshing


def _project(prims: list[sdf.Primitive], p: np.ndarray, h: float, steps: int = 2) -> np.ndarray:
    """Newton steps toward the zero set along the gradient, each step at most h/2 long."""
    for _ in range(steps):
        f = sdf.union_at_points(prims, p)
        g = sdf.gradient_at_points(prims, p, 0.05 * h)
        gg = np.maximum(np.sum(g * g, axis=1), 1e-12)
        step = -(f / gg)[:, None] * g
        length = np.linalg.norm(step, axis=1, keepdims=True)
        p = p + step * np.minimum(1.0, 0.5 * h / np.maximum(length, 1e-12))
    return p


def mesh_surface(prims: list[sdf.Primitive], cell: float, *, relax: int = 3,
                 max_attempts: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Closed, manifold, genus-0 triangle mesh of the union: positions, triangles, normals, report.

    When a grid placement produces an ambiguous face or a surface that is not one closed genus-0
    sheet, the grid is shifted by a fixed fraction of a cell and meshed again (deterministically).
    """
    if not 0.001 <= cell <= 0.1:
        raise ValueError(f"cell must be in [0.001, 0.1] metres, got {cell}")
    lo = np.min([pr.bounds()[0] for pr in prims], axis=0) - 3 * cell
    hi = np.max([pr.bounds()[1] for pr in prims], axis=0) + 3 * cell
    report: dict = {}
    for attempt in range(max_attempts):
        origin = lo - cell * np.array([0.37, 0.23, 0.11]) * attempt
        sx, sy, sz = (int(v) for v in np.ceil((hi - origin) / cell).astype(int) + 1)
        shape = (sx, sy, sz)
        field = sdf.union_on_grid(prims, origin, cell, shape)
        amb = ambiguity_counts(field)["ambiguous_faces"]
        field, flips = make_manifold(field, origin, cell, value_at=lambda q: sdf.union_at_points(prims, q))
        verts, quads = surface_nets(field, origin, cell)
        tris = triangulate_quads(verts, quads)
        report = topology_report(verts, tris)
        report.update(attempt=attempt, ambiguous_faces=amb, flipped_samples=flips, grid=shape)
        ok = (report["boundary_edges"] == 0 and report["nonmanifold_edges"] == 0
              and report["euler"] == 2 and report["components"] == 1 and report["inconsistent_edges"] == 0)
        if ok:
            break
    else:
        raise RuntimeError(f"surface nets gave no closed genus-0 manifold at cell={cell}: {report}")
    adj = vertex_adjacency(len(verts), tris)
    deg = np.asarray(adj.sum(axis=1)).reshape(-1)
    p = _project(prims, verts, cell)
    for _ in range(relax):
        p = 0.5 * p + 0.5 * (adj @ p) / deg[:, None]
        p = _project(prims, p, cell)
    g = sdf.gradient_at_points(prims, p, 0.05 * cell)
    normals = g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-12)
    fn = np.cross(p[tris[:, 1]] - p[tris[:, 0]], p[tris[:, 2]] - p[tris[:, 0]])
    report["flipped_triangles"] = int(np.sum(np.einsum("ij,ij->i", fn, normals[tris].sum(axis=1)) <= 0))
    return p, tris, normals, report


# ------------------------------------------------------------------------------------------ weights


def skin_weights(rig: Rig, prims: list[sdf.Primitive], positions: np.ndarray, triangles: np.ndarray,
                 cell: float, *, sigma: float = 0.012) -> tuple[np.ndarray, np.ndarray]:
    """Top-4 joints (N,4) uint16 and weights (N,4) float32 (see the module docstring)."""
    n = len(positions)
    jd = np.full((n, rig.count), np.inf)
    for pr in prims:
        j = rig.index(pr.joint)
        jd[:, j] = np.minimum(jd[:, j], pr.distance(positions))
    dmin = jd.min(axis=1, keepdims=True)
    w = np.exp(-np.minimum((jd - dmin) / sigma, 50.0))
    # Keep the closest joint and its skeleton neighbours (parent, children).
    near = np.zeros((rig.count, rig.count), bool)
    near[np.arange(rig.count), np.arange(rig.count)] = True
    for c, p in enumerate(rig.parents):
        if p >= 0:
            near[c, p] = near[p, c] = True
    w *= near[np.argmin(jd, axis=1)]
    w /= w.sum(axis=1, keepdims=True)
    adj = vertex_adjacency(n, triangles)
    deg = np.asarray(adj.sum(axis=1)).reshape(-1)
    for _ in range(int(np.ceil((sigma / cell) ** 2))):  # diffuse about sigma metres over the surface
        w = 0.5 * w + 0.5 * (adj @ w) / deg[:, None]
    return top4(w, min_weight=0.01)


# ------------------------------------------------------------------------------------------ clips


def _partial(q: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """Rotations (K,4) doing ``amount`` (K,) of the rotation q (0: identity, 1: q)."""
    axis, angle = quat.to_axis_angle(q)
    return quat.from_axis_angle(axis, angle * amount)


def clips(rig: Rig) -> dict:
    """Authored clips: idle, walk, wave, stretch."""
    sides = (("L", 1.0), ("R", -1.0))
    z = np.array([0.0, 0.0, 1.0])
    x = np.array([1.0, 0.0, 0.0])
    y = np.array([0.0, 1.0, 0.0])
    out = {}

    # idle: one 4 s breath; chest swells (scale), spine/chest sway a little, the head looks around.
    t = key_times(4.0)
    ph = 2 * np.pi * t / 4.0
    breath = 0.5 - 0.5 * np.cos(ph)
    out["idle"] = [
        scale_track(rig, "chest", t, np.stack([1 + 0.012 * breath, 1 + 0.008 * breath, 1 + 0.03 * breath], 1)),
        rotation_track(rig, "spine", t, [(x, np.radians(-1.5) * breath)]),
        rotation_track(rig, "neck", t, [(x, np.radians(1.5) * breath)]),
        rotation_track(rig, "head", t, [(y, np.radians(8) * np.sin(ph)), (x, np.radians(3) * np.sin(2 * ph))]),
    ]
    for side, sgn in sides:
        swing = np.cross(_arm_dir(sgn), z)
        out["idle"].append(rotation_track(rig, f"upper_arm_{side}", t, [(swing, np.radians(2) * np.sin(ph))]))
        out["idle"].append(rotation_track(rig, f"forearm_{side}", t, [(swing, np.radians(4) * breath)]))

    # walk: a 1.1 s in-place cycle. Legs swing +-25 deg (forward swing = negative angle about +X),
    # knees flex most early in the swing phase, arms counter-swing, hips bob twice per cycle.
    period = 1.1
    t = key_times(period)
    ph = 2 * np.pi * t / period
    walk = [
        translation_track(rig, "hips", t, np.stack([0 * t, -0.025 + 0.015 * np.cos(2 * ph), 0 * t], 1)),
        rotation_track(rig, "hips", t, [(y, np.radians(6) * np.sin(ph)), (z, np.radians(3) * np.cos(ph))]),
        rotation_track(rig, "spine", t, [(y, np.radians(-4) * np.sin(ph)), (x, np.radians(3) + 0 * t)]),
        rotation_track(rig, "chest", t, [(y, np.radians(-5) * np.sin(ph))]),
        rotation_track(rig, "neck", t, [(y, np.radians(3) * np.sin(ph))]),
    ]
    for side, sgn in sides:
        phase = ph if sgn > 0 else ph + np.pi
        swing_env = (0.5 + 0.5 * np.cos(phase + 0.3)) ** 3  # early swing phase
        walk.append(rotation_track(rig, f"thigh_{side}", t, [(x, np.radians(-25) * np.sin(phase))]))
        walk.append(rotation_track(rig, f"shin_{side}", t, [(x, np.radians(6 + 55 * swing_env))]))
        walk.append(rotation_track(rig, f"foot_{side}", t, [(x, np.radians(-15 * swing_env + 8 * np.sin(phase)))]))
        d = _arm_dir(sgn)
        swing = np.cross(d, z)  # + angle swings the arm forward
        walk.append(rotation_track(rig, f"upper_arm_{side}", t,
                                   [(z, -sgn * np.radians(30) + 0 * t),
                                    (swing, np.radians(20) * np.sin(phase + np.pi))]))
        walk.append(rotation_track(rig, f"forearm_{side}", t,
                                   [(swing, np.radians(18 + 10 * np.sin(phase + np.pi)))]))
    out["walk"] = walk

    # wave: right arm rises (0.6 s), the forearm waves three times, the arm comes down; 3 s.
    t = key_times(3.0)
    env = smoothstep(0.0, 0.7, t) * (1.0 - smoothstep(2.3, 3.0, t))
    d_r = _arm_dir(-1.0)
    raise_q = quat.between(d_r, np.array([-0.75, 0.5, 0.15]))
    r_up = quat.to_matrix(raise_q)
    fore_q = quat.between(d_r, r_up.T @ np.array([-0.12, 1.0, 0.12]))
    wave_axis = r_up.T @ quat.to_matrix(fore_q).T @ z  # the forearm's own frontal-plane axis
    wiggle = (np.radians(25) * np.sin(2 * np.pi * 1.5 * (t - 0.6))
              * smoothstep(0.45, 0.8, t) * (1 - smoothstep(2.1, 2.45, t)))
    out["wave"] = [
        quat_track(rig, "upper_arm_R", t, _partial(raise_q, env)),
        quat_track(rig, "forearm_R", t, quat.multiply(_partial(fore_q, env), quat.from_axis_angle(wave_axis, wiggle))),
        rotation_track(rig, "hand_R", t, [(np.cross(d_r, z), np.radians(-10) * env)]),
        rotation_track(rig, "shoulder_R", t, [(z, np.radians(-8) * env)]),
        rotation_track(rig, "head", t, [(y, np.radians(-12) * env), (x, np.radians(-4) * env)]),
        rotation_track(rig, "chest", t, [(z, np.radians(3) * env)]),
    ]

    # stretch: both arms go up overhead, the back arches a little, hold, down; 3 s.
    t = key_times(3.0)
    env = smoothstep(0.0, 1.1, t) * (1.0 - smoothstep(1.9, 3.0, t))
    stretch = [
        rotation_track(rig, "spine", t, [(x, np.radians(-6) * env)]),
        rotation_track(rig, "chest", t, [(x, np.radians(-8) * env)]),
        rotation_track(rig, "head", t, [(x, np.radians(-12) * env)]),
    ]
    for side, sgn in sides:
        up = quat.between(_arm_dir(sgn), np.array([sgn * 0.28, 0.96, 0.0]))
        stretch.append(quat_track(rig, f"upper_arm_{side}", t, _partial(up, env)))
        stretch.append(rotation_track(rig, f"shoulder_{side}", t, [(z, sgn * np.radians(12) * env)]))
        stretch.append(rotation_track(rig, f"hand_{side}", t, [(np.cross(_arm_dir(sgn), z), np.radians(-20) * env)]))
    out["stretch"] = stretch
    return out


# ------------------------------------------------------------------------------------------ build


def humanoid(*, cell: float = DEFAULT_CELL, name: str = "humanoid") -> Character:
    """Build the humanoid meshed at grid step ``cell`` metres (DEFAULT_CELL ~16k vertices,
    DENSE_CELL ~90k)."""
    names, parents, world = skeleton_positions()
    rig = Rig.from_world_positions(names, parents, world)
    prims = primitives()
    pos, tris, normals, report = mesh_surface(prims, cell)
    joints, weights = skin_weights(rig, prims, pos, tris, cell)
    uv = np.stack([0.5 + pos[:, 0] / 1.6, 1.0 - pos[:, 1] / 1.8], axis=1)
    return Character(name, rig, pos.astype(np.float32), tris, joints, weights, normals=normals.astype(np.float32),
                     texcoords=uv.astype(np.float32), clips=clips(rig), base_color=(0.78, 0.6, 0.5, 1.0),
                     roughness=0.7, stats=report)
