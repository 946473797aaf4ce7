"""Spring deformer (numpy reference): cost of one spring iteration vs control-point count (1.8k to 90k).

Run: ``.venv/bin/python bench/bench_springs.py [--sizes 1.8k,5.6k,16k,90k] [--repeat 5]``. Prints the table of
bench_reference (median and min ms per call, ns per point); asserts nothing.

Uses bench_reference's synthetic cases (tube + joint chain, bent and twisted) and registers two rows there:
"spring-it" is one iteration (`spring_step`: forces over the CSR slots + the default update) from the rigid
initial skinning; "spring-pose" is the per-frame set-up before iterating (pose frame + rigid skinning).
Importing this module is enough for bench_reference to list the rows too.

``--family [N]`` prints issue 13's quality table instead: LBS, DQS and the springs (defaults) on the seeded
family of N generated tubes (engine.assets.gen.family) over every pose of ``tube_poses()``
(engine.skinning.family).

``--rigs`` prints issue 26's table instead: LBS against the springs (defaults, numpy reference, through
``compare``'s metrics) on the Khronos rigs in ../shared/gltf-samples (CesiumMan, Fox, RiggedFigure) at several
times of their clips: intersecting face pairs, share of interior edges whose dihedral angle changed by more than
45 deg, share of edges strained over 30 %, and whether the springs (alone and with the contact term) are no worse
than LBS on all three; then the same for keyed extremes (`EXTREMES`: a clip's pose with every joint's rotation
from rest taken 1.6 times as far).

``--sampling`` prints how finely each mesh samples its limbs (h_i / r_i) and the differential term's share there
(issue 26, docs/springs.md "The differential term's share").

``--rigs-where`` prints where the springs fold on the same rig poses (issue 26's diagnosis): per row the edges
past 45 deg with LBS and with the springs, how many of the springs' folded edges were nearly flat at bind (< 10 deg:
a quad folding along its diagonal), how many of the folded edges' points are bound against their skin weights
(the binding bone's parent joint, whose rotation carries the point, holds under a quarter of its weight: the
springs move it with a joint LBS does not), the median over those points of the LBS strain of their most
compressed edge (negative: LBS compressed them, and the springs, with no bending stiffness, restore the length by
buckling) and the median distance of the springs from LBS there over the diagonal.

``--spring KEY=VALUE[,KEY=VALUE...]`` runs ``--rigs``, ``--rigs-where`` and ``--family`` with those spring
parameters (engine.skinning.springs.SpringParams, e.g. ``--spring k_d=10`` for the differential term) instead of
the defaults.

``--accel [N]`` prints the iteration counts instead (issue 15 item 4): per member (N of the family) and pose, the
iterations to the displacement tolerance (no iteration cap) of the defaults (damped semi-implicit steps), of the
research's explicit update and of that with momentum (``--momentum`` betas), each result's largest distance from the
far-converged equilibrium over the bounding-box diagonal and its intersecting face pairs
(metrics.intersecting_pairs).

``--warm [N]`` prints the warm-start table (issue 15 item 4): N tubes of the family play a clip (`clip_poses`: at 30
fps the limb bends 0 -> 120 deg and twists 0 -> 60 deg in one second, eased, then holds still; ``--speeds`` scales
the motion per frame) with no iteration cap; per member and variant (the defaults plain and with the warm start, the
research's explicit update, with momentum, with warm start + momentum) the iterations to the displacement tolerance
over the clip and during the hold, the frames the warm start fell back to the usual start, the largest distance from
the far-converged equilibrium (from the usual start, every ``--far-every``-th frame) over the bounding-box diagonal
and the most intersecting face pairs.

``--warm-asset PATH`` prints the same on a real asset's clip through the GPU deformer graph (llvmpipe without a
GPU): ``--frames`` frames of ``--clip`` at 30 fps, the default iteration cap; per variant the spring iterations
of every frame (GPU status), their total, the frames that started cold, and the largest distance from the
far-converged equilibrium (from the usual start: the defaults with displacement_rel 1e-7, up to 3000 iterations)
over the bounding-box diagonal.

``--warm-sweep [N]`` prints what the default ``warm_limit`` is derived from: on N tubes, from the converged
result at a few poses, one frame's step of every elbow by ``--steps`` degrees (bend and twist; "joint rad": the
largest relative joint rotation that makes, springs.pose_motion): iterations to the tolerance from the warm start
over those from the usual start (below 1: the warm start saves work).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` and `engine` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_reference import DEFORMERS, SIZES, Case, format_table, register, run  # noqa: E402
from engine.skinning.springs import SpringDeformer, SpringParams, pose_motion, spring_step  # noqa: E402

RESEARCH = SpringParams(integrator="explicit", dt=1.0 / 30.0)
"""The research's update (eq. 23, dt = 1/30; the default before issue 13's fix), with and without momentum."""


def _deformer(case: Case) -> SpringDeformer:
    return SpringDeformer(case.topology, case.binding, case.bind_joints, case.parents, SpringParams())


def spring_iteration(case: Case):
    d = _deformer(case)
    fr = d.frame(case.posed_joints)
    x = d.rigid(fr)
    vel = x * 0.0
    return lambda: spring_step(x, vel, fr.attach, fr.bone_ref, d.rest, d.params)


def spring_pose(case: Case):
    d = _deformer(case)
    return lambda: d.rigid(d.frame(case.posed_joints))


for _name, _factory in (("spring-it", spring_iteration), ("spring-pose", spring_pose)):
    if _name not in DEFORMERS:
        register(_name, _factory)


def accel_table(n_members: int, betas: list[float], cap: int = 5000) -> str:
    """Text table of ``--accel``: iterations to the default displacement tolerance, distance to the equilibrium."""
    import numpy as np

    from engine.assets.gen.family import tube_family, tube_poses
    from engine.skinning.family import MemberRig
    from engine.skinning.metrics import intersecting_pairs

    variants = [("default", SpringParams(max_iterations=cap)), ("research", RESEARCH.replace(max_iterations=cap))] + [
        (f"res+mom{b:g}", RESEARCH.replace(max_iterations=cap, acceleration="momentum", momentum=b)) for b in betas]
    far = SpringParams(max_iterations=20 * cap, displacement_rel=1e-8)
    head = f"{'member':34s} {'pose':15s} " + " ".join(f"{name + ' it/dist/pairs':>26s}" for name, _ in variants)
    lines, totals = [head], {name: 0 for name, _ in variants}
    for m in tube_family(n_members)[:n_members]:
        rig = MemberRig(m)
        diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
        for pose in tube_poses():
            posed = m.posed_joints(pose)
            ref = rig.deform(pose, "springs", far)
            cells = []
            for name, params in variants:
                d = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, params,
                                   joints=m.joints, weights=m.weights)
                x, stats = d.solve(posed)
                dist = float(np.linalg.norm(x - ref, axis=1).max()) / diag
                pairs = len(intersecting_pairs(x, rig.topology.triangles))
                totals[name] += stats.iterations
                cells.append(f"{stats.iterations:>8d} {dist:>10.2e} {pairs:>6d}")
            lines.append(f"{m.name[:34]:34s} {pose.name:15s} " + " ".join(f"{c:>26s}" for c in cells))
    lines.append(f"{'total iterations':50s} " + " ".join(f"{totals[name]:>26d}" for name, _ in variants))
    return "\n".join(lines)


def clip_poses(frames: int = 30, hold: int = 4, speed: float = 1.0):
    """The warm-start clip: ``frames`` frames easing the bend 0 -> 120 * speed deg and the twist 0 -> 60 * speed deg
    (cosine ease: the fastest frame moves pi / 2 x the mean step), then ``hold`` frames of the last pose."""
    import numpy as np

    from engine.assets.gen.family import TubePose

    u = 0.5 * (1.0 - np.cos(np.pi * np.arange(frames) / max(frames - 1, 1)))
    u = np.concatenate([u, np.ones(hold)])
    return [TubePose(f"f{i}", bend=120.0 * speed * a, twist=60.0 * speed * a) for i, a in enumerate(u)]


def warm_table(n_members: int, speeds: list[float], beta: float = 0.8, cap: int = 5000, far_every: int = 6,
               frames: int = 30, hold: int = 4, warm_limit: float | None = None) -> str:
    """Text table of ``--warm`` (module docstring)."""
    import numpy as np

    from engine.assets.gen.family import tube_family
    from engine.skinning.family import MemberRig
    from engine.skinning.metrics import intersecting_pairs
    from engine.skinning.springs import WARM_LIMIT

    lim = WARM_LIMIT if warm_limit is None else warm_limit
    variants = [("plain", SpringParams(max_iterations=cap)),
                ("warm", SpringParams(max_iterations=cap, warm_start=True, warm_limit=lim)),
                ("research", RESEARCH.replace(max_iterations=cap)),
                (f"res+mom{beta:g}", RESEARCH.replace(max_iterations=cap, acceleration="momentum", momentum=beta)),
                (f"res+warm+mom{beta:g}", RESEARCH.replace(max_iterations=cap, acceleration="momentum",
                                                           momentum=beta, warm_start=True, warm_limit=lim))]
    far = SpringParams(max_iterations=20 * cap, displacement_rel=1e-8)
    head = (f"{'member':30s} {'speed':>5s} {'max step':>8s} "
            + " ".join(f"{name + ' it/hold/cold/dist/pairs':>40s}" for name, _ in variants))
    lines, totals = [head], {(sp, name): 0 for sp in speeds for name, _ in variants}
    for m in tube_family(n_members)[:n_members]:
        rig = MemberRig(m)
        diag = float(np.linalg.norm(np.ptp(rig.bind_positions, 0)))
        for sp in speeds:
            poses = clip_poses(frames, hold, sp)
            steps = [abs(b.bend - a.bend) / len(m.elbows) for a, b in zip(poses, poses[1:])]
            deformers = {name: SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, p)
                         for name, p in variants}
            acc = {name: [0, 0, 0, 0] for name, _ in variants}  # iterations, in the hold, cold starts, pairs
            dist = {name: 0.0 for name, _ in variants}
            for i, pose in enumerate(poses):
                posed = m.posed_joints(pose)
                out = {}
                for name, _ in variants:
                    x, stats = deformers[name].solve(posed)
                    out[name] = x
                    a = acc[name]
                    a[0] += stats.iterations
                    a[1] += stats.iterations if i >= frames else 0
                    a[2] += 0 if stats.warm else 1
                    a[3] = max(a[3], len(intersecting_pairs(x, rig.topology.triangles)))
                if i % far_every == 0 or i == len(poses) - 1:
                    ref, _ = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, far).solve(
                        posed, initial=out["plain"])  # the usual start's equilibrium, converged far
                    for name, _ in variants:
                        dist[name] = max(dist[name], float(np.linalg.norm(out[name] - ref, axis=1).max()) / diag)
            cells = []
            for name, _ in variants:
                it, hold_it, cold, pairs = acc[name]
                totals[(sp, name)] += it
                cells.append(f"{it:>8d} {hold_it:>5d} {cold:>4d} {dist[name]:>10.2e} {pairs:>5d}")
            lines.append(f"{m.name[:30]:30s} {sp:>5g} {max(steps):>7.2f}d " + " ".join(f"{c:>40s}" for c in cells))
    for sp in speeds:
        lines.append(f"{'total iterations, speed ' + format(sp, 'g'):46s} "
                     + " ".join(f"{totals[(sp, name)]:>40d}" for name, _ in variants))
    return "\n".join(lines)


def warm_asset(path: str, clip: str | int, frames: int, beta: float = 0.8, far_iterations: int = 3000) -> str:
    """Text table of ``--warm-asset`` (module docstring)."""
    import warnings

    import numpy as np

    from engine import Session
    from engine.bake import pose_matrices
    from engine.scene import DeformSettings, add_to_graph
    from engine.skinning.config import DeformerConfig
    from engine.skinning.gpu.graph import DeformerGraph

    research = {"spring_integrator": "explicit", "spring_dt": 1.0 / 30.0}
    variants: list[tuple[str, dict[str, object]]] = [
                ("plain", {}), ("warm", {"spring_warm_start": True}), ("research", research),
                (f"res+mom{beta:g}", {**research, "spring_acceleration": "momentum", "spring_momentum": beta}),
                (f"res+warm+mom{beta:g}", {**research, "spring_warm_start": True, "spring_acceleration": "momentum",
                                           "spring_momentum": beta}),
                # the equilibrium, converged far from the usual start (the defaults: the same fixed points)
                ("far", {"spring_max_iterations": far_iterations, "spring_displacement_rel": 1e-7})]
    times = np.arange(frames) / 30.0
    lines = []
    with Session(render=False, deformer="spring", strict=True) as s, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ch = s.spawn(path, clip=clip, speed=0.0, mode="clamp")
        g_all = pose_matrices(ch, times, mode="clamp")
        assert s.ctx is not None and s.resources is not None, "a GPU session"
        for sp in ch.loaded.skinned:
            its: dict[str, list[int]] = {}
            cold: dict[str, int] = {}
            out: dict[str, list[np.ndarray]] = {}
            for name, over in variants:
                settings = DeformSettings("spring", DeformerConfig().with_overrides(**over))
                graph = DeformerGraph(s.ctx, s.resources, programs=s.programs)
                try:
                    h = add_to_graph(graph, sp, ch.loaded, settings)
                    its[name], out[name], cold[name] = [], [], 0
                    for g in g_all:
                        graph.set_pose(h, sp.skin_matrices(g), g[sp.skin.joints])
                        graph.run()
                        st = graph.spring_status(h)
                        its[name].append(st["iterations"])
                        cold[name] += 0 if st["warm"] else 1
                        out[name].append(graph.download(h)[0])
                finally:
                    graph.release()
            ref = np.array(out["far"])
            diag = float(np.linalg.norm(np.ptp(ref[0], 0)))
            lines.append(f"{path} primitive {sp.mesh}/{sp.prim}: {frames} frames of clip {clip!r} at 30 fps, "
                         f"{sp.topology().n_control} control points; distance to the far-converged equilibrium "
                         f"(usual start, {sum(its['far'])} iterations in all) / diagonal")
            for name, _ in variants[:-1]:
                dist = float(np.linalg.norm(np.array(out[name]) - ref, axis=2).max()) / diag
                lines.append(f"  {name:>12s} total {sum(its[name]):>6d}  cold starts {cold[name]:>3d}  dist {dist:.2e}"
                             "  per frame "
                             + " ".join(str(i) for i in its[name]))
    return "\n".join(lines)


def warm_sweep(n_members: int, steps: list[float], cap: int = 5000) -> str:
    """Text table of ``--warm-sweep`` (module docstring): per step (deg per elbow and frame) the mean and the worst
    ratio of warm to usual-start iterations over the members and base poses."""
    import numpy as np

    from engine.assets.gen.family import TubePose, tube_family
    from engine.skinning.family import MemberRig

    bases = [(45.0, 15.0), (90.0, 30.0), (120.0, 0.0)]  # total bend, total twist (deg)
    plain = SpringParams(max_iterations=cap)
    warm = SpringParams(max_iterations=cap, warm_start=True, warm_limit=float(np.pi))
    ratios: dict[float, list[float]] = {st: [] for st in steps}
    angles: dict[float, float] = dict.fromkeys(steps, 0.0)
    for m in tube_family(n_members)[:n_members]:
        rig = MemberRig(m)
        n_el = len(m.elbows)
        for bend, twist in bases:
            base = m.posed_joints(TubePose("base", bend=bend, twist=twist))
            for st in steps:
                moved = m.posed_joints(TubePose("moved", bend=bend + st * n_el, twist=twist + st * n_el))
                angle, _ = pose_motion(m.bind_joints, m.parents, base, moved)
                angles[st] = max(angles[st], float(angle.max()))
                d = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, warm)
                d.solve(base)
                _, s_warm = d.solve(moved)
                _, s_cold = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, plain).solve(moved)
                ratios[st].append(s_warm.iterations / max(s_cold.iterations, 1))
    lines = [f"{'step deg/elbow':>14s} {'joint rad':>9s} {'warm/usual mean':>16s} {'worst':>6s}"]
    for st in steps:
        r = np.array(ratios[st])
        lines.append(f"{st:>14g} {angles[st]:>9.3f} {r.mean():>16.2f} {r.max():>6.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(SIZES), help=f"comma-separated subset of {','.join(SIZES)}")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per cell (after one warm-up)")
    ap.add_argument("--with-lbs", action="store_true", help="add the LBS row for comparison")
    ap.add_argument("--family", type=int, nargs="?", const=12, default=None, metavar="N",
                    help="print the quality table of LBS, DQS and springs on N generated tubes (default 12)")
    ap.add_argument("--rigs", action="store_true", help="print issue 26's LBS vs springs table on the Khronos rigs")
    ap.add_argument("--rigs-where", action="store_true", help="print where the springs fold on the --rigs poses")
    ap.add_argument("--sampling", action="store_true",
                    help="print how finely the family and the Khronos rigs sample their limbs (h / r) and the "
                         "differential term's share there")
    ap.add_argument("--spring", default="", metavar="KEY=VALUE,...",
                    help="spring parameters for --rigs, --rigs-where and --family (e.g. k_d=10)")
    ap.add_argument("--accel", type=int, nargs="?", const=4, default=None, metavar="N",
                    help="print iterations to the tolerance with and without acceleration on N tubes (default 4)")
    ap.add_argument("--momentum", default="0.5,0.7,0.8", help="comma-separated momentum betas for --accel")
    ap.add_argument("--warm", type=int, nargs="?", const=4, default=None, metavar="N",
                    help="print iterations per clip with and without the warm start on N tubes (default 4)")
    ap.add_argument("--speeds", default="0.5,1,2", help="comma-separated clip speed factors for --warm")
    ap.add_argument("--far-every", type=int, default=6, help="--warm: far-converged reference every k-th frame")
    ap.add_argument("--warm-limit", type=float, default=None, help="--warm: SpringParams.warm_limit (radians)")
    ap.add_argument("--warm-asset", default=None, metavar="PATH", help="print the warm-start table of an asset's clip")
    ap.add_argument("--clip", default="0", help="--warm-asset: clip name or index")
    ap.add_argument("--frames", type=int, default=30, help="--warm-asset: frames at 30 fps")
    ap.add_argument("--warm-sweep", type=int, nargs="?", const=3, default=None, metavar="N",
                    help="print warm / usual-start iterations against the step per frame on N tubes (default 3)")
    ap.add_argument("--steps", default="1,2,4,6,8,12,16", help="--warm-sweep: steps per elbow and frame (deg)")
    args = ap.parse_args(argv)
    for flag, value, low in (("--warm-asset's --frames", args.frames, 2), ("--warm-sweep", args.warm_sweep, 1),
                             ("--warm", args.warm, 1), ("--far-every", args.far_every, 1),
                             ("--accel", args.accel, 1), ("--family", args.family, 1), ("--repeat", args.repeat, 1)):
        if value is not None and value < low:
            ap.error(f"{flag} must be >= {low}, got {value}")
    try:
        params = spring_params(args.spring)
    except ValueError as exc:
        ap.error(f"--spring: {exc}")
    config = None
    if params is not None:
        from engine.skinning.config import DeformerConfig

        config = DeformerConfig(spring=params)
    if args.warm_asset is not None:
        clip: str | int = int(args.clip) if args.clip.isdigit() else args.clip
        print(warm_asset(args.warm_asset, clip, args.frames))
    elif args.warm_sweep is not None:
        print(warm_sweep(args.warm_sweep, _floats(args.steps)))
    elif args.warm is not None:
        print(warm_table(args.warm, _floats(args.speeds), far_every=args.far_every, warm_limit=args.warm_limit))
    elif args.rigs:
        print(rigs_table(config=config))
    elif args.rigs_where:
        print(rigs_where(config=config))
    elif args.sampling:
        print(sampling_table())
    elif args.accel is not None:
        print(accel_table(args.accel, _floats(args.momentum)))
    elif args.family is not None:
        from engine.assets.gen.family import tube_family, tube_poses
        from engine.skinning.family import family_table, format_family_table

        print(format_family_table(family_table(tube_family(args.family), tube_poses(), params=params)))
    else:
        return _reference_table(ap, args)
    return 0


#: (file in ../shared/gltf-samples, clip, times) of the --rigs table
RIGS = (("CesiumMan.glb", "clip0", (0.5, 1.0, 1.5)), ("Fox.glb", "Survey", (0.5, 1.5, 2.5)),
        ("Fox.glb", "Walk", (0.3, 0.6)), ("Fox.glb", "Run", (0.3, 0.8)), ("RiggedFigure.glb", "clip0", (0.3, 0.5, 0.9)),
        ("RiggedSimple.glb", "clip0", (0.5, 1.0, 1.5)))


#: (file, clip, time) of the --rigs table's keyed extremes: the clip's pose there with every joint's rotation
#: from rest multiplied by EXAGGERATE (the clip's bends and twists taken further, on every rig alike)
EXTREMES = (("CesiumMan.glb", "clip0", 0.5), ("Fox.glb", "Survey", 1.5), ("Fox.glb", "Run", 0.8),
            ("RiggedFigure.glb", "clip0", 0.5), ("RiggedSimple.glb", "clip0", 1.0))
EXAGGERATE = 1.6


def exaggerated_globals(asset, clip: str, time: float, factor: float = EXAGGERATE) -> np.ndarray:
    """Node world matrices (N,4,4) of `clip` at `time` with every node's rotation relative to its rest rotation
    scaled by `factor` (angle x factor about the same axis, capped at 180 deg)."""
    from engine.anim.fk import global_matrices
    from engine.anim.pose import Pose
    from engine.anim.rig import Rig
    from engine.anim.sampling import ClipSampler
    from engine.math.quat import from_axis_angle, inverse, multiply, to_axis_angle

    rig = Rig.from_asset(asset)
    pose = ClipSampler(rig, asset.clips[asset.clip_index(clip)]).sample(time, Pose.rest(rig))
    rest = rig.rotation.astype(np.float32)
    rel = multiply(inverse(rest), pose.rotation.astype(np.float32))
    axis, angle = to_axis_angle(rel)
    pose.rotation[:] = multiply(rest, from_axis_angle(axis, np.minimum(angle * factor, np.pi)))
    return global_matrices(rig, pose)


def spring_params(text: str):
    """SpringParams from "KEY=VALUE,..." (numbers, true/false; validated), None for an empty text."""
    from engine.skinning.springs import SpringParams

    if not text.strip():
        return None
    changes: dict[str, object] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{item!r} is not KEY=VALUE")
        v = value.strip()
        changes[key.strip()] = (v.lower() == "true") if v.lower() in ("true", "false") else \
            (int(v) if v.lstrip("-").isdigit() else float(v) if _is_number(v) else v)
    return SpringParams.from_dict({**SpringParams().to_dict(), **changes})


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def extremes_rows(config=None) -> list[tuple[str, dict, dict]]:
    """(label, LBS fold metrics, springs fold metrics) of the keyed extremes (numpy reference; `config`: a
    DeformerConfig, None for the defaults)."""
    import warnings

    from engine.scene import load_asset
    from engine.skinning.metrics import deformation_metrics

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, clip, t in EXTREMES:
            loaded = load_asset(f"../shared/gltf-samples/{name}")
            g = exaggerated_globals(loaded.asset, clip, t)
            sp = loaded.skinned[0]
            topo = sp.topology()
            out = []
            for method in ("lbs", "spring"):
                x = np.asarray(sp.deform(g, method, config=config), np.float64)[topo.display_of_control]
                out.append(deformation_metrics(x, topo.positions, topo.triangles))
            rows.append((f"{name[:-4]} {clip} {t:g} s, rotations x{EXAGGERATE:g}", out[0], out[1]))
    return rows


def rigs_table(root: str = "../shared/gltf-samples", config=None) -> str:
    """Issue 26's table (see the module docstring): one row per rig, clip and time; LBS / springs / springs with
    the contact term (`config`: a DeformerConfig for the springs, None for the defaults)."""
    import warnings

    from engine import Session
    from engine.scene import quiet_load
    from game.commands.compare import VERSUS_LBS, compare_metrics

    head = ("| rig, clip, time | intersecting pairs (LBS / springs / +contact) | dihedral > 45 deg, % | "
            "strain > 30 %, % | no worse than LBS (springs / +contact) |")
    lines = [head, "|---|---|---|---|---|"]
    methods = ("lbs", "spring", "spring+contact")
    worse_rows = [0, 0]
    with Session(device="cpu", render=False, strict=True) as sess, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, clip, times in RIGS:
            asset = quiet_load(f"{root}/{name}").asset
            for t in times:
                m, _, _ = compare_metrics(asset, clip, t, list(methods), config, session=sess)
                f = [m[d]["fold"] for d in methods]
                ok = []
                for k, g in enumerate(f[1:]):
                    worse = [key for key in VERSUS_LBS if round(g[key], 5) > round(f[0][key], 5)]
                    worse_rows[k] += bool(worse)
                    ok.append("yes" if not worse else "no")
                cells = [" / ".join(f"{g['intersecting_pairs']:.0f}" for g in f),
                         " / ".join(f"{100 * g['dihedral_change_45']:.2f}" for g in f),
                         " / ".join(f"{100 * g['strain_30']:.2f}" for g in f), " / ".join(ok)]
                lines.append(f"| {name[:-4]} {clip} {t:g} s | " + " | ".join(cells) + " |")
    n = len(lines) - 2
    lines.append(f"worse than LBS on some column: springs in {worse_rows[0]} of {n} rows, springs+contact in "
                 f"{worse_rows[1]} of {n}")
    head = ("| keyed extreme | intersecting pairs (LBS / springs) | dihedral > 45 deg, % | strain > 30 %, % | "
            "springs no worse |")
    lines += ["", head, "|---|---|---|---|---|"]
    for label, a, b in extremes_rows(config):
        worse = [k for k in VERSUS_LBS if round(b[k], 5) > round(a[k], 5)]
        lines.append(f"| {label} | {a['intersecting_pairs']:.0f} / {b['intersecting_pairs']:.0f} | "
                     f"{100 * a['dihedral_change_45']:.2f} / {100 * b['dihedral_change_45']:.2f} | "
                     f"{100 * a['strain_30']:.2f} / {100 * b['strain_30']:.2f} | {'yes' if not worse else 'no'} |")
    return "\n".join(lines)


def sampling_table(root: str = "../shared/gltf-samples") -> str:
    """The ``--sampling`` table: per mesh (the 12 family tubes, the rigs of `RIGS`) its control points, the median,
    10th and 90th percentiles of h_i / r_i (a point's mean bind edge length over its bind distance from its bone)
    and of the differential term's share c_i (``springs.diff_scales``)."""
    import warnings

    from engine.assets.gen.family import tube_family
    from engine.scene import load_asset
    from engine.skinning.family import MemberRig
    from engine.skinning.springs.rest import build_rest, mean_edge_lengths

    def row(name: str, rest) -> str:
        n = rest.n_vertices
        h = mean_edge_lengths(rest)
        ratio = h[rest.r > rest.tiny] / rest.r[rest.r > rest.tiny]
        q = np.percentile(ratio, [50, 10, 90])
        c = np.percentile(rest.diff_scale, [50, 10, 90])
        return (f"| {name} | {n} | {q[0]:.3f} | {q[1]:.3f} | {q[2]:.3f} | {c[0]:.2f} | {c[1]:.2f} | "
                f"{c[2]:.2f} |")

    lines = ["| mesh | points | h / r median | 10th percentile | 90th percentile | share median | 10th | 90th |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in tube_family(12):
        rig = MemberRig(m)
        lines.append(row(m.name, build_rest(rig.topology, rig.binding, m.bind_joints)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in dict.fromkeys(n for n, _, _ in RIGS):
            sp = load_asset(f"{root}/{name}").skinned[0]
            lines.append(row(name[:-4], build_rest(sp.topology(), sp.binding(), sp.bind_joints)))
    return "\n".join(lines)


#: a point is bound against its weights when its binding bone's parent joint holds less than this share of them
AGAINST_WEIGHTS = 0.25


def fold_sources(sp, globals_: np.ndarray, config=None) -> dict[str, float]:
    """Where the springs (numpy reference; `config`: a DeformerConfig, None for the defaults) fold one skinned
    primitive at node world matrices `globals_` (see ``--rigs-where``): counts and medians over the springs'
    edges whose dihedral angle changed by more than 45 deg against bind."""
    from engine.skinning.binding.pipeline import per_control
    from engine.skinning.metrics import dihedral_angles, interior_edge_faces

    topo = sp.topology()
    x0 = np.asarray(topo.positions, np.float64)
    tri = np.asarray(topo.triangles, np.int64)
    pairs = interior_edge_faces(tri)
    xs = {m: np.asarray(sp.deform(globals_, m, config=config), np.float64)[topo.display_of_control]
          for m in ("lbs", "spring")}
    d0 = dihedral_angles(x0, tri, pairs)
    fold = {m: np.abs(dihedral_angles(x, tri, pairs) - d0) > np.radians(45.0) for m, x in xs.items()}
    bad = np.flatnonzero(fold["spring"])
    # the two points of every folded edge (the corners the edge's two faces share)
    fa, fb = tri[pairs[bad, 0]], tri[pairs[bad, 1]]
    shared = (fa[:, :, None] == fb[:, None, :]).any(2)
    pts = np.unique(fa[shared])
    binding = sp.binding()
    jn = np.asarray(per_control(topo, np.asarray(sp.primitive.joints)), np.int64)
    w = np.asarray(per_control(topo, np.asarray(sp.primitive.weights)), np.float64)
    w = w / np.maximum(w.sum(1, keepdims=True), 1e-30)
    carrier = np.asarray(binding.bones.parent_joint)[np.asarray(binding.bone)]
    share = np.where(jn == carrier[:, None], w, 0.0).sum(1)
    e = np.asarray(topo.edges, np.int64)
    l0 = np.linalg.norm(x0[e[:, 0]] - x0[e[:, 1]], axis=1)
    strain = np.linalg.norm(xs["lbs"][e[:, 0]] - xs["lbs"][e[:, 1]], axis=1) / np.maximum(l0, 1e-30) - 1.0
    most = np.zeros(topo.n_control)  # per point the strain of its most compressed edge (0 if none is)
    np.minimum.at(most, e[:, 0], strain)
    np.minimum.at(most, e[:, 1], strain)
    diag = float(np.linalg.norm(x0.max(0) - x0.min(0))) or 1.0
    dev = np.linalg.norm(xs["spring"] - xs["lbs"], axis=1) / diag
    return {"lbs": float(fold["lbs"].sum()), "spring": float(bad.size),
            "flat": float(np.sum(d0[bad] < np.radians(10.0))), "points": float(pts.size),
            "against": float(np.sum(share[pts] < AGAINST_WEIGHTS)),
            "strain": float(np.median(most[pts])) if pts.size else 0.0,
            "dev": float(np.median(dev[pts])) if pts.size else 0.0}


def rigs_where(root: str = "../shared/gltf-samples", config=None) -> str:
    """The ``--rigs-where`` table over the poses of `RIGS` and `EXTREMES` (`config` as `fold_sources`)."""
    import warnings

    from engine.anim.fk import global_matrices
    from engine.anim.pose import Pose
    from engine.anim.rig import Rig
    from engine.anim.sampling import ClipSampler
    from engine.scene import load_asset

    head = ("| rig, clip, time | edges > 45 deg (LBS / springs) | of the springs' flat at bind | points of those "
            "edges | bound against their weights | LBS compression there (median) | springs - LBS / diagonal |")
    lines = [head, "|---|---|---|---|---|---|---|"]
    poses: list[tuple[str, str, float, float]] = [(n, c, t, 1.0) for n, c, ts in RIGS for t in ts]
    poses += [(n, c, t, EXAGGERATE) for n, c, t in EXTREMES]
    loaded: dict[str, object] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, clip, t, factor in poses:
            if name not in loaded:
                loaded[name] = load_asset(f"{root}/{name}")
            asset = loaded[name].asset  # type: ignore[attr-defined]
            if factor != 1.0:
                g = exaggerated_globals(asset, clip, t, factor)
            else:
                rig = Rig.from_asset(asset)
                sampler = ClipSampler(rig, asset.clips[asset.clip_index(clip)])
                g = global_matrices(rig, sampler.sample(t, Pose.rest(rig)))
            f = fold_sources(loaded[name].skinned[0], g, config)  # type: ignore[attr-defined]
            label = f"{name[:-4]} {clip} {t:g} s" + (f", rotations x{factor:g}" if factor != 1.0 else "")
            lines.append(f"| {label} | {f['lbs']:.0f} / {f['spring']:.0f} | {f['flat']:.0f} | {f['points']:.0f} | "
                         f"{f['against']:.0f} | {100 * f['strain']:+.1f} % | {f['dev']:.4f} |")
    return "\n".join(lines)


def _floats(text: str) -> list[float]:
    """A comma-separated list of numbers."""
    return [float(v) for v in text.split(",") if v]


def _reference_table(ap: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The default table: spring iteration and pose set-up cost per size (bench_reference)."""
    sizes = [s for s in args.sizes.split(",") if s]
    bad = [s for s in sizes if s not in SIZES]
    if bad:
        ap.error(f"unknown size {bad}; sizes: {list(SIZES)}")
    rows = ["spring-it", "spring-pose"] + (["lbs"] if args.with_lbs else [])
    print(format_table(run(sizes, rows, args.repeat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
