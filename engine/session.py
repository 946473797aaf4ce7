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
from engine.character import Character, deform_settings, placement, placement_matrix
from engine.components import (
    Animator,
    AssetRef,
    DeformedMeshes,
    MorphWeights,
    Placement,
    PoseLayer,
    PrimitiveKey,
    SkeletonPose,
    StillPlayback,
    playback_weights,
)
from engine.ecs import Clock, Phase, World
from engine.frame import View, build_schedule
from engine.input.events import EventQueue
from engine.scene import DeformSettings, LoadedAsset, SceneMeshes, load_asset
from engine.skinning.config import DeformerConfig

__all__ = ["Session", "Character", "placement_matrix", "GBUFFER_CHANNELS"]

#: The channels of :meth:`Session.gbuffer` (and of ``render --gbuffer``), in file order.
GBUFFER_CHANNELS = ("position", "normal", "depth", "barycentric", "triangle", "node", "mesh", "primitive",
                    "view", "projection")


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
        self.default = deform_settings(deformer, config, graph, DeformSettings())
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
        #: the one event queue: every device (a window, a replay, a headset) pushes into it, and the INPUT
        #: phase's systems read one frame's worth (engine/input/events.py)
        self.events = EventQueue()
        self.world.insert_resource(self.events)
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
        settings = deform_settings(deformer, config, graph, self.default)
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
        m = placement(loaded, position, yaw, scale, matrix, on_ground)
        e = self.world.spawn(AssetRef(loaded.name, asset, rig), Placement(m),
                             SkeletonPose.of(np.zeros((rig.count, 4, 4), np.float32)), DeformedMeshes(),
                             Animator(playback, pose))
        rest = loaded.morph_rest()
        if rest:  # only characters with morph targets carry weights (the frame's morph loops skip the rest)
            self.world.add(e, MorphWeights(rest))
        try:
            self.meshes.add(e, loaded, settings)
        except BaseException:
            self.world.despawn(e)
            self.world.flush()
            raise
        ch = Character(self, e, loaded)
        self.characters.append(ch)
        self.refresh_pose(e)
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

    def refresh_pose(self, entity: int) -> None:
        """Bring one character's pose up to date without advancing time (after spawn, play, place); the next
        read of its vertices deforms it first."""
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
        morph = self.world.try_get(entity, MorphWeights)
        if morph is not None:
            morph.update(playback_weights(anim.playback))
        self._dirty = True

    @property
    def pose_changed(self) -> bool:
        """A pose changed (spawn, play, place, an edit) since the last frame deformed the characters."""
        return self._dirty

    def mark_pose_changed(self) -> None:
        """Say a pose or an edit changed outside the frame: the next vertex read deforms first."""
        self._dirty = True

    def show_marks(self, entity: int, key: PrimitiveKey, marks: Any | None) -> None:
        """Show ``marks`` (engine/render/marks.py, attached to the view) for one character's primitive instead of
        the ones shown before (released); None hides them."""
        old = self._marks.pop((entity, key), None)
        if old is not None:
            old.release()
        if marks is not None:
            self._marks[(entity, key)] = marks

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

    def require_renderer(self) -> Any:
        """The renderer (ValueError naming the cause for a session made with ``render=False``)."""
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

        r = self.require_renderer()
        b = self.bounds()
        if b is None:
            return self.camera
        lo, hi = b
        cam = Camera(eye=np.asarray(direction, np.float64), target=np.zeros(3), aspect=r.width / r.height)
        self.camera = cam.fit(lo, hi, margin=margin)
        return self.camera

    def render(self) -> np.ndarray:
        """Draw the current state (no time passes) and return the frame as (H,W,4) uint8, row 0 at the top."""
        r = self.require_renderer()
        self.settle()
        return r.read_pixels()

    def save_png(self, path: str | Path) -> Path:
        """Write the last drawn frame as PNG (call ``step`` or ``render`` first)."""
        p = Path(path)
        if p.suffix.lower() != ".png":
            raise ValueError(f"the image must end in .png, got {p.name!r}")
        p.parent.mkdir(parents=True, exist_ok=True)
        self.require_renderer().save_png(p)
        return p

    def resize(self, width: int, height: int) -> None:
        self.require_renderer().resize(int(width), int(height))

    def gbuffer(self) -> dict[str, np.ndarray]:
        """The last frame's G-buffer channels (row 0 = top; background: -1 ids, 0 floats, depth 1):
        position, normal (H,W,3) float32 world; depth, barycentric; triangle, node, mesh, primitive (H,W)
        int32; view and projection (4,4) float32 (clip = projection @ view @ world)."""
        r = self.require_renderer()
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
        r = self.require_renderer()
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

        r = self.require_renderer()
        return window_ray(x, y, r.width, r.height, self.camera.view, self.camera.projection_for(r.width / r.height))

    # -- surface queries -----------------------------------------------------------------------------------
    def pick(self, x: int, y: int, *, layer: str | None = None) -> Any:
        """What the last frame shows under window pixel (x, y) (row 0 = top): a SurfaceHit (entity, glTF
        node/mesh/primitive, triangle, barycentric, position, normal, depth) or None."""
        return self.require_renderer().query(int(x), int(y), layer=layer)

    def pick_many(self, points: Iterable[tuple[int, int]], *, layer: str | None = None) -> list[Any]:
        return self.require_renderer().query_many(list(points), layer=layer)

    def pick_async(self, points: Iterable[tuple[int, int]], *, layer: str | None = None) -> Any:
        """Record a query; its result is read back at the start of the next frame (never stalls this one)."""
        return self.require_renderer().query_async(list(points), layer=layer)

    def evaluate(self, points: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """World positions and normals of surface points on the current deformed meshes."""
        return self.require_renderer().evaluate(points)

    # -- development ---------------------------------------------------------------------------------------
    def reload_shaders(self) -> list[Any]:
        """Recompile every program whose shader files changed (a failed compile keeps the old program and is
        returned with its message)."""
        return [] if self.programs is None else self.programs.reload_changed()
