"""The editor's Weights tool (issue 25 item 6), kept out of the window: the state and the edits of one character's
skin weights, with undo, so the window only maps input to these calls (and tests drive it headless).

* the selected joint's weights as a heat map through the region overlay's colour path (``Character.show_region``):
  weight >= 2/3 in the kinematic colour, >= 1/3 passive, > 0.02 static (:func:`heat_sets`);
* the brush (add, subtract, replace, blur with the (1 - (d/R)^2)^2 falloff) at a surface point;
* Mohr's drag of a vertex to a world point in the current pose;
* isoline splines with iso-values (the anchor basis makes a later iso-value change a product, see ``set_iso``);
* the co-movement region of a picked vertex over the playing clip;
* undo/redo of every change (the window's CommandStack: one SnapshotCommand per change);
* saving the asset with the weights (engine.authoring.weights.write_weights).

Weights reach the deformer by re-spawning the character from a copy of the asset whose primitive holds the new
weights (its GPU static records are rebuilt; playback, placement and deformer carried over): ``tool.character``
names the live character after every change.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from engine.components import PrimitiveKey
from game.editor.undo import CommandStack, SnapshotCommand

__all__ = ["WeightsTool", "heat_sets", "hull_edges", "HEAT_BANDS"]

#: heat-map bands over the region overlay's three colours: (set, lowest weight)
HEAT_BANDS = (("kinematic", 2.0 / 3.0), ("passive", 1.0 / 3.0), ("static", 0.02))


def heat_sets(weights: np.ndarray) -> dict[str, np.ndarray]:
    """Vertex index sets of one joint's weights (V,) per heat band (each vertex in its highest band)."""
    w = np.asarray(weights, np.float64)
    out: dict[str, np.ndarray] = {}
    upper = np.inf
    for name, lo in HEAT_BANDS:
        out[name] = np.flatnonzero((w >= lo) & (w < upper)).astype(np.int64)
        upper = lo
    return out


def hull_edges(points: np.ndarray) -> np.ndarray:
    """(E, 2) index pairs of the edges of the convex hull of ``points`` (k, 3) (the drag overlay's wireframe):
    every pair for k <= 3; else the edges of qhull's facets, in the points' plane when they are coplanar, and
    every pair when the points are degenerate beyond that (all on a line, coincident)."""
    from scipy.spatial import ConvexHull, QhullError

    q = np.asarray(points, np.float64)
    k = q.shape[0]
    pairs = np.array([(i, j) for i in range(k) for j in range(i + 1, k)], np.int64).reshape(-1, 2)
    if k <= 3:
        return pairs
    try:
        return np.unique(np.sort(np.concatenate([ConvexHull(q).simplices[:, [a, b]]
                                                 for a, b in ((0, 1), (1, 2), (0, 2))]), axis=1), axis=0)
    except QhullError:
        pass
    c = q - q.mean(axis=0)
    try:  # coplanar: the 2D hull in the plane of the two main directions (its vertices in order: a loop)
        ring = ConvexHull(c @ np.linalg.svd(c, full_matrices=False)[2][:2].T).vertices
        return np.sort(np.stack([ring, np.roll(ring, -1)], axis=1), axis=1).astype(np.int64)
    except QhullError:
        return pairs


class WeightsTool:
    """Weight editing of ``character`` (an engine Character of ``session``) on one skinned primitive."""

    def __init__(self, session: Any, character: Any, *, primitive: PrimitiveKey | None = None,
                 undo: CommandStack | None = None) -> None:
        from engine.skinning.weights.io import find_primitive, primitive_weights

        self.session = session
        self.character = character
        self.undo_stack = undo if undo is not None else CommandStack()
        prims = primitive_weights(character.loaded)
        self.prim = find_primitive(prims, primitive.export_key if primitive is not None else None)
        self.dense = self.prim.dense()
        self.locked = np.zeros(self.prim.n_joints, bool)
        self.joint = int(np.argmax(self.dense.sum(axis=0)))
        self._edges: np.ndarray | None = None
        self.last_drag: Any = None

    # ---- selection and view -------------------------------------------------------------------------------
    def select_joint(self, name: str) -> None:
        self.joint = self.prim.joint_index(name)

    def joint_weights(self) -> np.ndarray:
        """(V,) the selected joint's weights."""
        return self.dense[:, self.joint].copy()

    def show_heat(self) -> None:
        """The selected joint's heat map over the frame (the window calls this after every change)."""
        self.character.show_region(heat_sets(self.joint_weights()), primitive=self.prim.key)

    # ---- picking (a SurfaceHit of Session.pick on the tool's primitive) --------------------------------------
    def bind_point(self, hit: Any) -> np.ndarray:
        """(3,) the bind-pose position of a picked surface point (the brush centre: painting works on bind
        positions, so a stroke paints the same skin whatever the pose)."""
        tri = self.prim.triangles[int(hit.triangle)]
        return np.asarray(hit.barycentric, np.float64) @ self.prim.positions[tri].astype(np.float64)

    def vertex_at(self, hit: Any) -> int:
        """The display vertex of the picked triangle nearest the hit (largest barycentric)."""
        tri = self.prim.triangles[int(hit.triangle)]
        return int(tri[int(np.argmax(hit.barycentric))])

    # ---- edits (each one undo step) -------------------------------------------------------------------------
    def _set(self, dense: np.ndarray) -> None:
        """Apply weights: keep them and re-spawn the character from an asset holding them."""
        from engine.scene import load_asset

        self.dense = np.array(dense, np.float64)
        old = self.character
        loaded = old.loaded
        asset = loaded.asset
        key = self.prim.key
        from engine.skinning.weights.table import to_slots

        j, w = to_slots(self.dense, min_slots=self.prim.slots, locked=self.locked)
        meshes = list(asset.meshes)
        prims = list(meshes[key.mesh].primitives)
        prims[key.primitive] = dataclasses.replace(prims[key.primitive], joints=j, weights=w)
        meshes[key.mesh] = dataclasses.replace(meshes[key.mesh], primitives=prims)
        new_loaded = load_asset(dataclasses.replace(asset, meshes=meshes), name=loaded.name)
        for sp_new, sp_old in zip(new_loaded.skinned, loaded.skinned):
            # the welded topology depends on positions and triangles only: carried over, not rebuilt
            if "topology" in sp_old._cache:
                sp_new._cache["topology"] = sp_old._cache["topology"]
        spawn: dict[str, Any] = dict(matrix=old.matrix, deformer=old.deformer)
        if asset.clips:
            pb = old.playback()
            spawn.update(clip=pb.clip, time=pb.time, speed=pb.speed, mode=pb.mode)
        else:
            spawn.update(clip=None)
        old.remove()
        self.character = self.session.spawn(new_loaded, **spawn)

    def _commit(self, label: str, dense: np.ndarray, merge_key: Any = None) -> None:
        self.undo_stack.push(SnapshotCommand(label, self._set, self.dense.copy(), np.asarray(dense, np.float64),
                                             merge_key=merge_key))

    def paint(self, center: np.ndarray, radius: float, value: float, mode: str = "replace", *,
              stroke: Any = None) -> None:
        """One brush dab at a world point of the bind surface (``stroke``: dabs of one stroke share a key and
        fold into one undo step until the stack is closed on pointer up)."""
        from engine.skinning.weights import paint as P

        if self._edges is None:
            self._edges = P.edge_graph(self.prim.positions, self.prim.triangles)
        f = P.brush_falloff(self.prim.positions, center, radius)
        out = P.paint(self.dense, self.joint, f, value, mode, self.locked, edges=self._edges)
        self._commit(f"paint {self.prim.joint_names[self.joint]}", out,
                     merge_key=("weights paint", stroke) if stroke is not None else None)

    def drag_result(self, vertex: int, target: np.ndarray, joints: list[str] | None = None) -> Any:
        """Mohr's drag of ``vertex`` to world point ``target`` in the current pose, not applied: the DragResult
        (its hull q_i and reached point: what the overlay shows while the pointer moves)."""
        from engine.skinning.weights.mohr import drag_vertex

        world = self.character.joints()
        mats = (world[self.prim.joint_nodes].astype(np.float64) @ self.prim.inverse_bind.astype(np.float64)
                ).astype(np.float32)
        idx = np.array([self.prim.joint_index(n) for n in joints], np.int64) if joints \
            else np.flatnonzero(self.dense[vertex] > 0)
        return drag_vertex(self.prim.positions[vertex], mats, idx, self.dense[vertex, idx], target)

    def drag(self, vertex: int, target: np.ndarray, joints: list[str] | None = None) -> Any:
        """Mohr's drag of ``vertex`` to world point ``target`` in the current pose, applied (one undo step);
        returns the DragResult."""
        from engine.authoring.weights import welded_with

        res = self.drag_result(vertex, target, joints)

        rows = welded_with(self.prim, vertex)
        out = self.dense.copy()
        out[rows] = 0
        out[np.ix_(rows, res.joints)] = res.weights[None, :]
        self._commit(f"drag vertex {vertex}", out)
        self.last_drag = res
        return res

    def spline(self, samples: list[Any], isos: list[float], *, local: bool = True) -> Any:
        """The selected joint's field from isolines (engine.skinning.weights.spline.SplineSamples over the welded
        control points) with iso-values; returns the SplineField (``set_iso`` re-evaluates its anchors)."""
        from engine.skinning.weights.spline import SplineField

        topo = self.prim.skinned.topology()
        field = SplineField(topo.positions, topo.triangles, self.dense[topo.display_of_control, self.joint],
                            samples, local=local, topology=topo)
        self._field = field
        self.set_iso(np.asarray(isos, np.float64))
        return field

    def set_iso(self, anchors: np.ndarray, *, drag: Any = None) -> None:
        """New anchor values for the last spline field (w = c + K a: a product, the interactive anchor drag)."""
        from engine.skinning.weights.paint import limit
        from engine.skinning.weights.table import set_column

        topo = self.prim.skinned.topology()
        w = self._field.weights(anchors)
        jp = self.prim.bind_joint_positions()
        d = np.linalg.norm(self.prim.positions[:, None, :] - jp[None], axis=2)
        d[:, self.joint] = np.inf
        frozen = self.locked.copy()
        frozen[self.joint] = True
        out = limit(set_column(self.dense, self.joint, w[topo.control_of_display], np.argmin(d, axis=1),
                               self.locked), self.prim.slots, frozen)
        self._commit(f"spline {self.prim.joint_names[self.joint]}", out,
                     merge_key=("weights spline", drag) if drag is not None else None)

    def influence(self, vertex: int, frames: int = 30, threshold: float = 0.75) -> np.ndarray:
        """The co-movement region of ``vertex`` over the playing clip (display vertex indices), shown as the
        overlay's kinematic set."""
        from engine.authoring.weights import clip_times, trajectories
        from engine.skinning.weights.influence import comovement, region

        loaded = self.character.loaded
        clip = self.character.playback().clip if loaded.asset.clips else None
        times = clip_times(loaded.asset, clip if clip is not None else 0, frames)
        traj = trajectories(loaded, clip if clip is not None else 0, times)[self.prim.key]
        members = region(comovement(traj[:, vertex], traj), threshold)
        self.character.show_region({"kinematic": members}, primitive=self.prim.key) \
            if self.session.renderer is not None else None
        return members

    def undo(self) -> None:
        self.undo_stack.undo()

    def redo(self) -> None:
        self.undo_stack.redo()

    def save(self, path: str | Path) -> Path:
        """Write the character's asset with the edited weights (.glb; the source file's other data kept)."""
        from engine.authoring.weights import write_weights

        src = self.character.loaded.asset.path
        if src is None:
            raise ValueError("the character was not loaded from a file: nothing to save the weights into")
        return write_weights(src, path, {self.prim.key: (self.prim, self.dense)}, locked={self.prim.key: self.locked})
