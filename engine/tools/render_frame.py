"""`python main.py render ASSET`: one frame rendered headless to PNG, optionally with its G-buffer as .npz.

The asset is posed (``--clip`` / ``--time``, rest pose without a clip) and deformed with ``--deformer`` on
``--device`` (:func:`engine.tools.export_frame.deform_frame`); unskinned mesh nodes are placed by their node
world matrix. Every primitive instance is one renderer mesh tagged (entity 0, glTF node, mesh, primitive).
Without ``--camera`` the camera looks from the front, slightly above, and fits the deformed bounds.

``--gbuffer F.npz`` holds (row 0 = top of the image; background: -1 ids, 0 floats, depth 1):

* ``position`` (H,W,3) float32 world space, ``normal`` (H,W,3) float32 unit world normal facing the camera,
* ``depth`` (H,W) float32 window depth in [0, 1], ``barycentric`` (H,W,3) float32,
* ``triangle`` (H,W) int32 triangle index within its glTF primitive,
* ``node``, ``mesh``, ``primitive`` (H,W) int32: the glTF node of the instance, its mesh and primitive index,
* ``view``, ``projection`` (4,4) float32, column-vector convention (clip = projection @ view @ world).

``--view CHANNEL`` writes a debug view of the G-buffer to the PNG instead of the lit frame.
"""
from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from engine.assets import load
from engine.assets.model import Asset


def _vec3_arg(text: str, what: str) -> np.ndarray:
    try:
        v = np.array([float(x) for x in str(text).split(",")], np.float64)
    except ValueError:
        v = np.zeros(0)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{what} must be three numbers X,Y,Z, got {text!r}")
    return v


def posed_meshes(asset: Asset, *, clip, time: float, deformer: str, device: str, config=None
                 ) -> list[tuple[int, int, int, np.ndarray, np.ndarray | None]]:
    """(node, mesh, primitive, world positions (V,3), world normals (V,3) or None) of every primitive
    instance of the default scene: skinned ones deformed, rigid ones placed by their node matrix."""
    from engine.anim import Rig
    from engine.tools.export_frame import deform_frame, pose_globals

    frames = deform_frame(asset, clip=clip, time=time, deformer=deformer, device=device, config=config)
    rig = Rig.from_asset(asset)
    g = pose_globals(asset, rig, clip, time).astype(np.float64)
    out = []
    for key, pos in frames.items():
        n = int(key.split("_mesh")[0][4:])
        m, p = (int(s) for s in key.split("_mesh")[1].split("_prim"))
        out.append((n, m, p, np.asarray(pos, np.float32), None))
    skinned = {(n, m) for n, m, _, _, _ in out}
    for n in asset.scene_nodes():
        node = asset.nodes[n]
        if node.mesh is None or (n, node.mesh) in skinned:
            continue
        mat = g[n]
        lin = mat[:3, :3]
        for p, prim in enumerate(asset.meshes[node.mesh].primitives):
            pos = (prim.positions.astype(np.float64) @ lin.T + mat[:3, 3]).astype(np.float32)
            nrm = None
            if prim.normals is not None:
                nt = prim.normals.astype(np.float64) @ np.linalg.inv(lin)  # inverse transpose, row vectors
                ln = np.linalg.norm(nt, axis=1, keepdims=True)
                nrm = np.divide(nt, ln, out=np.zeros_like(nt), where=ln > 0).astype(np.float32)
            out.append((n, node.mesh, p, pos, nrm))
    if not out:
        raise ValueError("the asset's default scene has no meshes to render")
    return out


def material_kwargs(asset: Asset, prim) -> dict:
    """Renderer ``add_mesh`` keywords for a primitive's glTF material (base colour factor and texture)."""
    if prim.material is None or prim.material >= len(asset.materials):
        return dict(base_color=(0.8, 0.8, 0.8, 1.0))
    mat = asset.materials[prim.material]
    kw: dict = dict(base_color=tuple(float(c) for c in mat.base_color_factor), double_sided=bool(mat.double_sided))
    if mat.base_color_image is not None and prim.texcoords is not None:
        kw.update(texcoords=prim.texcoords, image=asset.images[mat.base_color_image].rgba)
    return kw


def make_camera(args: argparse.Namespace, lo: np.ndarray, hi: np.ndarray, aspect: float):
    """The CLI camera: ``--camera`` eye:target (near/far fitted to the bounds for depth precision), or a
    front view fitting the bounds."""
    from engine.render.camera import Camera

    fov = float(args.fov)
    if not 1.0 <= fov <= 170.0:
        raise ValueError(f"--fov must be in [1, 170] degrees, got {fov}")
    up = _vec3_arg(args.up, "--up")
    if np.linalg.norm(up) < 1e-9:
        raise ValueError(f"--up must not be the zero vector, got {args.up!r}")
    if args.camera:
        cam = Camera.from_string(args.camera, up=up, fov_y=fov, aspect=aspect)
        centre = (lo + hi) / 2
        radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
        dist = float(np.linalg.norm(cam.eye - centre))
        cam.near = max(1e-3, 0.5 * (dist - radius)) if dist > 2 * radius else max(1e-3, 0.01 * radius)
        cam.far = max(cam.near * 10, 3.0 * (dist + radius))
        return cam
    cam = Camera(eye=np.array([0.0, 0.35, 1.0]), target=np.zeros(3), up=up, fov_y=fov, aspect=aspect)
    return cam.fit(lo, hi, margin=1.1)


def render_frame(args: argparse.Namespace) -> int:
    from engine.gpu.context import create_context
    from engine.render.renderer import VIEWS, LookSettings, SceneRenderer
    from engine.gpu.resources import GpuResources
    from engine.tools.export_frame import load_deformer_config

    if args.view not in VIEWS:
        raise ValueError(f"--view must be one of {', '.join(VIEWS)}, got {args.view!r}")
    w, h = int(args.width), int(args.height)
    if not (1 <= w <= 8192 and 1 <= h <= 8192):
        raise ValueError(f"--width/--height must be in [1, 8192], got {w}x{h}")
    out = Path(args.out)
    if out.suffix.lower() != ".png":
        raise ValueError(f"--out must end in .png, got {out.name!r}")
    if args.gbuffer is not None and Path(args.gbuffer).suffix.lower() != ".npz":
        raise ValueError(f"--gbuffer must end in .npz, got {Path(args.gbuffer).name!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asset = load(args.asset)
    config = load_deformer_config(args)
    meshes = posed_meshes(asset, clip=args.clip, time=args.time, deformer=args.deformer, device=args.device,
                          config=config)
    lo = np.min([m[3].min(axis=0) for m in meshes], axis=0).astype(np.float64)
    hi = np.max([m[3].max(axis=0) for m in meshes], axis=0).astype(np.float64)
    camera = make_camera(args, lo, hi, w / h)

    gl = create_context(headless=True)
    res = GpuResources(gl.ctx)
    try:
        look = LookSettings(ground_height=float(lo[1]))
        r = SceneRenderer(gl.ctx, res, w, h, look=look)
        r.view = args.view
        for n, m, p, pos, nrm in meshes:
            prim = asset.meshes[m].primitives[p]
            r.add_mesh(prim.indices, prim.vertex_count, positions=pos, normals=nrm, entity=0, node=n,
                       mesh_index=m, primitive=p, label=f"node{n}_mesh{m}_prim{p}", **material_kwargs(asset, prim))
        r.render(camera)
        out.parent.mkdir(parents=True, exist_ok=True)
        r.save_png(out)
        msg = f"wrote {out} ({w}x{h}, view {args.view})"
        if args.gbuffer is not None:
            write_gbuffer(Path(args.gbuffer), r)
            msg += f" and {args.gbuffer}"
        r.release()
    finally:
        res.release_all()
        gl.release()
    print(msg)
    return 0


def gbuffer_channels(renderer) -> dict[str, np.ndarray]:
    """The documented npz channels of the renderer's last frame (see the module doc)."""
    s = renderer.surface_arrays()
    table = renderer.id_table()
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
        "view": np.asarray(renderer.last_view, np.float32),
        "projection": np.asarray(renderer.last_projection, np.float32),
    }


def write_gbuffer(path: Path, renderer) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **gbuffer_channels(renderer))
