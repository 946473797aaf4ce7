"""VR benchmark: the stereo frame and the controller camera (research 7.5), on the simulated headset.

A headless Session with ``--characters`` humanoids in a row (``--deformer``, default lbs; the issue's GPU case is
4 spring-deformed humanoids at 2x 1440x1600: ``--characters 4 --deformer spring --eye-width 1440 --eye-height
1600``), a VR session (game/vr/session.py) whose simulated head looks at them. Interleaved rounds (the machine's
drift lands on every case alike), each frame finished on the GPU (``ctx.finish``) before the clock stops:

* **stereo frame**: one VR frame: deform once, G-buffer + compose per eye into the eye textures (two passes);
  ``per eye`` is the mean of the profiler scopes ``vr eye left`` / ``vr eye right``;
* **mono frame**: the same frame through the plain one-camera renderer (the VR systems off), its camera one
  eye's view and then the other's, so that it changes every frame as a tracked head does: for the ratio;
* **controller camera NxN**: one controller-camera read (``ProbeRenderer.centre``: its G-buffer pass from the
  controller + the centre pixel's read-back + the exact intersection with the named triangle) at ``--probe-sizes``
  (default 16, 4, 1), the controller 0.7 m in front of the first character's chest pointing at it, drawing that
  character only (as the VR session does), through the DEFAULT the renderer kind picks (``cull="auto"``: culled
  on a software rasteriser, the full pass on a hardware GPU); ``... pass`` / ``... read`` split the default read
  into its pass (``render`` + ``ctx.finish``) and what follows on an idle GPU (``read``: the id texel, the three
  corners, the ray); ``... read, rasterised`` is the read before the exact answer (the centre's id and depth
  texels, barycentric as interpolated: ``read_rasterised``) on the same render; ``... culled`` and ``... full
  pass`` are the two ways forced (``cull=True`` / ``False``), one of them the default again, as its own case;
  ``... culled: culling`` the part of the culled read spent choosing clusters before its pass (the barrier and
  the deformed positions' read-back, which wait for the GPU, then numpy's spheres and cone test).

Run: ``python main.py bench vr [--characters 1 --eye-width 512 --eye-height 512 --frames 10 --rounds 3]``.
Asserts nothing. On llvmpipe every pixel is rasterised on the CPU: absolute GPU figures need a GPU.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from bench.common import Spread, device_line


def _script(fps: float, x: float = 0.0) -> str:
    """The head looking at the row of characters; the right controller 0.7 m in front of the chest of the one
    at ``x`` (the first), pointing at it along -Z."""
    return (f"version = 1\nfps = {fps}\n[[hmd]]\ntime = 0.0\nposition = [0.0, 1.6, 2.2]\nlook_at = [0.0, 1.1, 0.0]\n"
            "[[hmd]]\ntime = 2000.0\nposition = [0.0, 1.6, 2.2]\nlook_at = [0.0, 1.1, 0.0]\n"
            f"[[right]]\ntime = 0.0\nposition = [{x}, 1.1, 0.7]\ndirection = [0.0, 0.0, -1.0]\n")


def main(argv: list[str] | None = None) -> int:
    from engine import Session
    from engine.input.simulated_vr import SimulatedHeadset, parse_rig_script
    from engine.input.vr import EyeGeometry
    from engine.render.probe import ProbeCamera, ProbeRenderer
    from engine.render.stereo import EyeCamera
    from game.vr.session import VRSession

    ap = argparse.ArgumentParser(prog="bench vr", description=__doc__.split("\n")[0])
    ap.add_argument("--characters", type=int, default=1)
    ap.add_argument("--deformer", default="lbs")
    ap.add_argument("--eye-width", type=int, default=512)
    ap.add_argument("--eye-height", type=int, default=512)
    ap.add_argument("--frames", type=int, default=10, help="frames per case per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--probe-sizes", default="16,4,1")
    ap.add_argument("--quick", action="store_true", help="2 frames, 1 round, 128x128 eyes (a smoke run)")
    a = ap.parse_args(argv)
    if a.quick:
        a.frames, a.rounds, a.eye_width, a.eye_height = 2, 1, 128, 128
    sizes = [int(x) for x in a.probe_sizes.split(",")]
    xs = [0.8 * (i - (a.characters - 1) / 2) for i in range(a.characters)]  # the row of characters
    dev = SimulatedHeadset(parse_rig_script(_script(90.0, xs[0])), eye_size=a.eye_width)
    dev.geometry = EyeGeometry(a.eye_width, a.eye_height, dev.geometry.eye_to_head, dev.geometry.raw)
    with Session(width=a.eye_width, height=a.eye_height, deformer=a.deformer) as s:
        chars = [s.spawn("humanoid", clip="idle", position=(x, 0.0, 0.0)) for x in xs]
        vr = VRSession(s, chars[0], dev)
        # per size: the default (cull="auto") and the two ways forced
        modes: tuple[bool | str, ...] = ("auto", True, False)
        probes = {(n, cull): ProbeRenderer(s.renderer, n, cull=cull) for n in sizes for cull in modes}
        default = "culled" if probes[(sizes[0], "auto")].cull else "full pass"
        only = (chars[0].entity,)  # the character the stroke is drawn on, as the VR session passes
        assert s.ctx is not None
        ctx = s.ctx
        samples: dict[str, list[float]] = {"stereo frame": [], "per eye": [], "mono frame": []}
        passes: dict[str, list[float]] = {}  # per-eye GPU time per renderer pass (timer queries, a few renders old)
        names = {"auto": "controller camera {n}x{n}", True: "  ... {n}x{n} culled", False: "  ... {n}x{n} full pass"}
        for n in sizes:
            samples[f"controller camera {n}x{n}"] = []
            samples[f"  ... {n}x{n} pass"] = []
            samples[f"  ... {n}x{n} read"] = []
            samples[f"  ... {n}x{n} read, rasterised"] = []
            samples[f"  ... {n}x{n} culled"] = []
            samples[f"  ... {n}x{n} culled: culling"] = []
            samples[f"  ... {n}x{n} full pass"] = []
        vr.frame()  # warm-up: programs, first uploads
        right = vr.world_pose("right")
        assert right is not None
        cam = ProbeCamera(right)
        for probe in probes.values():  # warm-up: the culled probe builds its clusters at its first read
            probe.centre(cam, entities=only)
        for _ in range(a.rounds):
            for _ in range(a.frames):
                ctx.finish()
                t0 = time.perf_counter()
                vr.frame()
                ctx.finish()
                samples["stereo frame"].append((time.perf_counter() - t0) * 1e3)
                last = s.schedule.history.last  # the frame's profiler record: the per-eye scopes are in it
                eyes = [e.dur_ns / 1e6 for e in (last.events if last else []) if e.name.startswith("vr eye")]
                if eyes:
                    samples["per eye"].append(float(np.mean(eyes)))
                for name, ms in s.require_renderer().gpu_ms.items():
                    passes.setdefault(name, []).append(ms)
            vr.active = False  # the plain one-camera frame: the VR systems skip
            for k in range(a.frames):
                # the eyes' views in turn: the camera changes every frame, as a tracked head does (the cached
                # backdrop, sky and ground grid, is redrawn as it is for each eye)
                s.camera = EyeCamera(vr.eye_views[k % 2], vr.eye_projections[k % 2])
                ctx.finish()
                t0 = time.perf_counter()
                s.frame(1 / 90, render=True, interpolate=False)
                ctx.finish()
                samples["mono frame"].append((time.perf_counter() - t0) * 1e3)
            vr.active = True
            for _ in range(a.frames):
                for (n, cull), probe in probes.items():  # default, culled and full alternate read by read
                    ctx.finish()
                    t0 = time.perf_counter()
                    probe.centre(cam, entities=only)
                    samples[names[cull].format(n=n)].append((time.perf_counter() - t0) * 1e3)
                    if cull is True:
                        samples[f"  ... {n}x{n} culled: culling"].append(probe.culling_ms)
                    if cull == "auto":  # the default's read split: its pass, then the read on an idle GPU
                        ctx.finish()
                        t0 = time.perf_counter()
                        probe.render(cam, entities=only)
                        ctx.finish()
                        t1 = time.perf_counter()
                        probe.read()
                        t2 = time.perf_counter()
                        probe.read_rasterised()
                        t3 = time.perf_counter()
                        samples[f"  ... {n}x{n} pass"].append((t1 - t0) * 1e3)
                        samples[f"  ... {n}x{n} read"].append((t2 - t1) * 1e3)
                        samples[f"  ... {n}x{n} read, rasterised"].append((t3 - t2) * 1e3)
        hit = probes[(sizes[0], True)].centre(cam, entities=only)
        drawn = probes[(sizes[0], True)].drawn_triangles
        tris = sum(h.triangle_count for h in s.require_renderer().shared_state().meshes.draw_lists(())[None]
                    if h.entity == chars[0].entity)
        for p in probes.values():
            p.release()
        vr.release()
        print(device_line(ctx, f"median of {a.frames} x {a.rounds} interleaved samples (min..max), ms"))
    print(f"{a.characters} humanoid(s), deformer {a.deformer}, eyes 2x {a.eye_width}x{a.eye_height}; "
          f"controller camera on {'the skin' if hit is not None else 'nothing'} (the first character), default: "
          f"{default}; the culled pass draws {drawn} of its {tris} triangles")
    print(f"{'case':<28} {'ms':>30}")
    for name, xs in samples.items():
        if xs:
            print(f"{name:<28} {Spread.of(xs).text():>30}")
    st, mo = Spread.of(samples["stereo frame"]).median, Spread.of(samples["mono frame"]).median
    print(f"stereo / mono frame: {st / mo:.2f}x")
    # the per-eye split (what instanced stereo could share: only the G-buffer pass's vertex work; the compose
    # and every per-pixel pass run per eye either way); on llvmpipe a timer scope also counts waits
    total = sum(Spread.of(v).median for v in passes.values()) or 1.0
    print(f"{'per-eye pass (GPU timer)':<28} {'ms':>30} {'share':>6}")
    for name, xs in sorted(passes.items(), key=lambda kv: -Spread.of(kv[1]).median):
        sp = Spread.of(xs)
        print(f"{name:<28} {sp.text():>30} {sp.median / total:>6.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
