"""The demo scene: generated characters playing their clips on a ground plane.

``python main.py`` opens a window when a display exists (orbit camera on the mouse, Space play/pause,
``.`` single step while paused, ``[`` / ``]`` time scale, W wireframe, V cycles the G-buffer debug views,
Esc quit) and otherwise runs headless.
``python main.py --headless --frames N --screenshot out.png`` renders N frames offscreen, writes the PNG and
prints the frame-time summary.

Frame structure (engine/ecs/schedule.py): ANIMATION -> SKELETON -> DEFORM on the fixed step, RENDER once per
displayed frame. The scene owns every GPU object (renderer, deformer buffers); components hold numpy data only.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.anim import Playback, Pose, Rig
from engine.assets import load
from engine.assets.model import Asset
from engine.ecs import Clock, Phase, Schedule, World
from engine.profile.stats import FrameStats
from engine.skinning.instances import SkinnedPrimitive, skinned_primitives
from engine.tools.render_frame import material_kwargs
from game.components import Animator, Character, DeformedMeshes, Placement, SkeletonPose
from game.systems import animation_system, skeleton_system

# The default cast: (character, clip, speed). Humanoids first; the research's test pieces beside them.
DEFAULT_CAST = (
    ("humanoid", "walk", 1.0),
    ("humanoid", "wave", 1.0),
    ("humanoid", "idle", 1.0),
    ("humanoid", "stretch", 1.0),
    ("cylinder", "twist", 1.0),
    ("plus", 0, 1.0),
    ("box", 0, 1.0),
    ("humanoid", "walk", 0.8),
)


@dataclass
class MeshInstance:
    """One drawable primitive instance of an entity: skinned (deformed) or rigid (node transform)."""

    entity: int
    key: str
    skinned: SkinnedPrimitive | None
    asset_name: str
    node: int
    positions: np.ndarray  # (V,3) bind/local positions
    normals: np.ndarray | None
    handle: object  # renderer MeshHandle (owned by the renderer)
    deform: object = None  # DeformHandle in the scene's deformer graph (GPU path)
    radius: float = 0.0  # how far the skin reaches from the joints (for the shadow bounds on the GPU path)


def placement(x: float, z: float, yaw_deg: float = 0.0, scale: float = 1.0) -> np.ndarray:
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    m = np.eye(4, dtype=np.float32)
    m[:3, :3] = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]], np.float32) * scale
    m[:3, 3] = (x, 0.0, z)
    return m


def _clip_or_zero(asset: Asset, clip) -> int:
    try:
        return asset.clip_index(clip)
    except ValueError:
        return 0


def _ground_offset(asset: Asset, rig: Rig) -> float:
    """Lift an asset so its rest pose stands on y = 0 (the research pieces are centred on the origin)."""
    from engine.anim import global_matrices

    g = global_matrices(rig, Pose.rest(rig))
    lo = math.inf
    for n in asset.scene_nodes():
        node = asset.nodes[n]
        if node.mesh is None:
            continue
        for prim in asset.meshes[node.mesh].primitives:
            if node.skin is not None and prim.is_skinned:
                p = prim.positions  # bind space = world at bind
            else:
                p = prim.positions @ g[n, :3, :3].T + g[n, :3, 3]
            lo = min(lo, float(p[:, 1].min()))
    return 0.0 if not math.isfinite(lo) else -lo


class DemoScene:
    """World + schedule + renderer for the demo; also used by tests and benchmarks headless."""

    def __init__(self, gl, *, width: int, height: int, cast=DEFAULT_CAST, count: int = 6,
                 asset_path: str | None = None, deformer: str = "auto", device: str = "gpu",
                 graph_file: str | None = None) -> None:
        from engine.render.camera import OrbitCamera
        from engine.render.renderer import SceneRenderer
        from engine.gpu.resources import GpuResources

        if count < 1 or count > 256:
            raise ValueError(f"--characters must be in [1, 256], got {count}")
        if device not in ("gpu", "cpu"):
            raise ValueError(f"--device must be gpu or cpu, got {device!r}")
        if deformer == "auto":
            deformer = "lbs" if "llvmpipe" in gl.ctx.info.get("GL_RENDERER", "") else "spring"
        valid = ("lbs", "dqs", "rigid", "irs", "spring") if device == "gpu" else ("lbs", "dqs")
        if deformer not in valid:
            raise ValueError(f"the demo on --device {device} deforms with {', '.join(valid)}; got {deformer!r}")
        self.gl = gl
        self.deformer = deformer
        self.device = device
        self.resources = GpuResources(gl.ctx)
        self.renderer = SceneRenderer(gl.ctx, self.resources, width, height)
        self.graph = None
        self.graph_config = None
        if graph_file is not None:
            from engine.skinning.gpu.plan import GraphConfig

            if device != "gpu":
                raise ValueError("--graph needs --device gpu")
            self.graph_config = GraphConfig.load(graph_file)
            self.deformer = deformer = f"graph {self.graph_config.name!r}"
        if device == "gpu":
            from engine.skinning.gpu.graph import DeformerGraph

            self.graph = DeformerGraph(gl.ctx, self.resources)
        self.world = World()
        self.clock = Clock(step=1.0 / 60.0)
        self.world.insert_resource(self.clock)
        self.schedule = Schedule()
        self.schedule.add_system(Phase.ANIMATION, animation_system)
        self.schedule.add_system(Phase.SKELETON, skeleton_system)
        self.schedule.add_system(Phase.DEFORM, self.deform_system)
        self.schedule.add_system(Phase.RENDER, self.upload_system)
        self.instances: list[MeshInstance] = []
        self._assets: dict[str, tuple[Asset, Rig, list[SkinnedPrimitive], float]] = {}
        self._spawn_cast(cast, count, asset_path)
        self.camera = OrbitCamera(target=(0.0, 0.9, 0.0), distance=7.0, yaw=20.0, pitch=16.0,
                                  aspect=width / height)
        self.frame_ms: list[float] = []
        self._fit_camera()

    # -- set-up ------------------------------------------------------------------------------
    def _asset(self, name_or_path: str):
        if name_or_path not in self._assets:
            if name_or_path.endswith((".glb", ".gltf")):
                path = Path(name_or_path)
            else:
                from engine.assets.library import character_path
                path = character_path(name_or_path)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                asset = load(path)
            rig = Rig.from_asset(asset)
            self._assets[name_or_path] = (asset, rig, skinned_primitives(asset, rig), _ground_offset(asset, rig))
        return self._assets[name_or_path]

    def _spawn_cast(self, cast, count: int, asset_path: str | None) -> None:
        entries = [(asset_path, 0, 1.0)] * count if asset_path else [cast[i % len(cast)] for i in range(count)]
        cols = max(1, math.ceil(math.sqrt(count)))
        spacing = 1.6
        for i, (name, clip, speed) in enumerate(entries):
            asset, rig, prims, lift = self._asset(name)
            row, col = divmod(i, cols)
            x = (col - (cols - 1) / 2) * spacing
            z = -(row - (math.ceil(count / cols) - 1) / 2) * spacing
            m = placement(x, z, yaw_deg=15.0 * ((i % 3) - 1))
            m[1, 3] += lift
            playback = Playback.for_asset(rig, asset, _clip_or_zero(asset, clip), speed=speed, mode="loop") \
                if asset.clips else None
            pose = Pose.rest(rig)
            e = self.world.spawn(Character(name, asset, rig), Placement(m), SkeletonPose(np.zeros((rig.count, 4, 4),
                                 np.float32)), DeformedMeshes())
            if playback is not None:
                playback.advance(0.37 * i)  # desynchronise copies of the same clip
                self.world.add(e, Animator(playback, pose))
            else:
                self.world.add(e, Animator(_StillPlayback(), pose))
            self._register_meshes(e, name, asset, rig, prims)

    def _register_meshes(self, e: int, name: str, asset: Asset, rig: Rig, prims: list[SkinnedPrimitive]) -> None:
        for sp in prims:
            prim = sp.primitive
            deform = None
            buffers = None
            if self.graph is not None:
                # The graph writes pooled buffers; the renderer pulls this mesh's range of them (no copies).
                binding = None if self.deformer in ("lbs", "dqs") else sp.binding()
                how = dict(config=self.graph_config) if self.graph_config is not None else dict(method=self.deformer)
                deform = self.graph.add_mesh(
                    sp.topology(), binding, prim.joints, prim.weights, sp.skin.inverse_bind, sp.parents,
                    normals=prim.normals, asset_key=(name, sp.mesh, sp.prim, sp.skin_index), **how)
                buffers = self.graph.output_ranges(deform)
            handle = self.renderer.add_mesh(prim.indices, prim.vertex_count, **material_kwargs(asset, prim),
                                            buffers=buffers, label=f"e{e}:{sp.key}", entity=e, node=sp.node,
                                            mesh_index=sp.mesh, primitive=sp.prim)
            inst = MeshInstance(e, sp.key, sp, name, sp.node, prim.positions, prim.normals, handle, deform)
            if deform is not None:
                lo, hi = prim.positions.min(0), prim.positions.max(0)
                inst.radius = float(np.linalg.norm(hi - lo)) * 0.35
            self.instances.append(inst)
        skinned_nodes = {sp.node for sp in prims}
        for n in asset.scene_nodes():
            node = asset.nodes[n]
            if node.mesh is None or n in skinned_nodes:
                continue
            for p, prim in enumerate(asset.meshes[node.mesh].primitives):
                handle = self.renderer.add_mesh(prim.indices, prim.vertex_count, **material_kwargs(asset, prim),
                                                label=f"e{e}:node{n}_prim{p}", entity=e, node=n,
                                                mesh_index=node.mesh, primitive=p)
                self.instances.append(MeshInstance(e, f"node{n}_mesh{node.mesh}_prim{p}", None, name, n,
                                                   prim.positions, prim.normals, handle))

    def _fit_camera(self) -> None:
        self.run_frames(1, dt=self.clock.step)
        b = self.renderer.scene_bounds()
        if b is not None:
            lo, hi = b
            lo = np.minimum(lo, 0.0 * lo)
            self.camera.fit(lo, hi, margin=1.05)

    # -- systems that touch GPU-side state (owned by the scene) ---------------------------------
    def deform_system(self, world: World) -> None:
        """GPU path: hand every skinned instance's pose to the deformer graph and run it once for all meshes
        (skin -> [spring] -> copy -> normals straight into the renderer's SSBOs). CPU path: numpy LBS/DQS."""
        from engine.skinning.skinning import dqs, lbs

        fn = lbs if self.deformer == "lbs" else dqs
        for inst in self.instances:
            skel = world.get(inst.entity, SkeletonPose)
            out = world.get(inst.entity, DeformedMeshes).positions
            if inst.deform is not None:
                sp = inst.skinned
                joints = skel.globals[sp.skin.joints]
                self.graph.set_pose(inst.deform, sp.skin_matrices(skel.globals), joints)
                jp = joints[:, :3, 3]
                inst.handle.bounds = (jp.min(0) - inst.radius, jp.max(0) + inst.radius)
            elif inst.skinned is not None:
                sp = inst.skinned
                prim = sp.primitive
                out[inst.key] = fn(prim.positions, prim.joints, prim.weights, sp.skin_matrices(skel.globals))
            else:
                g = skel.globals[inst.node]
                out[inst.key] = (inst.positions @ g[:3, :3].T + g[:3, 3]).astype(np.float32)
        if self.graph is not None:
            self.graph.run()

    def upload_system(self, world: World) -> None:
        for inst in self.instances:
            pos = world.get(inst.entity, DeformedMeshes).positions.get(inst.key)
            if pos is not None:
                self.renderer.update_vertices(inst.handle, pos)

    # -- running ------------------------------------------------------------------------------
    def run_frames(self, n: int, *, dt: float = 1.0 / 60.0) -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            self.schedule.run_frame(self.world, self.clock, dt)
            self.render()
            self.gl.ctx.finish()
            self.frame_ms.append((time.perf_counter() - t0) * 1e3)

    def render(self, target=None) -> None:
        from engine.gpu.timers import record_gpu_timings

        self.camera.aspect = self.renderer.width / self.renderer.height
        self.renderer.render(self.camera, target=target)
        last = self.schedule.history.last
        if last is not None:  # GPU pass times (a few frames late) go next to the systems' CPU times
            record_gpu_timings(last, self.renderer.gpu_ms)

    def release(self) -> None:
        if self.graph is not None:
            self.graph.release()
        self.renderer.release()
        self.resources.release_all()


class _StillPlayback:
    """Stands in for a Playback on assets without clips: the pose stays at rest."""

    def advance(self, dt: float) -> None:
        pass

    def evaluate(self, out=None):
        return out


def run_demo(args: argparse.Namespace) -> int:
    from engine.gpu.context import create_context, display_present

    headless = bool(args.headless) or not display_present()
    frames = args.frames
    if frames is not None and frames < 1:
        raise ValueError(f"--frames must be >= 1, got {frames}")
    if args.width < 16 or args.height < 16 or args.width > 8192 or args.height > 8192:
        raise ValueError(f"--width/--height must be in [16, 8192], got {args.width}x{args.height}")
    if headless and frames is None:
        frames = 120
        print("no display (or --headless): rendering 120 frames offscreen; pass --frames N to change",
              file=sys.stderr)
    screenshot = args.screenshot or ("out/demo.png" if headless and not args.screenshot else None)
    gl = create_context(headless=headless, width=args.width, height=args.height, title="skinengine demo")
    scene = DemoScene(gl, width=args.width, height=args.height, count=args.characters, asset_path=args.asset,
                      deformer=args.deformer, device=args.device, graph_file=args.graph)
    print(f"demo: {args.characters} characters, deformer {scene.deformer} on {scene.device} "
          f"({gl.ctx.info.get('GL_RENDERER')})")
    scene.frame_ms.clear()
    try:
        if headless:
            scene.run_frames(frames)
        else:
            _run_window(scene, frames)
        if screenshot:
            Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
            scene.renderer.save_png(screenshot)
            print(f"wrote {screenshot}")
        print(FrameStats.of(scene.frame_ms).summary())
        _print_system_table(scene)
    finally:
        scene.release()
        gl.release()
    return 0


def _print_system_table(scene: DemoScene) -> None:
    from engine.profile.stats import system_table

    rows = system_table(scene.schedule.history)
    parts = [f"{name} {stats.mean:.2f}" for name, _phase, stats in rows]
    gpu = scene.renderer.gpu_ms
    gpu_txt = ", ".join(f"{k} {v:.2f}" for k, v in gpu.items() if v is not None)
    print("cpu ms per frame (mean): " + ", ".join(parts) + (f" | gpu ms: {gpu_txt}" if gpu_txt else ""))


def _run_window(scene: DemoScene, frames: int | None) -> None:
    import pyglet
    from pyglet.window import key, mouse

    window = scene.gl.window
    state = {"frames": 0, "last": time.perf_counter()}

    @window.event
    def on_draw():
        now = time.perf_counter()
        dt, state["last"] = now - state["last"], now
        t0 = time.perf_counter()
        scene.schedule.run_frame(scene.world, scene.clock, min(dt, 0.25))
        fb = scene.gl.ctx.screen
        w, h = window.get_framebuffer_size()
        if (w, h) != (scene.renderer.width, scene.renderer.height) and w > 0 and h > 0:
            scene.renderer.resize(w, h)
        fb.viewport = (0, 0, w, h)
        scene.render(target=fb)
        scene.frame_ms.append((time.perf_counter() - t0) * 1e3)
        state["frames"] += 1
        if frames is not None and state["frames"] >= frames:
            pyglet.app.exit()

    @window.event
    def on_mouse_drag(x, y, dx, dy, buttons, modifiers):
        if buttons & mouse.LEFT:
            scene.camera.drag(dx, dy)
        elif buttons & (mouse.RIGHT | mouse.MIDDLE):
            scene.camera.pan(dx, dy, scene.renderer.height)

    @window.event
    def on_mouse_scroll(x, y, scroll_x, scroll_y):
        scene.camera.zoom(scroll_y)

    @window.event
    def on_key_press(symbol, modifiers):
        if symbol == key.SPACE:
            scene.clock.toggle_pause()
        elif symbol == key.PERIOD and scene.clock.paused:
            scene.clock.single_step()
        elif symbol == key.BRACKETLEFT:
            scene.clock.time_scale = max(0.0625, scene.clock.time_scale / 2)
        elif symbol == key.BRACKETRIGHT:
            scene.clock.time_scale = min(16.0, scene.clock.time_scale * 2)
        elif symbol == key.W:
            scene.renderer.wireframe = not scene.renderer.wireframe
        elif symbol == key.V:  # debug views: colour, albedo, normal, position, depth, triangle, barycentric, mesh
            print(f"view: {scene.renderer.cycle_view()}")
        elif symbol == key.ESCAPE:
            pyglet.app.exit()

    pyglet.clock.schedule_interval(lambda dt: None, 1 / 120)
    pyglet.app.run()
