"""`python main.py compare ASSET --clip C --time T [--deformers D1,D2,...] [--view side|inside] --out sheet.png`.

Deforms every skinned primitive of the asset with every requested deformer (numpy reference, through an
:class:`engine.Session`), prints per
deformer the research's quality measures against the bind pose, and renders the results side by side
headless (one panel per deformer, same camera: the most-rotated joint in profile, or ``--view inside`` looking
into the inside of its bend) into a contact sheet:

  volume     enclosed volume / bind volume (1 = preserved)
  collapse   minimum vertex-to-skeleton distance relative to bind (LBS candy-wrapper -> ~0)
  edge       mean / max |l / l0 - 1| over edges
  normals    mean angle between adjacent face normals near the most-rotated joint, minus the same at bind
             (degrees; large = a crease or pointed bend)

and, for every skinned primitive (issue 13, `engine.skinning.metrics.deformation_metrics` on the welded
control points against bind), a second table: intersecting triangle pairs, largest crease (deg), share of
edges whose dihedral angle changed by more than 45 deg, share strained by more than 30 %, volume ratio,
roughness and, where the mesh has open boundaries, rim roughness; `*` marks the best method per column; then,
when lbs is compared, one line per other deformer: "versus lbs: D no worse on isect, dih>45, str>30" or
"versus lbs: D WORSE on COLUMN VALUE > LBS_VALUE; ..." (issue 26: values compared as printed).

Besides the deformer table's names, ``--deformers`` takes ``spring+contact``: the spring deformer with its
contact term on (``[spring] contact = true``, engine.skinning.contact).
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.components import PrimitiveKey

if TYPE_CHECKING:
    from engine.skinning.instances import SkinnedPrimitive

__all__ = ["compare", "compare_metrics", "fold_table", "versus_lbs", "most_rotated_joint", "open_boundary",
           "VARIANTS"]

#: compare-only names for a deformer of the table with config overrides: (deformer, DeformerConfig overrides)
VARIANTS: dict[str, tuple[str, dict]] = {"spring+contact": ("spring", {"spring_contact": True})}

# (column title, metric key, how "best" is read: "min" smallest, "one" closest to 1)
FOLD_COLUMNS = (("isect", "intersecting_pairs", "min"), ("crease", "crease_max", "min"),
                ("dih>45", "dihedral_change_45", "min"), ("str>30", "strain_30", "min"),
                ("volume", "volume_ratio", "one"), ("rough", "roughness", "min"),
                ("rim", "roughness_rim", "min"))


def open_boundary(triangles: np.ndarray, n: int) -> np.ndarray | None:
    """(n,) bool: the vertices on an edge used by exactly one triangle; None for a closed mesh."""
    tri = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    e = np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]), axis=1)
    uniq, count = np.unique(e, axis=0, return_counts=True)
    rim = uniq[count == 1]
    if not len(rim):
        return None
    out = np.zeros(n, dtype=bool)
    out[rim.ravel()] = True
    return out


def _digits(key: str) -> int:
    """Decimals a fold column prints with (best marks compare the printed values, so ties are honest)."""
    return 0 if key == "intersecting_pairs" else 1 if key == "crease_max" else 4 if "roughness" in key else 3


def fold_table(fold: dict[str, dict]) -> list[str]:
    """The fold metrics of one primitive as table lines (header first), `*` after the best value per column
    as printed (ties all marked; nan never best)."""
    cols = [c for c in FOLD_COLUMNS if any(c[1] in m for m in fold.values())]
    best = {}
    for _title, key, how in cols:
        vals = {d: round(float(m.get(key, math.nan)), _digits(key)) for d, m in fold.items()}
        score = {d: (round(abs(v - 1.0), _digits(key)) if how == "one" else v)
                 for d, v in vals.items() if math.isfinite(v)}
        low = min(score.values()) if score else math.nan
        best[key] = {d for d, v in score.items() if v == low}
    w = max([9] + [len(d) for d in fold])
    lines = [f"{'deformer':<{w}}" + "".join(f" {t:>9}" for t, _k, _h in cols)]
    for d, m in fold.items():
        cells = "".join(f" {f'{float(m.get(key, math.nan)):.{_digits(key)}f}' + ('*' if d in best[key] else ' '):>9}"
                        for _t, key, _h in cols)
        lines.append(f"{d:<{w}}" + cells)
    return lines


#: the fold columns a deformer must not lose to LBS on (issue 26): intersecting pairs, dihedral > 45, strain > 30
VERSUS_LBS = ("intersecting_pairs", "dihedral_change_45", "strain_30")


def versus_lbs(fold: dict[str, dict]) -> list[str]:
    """One line per deformer besides "lbs" (none without "lbs"): whether it is no worse than LBS on intersecting
    pairs, dihedral change > 45 deg and strain > 30 % (compared as printed), naming the columns where it is
    worse with both values."""
    if "lbs" not in fold:
        return []
    titles = {key: t for t, key, _h in FOLD_COLUMNS}
    out = []
    for d, m in fold.items():
        if d == "lbs":
            continue
        worse = []
        for key in VERSUS_LBS:
            a = round(float(fold["lbs"].get(key, math.nan)), _digits(key))
            b = round(float(m.get(key, math.nan)), _digits(key))
            if not b <= a:  # nan counts as worse
                worse.append(f"{titles[key]} {b:.{_digits(key)}f} > {a:.{_digits(key)}f}")
        cols = ", ".join(titles[k] for k in VERSUS_LBS)
        out.append(f"versus lbs: {d} no worse on {cols}" if not worse
                   else f"versus lbs: {d} WORSE on " + "; ".join(worse))
    return out


def most_rotated_joint(bind_joints: np.ndarray, posed_joints: np.ndarray, parents: np.ndarray) -> int:
    """The joint whose rotation relative to its parent changed most between bind and pose."""
    def local(m: np.ndarray) -> np.ndarray:
        par = np.where(parents >= 0, parents, np.arange(len(parents)))
        rel = np.linalg.inv(m[par].astype(np.float64)) @ m.astype(np.float64)
        rel[parents < 0] = m[parents < 0]
        return rel[:, :3, :3]

    a, b = local(bind_joints), local(posed_joints)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    d = np.einsum("jik,jil->jkl", a, b)  # a^T b
    cos = np.clip((np.trace(d, axis1=1, axis2=2) - 1.0) / 2.0, -1.0, 1.0)
    ang = np.arccos(cos)
    ang[parents < 0] = -1.0
    return int(np.argmax(ang)) if len(ang) else 0


def compare_metrics(asset, clip, time: float, deformers: list[str], config=None, *, session=None,
                    primitive: int = 0) -> tuple[dict, dict, tuple[SkinnedPrimitive, np.ndarray | None, int | None]]:
    """(metrics per deformer, display positions per deformer, (skinned primitive, posed joints, the joint
    the normal measure centres on)) for the ``primitive``-th skinned primitive of ``asset``, each deformer
    run through a Session on the numpy reference (``session``: one to reuse, device cpu)."""
    from engine import Session
    from engine.log import progress
    from engine.skinning.metrics import deformation_metrics, quality_report

    own = session is None
    s = session if session is not None else Session(device="cpu", render=False, strict=True)
    try:
        loaded = s.load(asset)
        if not loaded.skinned:
            raise ValueError("compare needs an asset with a skinned mesh")
        if not 0 <= primitive < len(loaded.skinned):
            raise ValueError(f"primitive must be in [0, {len(loaded.skinned) - 1}], got {primitive}")
        sp = loaded.skinned[primitive]
        key = PrimitiveKey(sp.node, sp.mesh, sp.prim)
        topo = sp.topology()
        binding = sp.binding()
        metrics, positions = {}, {}
        posed = joint = None
        rim = open_boundary(topo.triangles, topo.n_control)
        for d in progress(deformers, desc=f"comparing primitive {primitive}", unit="method"):
            base, cfg = _variant(d, config)
            ch = s.spawn(loaded, clip=clip, time=time, speed=0.0, mode="clamp", deformer=base, config=cfg)
            try:
                if posed is None:
                    posed = ch.joints()[sp.skin.joints]
                    joint = most_rotated_joint(sp.bind_joints, posed, sp.parents)
                disp = ch.vertices()[key]
            finally:
                ch.remove()
            positions[d] = disp
            ctrl = disp[topo.display_of_control]
            metrics[d] = quality_report(ctrl, topo.positions, topo.triangles, edges=topo.edges,
                                        bones=binding.bones, bind_joints=sp.bind_joints, posed_joints=posed,
                                        joint=joint)
            metrics[d]["fold"] = deformation_metrics(ctrl, topo.positions, topo.triangles, boundary=rim)
        return metrics, positions, (sp, posed, joint)
    finally:
        if own:
            s.release()


def _variant(name: str, config):
    """(deformer of the table, config) of a compared name: itself, or a VARIANTS entry's overrides on config."""
    if name not in VARIANTS:
        return name, config
    from engine.skinning.config import DeformerConfig

    base, overrides = VARIANTS[name]
    return base, (config if config is not None else DeformerConfig()).with_overrides(**overrides)


def _view_direction(sp, posed: np.ndarray, joint: int) -> np.ndarray:
    """A side view of the compared joint: perpendicular to its bone, as close as possible to the axis of
    its bind->pose rotation (so a bend is seen in profile, a twist from the side)."""
    bind = sp.bind_joints
    rot = posed[joint, :3, :3].astype(np.float64) @ np.linalg.inv(bind[joint, :3, :3].astype(np.float64))
    axis = np.array([rot[2, 1] - rot[1, 2], rot[0, 2] - rot[2, 0], rot[1, 0] - rot[0, 1]])
    par = int(sp.parents[joint])
    bone = posed[joint, :3, 3] - (posed[par, :3, 3] if par >= 0 else posed[joint, :3, 3] - np.array([0, 1.0, 0]))
    bone = bone / max(np.linalg.norm(bone), 1e-12)
    d = axis - np.dot(axis, bone) * bone
    if np.linalg.norm(d) < 1e-6:
        d = np.cross(bone, [0.0, 1.0, 0.0]) if abs(bone[1]) < 0.9 else np.cross(bone, [1.0, 0.0, 0.0])
    d = np.array([d[0], 0.0, d[2]])  # keep the eye at the character's height (+Y up)
    if np.linalg.norm(d) < 1e-3 * max(float(np.linalg.norm(axis)), 1e-12):
        d = np.array([0.0, 0.0, 1.0])
    d = d / np.linalg.norm(d)
    if d[2] < 0:
        d = -d
    d = d + np.array([0.0, 0.25, 0.0])  # a little from above, so the ground reads
    return d / np.linalg.norm(d)


def _inside_direction(sp, posed: np.ndarray, joint: int) -> np.ndarray:
    """A view into the inside of the compared joint's bend: along the bisector of the two posed bones'
    directions away from the joint (where the skin folds), turned toward the bend axis (three-quarters) and
    kept above the ground so both bones and the fold between them stay in sight; the side view where the
    joint has no parent or child or is not bent."""
    par = int(sp.parents[joint])
    kids = np.flatnonzero(np.asarray(sp.parents) == joint)
    if par < 0 or not len(kids):
        return _view_direction(sp, posed, joint)
    at = posed[joint, :3, 3].astype(np.float64)
    back = posed[par, :3, 3] - at
    ahead = posed[int(kids[0]), :3, 3] - at
    back = back / max(float(np.linalg.norm(back)), 1e-12)
    ahead = ahead / max(float(np.linalg.norm(ahead)), 1e-12)
    d = back + ahead
    if np.linalg.norm(d) < 0.2:  # (nearly) straight: there is no inside
        return _view_direction(sp, posed, joint)
    d = d / np.linalg.norm(d)
    axis = np.cross(back, ahead)
    axis = axis / max(float(np.linalg.norm(axis)), 1e-12)
    if axis[2] < 0:
        axis = -axis
    d = d + 0.8 * axis  # three-quarters from the side, so the fold is seen, not the bones' ends
    d[1] = max(d[1], 0.25 * float(np.linalg.norm(d)))  # the eye stays above the ground (+Y up)
    return d / np.linalg.norm(d)


def _render_sheet(asset, shown: dict[PrimitiveKey, dict], out: Path, width: int, height: int, *, view_dir=None,
                  wireframe: bool = False) -> None:
    """One panel per deformer: every compared primitive's deformed vertices (``shown``: key -> deformer ->
    display positions) drawn through a Session's renderer with the same camera, side by side, each labelled."""
    from PIL import Image, ImageDraw

    from engine import Session
    from engine.render.camera import Camera

    allp = np.concatenate([p for per in shown.values() for p in per.values()])
    lo, hi = allp.min(0), allp.max(0)
    centre = (lo + hi) / 2
    diag = float(np.linalg.norm(hi - lo))
    names = list(next(iter(shown.values())))
    with Session(device="cpu", width=width, height=height, strict=True) as s:
        ch = s.spawn(asset, clip=None)  # its skinned vertices are replaced by each deformer's result below
        for k in ch.primitives:
            ch.set_visible(k in shown, primitive=k)
        ch.hold()
        d = view_dir if view_dir is not None else np.array([0.55, 0.35, 1.0]) / np.linalg.norm([0.55, 0.35, 1.0])
        eye = centre + d * diag
        cam = Camera(eye=eye, target=centre, fov_y=40.0, aspect=width / height, near=diag * 0.01, far=diag * 10)
        s.camera = cam.fit(lo, hi, margin=1.15)
        assert s.renderer is not None  # render=True
        s.renderer.look.ground_height = float(lo[1]) - 0.02 * diag
        s.renderer.wireframe = wireframe
        panels = []
        for name in names:
            ch.show_vertices({k: per[name] for k, per in shown.items()})
            img = Image.fromarray(s.render()[:, :, :3])
            ImageDraw.Draw(img).text((8, 6), name, fill=(20, 20, 20))
            panels.append(img)
    sheet = Image.new("RGB", (width * len(panels), height), (255, 255, 255))
    for i, p in enumerate(panels):
        sheet.paste(p, (i * width, 0))
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out)


def compare(args: argparse.Namespace) -> int:
    from engine.scene import quiet_load
    from engine.skinning import registry
    from game.commands.export_frame import check_time, deformer_config

    deformers = [d.strip() for d in args.deformers.split(",") if d.strip()]
    valid = registry.names(device="cpu") + tuple(VARIANTS)
    bad = [d for d in deformers if d not in valid]
    if not deformers or bad:
        raise ValueError(f"--deformers takes a comma list of {', '.join(valid)}; got {args.deformers!r}")
    if not (16 <= args.width <= 4096 and 16 <= args.height <= 4096):
        raise ValueError(f"--width/--height must be in [16, 4096], got {args.width}x{args.height}")
    check_time(args.time)
    asset = quiet_load(args.asset).asset
    config = deformer_config(args)
    from engine import Session

    shown: dict[PrimitiveKey, dict] = {}
    view = None
    with Session(device="cpu", render=False, strict=True) as sess:
        n_prims = len(sess.load(asset).skinned)
        for i in range(n_prims):
            metrics, positions, (sp, posed, joint) = compare_metrics(asset, args.clip, args.time, deformers,
                                                                     config, session=sess, primitive=i)
            shown[PrimitiveKey(sp.node, sp.mesh, sp.prim)] = positions
            if view is None and posed is not None and joint is not None:
                view = (_inside_direction if getattr(args, "view", "side") == "inside" else _view_direction)(
                    sp, posed, joint)
            print(f"compare {Path(args.asset).name} clip {args.clip!r} t={args.time:g}s on {sp.key.export_key} "
                  f"({sp.topology().n_control} control points)")
            w = max([9] + [len(d) for d in metrics])
            print(f"{'deformer':<{w}} {'volume':>7} {'collapse':>9} {'edge mean':>10} {'edge max':>9} {'normals':>8}")
            for d, m in metrics.items():
                print(f"{d:<{w}} {m['volume_ratio']:>7.3f} {m.get('collapse_min', math.nan):>9.3f} "
                      f"{m['edge_distortion_mean']:>10.4f} {m['edge_distortion_max']:>9.3f} "
                      f"{math.degrees(m.get('normal_angle_increase', math.nan)):>7.2f}d")
            print(f"fold metrics on the welded control points (primitive {i + 1} of {n_prims}; * best per column)")
            for line in fold_table({d: m["fold"] for d, m in metrics.items()}):
                print("fold " + line)  # not a method's name first: the first table's rows stay unique
            for line in versus_lbs({d: m["fold"] for d, m in metrics.items()}):
                print(line)
    if args.out:
        _render_sheet(asset, shown, Path(args.out), args.width, args.height, view_dir=view)
        print(f"wrote {args.out}")
    return 0
