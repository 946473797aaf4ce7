"""`python main.py bench render [--quick] [--frames N] [--no-panda]`: frame cost of animated characters.

For N = 1, 8, 32 copies of CesiumMan (../shared/gltf-samples, looping its clip, desynchronised) at 1280x720 and
1920x1080 it prints, per frame (median): anim (CPU clip sampling + FK + skin matrices), deform (GPU deformer
graph, LBS, writing the vec4 buffers the renderer pulls; wall time to finish), the renderer's GPU passes
(G-buffer, compose; timer queries read a few frames late) and the whole frame's wall time; then the cost of a
query (one pixel, a 64-point stroke read as one region, and the asynchronous form: issue + result a frame
later). Side by side: Panda3D playing the same glTF as N looping Actors in an offscreen window of the same
size (a subprocess; "panda3d not installed" when it is absent: pip install panda3d panda3d-gltf, a bench-only
extra, not a project dependency). Times are wall-clock on this machine: compare within one run.
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ASSET = ROOT.parent / "shared" / "gltf-samples" / "CesiumMan.glb"
SIZES = ((1280, 720), (1920, 1080))
COUNTS = (1, 8, 32)

_PANDA = r'''
import math, os, sys, time
from panda3d.core import loadPrcFileData, Filename
W, H, N, FR, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
loadPrcFileData("", f"window-type offscreen\nwin-size {W} {H}\nload-display p3headlessgl\n"
                    "audio-library-name null\nsync-video false\nnotify-level error\n")
from direct.showbase.ShowBase import ShowBase
from direct.actor.Actor import Actor
base = ShowBase()
cols = math.ceil(math.sqrt(N))
for i in range(N):
    a = Actor(Filename.fromOsSpecific(os.path.abspath(path)))
    a.reparentTo(base.render)
    r, c = divmod(i, cols)
    a.setPos((c - (cols - 1) / 2) * 1.0, -r * 1.0, 0)
    names = a.getAnimNames()
    if names:
        a.loop(names[0])
base.cam.setPos(0, -3 - cols * 1.6, 1.5 + cols * 0.3)
base.cam.lookAt(0, -(cols - 1) / 2, 0.8)
for _ in range(5):
    base.taskMgr.step()
ts = []
for _ in range(FR):
    t0 = time.perf_counter()
    base.taskMgr.step()
    ts.append(time.perf_counter() - t0)
ts.sort()
print("P3D_MS", ts[len(ts) // 2] * 1e3)
'''


def panda_frame_ms(w: int, h: int, n: int, frames: int) -> float | str:
    """Median frame ms of Panda3D with n Actors, or a reason string."""
    try:
        import panda3d  # noqa: F401
    except ImportError:
        return "panda3d not installed"
    try:
        out = subprocess.run([sys.executable, "-c", _PANDA, str(w), str(h), str(n), str(frames), str(ASSET)],
                             capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "panda3d timed out"
    for line in out.stdout.splitlines():
        if line.startswith("P3D_MS"):
            return float(line.split()[1])
    return "panda3d failed: " + (out.stderr.strip().splitlines() or ["?"])[-1][:80]


class _Crowd:
    """N CesiumMan instances: CPU animation, GPU deformer graph (LBS), renderer meshes on its buffers."""

    def __init__(self, ctx, res, renderer, n: int) -> None:
        from engine.anim import ClipSampler, Pose, Rig, global_matrices
        from engine.assets import load
        from engine.skinning.graph import DeformerGraph
        from engine.skinning.instances import skinned_primitives
        from engine.tools.render_frame import material_kwargs

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.asset = load(ASSET)
        self.rig = Rig.from_asset(self.asset)
        self.prims = skinned_primitives(self.asset, self.rig)
        self.sampler = ClipSampler(self.rig, self.asset.clips[0])
        self.duration = max(float(self.asset.clips[0].duration), 1e-3)
        self.pose = Pose.rest(self.rig)
        self._global = global_matrices
        self.graph = DeformerGraph(ctx, res, programs=renderer.programs)
        self.ctx = ctx
        cols = math.ceil(math.sqrt(n))
        self.offsets = []
        self.items = []  # (instance, SkinnedPrimitive, deform handle)
        g0 = self._globals(0.0)
        for i in range(n):
            r, c = divmod(i, cols)
            off = np.eye(4)
            off[:3, 3] = ((c - (cols - 1) / 2) * 1.0, 0.0, -r * 1.0)
            self.offsets.append(off)
            for sp in self.prims:
                prim = sp.primitive
                dh = self.graph.add_mesh(sp.topology(), None, prim.joints, prim.weights,
                                         np.asarray(sp.skin.inverse_bind, np.float64), sp.parents, method="lbs",
                                         asset_key=sp.key)
                rest = sp.deform(g0, "lbs") + off[:3, 3].astype(np.float32)
                mh = renderer.add_mesh(prim.indices, prim.vertex_count, buffers=self.graph.output_buffers(dh),
                                       entity=i, node=sp.node, mesh_index=sp.mesh, primitive=sp.prim,
                                       **material_kwargs(self.asset, prim))
                mh.bounds = (rest.min(axis=0) - 0.1, rest.max(axis=0) + 0.1)
                self.items.append((i, sp, dh))

    def _globals(self, t: float) -> np.ndarray:
        self.sampler.sample(t % self.duration, self.pose)
        return self._global(self.rig, self.pose)

    def animate(self, t: float) -> None:
        per_instance = {}
        for i, sp, dh in self.items:
            if i not in per_instance:
                per_instance[i] = self.offsets[i] @ self._globals(t + 0.37 * i)
            g = per_instance[i]
            posed = g[sp.skin.joints]
            self.graph.set_pose(dh, posed @ sp.skin.inverse_bind, posed)

    def deform(self) -> None:
        self.graph.run()

    def bounds(self):
        lo = np.min([o[:3, 3] for o in self.offsets], axis=0) + (-0.6, 0.0, -0.6)
        hi = np.max([o[:3, 3] for o in self.offsets], axis=0) + (0.6, 1.6, 0.6)
        return lo, hi


def run_case(ctx, w: int, h: int, n: int, frames: int) -> dict:
    from engine.render.camera import OrbitCamera
    from engine.render.renderer import SceneRenderer
    from engine.render.resources import GpuResources

    res = GpuResources(ctx)
    r = SceneRenderer(ctx, res, w, h)
    crowd = _Crowd(ctx, res, r, n)
    cam = OrbitCamera(aspect=w / h, yaw=20.0, pitch=15.0)
    cam.fit(*crowd.bounds(), margin=1.0)
    rows = {k: [] for k in ("anim", "deform", "frame")}
    gpu: dict[str, list[float]] = {}
    dt = 1.0 / 60.0
    for f in range(frames + 5):
        t0 = time.perf_counter()
        crowd.animate(f * dt)
        t1 = time.perf_counter()
        crowd.deform()
        ctx.finish()
        t2 = time.perf_counter()
        r.render(cam)
        ctx.finish()
        t3 = time.perf_counter()
        if f >= 5:  # warm-up frames excluded
            rows["anim"].append((t1 - t0) * 1e3)
            rows["deform"].append((t2 - t1) * 1e3)
            rows["frame"].append((t3 - t0) * 1e3)
            for k, v in r.gpu_ms.items():
                gpu.setdefault(k, []).append(v)
    out = {k: float(np.median(v)) for k, v in rows.items()}
    out.update({k: float(np.median(v)) for k, v in gpu.items()})
    # queries on the last frame
    cx, cy = w // 2, h // 2
    stroke = np.c_[np.linspace(cx - 100, cx + 100, 64), cy + 30 * np.sin(np.linspace(0, 3, 64))].astype(int)
    out["query1"] = _best_ms(lambda: r.query(cx, cy))
    out["stroke64"] = _best_ms(lambda: r.query_many(stroke))

    def issue():
        pending = r.query_async(stroke)
        out.setdefault("_pending", []).append(pending)

    out["async_issue"] = _best_ms(issue)
    r.render(cam)
    ctx.finish()
    out["async_result"] = _best_ms(lambda: out["_pending"].pop().result(), reps=len(out["_pending"]))
    out.pop("_pending")
    crowd.graph.release()
    r.release()
    res.release_all()
    return out


def _best_ms(fn, reps: int = 5) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench render", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1280x720 only, N = 1 and 8, few frames")
    ap.add_argument("--frames", type=int, default=None, help="timed frames per case (default 20, quick 5)")
    ap.add_argument("--no-panda", action="store_true", help="skip the Panda3D column")
    args = ap.parse_args(argv)
    frames = args.frames or (5 if args.quick else 20)
    if frames < 1:
        raise ValueError(f"--frames must be >= 1, got {frames}")
    if not ASSET.is_file():
        print(f"{ASSET} not found: the benchmark needs ../shared/gltf-samples/CesiumMan.glb")
        return 1
    import moderngl

    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    print(f"device: {ctx.info.get('GL_RENDERER')}; {os.cpu_count()} CPUs; median of {frames} frames; ms")
    sizes = SIZES[:1] if args.quick else SIZES
    counts = COUNTS[:2] if args.quick else COUNTS
    head = (f"{'size':>10}{'N':>4}{'anim':>7}{'deform':>8}{'gbuffer':>9}{'compose':>9}{'frame':>8}"
            f"{'panda3d':>10}{'q 1px':>7}{'q 64pt':>8}{'async':>7}")
    print(head)
    print("-" * len(head))
    for w, h in sizes:
        for n in counts:
            m = run_case(ctx, w, h, n, frames)
            p = "skipped" if args.no_panda else panda_frame_ms(w, h, n, frames)
            ptxt = f"{p:>10.1f}" if isinstance(p, float) else f"{'-':>10}"
            print(f"{f'{w}x{h}':>10}{n:>4}{m['anim']:>7.2f}{m['deform']:>8.2f}{m.get('gbuffer', 0):>9.2f}"
                  f"{m.get('compose', 0):>9.2f}{m['frame']:>8.2f}{ptxt}{m['query1']:>7.2f}{m['stroke64']:>8.2f}"
                  f"{m['async_issue'] + m['async_result']:>7.2f}")
            if isinstance(p, str) and p != "skipped":
                print(f"    ({p})")
    print("frame = anim + deform + render wall time to ctx.finish(); gbuffer/compose = GPU timer scopes; "
          "q = query cost (one pixel; a 64-point stroke read as one region; async = issue + result a frame later)")
    ctx.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
