"""Load-time refusal of transforms float32 cannot compose (issue 16): finite numbers whose products overflow.

Every value in a file is checked finite on its own, but the engine multiplies them in float32: node locals down
the hierarchy, joint world @ inverse bind, then @ vertex, then squares them (normals, lengths, spring energies).
A finite translation of 1e30 or a chain of scales of 1e20 gives inf/NaN vertices later, far from the cause.
:func:`check_extents` bounds, before anything is built on the asset, every world-space magnitude any pose of
any clip can reach, and refuses the asset naming the first node, skin or mesh past :data:`MAX_EXTENT`.

The bounds use 2-norms, so rotations never inflate them: a node's world linear part is at most the product of
the largest scales along its chain, its world translation at most the sum of each local translation times the
linear bound of its parent, and a skinned vertex at most ``lin_j * (|IBM_j| |v| + |t_IBM_j|) + t_j`` over the
joints. Clips widen the local bounds to their largest key (CUBICSPLINE: Hermite overshoot included).
The limit leaves room for squaring: ``MAX_EXTENT**2`` times a few is still far below float32's 3.4e38.
"""
from __future__ import annotations

import numpy as np

from engine.assets.errors import AssetError
from engine.assets.model import Asset

__all__ = ["MAX_EXTENT", "check_extents"]

#: Largest world-space magnitude (metres) of any node transform, vertex or skinned vertex. Squares of it (and
#: sums of a few squares) stay finite in float32 (max 3.4e38), which lengths, normals and spring energies need.
MAX_EXTENT = 1e18


def _spectral(m: np.ndarray) -> np.ndarray:
    """(K,) 2-norms of (K,3,3) matrices, computed in float64."""
    if not len(m):
        return np.zeros(0)
    return np.linalg.norm(np.asarray(m, np.float64), ord=2, axis=(1, 2))


def _local_bounds(asset: Asset) -> tuple[np.ndarray, np.ndarray]:
    """(N,) bound on the linear 2-norm and (N,) bound on the translation length of each node's local transform,
    over the rest pose and every key of every clip."""
    n = len(asset.nodes)
    lin = np.ones(n)
    tra = np.zeros(n)
    matrix_nodes = [i for i, nd in enumerate(asset.nodes) if nd.matrix is not None]
    for i, nd in enumerate(asset.nodes):
        if nd.matrix is None:
            lin[i] = float(np.abs(np.asarray(nd.scale, np.float64)).max())
            tra[i] = float(np.linalg.norm(np.asarray(nd.translation, np.float64)))
    if matrix_nodes:
        mats = np.stack([np.asarray(asset.nodes[i].matrix, np.float64) for i in matrix_nodes])
        lin[matrix_nodes] = _spectral(mats[:, :3, :3])
        tra[matrix_nodes] = np.linalg.norm(mats[:, :3, 3], axis=1)
    for clip in asset.clips:
        for ch in clip.channels:
            if ch.path not in ("translation", "scale") or not np.size(ch.values):
                continue
            values = np.asarray(ch.values, np.float64)
            overshoot = 1.0
            if ch.interpolation == "CUBICSPLINE":  # |h00|,|h01| <= 1 and |h10|,|h11| <= 4/27 of the key interval
                step = float(np.diff(ch.times).max()) if len(ch.times) > 1 else 0.0
                overshoot = 2.0 + 0.3 * step
            if ch.path == "translation":
                tra[ch.node] = max(tra[ch.node], overshoot * float(np.linalg.norm(values.reshape(-1, 3), axis=1).max()))
            else:
                lin[ch.node] = max(lin[ch.node], overshoot * float(np.abs(values).max()))
    return lin, tra


def _world_bounds(asset: Asset, lin: np.ndarray, tra: np.ndarray, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """Propagate the local bounds down the hierarchy (parents first, linear in the node count); refuse the first
    node whose world bound passes ``limit``."""
    nodes = asset.nodes
    w_lin = lin.tolist()
    w_tra = tra.tolist()
    stack = [i for i, nd in enumerate(nodes) if nd.parent < 0]
    while stack:
        i = stack.pop()
        p = nodes[i].parent
        if p >= 0:
            w_tra[i] = w_tra[p] + w_lin[p] * w_tra[i]
            w_lin[i] = w_lin[p] * w_lin[i]
        if not max(w_lin[i], w_tra[i]) <= limit:  # also catches inf and nan
            chain = "" if p < 0 else " down its chain of parents"
            raise AssetError(f"nodes[{i}]", f"transforms compose{chain} to a scale of {w_lin[i]:.3g} and a "
                                            f"translation of {w_tra[i]:.3g} m (at rest or in a clip), past the "
                                            f"limit {limit:.0e} that float32 arithmetic can square safely")
        stack.extend(nodes[i].children)
    return np.asarray(w_lin), np.asarray(w_tra)


def check_extents(asset: Asset, *, limit: float = MAX_EXTENT) -> None:
    """Refuse ``asset`` (AssetError naming the node, skin joint or mesh) when a world-space magnitude reachable in
    any pose passes ``limit``: node transforms, vertex positions, static meshes placed by their node, and skinned
    vertices through each joint's world matrix and inverse bind matrix."""
    lin, tra = _local_bounds(asset)
    w_lin, w_tra = _world_bounds(asset, lin, tra, limit)
    extent = []  # per mesh: the largest vertex distance from the origin
    for mi, mesh in enumerate(asset.meshes):
        far = 0.0
        for pi, prim in enumerate(mesh.primitives):
            if not prim.positions.size:
                continue
            r = float(np.linalg.norm(np.asarray(prim.positions, np.float64), axis=1).max())
            if not r <= limit:
                raise AssetError(f"meshes[{mi}].primitives[{pi}].attributes.POSITION",
                                 f"a vertex lies {r:.3g} m from the origin, past the limit {limit:.0e}")
            far = max(far, r)
        extent.append(far)
    skin_reach = []
    for skin in asset.skins:
        ibm = np.asarray(skin.inverse_bind, np.float64)
        skin_reach.append((_spectral(ibm[:, :3, :3]), np.linalg.norm(ibm[:, :3, 3], axis=1)))
    for ni, node in enumerate(asset.nodes):
        if node.mesh is None or not 0 <= node.mesh < len(extent):
            continue
        v = extent[node.mesh]
        if node.skin is None or not 0 <= node.skin < len(asset.skins):
            reach = w_lin[ni] * v + w_tra[ni]
            if not reach <= limit:
                raise AssetError(f"nodes[{ni}]", f"places meshes[{node.mesh}] {reach:.3g} m from the origin, "
                                                 f"past the limit {limit:.0e}")
            continue
        skin = asset.skins[node.skin]
        ibm_lin, ibm_tra = skin_reach[node.skin]
        joints = np.asarray(skin.joints, np.int64)
        bind = ibm_lin * v + ibm_tra  # how far the inverse bind matrix can move a vertex
        reach = w_lin[joints] * bind + w_tra[joints]
        worst = int(np.argmax(np.where(np.isfinite(reach), reach, np.inf)))
        if not float(reach[worst]) <= limit:
            where = f"skins[{node.skin}].inverseBindMatrices[{worst}]"
            if bind[worst] <= limit:
                where = f"skins[{node.skin}].joints[{worst}]"
            raise AssetError(where, f"skinning meshes[{node.mesh}] through joint nodes[{int(joints[worst])}] "
                                    f"can move a vertex {float(reach[worst]):.3g} m from the origin (inverse bind "
                                    f"scale {float(ibm_lin[worst]):.3g}, translation {float(ibm_tra[worst]):.3g} m),"
                                    f" past the limit {limit:.0e} that float32 arithmetic can square safely")
