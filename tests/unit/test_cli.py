"""The command-line contract: inspect, export-frame, error path (one `error:` line, exit 2, no traceback)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import ROOT, shared_dir

CYLINDER = ROOT / "assets" / "cylinder.glb"


def run_cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_inspect_lists_meshes_skins_clips():
    r = run_cli("inspect", str(CYLINDER))
    assert r.returncode == 0, r.stderr
    assert "vertices" in r.stdout and "triangles" in r.stdout
    assert "joints" in r.stdout
    assert "'twist'" in r.stdout and "LINEAR" in r.stdout


@pytest.mark.parametrize("rel", ["base/data/glb/invalid_magic.glb", "base/data/mesh_data/index_buffer_oob.gltf",
                                 "base/data/json/invalid_syntax.gltf"])
def test_inspect_bad_file_one_error_line_exit_2(rel):
    path = shared_dir("gltf-invalid") / rel
    r = run_cli("inspect", str(path))
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr


def test_inspect_missing_file_and_hostile_path(tmp_path):
    r = run_cli("inspect", str(tmp_path / "nope.glb"))
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr
    bad = tmp_path / "bad.gltf"
    bad.write_text('{"asset": {"version": "2.0"}, "buffers": [{"uri": "../../etc/passwd", "byteLength": 4}]}')
    r = run_cli("inspect", str(bad))
    assert r.returncode == 2 and "buffers[0]" in r.stderr, r.stderr


def test_export_frame_npz_keys_and_shapes(tmp_path):
    out = tmp_path / "f.npz"
    r = run_cli("export-frame", str(CYLINDER), "--clip", "bend90", "--time", "0.5", "--deformer", "lbs",
                "--device", "cpu", "--out", str(out))
    assert r.returncode == 0, r.stderr
    data = np.load(out)
    keys = list(data.keys())
    assert len(keys) == 1 and keys[0].startswith("node") and "_mesh0_prim0" in keys[0]
    pos = data[keys[0]]
    assert pos.dtype == np.float32 and pos.ndim == 2 and pos.shape[1] == 3
    from engine.assets import load
    asset = load(CYLINDER)
    assert pos.shape[0] == asset.meshes[0].primitives[0].vertex_count
    assert not np.allclose(pos, asset.meshes[0].primitives[0].positions, atol=1e-3)  # it bent


def test_export_frame_khronos_matches_node_key(tmp_path):
    path = shared_dir("gltf-samples") / "CesiumMan.glb"
    out = tmp_path / "c.npz"
    r = run_cli("export-frame", str(path), "--clip", "0", "--time", "0.5", "--device", "cpu", "--out", str(out))
    assert r.returncode == 0, r.stderr
    data = np.load(out)
    assert list(data.keys()) == ["node2_mesh0_prim0"]
    assert data["node2_mesh0_prim0"].shape == (3273, 3)
    assert np.isfinite(data["node2_mesh0_prim0"]).all()


def test_export_frame_obj(tmp_path):
    out = tmp_path / "f.obj"
    r = run_cli("export-frame", str(CYLINDER), "--clip", "twist", "--time", "1.0", "--device", "cpu",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert text.count("\nv ") > 100 and text.count("\nf ") > 100


@pytest.mark.parametrize("args, needle", [
    (["--clip", "nope"], "no clip 'nope'"),
    (["--time", "nan"], "--time"),
    (["--out", "x.txt"], "--out"),
])
def test_export_frame_bad_parameters(tmp_path, args, needle):
    base = ["export-frame", str(CYLINDER), "--device", "cpu"]
    if "--out" not in args:
        base += ["--out", str(tmp_path / "x.npz")]
    r = run_cli(*base, *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_doctor_reports_gl_and_compute_limits():
    r = run_cli("doctor")
    assert "GL renderer" in r.stdout and "compute group size max" in r.stdout, r.stdout + r.stderr
    assert "OpenVR runtime present" in r.stdout
