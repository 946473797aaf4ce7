"""Surface points are plain data keyed by the mesh id (engine/input/picking.py), input never imports render,
and the renderer implements the picking protocol: its hits give such points, and it evaluates points built
from plain integers (as a saved session holds them), refusing a removed mesh's id."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.input.picking import PendingPick, PickHit, SurfacePoint, SurfaceQueries

ROOT = Path(__file__).resolve().parents[2]


def test_surface_point_is_plain_frozen_data():
    a = SurfacePoint(3, 17, (0.2, 0.3, 0.5))
    b = SurfacePoint(mesh_id=np.int64(3), triangle=17, barycentric=np.array([0.2, 0.3, 0.5], np.float32))
    assert a.barycentric == (0.2, 0.3, 0.5) and type(b.mesh_id) is int and type(b.barycentric[0]) is float
    assert SurfacePoint(3, 17, (0.25, 0.25, 0.5)) == SurfacePoint(3, 17, [0.25, 0.25, 0.5])
    assert len({a, SurfacePoint(3, 17, (0.2, 0.3, 0.5)), SurfacePoint(4, 17, (0.2, 0.3, 0.5))}) == 2
    with pytest.raises(AttributeError):
        a.mesh_id = 4  # type: ignore[misc]
    with pytest.raises(TypeError, match="mesh_id must be an int"):
        SurfacePoint("3", 1, (1.0, 0.0, 0.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="triangle must be an int"):
        SurfacePoint(3, 1.5, (1.0, 0.0, 0.0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="triangle must be >= 0, got -1"):
        SurfacePoint(3, -1, (1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="3 finite numbers"):
        SurfacePoint(3, 1, (1.0, 0.0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="3 finite numbers"):
        SurfacePoint(3, 1, (float("nan"), 0.0, 1.0))


def test_input_does_not_import_render():
    """Importing the input package and its picking module loads no render module and no moderngl (beyond
    what importing the top-level ``engine`` package itself loads)."""
    code = ("import sys, engine; before = set(sys.modules); import engine.input, engine.input.picking; "
            "bad = sorted(m for m in set(sys.modules) - before if m.startswith('engine.render') or m == 'moderngl'); "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.returncode == 0, out.stdout + out.stderr
    tree = ast.parse((ROOT / "engine" / "input" / "picking.py").read_text())  # not even under TYPE_CHECKING
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert imported and not [m for m in imported if m and m.startswith("engine.render")]


def test_surface_point_is_re_exported_from_render():
    from engine.render import renderer, surface

    assert surface.SurfacePoint is SurfacePoint and renderer.SurfacePoint is SurfacePoint


@pytest.mark.gl
def test_renderer_implements_picking_with_mesh_ids(gl_ctx, res):
    from engine.render import shapes
    from engine.render.camera import Camera
    from engine.render.renderer import LookSettings, SceneRenderer

    w, h = 64, 48
    r = SceneRenderer(gl_ctx, res, w, h, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
    try:
        assert isinstance(r, SurfaceQueries)
        p, t, _ = shapes.uv_sphere(0.6, rings=10, segments=14)
        r.add_mesh(np.array([[0, 1, 2]]), 3, positions=np.zeros((3, 3), np.float32))  # id 0, degenerate: never hit
        sphere = r.add_mesh(t, len(p), positions=p)
        r.render(Camera(eye=np.array([0.0, 0.0, 3.0]), target=np.zeros(3), fov_y=50.0))
        hits = [x for x in r.query_many([(w // 2 + d, h // 2) for d in range(-6, 7, 3)]) if x is not None]
        assert len(hits) >= 3 and all(isinstance(x, PickHit) for x in hits)
        points = [x.surface_point for x in hits]
        assert all(sp.mesh_id == sphere.id == 1 for sp in points)
        assert [sp.triangle for sp in points] == [x.triangle for x in hits]
        # a saved session keeps plain numbers; points rebuilt from them evaluate the same
        saved = json.loads(json.dumps([[sp.mesh_id, sp.triangle, list(sp.barycentric)] for sp in points]))
        rebuilt = [SurfacePoint(m, tri, tuple(b)) for m, tri, b in saved]
        assert rebuilt == points
        pos, nrm = r.evaluate(rebuilt)
        np.testing.assert_allclose(pos, [x.position for x in hits], atol=2e-3)
        np.testing.assert_allclose(np.linalg.norm(nrm, axis=1), 1.0, atol=1e-5)
        pending = r.query_async([(w // 2, h // 2)])
        assert isinstance(pending, PendingPick)
        r.render(Camera(eye=np.array([0.0, 0.0, 3.0]), target=np.zeros(3), fov_y=50.0))
        assert pending.result()[0].surface_point.mesh_id == sphere.id
        with pytest.raises(TypeError, match="must be a SurfacePoint"):
            r.evaluate([(sphere.id, 0, (1.0, 0.0, 0.0))])
        r.remove_mesh(sphere)
        with pytest.raises(ValueError, match="mesh id 1 was removed"):
            r.evaluate(rebuilt)
        with pytest.raises(ValueError, match="mesh id 7 was never registered"):
            r.evaluate([SurfacePoint(7, 0, (1.0, 0.0, 0.0))])
    finally:
        r.release()
