"""The scripting API: one :class:`Session` owns the world, the one schedule (engine/frame.py), the clock and every
GPU owner; :class:`Character` is a handle on one spawned character.

    from engine import Session

    with Session(width=640, height=360) as s:            # headless unless a window is asked for
        hero = s.spawn("humanoid", clip="walk")           # a generated character, or a .gltf/.glb path
        s.step(frames=30)                                 # 30 fixed steps of 1/60 s, rendered
        s.save_png("walk.png")
        hit = s.pick(320, 180)                            # (entity, triangle, barycentric) under a pixel

Everything runs the same frame: the demo window, the commands (``export-frame``, ``render``, ``compare``),
the benchmarks and the editor. ``device="gpu"`` deforms with the compute-shader deformer graph (vertices stay on
the GPU; the renderer binds them), ``device="cpu"`` with the numpy reference. ``render=False`` makes no renderer
(export without drawing). Errors at the API edge raise ValueError naming the bad value; the scene is unchanged.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim import Playback, Pose, global_matrices
from engine.assets.model import Asset
from engine.components import (
    Animator,
    AssetRef,
    DeformedMeshes,
    Placement,
    PoseLayer,
    PrimitiveKey,
    SkeletonPose,
    StillPlayback,
)
from engine.ecs import Clock, Phase, World
from engine.frame import View, build_schedule
from engine.scene import DeformSettings, LoadedAsset, SceneMeshes, load_asset
from engine.skinning.config import DeformerConfig

__all__ = ["Session", "Character", "placement_matrix", "GBUFFER_CHANNELS"]

#: The channels of :meth:`Session.gbuffer` (and of ``render --gbuffer``), in file order.
GBUFFER_CHANNELS = ("position", "normal", "depth", "barycentric", "triangle", "node", "mesh", "primitive",
                    "view", "projection")


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


def _settings(deformer: str | None, config: DeformerConfig | str | Path | None, graph: Any,
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


def _placement(loaded: LoadedAsset, position: Sequence[float], yaw: float, scale: float,
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

    def _check(self) -> None:
        if not self.alive:
            raise ValueError(f"character {self.name!r} (entity {self.entity}) was removed")

    @property
    def primitives(self) -> list[PrimitiveKey]:
        """Every mesh primitive it draws, skinned ones first: (glTF node, mesh, primitive)."""
        self._check()
        return [i.key for i in self._session.meshes.instances[self.entity]]

    @property
    def skinned_primitives(self) -> list[PrimitiveKey]:
        self._check()
        return [i.key for i in self._session.meshes.instances[self.entity] if i.skinned is not None]

    def __repr__(self) -> str:
        return f"Character({self.name!r}, entity={self.entity})"

    # -- playback ------------------------------------------------------------------------------------------
    @property
    def clips(self) -> list[str]:
        return [c.name for c in self.asset.clips]

    def _playback(self) -> Playback:
        anim = self._session.world.get(self.entity, Animator)
        if not isinstance(anim.playback, Playback):
            raise ValueError(f"{self.name!r} has no animation clips")
        return anim.playback

    def play(self, clip: str | int, *, time: float = 0.0, speed: float | None = None,
             mode: str | None = None) -> Character:
        """Play ``clip`` (name or index) from clip time ``time``; ``speed`` (negative: backwards) and ``mode``
        ("loop" | "clamp" | "pingpong") keep their values when not given. The pose is updated at once."""
        self._check()
        pb = self._playback()
        index = self.asset.clip_index(clip)
        if not math.isfinite(time):
            raise ValueError(f"time must be a finite number of seconds, got {time!r}")
        if speed is not None:
            pb.speed = speed
        if mode is not None:
            pb.mode = mode
        pb.crossfade(index, 0.0, start_time=float(time))
        self._session._settle(self.entity)
        return self

    def crossfade(self, clip: str | int, duration: float, *, time: float = 0.0, ramp: str = "linear") -> Character:
        """Blend from the current pose into ``clip`` over ``duration`` seconds."""
        self._check()
        self._playback().crossfade(self.asset.clip_index(clip), duration, start_time=time, ramp=ramp)
        return self

    @property
    def time(self) -> float:
        """Clip clock in seconds (unwrapped; ``local_time`` of the Playback is wrapped by the mode)."""
        return self._playback().time

    @property
    def speed(self) -> float:
        return self._playback().speed

    @speed.setter
    def speed(self, value: float) -> None:
        self._playback().speed = value

    def hold(self) -> Character:
        """Stop the clock at the current pose (speed 0)."""
        if isinstance(self._session.world.get(self.entity, Animator).playback, Playback):
            self._playback().speed = 0.0
        return self

    # -- placement -----------------------------------------------------------------------------------------
    @property
    def matrix(self) -> np.ndarray:
        return self._session.world.get(self.entity, Placement).matrix.copy()

    def place(self, position: Sequence[float] = (0.0, 0.0, 0.0), *, yaw: float = 0.0, scale: float = 1.0,
              matrix: np.ndarray | None = None, on_ground: bool = False) -> Character:
        """Put the character at ``position`` turned ``yaw`` degrees about +Y, or at a 4x4 ``matrix``;
        ``on_ground`` lifts it so its rest pose stands on y = 0."""
        self._check()
        m = _placement(self.loaded, position, yaw, scale, matrix, on_ground)
        self._session.world.get(self.entity, Placement).matrix = m
        self._session._settle(self.entity)
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
        self._check()
        cur = self._session.meshes.settings[self.entity]
        self._session.meshes.set_settings(self.entity, _settings(deformer, config, graph, cur))
        self._session._settle(self.entity)
        return self

    # -- posing (research 7.2) ------------------------------------------------------------------------------
    @property
    def pose_layer(self) -> PoseLayer | None:
        """The additive pose over the playing clip (None until the character is first posed)."""
        self._check()
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
        self._check()
        return self._session.world.get(self.entity, Animator).pose.copy()

    def apply_line_of_action(self, baseline: Any, offset: Any, *, brush_radius: float,
                             reference: Sequence[float] | np.ndarray | None = None,
                             joints: Sequence[int] | None = None) -> Any:
        """Pose by a baseline and an offset stroke (research 7.2): both world-space :class:`Stroke` objects or
        (N,3) point lists in metres; ``brush_radius`` metres selects the joints near the baseline;
        ``reference``: the strokes' common frame normal (e.g. the posing plane's); ``joints``: the nodes that
        may be selected (default: the skin joints). The change is added to the pose layer, the pose updated at
        once; returns the :class:`engine.anim.posing.LineOfAction` (selection, targets, deltas)."""
        from engine.anim.posing import solve_line_of_action
        from engine.input.strokes import Stroke
        from engine.math import quat

        self._check()
        strokes = [s if isinstance(s, Stroke) else Stroke.fit(np.asarray(s, np.float64)) for s in (baseline, offset)]
        self._session._settle(self.entity)
        world = self._session.world
        anim = world.get(self.entity, Animator)
        ref = None if reference is None else np.asarray(reference, np.float64)
        res = solve_line_of_action(self.loaded.rig, anim.pose, strokes[0], strokes[1], float(brush_radius),
                                   placement=world.get(self.entity, Placement).matrix, joints=joints, reference=ref)
        layer = self._layer()
        layer.rotation[...] = quat.normalize(quat.multiply(res.deltas, layer.rotation))
        self._session._settle(self.entity)
        return res

    def set_pose_layer(self, rotation: np.ndarray | None) -> Character:
        """Replace the pose layer's rotation deltas ((N,4) xyzw, parent space; None removes the layer), e.g. to
        undo a posing step. The pose is updated at once."""
        self._check()
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
        self._session._settle(self.entity)
        return self

    def clear_pose(self) -> Character:
        """Remove the pose layer: back to the clip's own pose."""
        return self.set_pose_layer(None)

    def key_pose(self, clip: str = "pose", *, time: float = 0.0) -> Character:
        """Key the current local pose (every node's TRS, layer included) into ``clip`` at ``time`` seconds;
        :meth:`save_glb` writes the keyed clips."""
        self._check()
        if not isinstance(clip, str) or not clip:
            raise ValueError(f"clip must be a non-empty name, got {clip!r}")
        if not (math.isfinite(time) and time >= 0):
            raise ValueError(f"time must be a finite number of seconds >= 0, got {time!r}")
        self._session._settle(self.entity)
        self.keyed.setdefault(clip, {})[float(time)] = self.local_pose()
        return self

    def save_glb(self, path: str | Path) -> Path:
        """Write the character's asset as .glb with the keyed clips added (a keyed clip replaces an existing
        clip of the same name; the others are kept)."""
        from engine.assets.save import save_with_poses

        self._check()
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
        self._check()
        return self._skinned(primitive).skinned.topology()

    def edit_frame(self, primitive: PrimitiveKey) -> tuple[np.ndarray, np.ndarray]:
        """(attach (V,3), rot (V,3,3)) of the primitive's control points in the current pose: what surface edits
        are encoded against (engine.skinning.edits.edit_pose)."""
        from engine.skinning.edits import edit_pose

        self._check()
        sp = self._skinned(primitive).skinned
        cfg = self.config
        binding = sp.binding(method=cfg.binding.method, smooth_passes=cfg.binding.smooth_passes)
        return edit_pose(binding, sp.bind_joints, self.joints()[sp.skin.joints])

    @property
    def edits(self) -> dict[PrimitiveKey, Any]:
        """The character's surface edits: primitive -> engine.skinning.edits.EditStack (empty when none)."""
        from engine.skinning.edits import SurfaceEdits

        self._check()
        comp = self._session.world.try_get(self.entity, SurfaceEdits)
        return {} if comp is None else dict(comp.stacks)

    def add_edit(self, primitive: PrimitiveKey, edit: Any) -> Any:
        """Add a surface edit (engine.skinning.edits.SurfaceEdit over the primitive's control points) to the
        primitive's edit stack; it acts from the next frame on, every frame, decoded in the current pose at the
        current clip time. Edits are spring forces: the character must deform with the spring deformer (ValueError
        otherwise, naming what to change), in the GPU spring stage or, on the cpu device, the numpy reference."""
        from engine.skinning.edits import EditStack, SurfaceEdit, SurfaceEdits

        self._check()
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
        s._dirty = True
        return edit

    def clear_edits(self, primitive: PrimitiveKey | None = None) -> Character:
        """Remove the surface edits of one primitive (or all); the deformer forgets them from the next frame."""
        from engine.skinning.edits import EditStack, SurfaceEdits

        self._check()
        comp = self._session.world.try_get(self.entity, SurfaceEdits)
        if comp is not None:
            for key in list(comp.stacks):
                if primitive is None or key == primitive:
                    comp.stacks[key] = EditStack()  # kept empty for one frame so the graph hears of it
        self._session._dirty = True
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
        import json

        from engine.skinning.edits import parse_edits_document

        self._check()
        p = Path(path)
        try:
            doc = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{p.name}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
        try:
            stacks = parse_edits_document(doc)
        except ValueError as e:
            raise ValueError(f"{p.name}: {e}") from None
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
        self._check()
        s = self._session
        if s._dirty:  # a pose changed (spawn, play, place) since the last frame: deform it first
            s.settle(render=False)
        out = s.world.get(self.entity, DeformedMeshes).positions
        return s.meshes.vertices(self.entity, out, normals=normals)

    def joints(self) -> np.ndarray:
        """World matrices (N,4,4) of every node of the asset (placement included) at the last fixed step."""
        return self._session.world.get(self.entity, SkeletonPose).globals.copy()

    def set_visible(self, visible: bool, *, primitive: PrimitiveKey | None = None) -> Character:
        """Show or hide the character (or one of its primitives)."""
        self._check()
        self._session.meshes.set_visible(self.entity, visible, primitive)
        return self

    def show_vertices(self, positions: dict[PrimitiveKey, np.ndarray] | None) -> Character:
        """Draw these world-space vertices for the given primitives instead of deforming them (cpu device;
        comparison sheets and tools); None goes back to deforming."""
        self._check()
        self._session.meshes.hold(self.entity, positions)
        self._session._dirty = True
        return self

    def show_region(self, region: Any | None, *, primitive: PrimitiveKey | None = None,
                    point_size: float = 6.0) -> Character:
        """Draw a region of interest over the frame, on the deformed mesh, in the research's colours
        (kinematic green, passive blue, static red; engine/render/marks.py): ``region`` an
        engine.skinning.roi.Region (control points) or a dict of sets of glTF display vertex indices; None hides
        it. ``primitive`` defaults to the first skinned primitive."""
        from engine.render.marks import VertexMarks

        self._check()
        renderer = self._session._need_renderer()
        key = primitive if primitive is not None else self.skinned_primitives[0]
        old = self._session._marks.pop((self.entity, key), None)
        if old is not None:
            old.release()
        if region is None:
            return self
        sets = region.display(self.topology(key)) if hasattr(region, "display") else dict(region)
        rows = [i for i in self._session.meshes.instances.get(self.entity, ()) if i.key == key]
        if not rows or rows[0].handle is None:
            raise ValueError(f"{key} is not a drawn primitive of {self.name}; drawn: {self.primitives}")
        marks = VertexMarks(renderer, rows[0].handle.id, sets, point_size=point_size)
        self._session._marks[(self.entity, key)] = marks.attach(self._session.view)
        return self

    def remove(self) -> None:
        """Remove the character now: its renderer meshes and deformer ranges are released."""
        self._session.remove(self)


class Session:
    """The engine, scriptable: world + schedule + clock + GPU owners (deformer graph, renderer).

    Keyword options: ``device`` "gpu" | "cpu"; ``render`` (False: no renderer, e.g. export); ``width``,
    ``height`` of the frame; ``headless`` (None: a window when ``window=True`` and a display exists);
    ``window`` (True: open a window, for the demo/editor); ``deformer``/``config``/``graph``: the default
    deformation of spawned characters; ``step``: the fixed simulation step in seconds; ``look``: renderer
    look settings; ``strict``: re-raise a system's exception instead of logging it (commands and tests);
    ``gl``: an existing GLContext to share (not released by the session); ``shaders``: the shader folder
    (default: the engine's own; point it at a copy to develop shaders with :meth:`reload_shaders`).
    """

    def __init__(self, *, device: str = "gpu", render: bool = True, width: int = 1280, height: int = 720,
                 headless: bool | None = None, window: bool = False, title: str = "skinengine",
                 deformer: str = "lbs", config: DeformerConfig | str | Path | None = None, graph: Any = None,
                 step: float = 1.0 / 60.0, look: Any = None, strict: bool = False, gl: Any = None,
                 shaders: str | Path | None = None) -> None:
        if device not in ("gpu", "cpu"):
            raise ValueError(f"device must be 'gpu' or 'cpu', got {device!r}")
        for what, v in (("width", width), ("height", height)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= int(v) <= 8192:
                raise ValueError(f"{what} must be an integer in [1, 8192], got {v!r}")
        if not (isinstance(step, (int, float)) and math.isfinite(step) and 1e-4 <= step <= 1.0):
            raise ValueError(f"step must be in [1e-4, 1] seconds, got {step!r}")
        self.device = device
        self.default = _settings(deformer, config, graph, DeformSettings())
        SceneMeshes.check(self.default, device)
        self._released = False
        needs_gl = render or device == "gpu"  # the numpy reference without drawing needs no GL at all
        self._own_gl = gl is None and needs_gl
        if gl is None and needs_gl:
            from engine.gpu.context import create_context

            want_window = window and headless is not True
            gl = create_context(headless=None if want_window else True, width=width, height=height, title=title)
        self.gl = gl
        self.ctx = gl.ctx if gl is not None else None
        self.resources = None
        self.programs = None
        self.renderer = None
        self.graph = None
        if self.ctx is not None:
            from engine.gpu.resources import GpuResources
            from engine.gpu.shaderlib import ProgramCache, ShaderLibrary

            self.resources = GpuResources(self.ctx)
            self.programs = ProgramCache(self.resources, ShaderLibrary(shaders) if shaders is not None else None)
        try:
            if render:
                from engine.render.renderer import LookSettings, SceneRenderer

                assert self.ctx is not None and self.resources is not None  # needs_gl

                self.renderer = SceneRenderer(self.ctx, self.resources, int(width), int(height),
                                              look=look if look is not None else LookSettings(),
                                              programs=self.programs)
            if device == "gpu":
                from engine.skinning.gpu.graph import DeformerGraph

                assert self.ctx is not None and self.resources is not None  # needs_gl
                self.graph = DeformerGraph(self.ctx, self.resources, programs=self.programs)
        except BaseException:
            self._release_gpu()
            if self._own_gl:
                self.gl.release()
            raise
        self.world = World()
        self.clock = Clock(step=step)
        self.world.insert_resource(self.clock)
        self.meshes = SceneMeshes(device=device, graph=self.graph, renderer=self.renderer)
        self.world.insert_resource(self.meshes)
        from engine.render.camera import Camera

        self.view = View(self.renderer, Camera(eye=np.array([0.0, 1.2, 4.0]), target=np.array([0.0, 0.9, 0.0]),
                                               aspect=int(width) / int(height)))
        self.world.insert_resource(self.view)
        self.schedule = build_schedule(strict=strict)
        self.characters: list[Character] = []
        self._assets: dict[str, LoadedAsset] = {}
        self.frame_ms: list[float] = []
        self._dirty = False  # a pose changed since the last frame deformed it
        self._marks: dict[tuple[int, PrimitiveKey], Any] = {}  # regions shown per (entity, primitive)

    # -- lifetime ----------------------------------------------------------------------------------------------
    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _release_gpu(self) -> None:
        for marks in self._marks.values():
            marks.release()
        self._marks = {}
        if self.graph is not None:
            self.graph.release()
        if self.renderer is not None:
            self.renderer.release()
        if self.programs is not None:
            self.programs.release()
        if self.resources is not None:
            self.resources.release_all()

    def release(self) -> None:
        """Release every GPU object (and the context when the session made it). Idempotent."""
        if self._released:
            return
        self._released = True
        for ch in list(self.characters):
            self.meshes.remove(ch.entity)
        self.characters.clear()
        self._release_gpu()
        if self._own_gl:
            self.gl.release()

    def live_gpu_objects(self) -> int:
        """GPU objects alive in this session's resource owner (a leak shows as growth)."""
        return 0 if self.resources is None else self.resources.live_count

    # -- characters ----------------------------------------------------------------------------------------
    def load(self, source: str | Path | Asset) -> LoadedAsset:
        """Load (once per name or path) an asset: a generated character's name or a .gltf/.glb path."""
        key = f"asset@{id(source)}" if isinstance(source, Asset) else str(source)
        if key not in self._assets:
            self._assets[key] = load_asset(source)
        loaded = self._assets[key]
        if isinstance(source, Asset) and loaded.asset is not source:  # an id reused after garbage collection
            loaded = self._assets[key] = load_asset(source)
        return loaded

    def spawn(self, source: str | Path | Asset | LoadedAsset, *, clip: str | int | None = 0, time: float = 0.0,
              speed: float = 1.0, mode: str = "loop", position: Sequence[float] = (0.0, 0.0, 0.0),
              yaw: float = 0.0, scale: float = 1.0, matrix: np.ndarray | None = None, on_ground: bool = False,
              deformer: str | None = None, config: DeformerConfig | str | Path | None = None,
              graph: Any = None) -> Character:
        """Add a character playing ``clip`` (name or index; None: rest pose) from clip time ``time``.

        Placement: ``position``/``yaw``/``scale`` or a 4x4 ``matrix``; ``on_ground`` stands its rest pose on
        y = 0. Deformation: ``deformer`` (a name of the deformer table) with ``config`` (a DeformerConfig or a
        TOML path), or a deformer ``graph`` file (GPU); defaults from the session. Nothing is added when
        anything is refused."""
        loaded = source if isinstance(source, LoadedAsset) else self.load(source)
        settings = _settings(deformer, config, graph, self.default)
        SceneMeshes.check(settings, self.device)
        if not math.isfinite(time):
            raise ValueError(f"time must be a finite number of seconds, got {time!r}")
        asset, rig = loaded.asset, loaded.rig
        pose = Pose.rest(rig)
        if clip is not None and asset.clips:
            playback: Playback | StillPlayback = Playback(rig, loaded.samplers, asset.clip_index(clip),
                                                          time=float(time), speed=speed, mode=mode)
        elif clip is not None and str(clip) != "0":
            raise ValueError(f"no clip {clip!r}; the asset has no animations")
        else:
            playback = StillPlayback()
        m = _placement(loaded, position, yaw, scale, matrix, on_ground)
        e = self.world.spawn(AssetRef(loaded.name, asset, rig), Placement(m),
                             SkeletonPose.of(np.zeros((rig.count, 4, 4), np.float32)), DeformedMeshes(),
                             Animator(playback, pose))
        try:
            self.meshes.add(e, loaded, settings)
        except BaseException:
            self.world.despawn(e)
            self.world.flush()
            raise
        ch = Character(self, e, loaded)
        self.characters.append(ch)
        self._settle(e)
        return ch

    def remove(self, character: Character) -> None:
        """Remove a character now (GPU memory returned)."""
        if character not in self.characters:
            raise ValueError(f"{character!r} is not in this session")
        for k in [k for k in self._marks if k[0] == character.entity]:
            self._marks.pop(k).release()
        self.meshes.remove(character.entity)
        self.world.despawn(character.entity)
        self.world.flush()
        self.characters.remove(character)

    def _settle(self, entity: int) -> None:
        """Bring one character's pose up to date without advancing time (after spawn, play, place)."""
        anim = self.world.get(entity, Animator)
        anim.playback.evaluate(anim.pose)
        layer = self.world.try_get(entity, PoseLayer)
        if layer is not None:
            layer.apply(anim.pose)
        ref = self.world.get(entity, AssetRef)
        g = global_matrices(ref.rig, anim.pose)
        g = np.matmul(self.world.get(entity, Placement).matrix, g).astype(np.float32)
        skel = self.world.get(entity, SkeletonPose)
        skel.globals[...] = g
        skel.previous[...] = g
        self._dirty = True

    # -- systems -------------------------------------------------------------------------------------------
    def add_system(self, phase: Phase, fn: Callable[[World], None], **kwargs: Any) -> str:
        """Register a system in the one schedule (the editor, profiler and tools add theirs here)."""
        return self.schedule.add_system(phase, fn, **kwargs)

    # -- running -------------------------------------------------------------------------------------------
    def frame(self, real_dt: float, *, render: bool = True, interpolate: bool = True) -> None:
        """One displayed frame: INPUT/TOOLS, the due fixed steps, then RENDER (drawn when ``render`` and the
        session has a renderer) and UI. ``real_dt``: real seconds since the last frame. ``interpolate``: draw
        the pose between the last two fixed steps at the clock's alpha (the real-time loops); False draws the
        last step itself."""
        if not math.isfinite(real_dt) or real_dt < 0:
            raise ValueError(f"real_dt must be a finite number of seconds >= 0, got {real_dt!r}")
        self.view.enabled = render and self.renderer is not None
        self.view.interpolate = interpolate
        t0 = time.perf_counter()
        self.schedule.run_frame(self.world, self.clock, real_dt)
        self.frame_ms.append((time.perf_counter() - t0) * 1e3)
        self._dirty = False

    def step(self, frames: int = 1, *, dt: float | None = None, render: bool = True) -> None:
        """Run ``frames`` frames of ``dt`` seconds each (default: exactly one fixed step each, and each frame
        draws the state of its last step; with ``dt`` the frames interpolate as the real-time loop does)."""
        if isinstance(frames, bool) or not isinstance(frames, (int, np.integer)) or frames < 0:
            raise ValueError(f"frames must be an integer >= 0, got {frames!r}")
        for _ in range(int(frames)):
            self.frame(self.clock.step if dt is None else dt, render=render, interpolate=dt is not None)

    def settle(self, *, render: bool = True) -> None:
        """Deform (and draw) the current poses without advancing time: a frame with no fixed step."""
        self.frame(0.0, render=render, interpolate=False)

    # -- camera and drawing ------------------------------------------------------------------------------
    @property
    def camera(self) -> Any:
        return self.view.camera

    @camera.setter
    def camera(self, cam: Any) -> None:
        self.view.camera = cam

    def _need_renderer(self) -> Any:
        if self.renderer is None:
            raise ValueError("this session has no renderer (Session(render=False))")
        return self.renderer

    def bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(min, max) world box of every character's deformed vertices (read back; for framing)."""
        pts = [p for ch in self.characters for p in ch.vertices().values() if len(p)]
        if not pts:
            return None
        allp = np.concatenate(pts).astype(np.float64)
        return allp.min(0), allp.max(0)

    def fit_camera(self, *, margin: float = 1.1, direction: Sequence[float] = (0.0, 0.35, 1.0)) -> Any:
        """Point a camera from ``direction`` at every character's deformed bounds (exact, read back)."""
        from engine.render.camera import Camera

        r = self._need_renderer()
        b = self.bounds()
        if b is None:
            return self.camera
        lo, hi = b
        cam = Camera(eye=np.asarray(direction, np.float64), target=np.zeros(3), aspect=r.width / r.height)
        self.camera = cam.fit(lo, hi, margin=margin)
        return self.camera

    def render(self) -> np.ndarray:
        """Draw the current state (no time passes) and return the frame as (H,W,4) uint8, row 0 at the top."""
        r = self._need_renderer()
        self.settle()
        return r.read_pixels()

    def save_png(self, path: str | Path) -> Path:
        """Write the last drawn frame as PNG (call ``step`` or ``render`` first)."""
        p = Path(path)
        if p.suffix.lower() != ".png":
            raise ValueError(f"the image must end in .png, got {p.name!r}")
        p.parent.mkdir(parents=True, exist_ok=True)
        self._need_renderer().save_png(p)
        return p

    def resize(self, width: int, height: int) -> None:
        self._need_renderer().resize(int(width), int(height))

    def gbuffer(self) -> dict[str, np.ndarray]:
        """The last frame's G-buffer channels (row 0 = top; background: -1 ids, 0 floats, depth 1):
        position, normal (H,W,3) float32 world; depth, barycentric; triangle, node, mesh, primitive (H,W)
        int32; view and projection (4,4) float32 (clip = projection @ view @ world)."""
        r = self._need_renderer()
        s = r.surface_arrays()
        table = r.id_table()
        mid = s["mesh"]
        hit = mid >= 0
        rows = np.where(hit, mid, 0)

        def tag(col: int) -> np.ndarray:
            if len(table) == 0:
                return np.full(mid.shape, -1, np.int32)
            return np.where(hit, table[rows, col], -1).astype(np.int32)

        return {
            "position": s["position"].astype(np.float32),
            "normal": s["normal"].astype(np.float32),
            "depth": s["depth"].astype(np.float32),
            "barycentric": s["barycentric"].astype(np.float32),
            "triangle": s["triangle"].astype(np.int32),
            "node": tag(2),
            "mesh": tag(3),
            "primitive": tag(4),
            "view": np.asarray(r.last_view, np.float32),
            "projection": np.asarray(r.last_projection, np.float32),
        }

    def silhouette_image(self, channel: str = "normal", threshold: float | None = None) -> np.ndarray:
        """The silhouette filter's output over the current state (research 7.3; the renderer's "silhouette"
        debug view: the Laplacian of G-buffer ``channel`` in grey, yellow above ``threshold``, None: the
        channel's default) as (H,W,4) uint8, row 0 at the top. The view shown before is restored for the next
        frame."""
        r = self._need_renderer()
        old_view, old_filter = r.view, r.silhouette_view
        r.silhouette_view = (channel, threshold)
        r.view = "silhouette"
        try:
            return self.render()
        finally:
            r.view = old_view
            r.silhouette_view = old_filter

    def ray(self, x: float, y: float) -> np.ndarray:
        """The world ray (pyrr: origin, unit direction) through window pixel (x, y) of the current camera."""
        from engine.input.rays import window_ray

        r = self._need_renderer()
        return window_ray(x, y, r.width, r.height, self.camera.view, self.camera.projection_for(r.width / r.height))

    # -- surface queries -----------------------------------------------------------------------------------
    def pick(self, x: int, y: int, *, layer: str | None = None) -> Any:
        """What the last frame shows under window pixel (x, y) (row 0 = top): a SurfaceHit (entity, glTF
        node/mesh/primitive, triangle, barycentric, position, normal, depth) or None."""
        return self._need_renderer().query(int(x), int(y), layer=layer)

    def pick_many(self, points: Iterable[tuple[int, int]], *, layer: str | None = None) -> list[Any]:
        return self._need_renderer().query_many(list(points), layer=layer)

    def pick_async(self, points: Iterable[tuple[int, int]], *, layer: str | None = None) -> Any:
        """Record a query; its result is read back at the start of the next frame (never stalls this one)."""
        return self._need_renderer().query_async(list(points), layer=layer)

    def evaluate(self, points: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """World positions and normals of surface points on the current deformed meshes."""
        return self._need_renderer().evaluate(points)

    # -- development ---------------------------------------------------------------------------------------
    def reload_shaders(self) -> list[Any]:
        """Recompile every program whose shader files changed (a failed compile keeps the old program and is
        returned with its message)."""
        return [] if self.programs is None else self.programs.reload_changed()
