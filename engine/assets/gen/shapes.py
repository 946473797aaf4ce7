"""The research's skinning test pieces (dissertation section 6, Table 1): a capped cylinder with a two-bone
chain, a subdivided box (1802 vertices, 4 bones) and a plus (5634 vertices, 17 bones).

Box and plus are closed voxel surfaces: the boundary faces of a set of cubic cells, one quad per face,
display vertices split per face direction so flat shading stays crisp (welded by position they give
the vertex counts of Table 1). The cylinder is a tube of rings with its caps split off by normal and a
UV seam. Weights come from a coordinate along the chain (smoothstep blends, rows summing to 1).
"""
from __future__ import annotations

import numpy as np

from engine.assets.gen.rig import Character, Rig, chain_weights, key_times, rotation_track, top4, translation_track
from engine.math import quat

_AXES = np.eye(3)


def voxel_surface(occ: np.ndarray, origin: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boundary of the occupied cells ``occ`` (nx,ny,nz) bool: positions (D,3), normals (D,3) and
    triangles (T,3) counter-clockwise from outside. Cell (i,j,k) spans origin + cell * [i, i+1] x ..."""
    occ = np.asarray(occ, bool)
    pad = np.zeros(tuple(s + 2 for s in occ.shape), bool)
    pad[1:-1, 1:-1, 1:-1] = occ
    lat_shape = tuple(s + 1 for s in pad.shape)
    keys, quads = [], []
    for a in range(3):
        u, v = (a + 1) % 3, (a + 2) % 3
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[a], hi[a] = slice(0, -1), slice(1, None)
        change = pad[tuple(lo)] != pad[tuple(hi)]
        c = np.stack(np.nonzero(change), axis=-1)
        outward_pos = pad[tuple(lo)][change]
        corners = np.repeat(c[:, None, :], 4, axis=1)
        corners[:, :, a] += 1  # the lattice plane between the two cells
        for k, (du, dv) in enumerate(((0, 0), (1, 0), (1, 1), (0, 1))):
            corners[:, k, u] += du
            corners[:, k, v] += dv
        lat = np.ravel_multi_index((corners[..., 0], corners[..., 1], corners[..., 2]), lat_shape)
        lat = np.where(outward_pos[:, None], lat, lat[:, ::-1])
        normal_id = np.where(outward_pos, 2 * a, 2 * a + 1)  # 2a: +axis, 2a+1: -axis
        keys.append(lat * 6 + normal_id[:, None])
        quads.append(keys[-1])
    allq = np.concatenate(quads)
    uniq, inv = np.unique(allq, return_inverse=True)
    inv = inv.reshape(allq.shape)
    lat_idx, nid = uniq // 6, uniq % 6
    ijk = np.stack(np.unravel_index(lat_idx, lat_shape), axis=-1)
    pos = np.asarray(origin, np.float64) + cell * (ijk - 1)
    nrm = _AXES[nid // 2] * np.where(nid % 2 == 0, 1.0, -1.0)[:, None]
    tris = np.concatenate([inv[:, [0, 1, 2]], inv[:, [0, 2, 3]]])
    return pos, nrm, tris


def _face_uv(pos: np.ndarray, nrm: np.ndarray, size: float) -> np.ndarray:
    """Planar UV per face direction: the two coordinates across the face, divided by ``size``."""
    a = np.argmax(np.abs(nrm), axis=1)
    u = pos[np.arange(len(pos)), (a + 1) % 3]
    v = pos[np.arange(len(pos)), (a + 2) % 3]
    return (np.stack([u, -v], axis=1) / size + 0.5).astype(np.float32)


def _wave(times: np.ndarray, period: float) -> np.ndarray:
    """0 -> 1 -> 0 over one period (raised cosine), exactly 1 at period / 2."""
    return 0.5 - 0.5 * np.cos(2 * np.pi * times / period)


# ------------------------------------------------------------------------------------------ cylinder


def cylinder(*, radius: float = 0.1, length: float = 1.0, segments: int = 48, spans: int = 64,
             cap_rings: int = 3) -> Character:
    """Capped tube along +Y from y = 0 to ``length``, joints root (y=0), mid (y=length/2), tip (y=length).

    Weights: root below the middle, mid above, blended by a smoothstep over +-15 % of the length
    around the middle joint; above the middle the mid/tip split grows linearly toward the tip so that
    translating the tip joint (clip ``stretch``) lengthens the upper half under LBS as well.
    """
    for label, val, lo in (("segments", segments, 3), ("spans", spans, 2), ("cap_rings", cap_rings, 1)):
        if val < lo:
            raise ValueError(f"{label} must be >= {lo}, got {val}")
    th = 2 * np.pi * np.arange(segments + 1) / segments  # seam: column `segments` repeats column 0
    ys = length * np.arange(spans + 1) / spans
    s_grid, y_grid = np.meshgrid(th, ys)  # (rings, cols)
    tube_pos = np.stack([radius * np.sin(s_grid), y_grid, radius * np.cos(s_grid)], -1).reshape(-1, 3)
    tube_pos[:, [0, 2]] = np.where(np.abs(tube_pos[:, [0, 2]]) < 1e-12, 0.0, tube_pos[:, [0, 2]])
    tube_nrm = np.stack([np.sin(s_grid), np.zeros_like(s_grid), np.cos(s_grid)], -1).reshape(-1, 3)
    tube_uv = np.stack([s_grid / (2 * np.pi), 1.0 - y_grid / length], -1).reshape(-1, 2)
    cols = segments + 1
    r, c = np.meshgrid(np.arange(spans), np.arange(segments), indexing="ij")
    a = (r * cols + c).reshape(-1)
    quads = np.stack([a, a + 1, a + cols + 1, a + cols], 1)
    tris = [np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])]
    pos, nrm, uv = [tube_pos], [tube_nrm], [tube_uv]
    base = len(tube_pos)
    th_c = th[:-1]
    for cap_y, up in ((0.0, -1.0), (length, 1.0)):
        radii = radius * np.arange(1, cap_rings + 1) / cap_rings
        ring_pos = np.stack([np.outer(radii, np.sin(th_c)), np.full((cap_rings, segments), cap_y),
                             np.outer(radii, np.cos(th_c))], -1).reshape(-1, 3)
        cap_pos = np.concatenate([[[0.0, cap_y, 0.0]], ring_pos])
        cap_pos[:, [0, 2]] = np.where(np.abs(cap_pos[:, [0, 2]]) < 1e-12, 0.0, cap_pos[:, [0, 2]])
        cap_nrm = np.tile([0.0, up, 0.0], (len(cap_pos), 1))
        cap_uv = 0.5 + 0.5 * cap_pos[:, [0, 2]] / radius
        nxt = (np.arange(segments) + 1) % segments
        fan = np.stack([np.zeros(segments, int), 1 + np.arange(segments), 1 + nxt], 1)
        ring_tris = [fan]
        for k in range(cap_rings - 1):
            i0 = 1 + k * segments + np.arange(segments)
            i1 = i0 + segments
            n0, n1 = 1 + k * segments + nxt, 1 + (k + 1) * segments + nxt
            ring_tris += [np.stack([i0, i1, n1], 1), np.stack([i0, n1, n0], 1)]
        ct = np.concatenate(ring_tris)
        # Wind so the face normal matches the cap direction.
        fn = np.cross(cap_pos[ct[:, 1]] - cap_pos[ct[:, 0]], cap_pos[ct[:, 2]] - cap_pos[ct[:, 0]])
        ct = np.where((fn[:, 1] * up < 0)[:, None], ct[:, ::-1], ct)
        tris.append(ct + base)
        pos.append(cap_pos)
        nrm.append(cap_nrm)
        uv.append(cap_uv)
        base += len(cap_pos)
    positions = np.concatenate(pos)
    y = positions[:, 1]
    mid = length / 2
    rig = Rig.from_world_positions(["root", "mid", "tip"], [-1, 0, 1],
                                   np.array([[0, 0, 0], [0, mid, 0], [0, length, 0]], np.float64))
    upper = chain_weights(y, [0.0, mid], 0.15 * length)[:, 1]
    tip_share = np.clip((y - mid) / (length - mid), 0.0, 1.0)
    dense = np.stack([1.0 - upper, upper * (1.0 - tip_share), upper * tip_share], 1)
    joints, weights = top4(dense)

    clips = {}
    t = key_times(2.0)
    w = _wave(t, 2.0)
    clips["twist"] = [rotation_track(rig, "mid", t, [((0, 1, 0), np.pi * w)])]
    clips["bend"] = [rotation_track(rig, "mid", t, [((1, 0, 0), np.radians(135) * w)])]
    clips["stretch"] = [translation_track(rig, "tip", t, np.outer(w * 0.5 * (length - mid), [0, 1, 0]))]
    hold = np.array([0.0, 1.0])
    one = np.ones(2)
    for deg in (90, 135, 180):
        clips[f"twist{deg}"] = [rotation_track(rig, "mid", hold, [((0, 1, 0), np.radians(deg) * one)])]
    for deg in (45, 90, 135):
        clips[f"bend{deg}"] = [rotation_track(rig, "mid", hold, [((1, 0, 0), np.radians(deg) * one)])]
    clips["stretch150"] = [translation_track(rig, "tip", hold, np.outer(0.5 * (length - mid) * one, [0, 1, 0]))]
    return Character("cylinder", rig, positions.astype(np.float32), np.concatenate(tris), joints, weights,
                     normals=np.concatenate(nrm).astype(np.float32), texcoords=np.concatenate(uv).astype(np.float32),
                     clips=clips, base_color=(0.75, 0.78, 0.85, 1.0))


# ------------------------------------------------------------------------------------------ box


def box(*, divisions: tuple[int, int, int] = (10, 40, 10), cell: float = 0.02, bones: int = 4) -> Character:
    """A box of (x, y, z) cells standing on y = 0, long axis +Y, a chain of ``bones`` joints evenly
    along it (joint b at y = b * height / bones). Default: 1802 welded vertices, 3600 triangles."""
    if min(divisions) < 1 or bones < 1:
        raise ValueError(f"divisions must be >= 1 and bones >= 1, got {divisions}, {bones}")
    nx, ny, nz = divisions
    origin = np.array([-nx * cell / 2, 0.0, -nz * cell / 2])
    pos, nrm, tris = voxel_surface(np.ones(divisions, bool), origin, cell)
    height = ny * cell
    step = height / bones
    ys = step * np.arange(bones)
    names = [f"bone{b}" for b in range(bones)]
    rig = Rig.from_world_positions(names, [-1] + list(range(bones - 1)), np.stack([0 * ys, ys, 0 * ys], 1))
    joints, weights = top4(chain_weights(pos[:, 1], list(ys), 0.3 * step))
    t = key_times(2.0)
    w = _wave(t, 2.0)
    clips = {
        "bend": [rotation_track(rig, n, t, [((1, 0, 0), np.radians(30) * w)]) for n in names[1:]],
        "twist": [rotation_track(rig, n, t, [((0, 1, 0), np.radians(45) * w)]) for n in names[1:]],
    }
    return Character("box", rig, pos.astype(np.float32), tris, joints, weights, normals=nrm.astype(np.float32),
                     texcoords=_face_uv(pos, nrm, height), clips=clips, base_color=(0.85, 0.6, 0.35, 1.0))


# ------------------------------------------------------------------------------------------ plus


def plus(*, width: int = 16, thickness: int = 8, arm: int = 24, cell: float = 0.025,
         arm_joints: int = 4) -> Character:
    """An upright plus in the XY plane (thickness along Z), bottom arm tip on y = 0: a square centre of
    ``width`` cells and four arms of ``arm`` cells; joints: ``center`` + ``arm_joints`` per arm
    (arms px, nx, py, ny along +X, -X, +Y, -Y; each arm joint's local +Y points along its arm).
    Default: 5634 welded vertices, 11264 triangles, 17 joints."""
    if min(width, thickness, arm, arm_joints) < 1:
        raise ValueError(f"width, thickness, arm, arm_joints must be >= 1, got {width, thickness, arm, arm_joints}")
    n = width + 2 * arm
    occ = np.zeros((n, n, thickness), bool)
    occ[arm:arm + width, :, :] = True
    occ[:, arm:arm + width, :] = True
    half = n * cell / 2
    center = np.array([0.0, half, 0.0])
    origin = np.array([-half, 0.0, -thickness * cell / 2])
    pos, nrm, tris = voxel_surface(occ, origin, cell)

    inner = width * cell / 2  # arm roots at the centre square's edge
    arm_len = arm * cell
    spacing = arm_len / (arm_joints + 0.0) * 0.75  # joints over the first 3/4, the last bone to the tip
    dirs = {"px": np.array([1.0, 0, 0]), "nx": np.array([-1.0, 0, 0]), "py": np.array([0, 1.0, 0]),
            "ny": np.array([0, -1.0, 0])}
    names, parents, world, wrot = ["center"], [-1], [center], [np.array([0.0, 0, 0, 1])]
    for key, d in dirs.items():
        q = quat.between(np.array([0, 1.0, 0]), d)
        for k in range(arm_joints):
            names.append(f"arm_{key}_{k}")
            parents.append(0 if k == 0 else len(names) - 2)
            world.append(center + d * (inner + k * spacing))
            wrot.append(q)
    rig = Rig.from_world_positions(names, parents, np.array(world), np.array(wrot))

    # Weights: arm membership m_a (smoothstep across the centre square's edge), then a chain along the arm.
    rel = pos - center
    dense = np.zeros((len(pos), rig.count))
    s_all = np.stack([rel @ np.asarray(d) for d in dirs.values()], 1)  # (N,4)
    blend = 0.3 * spacing
    m = np.clip((s_all - (inner - blend)) / (2 * blend), 0, 1)
    m = m * m * (3 - 2 * m)
    m /= np.maximum(1.0, m.sum(axis=1, keepdims=True))
    dense[:, 0] = 1.0 - m.sum(axis=1)
    starts = [inner + k * spacing for k in range(arm_joints)]
    for a in range(4):
        within = chain_weights(s_all[:, a], starts, blend)  # first segment spans s < starts[1]
        dense[:, 1 + a * arm_joints:1 + (a + 1) * arm_joints] = m[:, a:a + 1] * within
    joints, weights = top4(dense)

    t = key_times(2.0)
    w = _wave(t, 2.0)
    bend, wave = [], []
    for a, d in enumerate(dirs.values()):
        r_world = quat.to_matrix(quat.between(np.array([0, 1.0, 0]), d))
        curl_axis = r_world.T @ np.cross(d, [0, 0, 1.0])  # rotates the arm toward +Z (the viewer)
        plane_axis = r_world.T @ np.array([0, 0, 1.0])  # in-plane swing
        for k in range(arm_joints):
            j = 1 + a * arm_joints + k
            bend.append(rotation_track(rig, j, t, [(curl_axis, np.radians(30) * w)]))
            wave.append(rotation_track(rig, j, t, [(plane_axis, np.radians(20) * np.sin(np.pi * t - 0.8 * k))]))
    clips = {"bend": bend, "wave": wave}
    return Character("plus", rig, pos.astype(np.float32), tris, joints, weights, normals=nrm.astype(np.float32),
                     texcoords=_face_uv(pos, nrm, n * cell), clips=clips, base_color=(0.35, 0.6, 0.85, 1.0))
