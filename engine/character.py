"""A handle on one spawned character of a :class:`engine.session.Session`: playback, placement, deformer, morph
weights, pose layer and keyed poses, surface edits, deformed vertices, regions shown, removal.

The character reaches its session only through the session's public methods (``refresh_pose``,
``mark_pose_changed``, ``pose_changed``, ``require_renderer``, ``show_marks``, its world and scene meshes).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.anim import Playback, Pose
from engine.assets.model import Asset
from engine.components import (
    Animator,
    DeformedMeshes,
    MorphWeights,
    Placement,
    PoseLayer,
    PrimitiveKey,
    SkeletonPose,
    StillPlayback,
)
from engine.scene import DeformSettings, LoadedAsset
from engine.skinning.config import DeformerConfig

if TYPE_CHECKING:
    from engine.session import Session

__all__ = ["Character", "placement_matrix", "placement", "deform_settings"]


def placement_matrix(position: Sequence[float] = (0.0, 0.0, 0.0), *, yaw: float = 0.0,
                     scale: float = 1.0) -> np.ndarray:
    """A world matrix: uniform ``scale``, ``yaw`` degrees about +Y, then ``position``."""
    p = np.asarray(position, np.float64).reshape(-1)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise ValueError(f"position must be three finite numbers, got {position!r}")
    if not (math.isfinite(yaw) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"yaw must be finite and scale a finite number > 0, got yaw={yaw!r}, scale={scale!r}")
    c, s = math.cos(math.radians(yaw)), math.sin(math.radians(yaw))
    m = np.eye(4, dtype=np.float32)
    m[:3, :3] = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]], np.float32) * scale
    m[:3, 3] = p
    return m


def deform_settings(deformer: str | None, config: DeformerConfig | str | Path | None, graph: Any,
              default: DeformSettings) -> DeformSettings:
    cfg = default.config
    if config is not None:
        if isinstance(config, DeformerConfig):
            cfg = config
        else:
            from engine.skinning.config import load_config

            cfg = load_config(config)
    if graph is not None:
        from engine.skinning.gpu.plan import GraphConfig

        gc = graph if isinstance(graph, GraphConfig) else GraphConfig.load(graph)
        return DeformSettings(gc.name, cfg, gc)
    if deformer is None:  # the default's method or graph, with the given parameters
        return DeformSettings(default.deformer, cfg, default.graph)
    return DeformSettings(deformer, cfg, None)


def placement(loaded: LoadedAsset, position: Sequence[float], yaw: float, scale: float,
               matrix: np.ndarray | None, on_ground: bool) -> np.ndarray:
    """A character's model matrix from position/yaw/scale or a finite 4x4 ``matrix`` (float32, a new array);
    ``on_ground`` lifts it so the rest pose stands on y = 0."""
    if matrix is not None:
        m = np.asarray(matrix, np.float32)
        if m.shape != (4, 4) or not np.all(np.isfinite(m)):
            raise ValueError(f"matrix must be a finite 4x4 array, got shape {np.shape(matrix)}")
    else:
        m = placement_matrix(position, yaw=yaw, scale=scale)
    m = m.copy()
    if on_ground:
        m[1, 3] += loaded.ground_offset * float(np.linalg.norm(m[:3, 1]))
    return m


class Character:
    """A handle on one spawned character: playback, placement, deformer, deformed vertices, removal."""

    def __init__(self, session: Session, entity: int, loaded: LoadedAsset) -> None:
        self._session = session
        self.entity = entity
        self.loaded = loaded
        #: poses keyed by :meth:`key_pose`: clip name -> {time: local pose}
        self.keyed: dict[str, dict[float, Pose]] = {}

    # -- what it is ----------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.loaded.name

    @property
    def asset(self) -> Asset:
        return self.loaded.asset

    @property
    def alive(self) -> bool:
        return self._session.world.is_alive(self.entity) and self.entity in self._session.meshes.instances

    @property
    def session(self) -> Session:
        """The session the character lives in."""
        return self._session

    def require_alive(self) -> None:
        """ValueError when the character was removed (every method that touches its state checks first)."""
        if not self.alive:
            raise ValueError(f"character {self.name!r} (entity {self.entity}) was removed")

    @property
    def primitives(self) -> list[PrimitiveKey]:
        """Every mesh primitive it draws, skinned ones first: (glTF node, mesh, primitive)."""
        self.require_alive()
        return [i.key for i in self._session.meshes.instances[self.entity]]

    @property
    def skinned_primitives(self) -> list[PrimitiveKey]:
        self.require_alive()
        return [i.key for i in self._session.meshes.instances[self.entity] if i.skinned is not None]

    def __repr__(self) -> str:
        return f"Character({self.name!r}, entity={self.entity})"

    # -- playback ------------------------------------------------------------------------------------------
    @property
    def clips(self) -> list[str]:
        return [c.name for c in self.asset.clips]

    def playback(self) -> Playback:
        """The clip playback of the character (ValueError for a character without clips)."""
        anim = self._session.world.get(self.entity, Animator)
        if not isinstance(anim.playback, Playback):
            raise ValueError(f"{self.name!r} has no animation clips")
        return anim.playback

    def play(self, clip: str | int, *, time: float = 0.0, speed: float | None = None,
             mode: str | None = None) -> Character:
        """Play ``clip`` (name or index) from clip time ``time``; ``speed`` (negative: backwards) and ``mode``
        ("loop" | "clamp" | "pingpong") keep their values when not given. The pose is updated at once."""
        self.require_alive()
        pb = self.playback()
        index = self.asset.clip_index(clip)
        if not math.isfinite(time):
            raise ValueError(f"time must be a finite number of seconds, got {time!r}")
        if speed is not None:
            pb.speed = speed
        if mode is not None:
            pb.mode = mode
        pb.crossfade(index, 0.0, start_time=float(time))
        self._session.refresh_pose(self.entity)
        return self

    def crossfade(self, clip: str | int, duration: float, *, time: float = 0.0, ramp: str = "linear") -> Character:
        """Blend from the current pose into ``clip`` over ``duration`` seconds."""
        self.require_alive()
        self.playback().crossfade(self.asset.clip_index(clip), duration, start_time=time, ramp=ramp)
        return self

    @property
    def time(self) -> float:
        """Clip clock in seconds (unwrapped; ``local_time`` of the Playback is wrapped by the mode)."""
        return self.playback().time

    @property
    def speed(self) -> float:
        return self.playback().speed

    @speed.setter
    def speed(self, value: float) -> None:
        self.playback().speed = value

    def hold(self) -> Character:
        """Stop the clock at the current pose (speed 0)."""
        if isinstance(self._session.world.get(self.entity, Animator).playback, Playback):
            self.playback().speed = 0.0
        return self

    # -- placement -----------------------------------------------------------------------------------------
    @property
    def matrix(self) -> np.ndarray:
        return self._session.world.get(self.entity, Placement).matrix.copy()

    def place(self, position: Sequence[float] = (0.0, 0.0, 0.0), *, yaw: float = 0.0, scale: float = 1.0,
              matrix: np.ndarray | None = None, on_ground: bool = False) -> Character:
        """Put the character at ``position`` turned ``yaw`` degrees about +Y, or at a 4x4 ``matrix``;
        ``on_ground`` lifts it so its rest pose stands on y = 0."""
        self.require_alive()
        m = placement(self.loaded, position, yaw, scale, matrix, on_ground)
        self._session.world.get(self.entity, Placement).matrix = m
        self._session.refresh_pose(self.entity)
        return self

    # -- deformer ------------------------------------------------------------------------------------------
    @property
    def deformer(self) -> str:
        return self._session.meshes.settings[self.entity].deformer

    @property
    def config(self) -> DeformerConfig:
        return self._session.meshes.settings[self.entity].config

    def set_deformer(self, deformer: str | None = None, *, config: DeformerConfig | str | Path | None = None,
                     graph: Any = None) -> Character:
        """Switch to another deformer of the table (engine/skinning/registry.py), parameters or graph file;
        refused with a ValueError (the current one stays) when the session's device cannot run it."""
        self.require_alive()
        cur = self._session.meshes.settings[self.entity]
        self._session.meshes.set_settings(self.entity, deform_settings(deformer, config, graph, cur))
        self._session.refresh_pose(self.entity)
        return self

    # -- morph targets -------------------------------------------------------------------------------------
    @property
    def morph_nodes(self) -> dict[int, int]:
        """Mesh nodes with morph targets: glTF node -> target count (empty for a character without them)."""
        self.require_alive()
        morph = self._session.world.try_get(self.entity, MorphWeights)
        return {} if morph is None else {n: int(w.shape[0]) for n, w in morph.rest.items()}

    def _morph_node(self, target: int | str) -> int:
        """A morphed mesh node by glTF node index, node name or mesh name; ValueError listing the choices."""
        nodes = self.morph_nodes
        asset = self.asset
        if isinstance(target, (int, np.integer)) and not isinstance(target, bool) and int(target) in nodes:
            return int(target)
        if isinstance(target, str):
            for n in nodes:
                mesh = asset.nodes[n].mesh
                if asset.nodes[n].name == target or (mesh is not None and asset.meshes[mesh].name == target):
                    return n
        choices = ", ".join(f"{n} ({asset.nodes[n].name!r}, {c} targets)" for n, c in nodes.items()) or "none"
        raise ValueError(f"no mesh node with morph targets {target!r}; {self.name!r} has: {choices}")

    def set_morph_weights(self, target: int | str, weights: Sequence[float] | np.ndarray | None) -> Character:
        """Set the morph-target weights of one mesh node (``target``: glTF node index, node name or mesh name),
        one number per target; they win over the clip's weights channel until cleared with ``weights=None``
        (then the clip's, else the rest weights, apply again). The pose is updated at once."""
        self.require_alive()
        from engine.skinning.morph import check_weights

        node = self._morph_node(target)
        morph = self._session.world.get(self.entity, MorphWeights)
        if weights is None:
            morph.override.pop(node, None)
        else:
            morph.override[node] = check_weights(weights, self.morph_nodes[node],
                                                 f"morph weights of node {node}")
        self._session.refresh_pose(self.entity)
        return self

    def morph_weights(self, target: int | str) -> np.ndarray:
        """The morph weights the next deformation of one mesh node uses (override, clip or rest), a copy."""
        self.require_alive()
        node = self._morph_node(target)
        morph = self._session.world.get(self.entity, MorphWeights)
        return np.array(morph.current.get(node, morph.rest[node]), np.float32)

    # -- posing (research 7.2) ------------------------------------------------------------------------------
    @property
    def pose_layer(self) -> PoseLayer | None:
        """The additive pose over the playing clip (None until the character is first posed)."""
        self.require_alive()
        return self._session.world.try_get(self.entity, PoseLayer)

    def _layer(self) -> PoseLayer:
        layer = self.pose_layer
        if layer is None:
            world = self._session.world
            anim = world.get(self.entity, Animator)
            hold = anim.pose.copy() if isinstance(anim.playback, StillPlayback) else None
            layer = PoseLayer.identity(self.loaded.rig.count, hold)
            world.add(self.entity, layer)
        return layer

    def local_pose(self) -> Pose:
        """A copy of the current local pose (the clip's sample with the pose layer added)."""
        self.require_alive()
        return self._session.world.get(self.entity, Animator).pose.copy()

    def apply_line_of_action(self, baseline: Any, offset: Any, *, brush_radius: float,
                             reference: Sequence[float] | np.ndarray | None = None,
                             joints: Sequence[int] | None = None) -> Any:
        """Pose by a baseline and an offset stroke (research 7.2): both world-space :class:`Stroke` objects or
        (N,3) point lists in metres; the baseline selects the joint chain it follows, ``brush_radius`` metres
        deciding which (:func:`engine.anim.posing.select_chain`);
        ``reference``: the strokes' common frame normal (e.g. the posing plane's); ``joints``: the nodes that
        may be selected (default: the skin joints). The change is added to the pose layer, the pose updated at
        once; returns the :class:`engine.anim.posing.LineOfAction` (selection, targets, deltas)."""
        from engine.anim.posing import solve_line_of_action
        from engine.input.strokes import Stroke
        from engine.math import quat

        self.require_alive()
        strokes = [s if isinstance(s, Stroke) else Stroke.fit(np.asarray(s, np.float64)) for s in (baseline, offset)]
        self._session.refresh_pose(self.entity)
        world = self._session.world
        anim = world.get(self.entity, Animator)
        ref = None if reference is None else np.asarray(reference, np.float64)
        res = solve_line_of_action(self.loaded.rig, anim.pose, strokes[0], strokes[1], float(brush_radius),
                                   placement=world.get(self.entity, Placement).matrix, joints=joints, reference=ref)
        layer = self._layer()
        layer.rotation[...] = quat.normalize(quat.multiply(res.deltas, layer.rotation))
        self._session.refresh_pose(self.entity)
        return res

    def set_pose_layer(self, rotation: np.ndarray | None) -> Character:
        """Replace the pose layer's rotation deltas ((N,4) xyzw, parent space; None removes the layer), e.g. to
        undo a posing step. The pose is updated at once."""
        self.require_alive()
        world = self._session.world
        if rotation is None:
            layer = world.try_get(self.entity, PoseLayer)
            if layer is not None:
                world.remove(self.entity, PoseLayer)
                if layer.hold is not None:  # a still playback never resamples: restore its own pose
                    world.get(self.entity, Animator).pose.copy_from(layer.hold)
        else:
            r = np.asarray(rotation, np.float32)
            n = self.loaded.rig.count
            if r.shape != (n, 4) or not np.isfinite(r).all():
                raise ValueError(f"pose layer rotations must be a finite ({n}, 4) array, got shape {r.shape}")
            self._layer().rotation[...] = r
        self._session.refresh_pose(self.entity)
        return self

    def clear_pose(self) -> Character:
        """Remove the pose layer: back to the clip's own pose."""
        return self.set_pose_layer(None)

    def key_pose(self, clip: str = "pose", *, time: float = 0.0) -> Character:
        """Key the current local pose (every node's TRS, layer included) into ``clip`` at ``time`` seconds;
        :meth:`save_glb` writes the keyed clips."""
        self.require_alive()
        if not isinstance(clip, str) or not clip:
            raise ValueError(f"clip must be a non-empty name, got {clip!r}")
        if not (math.isfinite(time) and time >= 0):
            raise ValueError(f"time must be a finite number of seconds >= 0, got {time!r}")
        self._session.refresh_pose(self.entity)
        self.keyed.setdefault(clip, {})[float(time)] = self.local_pose()
        return self

    def save_glb(self, path: str | Path) -> Path:
        """Write the character's asset as .glb with the keyed clips added (a keyed clip replaces an existing
        clip of the same name; the others are kept)."""
        from engine.anim.save import save_with_poses

        self.require_alive()
        if self.asset.path is None:
            raise ValueError(f"{self.name!r} was not loaded from a file: nothing to save it from")
        return save_with_poses(self.asset.path, path, self.loaded.rig, self.keyed)

    # -- surface edits (research 5.2, 7.4) ------------------------------------------------------------------
    def _skinned(self, primitive: PrimitiveKey) -> Any:
        for inst in self._session.meshes.instances[self.entity]:
            if inst.key == primitive and inst.skinned is not None:
                return inst
        raise ValueError(f"{self.name!r} has no skinned primitive {primitive!r}; "
                         f"skinned: {[k.export_key for k in self.skinned_primitives]}")

    def topology(self, primitive: PrimitiveKey) -> Any:
        """The welded control points of a skinned primitive (engine.skinning.types.MeshTopology): the domain of
        surface edits and regions of interest; its triangles are the glTF triangles, in order."""
        self.require_alive()
        return self._skinned(primitive).skinned.topology()

    def edit_frame(self, primitive: PrimitiveKey) -> tuple[np.ndarray, np.ndarray]:
        """(attach (V,3), rot (V,3,3)) of the primitive's control points in the current pose: what surface edits
        are encoded against (engine.skinning.edits.edit_pose)."""
        from engine.skinning.edits import edit_pose

        self.require_alive()
        sp = self._skinned(primitive).skinned
        cfg = self.config
        binding = sp.binding(method=cfg.binding.method, smooth_passes=cfg.binding.smooth_passes)
        return edit_pose(binding, sp.bind_joints, self.joints()[sp.skin.joints])

    @property
    def edits(self) -> dict[PrimitiveKey, Any]:
        """The character's surface edits: primitive -> engine.skinning.edits.EditStack (empty when none)."""
        from engine.skinning.edits import SurfaceEdits

        self.require_alive()
        comp = self._session.world.try_get(self.entity, SurfaceEdits)
        return {} if comp is None else dict(comp.stacks)

    def add_edit(self, primitive: PrimitiveKey, edit: Any) -> Any:
        """Add a surface edit (engine.skinning.edits.SurfaceEdit over the primitive's control points) to the
        primitive's edit stack; it acts from the next frame on, every frame, decoded in the current pose at the
        current clip time. Edits are spring forces: the character must deform with the spring deformer (ValueError
        otherwise, naming what to change), in the GPU spring stage or, on the cpu device, the numpy reference."""
        from engine.skinning.edits import EditStack, SurfaceEdit, SurfaceEdits

        self.require_alive()
        if not isinstance(edit, SurfaceEdit):
            raise TypeError(f"edit must be a SurfaceEdit, got {type(edit).__name__}")
        s = self._session
        settings = s.meshes.settings[self.entity]
        if not settings.takes_edits:
            raise ValueError(f"surface edits are spring forces: {self.name!r} deforms with "
                             f"{settings.deformer!r}; set_deformer('spring') first")
        edit.check(self.topology(primitive).n_control)
        comp = s.world.try_get(self.entity, SurfaceEdits)
        if comp is None:
            comp = SurfaceEdits()
            s.world.add(self.entity, comp)
        comp.stacks.setdefault(primitive, EditStack()).add(edit)
        s.mark_pose_changed()
        return edit

    def clear_edits(self, primitive: PrimitiveKey | None = None) -> Character:
        """Remove the surface edits of one primitive (or all); the deformer forgets them from the next frame."""
        from engine.skinning.edits import EditStack, SurfaceEdits

        self.require_alive()
        comp = self._session.world.try_get(self.entity, SurfaceEdits)
        if comp is not None:
            for key in list(comp.stacks):
                if primitive is None or key == primitive:
                    comp.stacks[key] = EditStack()  # kept empty for one frame so the graph hears of it
        self._session.mark_pose_changed()
        return self

    def save_edits(self, path: str | Path, **meta: Any) -> Path:
        """Write the surface edits as a versioned JSON file (engine.skinning.edits.edits_document)."""
        import json

        from engine.skinning.edits import edits_document

        p = Path(path)
        doc = edits_document({k.export_key: st for k, st in self.edits.items() if len(st)}, asset=self.name,
                             **meta)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(doc, indent=1) + "\n")
        return p

    def load_edits(self, path: str | Path) -> Character:
        """Add the edits of a file written by :meth:`save_edits` (primitives by export-frame name)."""
        from engine.skinning.edits import read_edits_file

        self.require_alive()
        p = Path(path)
        stacks = read_edits_file(p)  # the careful reader: regular file, size and depth limits, typed values
        keys = {k.export_key: k for k in self.skinned_primitives}
        for name in stacks:
            if name not in keys:
                raise ValueError(f"{p.name}: primitives.{name}: {self.name!r} has no such skinned primitive; "
                                 f"valid: {sorted(keys)}")
        for name, stack in stacks.items():
            for edit in stack:
                self.add_edit(keys[name], edit)
        return self

    # -- results -------------------------------------------------------------------------------------------
    def vertices(self, *, normals: bool = False) -> dict[PrimitiveKey, Any]:
        """Deformed world-space display positions (D,3) float32 per primitive, in glTF vertex order, as the
        last frame drew them (read back from the GPU on the gpu device). ``normals``: (positions, normals)."""
        self.require_alive()
        s = self._session
        if s.pose_changed:  # a pose changed (spawn, play, place) since the last frame: deform it first
            s.settle(render=False)
        out = s.world.get(self.entity, DeformedMeshes).positions
        return s.meshes.vertices(self.entity, out, normals=normals)

    def joints(self) -> np.ndarray:
        """World matrices (N,4,4) of every node of the asset (placement included) at the last fixed step."""
        return self._session.world.get(self.entity, SkeletonPose).globals.copy()

    def set_visible(self, visible: bool, *, primitive: PrimitiveKey | None = None) -> Character:
        """Show or hide the character (or one of its primitives)."""
        self.require_alive()
        self._session.meshes.set_visible(self.entity, visible, primitive)
        return self

    def show_vertices(self, positions: dict[PrimitiveKey, np.ndarray] | None) -> Character:
        """Draw these world-space vertices for the given primitives instead of deforming them (cpu device;
        comparison sheets and tools); None goes back to deforming."""
        self.require_alive()
        self._session.meshes.hold(self.entity, positions)
        self._session.mark_pose_changed()
        return self

    def show_region(self, region: Any | None, *, primitive: PrimitiveKey | None = None,
                    point_size: float = 6.0) -> Character:
        """Draw a region of interest over the frame, on the deformed mesh, in the research's colours
        (kinematic green, passive blue, static red; engine/render/marks.py): ``region`` an
        engine.skinning.roi.Region (control points) or a dict of sets of glTF display vertex indices; None hides
        it. ``primitive`` defaults to the first skinned primitive."""
        from engine.render.marks import VertexMarks

        self.require_alive()
        renderer = self._session.require_renderer()
        key = primitive if primitive is not None else self.skinned_primitives[0]
        if region is None:
            self._session.show_marks(self.entity, key, None)
            return self
        sets = region.display(self.topology(key)) if hasattr(region, "display") else dict(region)
        rows = [i for i in self._session.meshes.instances.get(self.entity, ()) if i.key == key]
        if not rows or rows[0].handle is None:
            raise ValueError(f"{key} is not a drawn primitive of {self.name}; drawn: {self.primitives}")
        marks = VertexMarks(renderer, rows[0].handle.id, sets, point_size=point_size)
        self._session.show_marks(self.entity, key, marks.attach(self._session.view))
        return self

    def remove(self) -> None:
        """Remove the character now: its renderer meshes and deformer ranges are released."""
        self._session.remove(self)
