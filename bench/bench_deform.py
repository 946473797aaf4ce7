"""Benchmark of the GPU deformer graph: the research's Table 1 for the project's meshes, plus a batch sweep.

    python main.py bench deform [--quick] [--synthetic] [--reps N] [--no-reference]
                           [--counts | --springs | --contact | --tiles]

Per mesh (assets/box.glb ~1.8k control points, plus ~5.6k, humanoid ~16k, humanoid_dense ~90k through
engine.assets.library.character_path; synthetic tubes when a character is unavailable, with --synthetic, and
always with --quick (small ones: 0.3k..3k points); a row is named for what it runs: the character, or
``tube N pts``): median GPU ms over ``--reps`` frames of the spring stage for 1, 25, 50, 100 iterations (GL
timer queries, convergence scheme "iterations" so every iteration runs; the cells' frames taken in turn, one
of each per round, so that the machine's drift does not land on one cell) with ``spread`` = the largest (p75 -
p25) / median of the row's cells, the largest iteration count fitting a 10 ms budget (research: 10 ms /
per-iteration time, the slope of a least-squares line through the four medians), the LBS skinning time (the
built-in LBS graph: one fused skin + copy dispatch), GPU bytes per control point, and the numpy reference time
of 50 iterations (median of a few calls) with the numpy/GPU ratio. Then N instances of the third mesh (the
humanoid; 1, 8, 32, 64) x 50 iterations in one graph: GPU ms per frame, after one row of the springs'
contact term's cost on that mesh (GPU ms of the contact node, numpy reference ms). Then a crowd sweep without springs: N
instances of that mesh through the LBS graph with skinned normals (fused: one skin_copy dispatch; unfused: skin
-> copy) and with surface normals (skin_copy -> face normals -> vertex normals): ms per stage (every stage is one
dispatch for all N meshes: the dispatch count does not grow with N), the CPU time of packing and uploading the
poses, and the wall time of a whole ``run()`` to ``ctx.finish()`` with its spread.
First a table of the spring stage's GL calls per frame (counted from Python around the stage, see
bench.common.count_stage_calls; the same on every device): dispatches, memory barriers, command barriers and
all GL calls for I = 1 and 50 iterations, with and without the volume term and its pre-pass, checking
convergence every iteration and every 50, at K = 1, 5 and 10 iterations per dispatch (the spring node's
``iterations_per_dispatch``); ``--counts`` prints only that table. ``--tiles`` prints it and Table K: the box and
the humanoid at K = 1 / 5 / 10 and I = 1 / 50 (GPU ms, CPU ms in the stage, dispatches and GL calls per frame,
distance from the K = 1 result), the variants of a mesh timed round-robin. ``--springs`` prints only the spring
stage's short rows (box and humanoid at I = 1 and 50, 8 and 64 humanoids in one graph): the run for a lent GPU.
``--contact`` prints only the contact term's cost where it acts (`contact_bends`: issue 13's tube at 90, 135 and
150 deg).
Prints tables; asserts nothing. ``--quick`` uses small tubes (for llvmpipe). On a software rasteriser the
"GPU" times are the CPU's (timer queries there count wall time, the machine's other processes included).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` and `engine` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Spread, count_stage_calls, device_line  # noqa: E402

ITERATIONS = (1, 25, 50, 100)
SIZES = {"box": 1802, "plus": 5634, "humanoid": 16000, "humanoid_dense": 90000}
QUICK_SIZES = {"box": 300, "plus": 800, "humanoid": 1600, "humanoid_dense": 3000}
KS = (1, 5, 10)  # iterations per dispatch (the spring node's iterations_per_dispatch) in the K rows
# the K rows' update: the heavy ball (explicit), which converges tiled at K = 5 and 10 (the default damped
# semi-implicit update diverges tiled at K >= 3: engine.skinning.springs.tiles)
TILED_PARAMS: dict[str, Any] = {"integrator": "explicit", "acceleration": "momentum"}


def _tube_of(n_control: int):
    from tests.helpers.tube_rig import tube

    segments = max(6, int(np.sqrt(n_control / 4)))
    rings = max(3, n_control // segments)
    return tube(rings=rings, segments=segments, length=1.0, n_joints=4)


def _load_character(name: str):
    """(topology, binding, joints, weights, inverse_bind, parents, bind_joints) of a generated character."""
    from tests.helpers.character_rig import load_character

    return load_character(name)


def _rig(name: str, quick: bool, synthetic: bool):
    """(row label, rig arrays): the character ``name``, or a synthetic tube of about its size (of the quick
    size with ``quick``), labelled ``tube N pts`` with its real control-point count."""
    if not (quick or synthetic):
        try:
            return name, _load_character(name)
        except Exception as exc:  # a benchmark falls back to a tube of the same size and says so
            print(f"  ({name}: {exc}; using a synthetic tube)")
    n = (QUICK_SIZES if quick else SIZES)[name]
    r = _tube_of(n)
    return f"tube {r.topology.n_control} pts", (r.topology, r.binding, r.joints, r.weights,
                                                r.inverse_bind.astype(np.float64), r.parents, r.bind_joints)


def _pose(bind_joints: np.ndarray, inverse_bind: np.ndarray, seed: int = 3):
    rng = np.random.default_rng(seed)
    posed = bind_joints.copy()
    for j in range(1, bind_joints.shape[0]):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        r = np.eye(4)
        r[:3, :3] = np.eye(3) + np.sin(0.3) * k + (1 - np.cos(0.3)) * k @ k
        posed[j] = bind_joints[j] @ r
    return posed @ inverse_bind, posed


def _volume_atomics(topo, binding, bind_joints) -> tuple[int, int]:
    """Volume-term atomics per iteration on one mesh: (one per point of a region, as before the per-group
    reduction; one per work group and region, spring_iterate.glsl's volume_flush)."""
    from engine.gpu.layouts import LOCAL_SIZE
    from engine.skinning.gpu.spring import spring_arrays

    region = spring_arrays(topo, binding, bind_joints)[2]["region"][:, 0]
    on = np.flatnonzero(region >= 0)
    return int(on.size), len(set(zip((on // LOCAL_SIZE).tolist(), region[on].tolist())))


def _counts_table(ctx, res, rig: tuple, reps: int) -> None:
    """The spring stage's GL calls in one frame (after a first frame: programs compiled, pools built), and the
    median wall time inside the stage over ``reps`` frames (each after ctx.finish())."""
    from engine.skinning.gpu.graph import DeformerGraph
    from engine.skinning.gpu.plan import default_config
    from engine.skinning.gpu.stages import SpringContext
    from engine.skinning.springs import SpringParams

    topo, binding, jn, w, ib, par, bj = rig
    skin_mats, posed = _pose(bj, ib)
    print("Spring stage GL calls per frame (counted from Python; scheme 'iterations'; K = iterations_per_dispatch)")
    head = (f"{'K':>3}{'I':>4}{'volume':>8}{'check_every':>13}{'dispatches':>12}{'barriers':>10}{'cmd barriers':>14}"
            f"{'GL calls':>10}{'stage ms':>10}{'spread':>8}")
    print(head)
    print("-" * len(head))
    for k, it, k_v, every in ((k, it, k_v, every) for k in KS for it in (1, 50) for k_v in (1.0, 0.0)
                              for every in (1, 50)):
        cfg = default_config("spring").to_dict()
        cfg["nodes"][1]["options"]["check_every"] = every
        cfg["nodes"][1]["options"]["iterations_per_dispatch"] = k
        graph = DeformerGraph(ctx, res)
        params = SpringParams(convergence="iterations", max_iterations=it, k_v=k_v, **TILED_PARAMS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            h = graph.add_mesh(topo, binding, jn, w, ib, par, config=cfg, spring=params)
        graph.set_pose(h, skin_mats, posed)
        graph.run()
        with count_stage_calls(SpringContext) as n:
            graph.run()
        ms = []
        for _ in range(reps):
            ctx.finish()
            with count_stage_calls(SpringContext) as t:
                graph.run()
            ms.append(t.seconds * 1e3)
        graph.release()
        sp = Spread.of(ms)
        print(f"{k:>3}{it:>4}{'on' if k_v else 'off':>8}{every:>13}{n.dispatches:>12}{n.barriers:>10}"
              f"{n.command_barriers:>14}{n.calls:>10}{sp.median:>10.3f}{sp.pct:>7.0f}%")
    print(f"mesh: {topo.n_control} control points; GL calls: dispatches, barriers, image / SSBO bindings, uniform "
          "writes, buffer writes and copies issued by the spring stage's Python code; stage ms: median wall time "
          f"inside the stage over {reps} frames (on llvmpipe the dispatches run inside their calls: the stage's "
          "whole cost)")
    per_point, per_group = _volume_atomics(topo, binding, bj)
    print(f"volume-term atomics per iteration on this mesh: {per_point} with one per point, {per_group} with one per "
          "work group and region (now)")
    print()


def _tiles_table(ctx, res, rigs: list[tuple[str, tuple]], reps: int) -> None:
    """Table K: per mesh, the spring node at K = 1 / 5 / 10 iterations per dispatch and I = 1 / 50 iterations
    (scheme 'iterations', TILED_PARAMS), all six graphs of a mesh timed round-robin: GPU ms, CPU ms inside the
    stage (the submit), dispatches per frame, and the distance of the K result from the K = 1 (untiled) one as a
    fraction of the bounding-box diagonal. The header line of a mesh gives its tiles (springs.tiles) and the
    share of CSR neighbour slots outside their point's tile."""
    from engine.skinning.gpu.graph import DeformerGraph
    from engine.skinning.gpu.plan import default_config
    from engine.skinning.gpu.stages import SpringContext
    from engine.skinning.meshprep import bbox_diagonal
    from engine.skinning.springs import SpringParams
    from engine.skinning.springs.rest import build_rest
    from engine.skinning.springs.tiles import tile_ids, tile_stats

    print("Table K: K spring iterations per dispatch (iterations_per_dispatch; tiles with a frozen halo), "
          f"scheme 'iterations', {', '.join(f'{k} = {v}' for k, v in TILED_PARAMS.items())}")
    head = (f"{'mesh':<20}{'ctrl':>7}{'K':>4}{'I':>4}{'dispatches':>12}{'GL calls':>10}{'GPU ms':>9}{'spread':>8}"
            f"{'CPU ms':>8}{'vs K=1':>10}")
    print(head)
    print("-" * len(head))
    for label, rig in rigs:
        topo, binding, jn, w, ib, par, bj = rig
        skin_mats, posed = _pose(bj, ib)
        rest = build_rest(topo, binding, bj, joints=jn, weights=w)
        n_tiles, outside = tile_stats(rest, tile_ids(topo.n_control, rest.vol_region))
        print(f"{label}: {n_tiles} tiles, {outside:.1%} of the neighbour slots outside their point's tile")
        graphs, handles, counts = {}, {}, {}
        for k in KS:
            for it in (1, 50):
                cfg = default_config("spring").to_dict()
                cfg["nodes"][1]["options"]["iterations_per_dispatch"] = k
                graph = DeformerGraph(ctx, res)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    h = graph.add_mesh(topo, binding, jn, w, ib, par, config=cfg, spring=SpringParams(
                        convergence="iterations", max_iterations=it, **TILED_PARAMS))
                graph.set_pose(h, skin_mats, posed)
                graph.run()
                with count_stage_calls(SpringContext) as n:
                    graph.run()
                graphs[k, it], handles[k, it], counts[k, it] = (graph, "spring"), h, n
        times = _time_interleaved(graphs, reps)
        cpu: dict = {key: [] for key in graphs}
        for _ in range(reps):  # the stage's CPU time, round-robin as well
            for key, (graph, _) in graphs.items():
                ctx.finish()
                with count_stage_calls(SpringContext) as t:
                    graph.run()
                cpu[key].append(t.seconds * 1e3)
        diag = bbox_diagonal(topo.positions)
        out = {key: graph.download_control(handles[key], "deformed") for key, (graph, _) in graphs.items()}
        for (k, it), (graph, _) in graphs.items():
            dist = float(np.abs(out[k, it] - out[1, it]).max()) / diag
            n = counts[k, it]
            print(f"{'':<20}{topo.n_control:>7}{k:>4}{it:>4}{n.dispatches:>12}{n.calls:>10}"
                  f"{times[k, it].median:>9.3f}{times[k, it].pct:>7.0f}%{Spread.of(cpu[k, it]).median:>8.3f}"
                  f"{dist:>10.1e}")
            graph.release()
    print("dispatches / GL calls: the spring stage's per frame (frame pass, volume pre-pass, ceil(I / K) "
          "iteration dispatches, the last of which resolves; a resolve pass for the energy and force schemes); "
          "CPU ms: wall time inside the stage's Python (on llvmpipe it includes "
          "the dispatches' execution); vs K=1: max |x_K - x_1| / bbox diagonal")
    print()


def _time_graph(graph, reps: int, node: str | None = None) -> Spread:
    """The GPU ms of ``node`` (None: every stage) over ``reps`` profiled runs after one warm-up run."""
    graph.run(profile=True)  # warm-up (compiles, first upload)
    samples = []
    for _ in range(reps):
        graph.run(profile=True)
        t = graph.last_timings
        samples.append(t.get(node, 0.0) if node else sum(t.values()))
    return Spread.of(samples)


def _time_interleaved(graphs: dict, reps: int) -> dict:
    """Key -> GPU ms of each (graph, node) over ``reps`` profiled runs, taken round-robin (one run of every
    graph per round, after one warm-up run each) so that the machine's drift during the measurement lands on
    every cell alike instead of on whichever cell ran while another process was busy."""
    samples: dict = {key: [] for key in graphs}
    for graph, _ in graphs.values():
        graph.run(profile=True)  # warm-up (compiles, first upload)
    for _ in range(reps):
        for key, (graph, node) in graphs.items():
            graph.run(profile=True)
            samples[key].append(graph.last_timings.get(node, 0.0))
    return {key: Spread.of(v) for key, v in samples.items()}


def _spring_graph(ctx, res, rig: tuple, iterations: int, n: int = 1):
    """A DeformerGraph of ``n`` instances of ``rig`` on the springs (scheme "iterations", ``iterations`` a frame),
    posed by :func:`_pose`."""
    from engine.skinning.gpu.graph import DeformerGraph
    from engine.skinning.springs import SpringParams

    topo, binding, jn, w, ib, par, bj = rig
    skin_mats, posed = _pose(bj, ib)
    graph = DeformerGraph(ctx, res)
    params = SpringParams(convergence="iterations", max_iterations=iterations)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        hs = [graph.add_mesh(topo, binding, jn, w, ib, par, method="spring", spring=params, asset_key="a")
              for _ in range(n)]
    for h in hs:
        graph.set_pose(h, skin_mats, posed)
    return graph


def _springs_rows(ctx, res, quick: bool, synthetic: bool, reps: int) -> None:
    """``--springs``: the spring stage alone, short enough for a lent GPU's minutes: per mesh (box, humanoid) the
    GPU ms at I = 1 and 50 (two graphs interleaved), then N humanoids x 50 iterations in one graph."""
    print("Spring stage GPU ms, scheme 'iterations', check every iteration")
    print(f"{'mesh':<22}{'points':>9}{'I=1':>9}{'I=50':>9}{'spread':>8}{'us/iteration':>14}")
    for name in ("box", "humanoid"):
        label, rig = _rig(name, quick, synthetic)
        graphs = {it: (_spring_graph(ctx, res, rig, it), "spring") for it in (1, 50)}
        t = _time_interleaved(graphs, reps)
        for graph, _ in graphs.values():
            graph.release()
        per_it = (t[50].median - t[1].median) / 49 * 1e3
        print(f"{label:<22}{rig[0].n_control:>9}{t[1].median:>9.3f}{t[50].median:>9.3f}{t[50].pct:>7.0f}%"
              f"{per_it:>14.1f}")
        if name == "humanoid":
            for n in ((2, 8) if quick else (8, 64)):
                graph = _spring_graph(ctx, res, rig, 50, n)
                tn = _time_graph(graph, max(3, reps // 2))
                graph.release()
                print(f"{f'{n} x {label}':<22}{n * rig[0].n_control:>9}{'':>9}{tn.median:>9.3f}{tn.pct:>7.0f}%"
                      f"{tn.median / 50 * 1e3:>14.1f}")


def _contact_row(ctx, res, label: str, rig: tuple, reps: int, np_reps: int) -> None:
    """The contact term's cost (one row): the contact node's GPU ms after 50 spring iterations (default 8
    passes), beside the spring node's, and the numpy reference's passes (engine.skinning.contact)."""
    from engine.skinning.gpu.graph import DeformerGraph
    from engine.skinning.springs import SpringDeformer, SpringParams

    topo, binding, jn, w, ib, par, bj = rig
    skin_mats, posed = _pose(bj, ib)
    params = SpringParams(convergence="iterations", max_iterations=50, contact=True)
    graph = DeformerGraph(ctx, res)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        h = graph.add_mesh(topo, binding, jn, w, ib, par, method="spring", spring=params)
        d = SpringDeformer(topo, binding, bj, par, params)
    graph.set_pose(h, skin_mats, posed)
    times = _time_interleaved({"spring": (graph, "spring"), "contact": (graph, "contact")}, reps)
    graph.release()
    from engine.skinning.contact import contact_rest, resolve_contacts

    frame = d.frame(posed)
    d.params = params.replace(contact=False)  # the springs' result before the contact term
    x = d.solve(posed)[0]
    rest = contact_rest(topo, params.contact_thickness, params.contact_passes)
    np_samples = []
    moved = 0
    for _ in range(np_reps):
        t0 = time.perf_counter()
        moved = resolve_contacts(x, frame.attach, rest)[1]
        np_samples.append((time.perf_counter() - t0) * 1e3)
    print(f"Contact term ([spring] contact = true: up to {params.contact_passes} smoothed + {params.contact_passes} "
          "plain passes, each a hashed grid + a Jacobi pass, stopping at the first pass that finds no pair)")
    print(f"{'mesh':<20}{'ctrl':>7}{'spring50 ms':>13}{'contact ms':>12}{'spread':>8}{'passes':>8}"
          f"{'np contact ms':>15}")
    print(f"{label:<20}{topo.n_control:>7}{times['spring'].median:>13.3f}{times['contact'].median:>12.3f}"
          f"{times['contact'].pct:>7.0f}%{moved:>8}{Spread.of(np_samples).median:>15.1f}")
    print("passes = contact passes that moved points in this pose (numpy reference)")
    print()


def contact_bends(ctx, res, reps: int, np_reps: int, bends: tuple[float, ...] = (90.0, 135.0, 150.0)) -> None:
    """The contact term's cost where it acts (``--contact``): issue 13's tube (engine.assets.gen.family, 1312
    points) bent by each of ``bends``, default parameters with contact on: the spring node's and the contact node's
    GPU ms (timed round-robin), the contact passes that moved points and the numpy reference's contact ms (the
    passes and the volume restore, engine.skinning.contact.resolve_contacts)."""
    from engine.assets.gen.family import TubePose, tube_member
    from engine.skinning.contact import contact_rest, resolve_contacts
    from engine.skinning.family import MemberRig
    from engine.skinning.gpu.graph import DeformerGraph
    from engine.skinning.springs import SpringDeformer, SpringParams

    rig = MemberRig(tube_member("issue13"))
    m = rig.member
    params = SpringParams(contact=True)
    print("Contact term where it acts: issue 13's tube, default parameters with contact = true (up to "
          f"{params.contact_passes} smoothed + {params.contact_passes} plain passes, then the volume restore)")
    print(f"{'bend':>6}{'ctrl':>7}{'spring ms':>11}{'contact ms':>12}{'spread':>8}{'contact/spring':>16}{'passes':>8}"
          f"{'np contact ms':>15}")
    for bend in bends:
        posed = m.posed_joints(TubePose("b", bend=bend))
        graph = DeformerGraph(ctx, res)
        h = graph.add_mesh(rig.topology, rig.binding, m.joints, m.weights, np.linalg.inv(m.bind_joints), m.parents,
                           method="spring", spring=params)
        graph.set_pose(h, (posed @ np.linalg.inv(m.bind_joints)).astype(np.float32), posed)
        times = _time_interleaved({"spring": (graph, "spring"), "contact": (graph, "contact")}, reps)
        graph.release()
        d = SpringDeformer(rig.topology, rig.binding, m.bind_joints, m.parents, params.replace(contact=False))
        x = d.solve(posed)[0]
        frame = d.frame(posed)
        rest = contact_rest(rig.topology, params.contact_thickness, params.contact_passes)
        samples, moved = [], 0
        for _ in range(np_reps):
            t0 = time.perf_counter()
            moved = resolve_contacts(x, frame.attach, rest)[1]
            samples.append((time.perf_counter() - t0) * 1e3)
        sp, ct = times["spring"].median, times["contact"].median
        print(f"{bend:>6.0f}{rig.topology.n_control:>7}{sp:>11.3f}{ct:>12.3f}"
              f"{max(times['spring'].pct, times['contact'].pct):>7.0f}%{ct / max(sp, 1e-9):>16.2f}{moved:>8}"
              f"{Spread.of(samples).median:>15.1f}")
    print("passes = contact passes that moved points (numpy reference); 0: nothing meets, the restore is skipped")
    print()


#: the optional spring terms `_term_row` times against their stiffness at 0, with their table headings
TERMS = {
    "k_v": "Volume term ([spring] k_v: per bone region, the faces' third corners read per slot, one fixed-point "
           "atomic per point and iteration, one pre-pass per frame)",
    "k_d": "Differential term ([spring] k_d, default 20 times each point's share: the one-ring's weighted sum in "
           "the slot loop, the turned bind offset read per point, written once per frame)",
}


def _term_row(ctx, res, label: str, rig: tuple, reps: int, key: str) -> None:
    """One optional spring term's cost (one row): the spring node's GPU ms for 50 iterations with the default
    stiffness `key` of `TERMS` and with it at 0, in two graphs timed round-robin."""
    from engine.skinning.gpu.graph import DeformerGraph
    from engine.skinning.springs import SpringParams

    topo, binding, jn, w, ib, par, bj = rig
    skin_mats, posed = _pose(bj, ib)
    graphs = {}
    for which, k in (("on", getattr(SpringParams(), key)), ("off", 0.0)):
        graph = DeformerGraph(ctx, res)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            h = graph.add_mesh(topo, binding, jn, w, ib, par, method="spring",
                               spring=SpringParams(convergence="iterations", max_iterations=50, **{key: k}))
        graph.set_pose(h, skin_mats, posed)
        graphs[which] = (graph, "spring")
    times = _time_interleaved(graphs, reps)
    for graph, _ in graphs.values():
        graph.release()
    on, off = times["on"].median, times["off"].median
    print(TERMS[key])
    print(f"{'mesh':<20}{'ctrl':>7}{key + ' on ms':>11}{key + ' = 0 ms':>12}{'spread':>8}{'on/off':>8}")
    print(f"{label:<20}{topo.n_control:>7}{on:>11.3f}{off:>12.3f}{max(times['on'].pct, times['off'].pct):>7.0f}%"
          f"{on / off if off else float('nan'):>8.2f}")
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench deform", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small tubes, few repetitions (llvmpipe)")
    ap.add_argument("--synthetic", action="store_true", help="synthetic tubes instead of the characters")
    ap.add_argument("--reps", type=int, default=None,
                    help="timed frames per measurement; the median is shown (default 11, quick 7)")
    ap.add_argument("--counts", action="store_true", help="only the table of the spring stage's GL calls")
    ap.add_argument("--tiles", action="store_true",
                    help="only the GL-call table and Table K (K iterations per dispatch) for the box and the humanoid")
    ap.add_argument("--springs", action="store_true",
                    help="only the spring rows (box and humanoid at I = 1 and 50, N humanoids in one graph): the "
                         "short run for a GPU")
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the numpy reference's column of Table 1 (seconds per cell at 90k points)")
    ap.add_argument("--contact", action="store_true",
                    help="only the contact term's cost where it acts (issue 13's tube at 90, 135, 150 deg)")
    args = ap.parse_args(argv)
    reps = args.reps or (7 if args.quick else 11)
    if reps < 1:
        ap.error(f"--reps must be >= 1, got {reps}")
    np_reps = 3 if args.quick else 5

    from engine.gpu.context import egl_context
    from engine.gpu.resources import GpuResources
    from engine.skinning.gpu.graph import DeformerGraph
    from engine.skinning.springs import SpringDeformer, SpringParams

    ctx = egl_context(430)
    res = GpuResources(ctx)
    print(device_line(ctx, f"median of {reps} frames per cell (numpy: of {np_reps} calls); spread = (p75 - p25) / "
                           "median"))
    if args.springs or args.contact:
        if args.springs:
            _springs_rows(ctx, res, args.quick, args.synthetic, reps)
        if args.contact:
            contact_bends(ctx, res, reps, np_reps)
        res.release_all()
        ctx.release()
        return 0
    _counts_table(ctx, res, _rig("box", True, args.synthetic)[1], reps)
    if args.tiles:
        _tiles_table(ctx, res, [_rig(name, args.quick, args.synthetic) for name in ("box", "humanoid")], reps)
    if args.counts or args.tiles:
        res.release_all()
        ctx.release()
        return 0
    print("Table 1: spring stage GPU ms, scheme 'iterations'")
    source = []
    head = (f"{'mesh':<20}{'ctrl':>7}{'tris':>8}{'I=1':>9}{'I=25':>9}{'I=50':>9}{'I=100':>9}{'spread':>7}"
            f"{'maxI':>7}{'LBS ms':>8}{'B/ctrl':>8}{'np50 ms':>9}{'np/gpu':>8}")
    print(head)
    print("-" * len(head))
    humanoid = None
    for name in SIZES:
        label, (topo, binding, jn, w, ib, par, bj) = _rig(name, args.quick, args.synthetic)
        if name == "humanoid":
            humanoid = label, (topo, binding, jn, w, ib, par, bj)
        skin_mats, posed = _pose(bj, ib)
        graphs: dict[int | str, tuple[DeformerGraph, str]] = {}
        for it in ITERATIONS:
            graph = DeformerGraph(ctx, res)
            params = SpringParams(convergence="iterations", max_iterations=it)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                h = graph.add_mesh(topo, binding, jn, w, ib, par, method="spring", spring=params)
            graph.set_pose(h, skin_mats, posed)
            graphs[it] = graph, "spring"
        graph = DeformerGraph(ctx, res)
        h = graph.add_mesh(topo, binding, jn, w, ib, par, method="lbs")
        graph.set_pose(h, skin_mats, posed)
        graphs["lbs"] = graph, "skin+copy"
        times = _time_interleaved(graphs, reps)
        source.append(graphs[50][0].timing_source)
        bytes_per = sum(graphs[50][0].gpu_bytes().values()) / topo.n_control
        for graph, _ in graphs.values():
            graph.release()
        medians = {it: times[it].median for it in ITERATIONS}
        slope = float(np.polyfit(np.array(ITERATIONS, float), np.array([medians[i] for i in ITERATIONS]), 1)[0])
        max_i = int(10.0 / max(slope, 1e-9))
        spread = max(times[it].pct for it in ITERATIONS)
        lbs_ms = times["lbs"].median
        np_ms = float("nan")
        if not args.no_reference:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                d = SpringDeformer(topo, binding, bj, par, SpringParams(convergence="iterations", max_iterations=50))
            np_samples = []
            for _ in range(np_reps):
                t0 = time.perf_counter()
                d.solve(posed)
                np_samples.append((time.perf_counter() - t0) * 1e3)
            np_ms = Spread.of(np_samples).median
        print(f"{label:<20}{topo.n_control:>7}{topo.display_triangles.shape[0]:>8}{medians[1]:>9.3f}"
              f"{medians[25]:>9.3f}{medians[50]:>9.3f}{medians[100]:>9.3f}{spread:>6.0f}%{max_i:>7} {lbs_ms:>7.3f}"
              f"{bytes_per:>8.0f}{np_ms:>9.1f}{np_ms / max(medians[50], 1e-9):>8.1f}")

    print(f"timings: {source[-1]}; spread = the largest of the row's I cells; maxI = 10 ms / per-iteration ms (slope "
          "of the line through the I medians); B/ctrl = GPU bytes of every graph buffer / control points; np50 = "
          "numpy reference, 50 iterations")
    print()
    assert humanoid is not None, "SIZES names the humanoid"
    label, (topo, binding, jn, w, ib, par, bj) = humanoid
    _contact_row(ctx, res, label, (topo, binding, jn, w, ib, par, bj), reps, np_reps)
    for key in TERMS:
        _term_row(ctx, res, label, (topo, binding, jn, w, ib, par, bj), reps, key)
    print(f"Batch sweep: N instances of {label} x 50 spring iterations in one graph (one dispatch per iteration)")
    print(f"{'N':>4}{'control pts':>13}{'GPU ms/frame':>14}{'spread':>8}{'ms/instance':>13}")
    skin_mats, posed = _pose(bj, ib)
    counts = (1, 8) if args.quick else (1, 8, 32, 64)
    for n in counts:
        graph = _spring_graph(ctx, res, (topo, binding, jn, w, ib, par, bj), 50, n)
        t = _time_graph(graph, max(3, reps // 2))
        graph.release()
        print(f"{n:>4}{n * topo.n_control:>13}{t.median:>14.3f}{t.pct:>7.0f}%{t.median / n:>13.3f}")
    print()
    print(f"Crowd sweep: N instances of {label}, LBS, one graph (ms per frame, median of {reps}; every stage one "
          "dispatch for all N)")
    head = (f"{'N':>4}{'normals':>9}{'fused':>6}{'display v':>11}{'dispatch':>10}{'upload':>8}{'skin+copy':>10}"
            f"{'skin':>8}{'copy':>8}{'face n':>8}{'vertex n':>9}{'run wall':>10}{'spread':>8}")
    print(head)
    print("-" * len(head))
    from engine.skinning.gpu.plan import GraphConfig, default_config

    crowd_counts = (1, 8, 32) if args.quick else (1, 8, 32, 64)
    for n in crowd_counts:
        for normals, fuse in (("skinned", True), ("skinned", False), ("surface", True)):
            graph = DeformerGraph(ctx, res)
            cfg = GraphConfig.from_dict({**default_config("lbs", normals=normals).to_dict(), "fuse": fuse})
            hs = [graph.add_mesh(topo, binding, jn, w, ib, par, config=cfg, asset_key="h") for _ in range(n)]
            for h in hs:
                graph.set_pose(h, skin_mats, posed)
            graph.run(profile=True)
            parts: dict[str, list[float]] = {}
            walls = []
            for _ in range(reps):
                graph.run(profile=True)
                for k, v in graph.last_timings.items():
                    parts.setdefault(k, []).append(v)
                ctx.finish()
                t0 = time.perf_counter()
                graph.run()
                ctx.finish()
                walls.append((time.perf_counter() - t0) * 1e3)
            med = {k: float(np.median(v)) for k, v in parts.items()}
            n_steps = len(graph.plans[0].steps)
            graph.release()
            wall = Spread.of(walls)
            print(f"{n:>4}{normals:>9}{'yes' if fuse else 'no':>6}{n * topo.n_display:>11}{n_steps:>10}"
                  f"{med.get('upload', 0):>8.3f}{med.get('skin+copy', 0):>10.3f}{med.get('skin', 0):>8.3f}"
                  f"{med.get('copy', 0):>8.3f}{med.get('face_normals', 0):>8.3f}"
                  f"{med.get('vertex_normals', 0):>9.3f}{wall.median:>10.3f}{wall.pct:>7.0f}%")
    print("upload = CPU packing + writing of all poses; stages timed one by one (finished); run wall = one whole "
          "run() without profiling, to ctx.finish(), spread = its (p75 - p25) / median")
    res.release_all()
    ctx.release()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
