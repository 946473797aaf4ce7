"""`python main.py bench render [--quick] [--frames N] [--no-panda] [--png DIR]`: frame cost of animated characters.

For N = 1, 8, 32 copies of CesiumMan (../shared/gltf-samples, looping its clip, desynchronised, laid out on a
grid 1 m apart) at 1280x720 and 1920x1080 it prints, per frame (median over the timed frames, milliseconds):

Every case runs the engine's frame through an :class:`engine.Session` (the demo's frame), timed per system
from the schedule's timings in frames where each system ends with a ``ctx.finish()``:

``anim``    ``animation_system`` + ``skeleton_system``: clip sampling of all N instances in one batch, batched FK;
``deform``  ``deform_frame_system``: skin matrices and the GPU deformer graph (LBS + skinned normals as one fused
            dispatch) writing the vec4 buffers the renderer pulls, wall time to ``ctx.finish()``;
``gbuffer`` / ``compose``  wall time of the renderer's passes (``render(profile=True)``: GPU work finished
            around each pass; compose includes the contact shadows);
``render``  the renderer's whole frame in those profiled frames;
``total``   one whole frame, anim + deform + render with a single ``ctx.finish()`` at its end (what a frame costs;
            the parts above are timed in separate frames, each finished, so they need not add up to it), with the
            renderer's default look: ground plane with its grid, contact shadows, key/fill/back lights, hemisphere;
``same``    the same whole frame with the content of the Panda3D frame: the lit characters on the background, no
            ground, grid or shadows (``LookSettings(ground=False, shadows="off")``);
``panda3d`` that frame in Panda3D (below); ``ratio`` = panda3d / same (> 1: ours is faster), ``r.def`` = panda3d /
            total (ours doing more: ground, grid, shadows, three lights);
``cpu`` / ``p3d cpu`` / ``c.rat``  the process CPU time per frame of ``same`` and of the Panda3D frame (every thread
            of the process: on llvmpipe the rasteriser's threads do the "GPU" work, so this is the frame's work) and
            their ratio (p3d cpu / cpu, > 1: ours cheaper). Wall time on a shared 2-core machine moves with every
            other process (spreads of 50-150% under load); CPU time hardly does: on such a machine read ``c.rat``.

Then the cost of surface queries on the last frame: one pixel (``query``), a 64-point stroke read as one region
(``query_many``), and the asynchronous form (``query_async``: ``issue`` after the frame, ``result`` mapped after the
next frame, ``lat`` = frames until the result is ready, ``stall`` = extra wall time of the frame a query is
issued in and of the ``lat`` frames after it (the copy is queued at the start of the next frame), against as
many frames without a query; every frame is finished before the next starts, so none bills another's GPU work).

Panda3D, side by side: what a Python user would otherwise pick (``pip install panda3d panda3d-gltf``; a
bench-only extra, not a project dependency: without it the column says "panda3d not installed"). It runs in a
subprocess (its own GL context): an offscreen buffer of the same size on the same driver, N looping Actors of
the same glTF, Panda3D's default skinning (CPU, ``hardware-animated-vertices`` off) and its default fixed-function
shading with an ambient + a directional light on its default background (no ground, grid or shadows: a
Python user would add those as more nodes), the same camera (converted to Panda3D's Z-up frame); each timed
frame is ``graphicsEngine.renderFrame()`` + ``glFinish()`` (our frames also end with a finish).
panda3d-gltf 1.3 mis-skins CesiumMan: it builds the bind pose relative to the Character node's parents,
so the two static parent matrices of the skeleton (``Z_UP``, ``Armature``) are applied twice (the figure
lies on its back and its limbs tear when animated). The bench therefore hands Panda3D a copy of the file with
those two matrices moved onto the Actor's own transform (same mesh, skin, animation and result; one matrix per
Actor instead of two static nodes). ``--png DIR`` saves one frame of each engine per case to compare by eye.
Times are wall-clock on this machine, other processes included: compare within one run, and repeat.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` and `engine` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Spread, device_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ASSET = ROOT.parent / "shared" / "gltf-samples" / "CesiumMan.glb"
SIZES = ((1280, 720), (1920, 1080))
COUNTS = (1, 8, 32)
PHASE_S = 0.37  # clip-time offset between consecutive instances (s)
SPACING_M = 1.0

# The Panda3D side, run as `python -c _PANDA CONFIG_JSON` (no import of this project).
_PANDA = r'''
import ctypes, json, math, sys, time
cfg = json.loads(sys.argv[1])
W, H = cfg["w"], cfg["h"]
from panda3d.core import (loadPrcFileData, Filename, LMatrix4f, AmbientLight, DirectionalLight, Vec4,
                          ConfigVariableBool)
loadPrcFileData("", f"window-type offscreen\nwin-size {W} {H}\nload-display p3headlessgl\n"
                    "audio-library-name null\nsync-video false\nnotify-level error\n"
                    "clock-mode non-real-time\nclock-frame-rate 60\n")
from direct.showbase.ShowBase import ShowBase
from direct.actor.Actor import Actor
base = ShowBase()

def to_panda(v):  # glTF / ours (Y up) -> Panda3D (Z up): (x, y, z) -> (x, -z, y)
    return (v[0], -v[2], v[1])

C = [[1, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]]
R = cfg["root"]  # column-vector glTF matrix of the parents moved onto each Actor
M = [[sum(C[i][k] * R[k][j] for k in range(4)) for j in range(4)] for i in range(4)]
Ci = [list(r) for r in zip(*C)]  # C is a rotation: inverse = transpose
M = [[sum(M[i][k] * Ci[k][j] for k in range(4)) for j in range(4)] for i in range(4)]
row_major = [M[j][i] for i in range(4) for j in range(4)]  # Panda3D multiplies row vectors: transpose
amb = base.render.attachNewNode(AmbientLight("ambient"))
amb.node().setColor(Vec4(0.45, 0.45, 0.5, 1))
sun = base.render.attachNewNode(DirectionalLight("key"))
sun.node().setColor(Vec4(1.0, 0.95, 0.85, 1))
sun.lookAt(-0.75, 0.5, -1.0)
base.render.setLight(amb)
base.render.setLight(sun)
actors = []  # keep the Actors: an Actor whose Python object is collected stops animating
for i, off in enumerate(cfg["offsets"]):
    a = Actor(Filename.fromOsSpecific(cfg["path"]))
    actors.append(a)
    a.reparentTo(base.render)
    a.setMat(LMatrix4f(*row_major))
    a.setPos(*to_panda(off))
    name = a.getAnimNames()[0]
    a.loop(name, fromFrame=int(round(cfg["phase"] * i * a.getFrameRate(name))) % a.getNumFrames(name))
lens = base.cam.node().getLens()
vfov = cfg["fov_y"]
lens.setFov(math.degrees(2 * math.atan(math.tan(math.radians(vfov) / 2) * W / H)), vfov)
lens.setNearFar(cfg["near"], cfg["far"])
base.cam.setPos(*to_panda(cfg["eye"]))
base.cam.lookAt(*to_panda(cfg["target"]))
gl = ctypes.CDLL("libOpenGL.so.0")  # the Panda3D context is current on this thread
for _ in range(5):
    base.graphicsEngine.renderFrame()
gl.glFinish()
ts, cs = [], []
for _ in range(cfg["frames"]):
    t0, c0 = time.perf_counter(), time.process_time()
    base.graphicsEngine.renderFrame()
    gl.glFinish()
    ts.append((time.perf_counter() - t0) * 1e3)
    cs.append((time.process_time() - c0) * 1e3)
print("P3D_INFO", json.dumps({"renderer": base.win.getGsg().getDriverRenderer(),
                              "hw_skinning": ConfigVariableBool("hardware-animated-vertices").getValue()}))
print("P3D_CPU", json.dumps(cs))
print("P3D_MS", json.dumps(ts))
if cfg.get("png"):
    base.graphicsEngine.renderFrame()
    base.win.getScreenshot().write(Filename.fromOsSpecific(cfg["png"]))
'''


def grid_offsets(n: int) -> np.ndarray:
    """(n, 3) world offsets (metres, Y up): columns along +x centred on 0, rows going back along -z."""
    cols = math.ceil(math.sqrt(n))
    r, c = np.divmod(np.arange(n), cols)
    return np.stack([(c - (cols - 1) / 2) * SPACING_M, np.zeros(n), -r * SPACING_M], axis=1)


def crowd_camera(w: int, h: int, offsets: np.ndarray):
    from engine.render.camera import OrbitCamera

    lo = offsets.min(axis=0) + (-0.6, 0.0, -0.6)
    hi = offsets.max(axis=0) + (0.6, 1.6, 0.6)
    cam = OrbitCamera(aspect=w / h, yaw=20.0, pitch=15.0)
    cam.fit(lo, hi, margin=1.0)
    return cam


def _panda_asset(tmp: Path) -> tuple[Path, np.ndarray]:
    """A copy of the asset for panda3d-gltf with the skeleton's static parent matrices (Z_UP, Armature)
    reset to identity, and their product (column-vector 4x4) to put on each Actor instead."""
    import pygltflib

    g = pygltflib.GLTF2().load(str(ASSET))
    skel = g.skins[0].skeleton if g.skins[0].skeleton is not None else g.skins[0].joints[0]
    parent = {c: i for i, node in enumerate(g.nodes) for c in (node.children or [])}
    chain = []
    k = parent.get(skel)
    while k is not None:
        chain.append(k)
        k = parent.get(k)
    m = np.eye(4)
    for k in reversed(chain):  # root first
        node = g.nodes[k]
        if node.matrix is None and (node.rotation or node.translation or node.scale):
            raise ValueError(f"node {node.name!r}: only matrix parents are moved onto the Actor")
        if node.matrix is not None:
            m = m @ np.array(node.matrix, np.float64).reshape(4, 4).T
        node.matrix = None
    out = tmp / "cesiumman_panda.glb"
    g.save(str(out))
    return out, m


def panda_frame_ms(w: int, h: int, n: int, frames: int, png: Path | None = None) -> tuple[float, dict] | str:
    """(median frame ms, info) of Panda3D with n Actors, or a reason string; ``info["cpu"]``: the median
    process CPU ms per frame."""
    try:
        import gltf  # noqa: F401  (panda3d-gltf)
        import panda3d  # noqa: F401
    except ImportError:
        return "panda3d not installed"
    offsets = grid_offsets(n)
    cam = crowd_camera(w, h, offsets)
    with tempfile.TemporaryDirectory() as tmp:
        path, root = _panda_asset(Path(tmp))
        cfg = dict(w=w, h=h, frames=frames, path=str(path), root=root.tolist(), offsets=offsets.tolist(),
                   phase=PHASE_S, eye=[float(x) for x in cam.eye], target=[float(x) for x in cam.target],
                   fov_y=float(cam.fov_y), near=float(cam.near), far=float(cam.far),
                   png=str(png) if png else "")
        try:
            out = subprocess.run([sys.executable, "-c", _PANDA, json.dumps(cfg)], capture_output=True, text=True,
                                 timeout=600)
        except subprocess.TimeoutExpired:
            return "panda3d timed out"
    info: dict = {}
    for line in out.stdout.splitlines():
        if line.startswith("P3D_INFO"):
            info.update(json.loads(line.split(None, 1)[1]))
        if line.startswith("P3D_CPU"):
            info["cpu"] = float(np.median(json.loads(line.split(None, 1)[1])))
        if line.startswith("P3D_MS"):
            return float(np.median(json.loads(line.split(None, 1)[1]))), info
    return "panda3d failed: " + (out.stderr.strip().splitlines() or ["?"])[-1][:100]


class Crowd:
    """N CesiumMan characters in one :class:`engine.Session` on a shared context: the engine's frame (batched
    clip sampling per clip, batched FK, one GPU deformer graph (LBS) whose output ranges the renderer pulls;
    single-sided as the glTF material says, so back faces are culled)."""

    def __init__(self, ctx, w: int, h: int, n: int, *, look=None) -> None:
        from engine import Session
        from engine.gpu.context import GLContext

        self.session = Session(gl=GLContext(ctx, None, True), width=w, height=h, deformer="lbs", look=look,
                               strict=True)
        self.n = n
        self.offsets = grid_offsets(n)
        loaded = self.session.load(ASSET)
        self.characters = [self.session.spawn(loaded, clip=0, time=PHASE_S * i, position=self.offsets[i])
                           for i in range(n)]
        self.session.camera = crowd_camera(w, h, self.offsets)

    @property
    def renderer(self):
        return self.session.renderer

    def frame(self, *, render: bool = True) -> None:
        """One fixed step: animation, skeleton, deformation, drawing (as the demo runs it)."""
        self.session.step(render=render)

    def parts_ms(self) -> dict[str, float]:
        """The last frame's CPU+GPU time per part, from the schedule's per-system timings (run with
        ``sync(True)`` so that each system's time includes the GPU work it submitted)."""
        last = self.session.schedule.history.last
        if last is None:
            raise ValueError("parts_ms needs a frame run first (the schedule has recorded none)")
        return {"anim": (last.system_ms("animation_system") + last.system_ms("skeleton_system")),
                "deform": last.system_ms("deform_frame_system"), "render": last.system_ms("render_system")}

    def sync(self, on: bool) -> None:
        ctx = self.session.ctx
        assert ctx is not None, "the crowd's session renders (it has a GL context)"
        self.session.schedule.after_system = ctx.finish if on else None

    def release(self) -> None:
        self.session.release()


def run_case(ctx, w: int, h: int, n: int, frames: int, png: Path | None = None) -> dict:
    same, same_cpu = same_content_total(ctx, w, h, n, frames, png.with_name(png.stem + "_same.png") if png else None)
    crowd = Crowd(ctx, w, h, n)
    r = crowd.renderer

    def frame() -> None:  # one whole frame, finished once
        crowd.frame()
        ctx.finish()

    for _ in range(5):  # warm-up: programs, allocations, timer ring
        frame()
    rows: dict[str, list[float]] = {k: [] for k in ("anim", "deform", "render", "total")}
    gpu: dict[str, list[float]] = {}  # per renderer pass
    crowd.sync(True)
    crowd.session.view.profile = True
    for _ in range(frames):  # parts, each finished
        crowd.frame()
        for k, v in crowd.parts_ms().items():
            rows[k].append(v)
        for k, v in r.last_wall_ms.items():
            gpu.setdefault(k, []).append(v)
    crowd.sync(False)
    crowd.session.view.profile = False
    for _ in range(frames):  # whole frames
        t0 = time.perf_counter()
        frame()
        rows["total"].append((time.perf_counter() - t0) * 1e3)
    out: dict = {k: float(np.median(v)) for k, v in rows.items()}
    out["total_samples"] = rows["total"]
    out.update({k: float(np.median(v)) for k, v in gpu.items()})
    out["same"] = same
    out["same_cpu"] = same_cpu
    if png is not None:
        crowd.session.save_png(png)

    # queries on the last frame
    s = crowd.session
    cx, cy = w // 2, h // 2
    stroke = np.c_[np.linspace(cx - 100, cx + 100, 64), cy + 30 * np.sin(np.linspace(0, 3, 64))].astype(int)
    out["query1"] = _best_ms(lambda: s.pick(cx, cy))
    out["stroke64"] = _best_ms(lambda: s.pick_many(stroke))
    # asynchronous: issued after a frame, its copy queued at the start of the next frame, mapped once ready.
    # Every frame here is finished before the next one starts, so no frame's GPU work lands on another's time
    # (frames rendered without a wait would bill the next timed frame): stall = the issuing frame plus the
    # frames until the result is ready, against as many frames without a query just before (pairs of adjacent
    # frames: the machine's drift cancels); the median over the pairs.
    issue, result, lat, stall = [], [], [], []
    for _ in range(max(9, frames)):
        t0 = time.perf_counter()
        frame()
        plain = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        crowd.frame()
        t_i = time.perf_counter()
        pending = s.pick_async(stroke)
        issue.append((time.perf_counter() - t_i) * 1e3)
        ctx.finish()
        frames_waited = 0
        while not pending.ready:
            frame()
            frames_waited += 1
        stall.append((time.perf_counter() - t0) * 1e3 - (1 + frames_waited) * plain)
        lat.append(frames_waited)
        t_r = time.perf_counter()
        pending.result()
        result.append((time.perf_counter() - t_r) * 1e3)
    out["async_issue"] = float(np.median(issue))
    out["async_result"] = float(np.median(result))
    out["async_latency"] = int(max(lat))
    out["async_stall"] = float(np.median(stall))
    crowd.release()
    return out


def same_content_total(ctx, w: int, h: int, n: int, frames: int, png: Path | None = None) -> tuple[float, float]:
    """Median wall ms and median process CPU ms of a whole frame (as ``total``) drawing what the Panda3D frame
    shows: no ground, no shadows."""
    from engine.render.renderer import LookSettings

    crowd = Crowd(ctx, w, h, n, look=LookSettings(ground=False, shadows="off"))
    times, cpu = [], []
    for f in range(5 + frames):
        t0, c0 = time.perf_counter(), time.process_time()
        crowd.frame()
        ctx.finish()
        if f >= 5:
            times.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    if png is not None:
        crowd.session.save_png(png)
    crowd.release()
    return float(np.median(times)), float(np.median(cpu))


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
    ap.add_argument("--png", type=Path, default=None, help="save one frame of each engine per case into DIR")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds per case, ours and Panda3D alternating; the table shows the median of the rounds' "
                         "medians (default 3, quick 1): frame times on a shared machine drift by 30%% between runs")
    args = ap.parse_args(argv)
    frames = args.frames or (5 if args.quick else 20)
    if frames < 1:
        raise ValueError(f"--frames must be >= 1, got {frames}")
    rounds = args.rounds or (1 if args.quick else 3)
    if not 1 <= rounds <= 20:
        raise ValueError(f"--rounds must be in [1, 20], got {rounds}")
    if not ASSET.is_file():
        print(f"{ASSET} not found: the benchmark needs ../shared/gltf-samples/CesiumMan.glb")
        return 1
    if args.png is not None:
        args.png.mkdir(parents=True, exist_ok=True)
    from engine.gpu.context import egl_context

    ctx = egl_context(430)
    print(device_line(ctx, f"median of {rounds} round(s) of {frames} frames each; spread = (p75 - p25) / median "
                           f"of the {rounds * frames} total frames; ms"))
    sizes = SIZES[:1] if args.quick else SIZES
    counts = COUNTS[:2] if args.quick else COUNTS
    head = (f"{'size':>10}{'N':>4}{'anim':>7}{'deform':>8}{'gbuffer':>9}{'compose':>9}{'render':>8}{'total':>8}"
            f"{'spread':>7}{'same':>7}{'panda3d':>9}{'ratio':>7}{'r.def':>7}{'q 1px':>7}{'q 64pt':>8}{'issue':>7}"
            f"{'result':>8}{'lat':>5}{'stall':>7}{'cpu':>7}{'p3d cpu':>8}{'c.rat':>7}")
    print(head)
    print("-" * len(head))
    notes: list[str] = []
    for w, h in sizes:
        for n in counts:
            tag = f"{w}x{h}_n{n}"
            ours, theirs = [], []
            for k in range(rounds):  # alternating, so that both see the same drift of the machine
                last = k == rounds - 1
                ours.append(run_case(ctx, w, h, n, frames, args.png / f"ours_{tag}.png" if args.png and last else None))
                theirs.append("skipped" if args.no_panda else panda_frame_ms(
                    w, h, n, frames, args.png / f"panda3d_{tag}.png" if args.png and last else None))
            m = {key: (int(np.max([o[key] for o in ours])) if key == "async_latency"
                       else float(np.median([o[key] for o in ours]))) for key in ours[0] if key != "total_samples"}
            spread = Spread.of([ms for o in ours for ms in o["total_samples"]]).pct
            got = [t for t in theirs if isinstance(t, tuple)]
            p = (float(np.median([t[0] for t in got])), got[0][1]) if got else theirs[0]
            pcpu = [t[1]["cpu"] for t in got if "cpu" in t[1]]
            ctxt = (f"{m['same_cpu']:>7.2f}{np.median(pcpu):>8.2f}{np.median(pcpu) / m['same_cpu']:>7.2f}" if pcpu
                    else f"{m['same_cpu']:>7.2f}{'-':>8}{'-':>7}")
            if isinstance(p, tuple):
                pms, info = p
                ptxt, rtxt = f"{pms:>9.1f}", f"{pms / m['same']:>7.2f}{pms / m['total']:>7.2f}"
                if info and not notes:
                    notes.append(f"panda3d: {info.get('renderer')}, hardware skinning {info.get('hw_skinning')}")
            else:
                ptxt, rtxt = f"{'-':>9}", f"{'-':>7}{'-':>7}"
            print(f"{f'{w}x{h}':>10}{n:>4}{m['anim']:>7.2f}{m['deform']:>8.2f}{m.get('gbuffer', 0):>9.2f}"
                  f"{m.get('compose', 0):>9.2f}{m['render']:>8.2f}{m['total']:>8.2f}{spread:>6.0f}%"
                  f"{m['same']:>7.2f}{ptxt}{rtxt}"
                  f"{m['query1']:>7.2f}{m['stroke64']:>8.2f}{m['async_issue']:>7.2f}{m['async_result']:>8.2f}"
                  f"{m['async_latency']:>5d}{m['async_stall']:>7.2f}{ctxt}", flush=True)
            if isinstance(p, str) and p != "skipped":
                print(f"    ({p})")
    print("total = anim + deform + render, one finish per frame (default look), spread over its frames; same = "
          "total drawing the Panda3D frame's content (no ground/grid/shadows); anim/deform/gbuffer/compose/render "
          "timed in separate frames finished after each part/pass; ratio = panda3d / same, r.def = panda3d / total "
          "(> 1: ours faster); queries: q 1px, q 64pt = synchronous; issue/result/lat/stall = query_async (lat in "
          "frames; stall = extra wall time of the issuing frame and the lat frames after it, every frame finished, "
          "against as many without a query); cpu / p3d cpu = process CPU ms per frame of same / of Panda3D (every "
          "thread, llvmpipe's rasteriser included), c.rat = p3d cpu / cpu (> 1: ours cheaper; on a shared machine "
          "the figure that moves least with the other processes)")
    for line in notes:
        print(line)
    ctx.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
