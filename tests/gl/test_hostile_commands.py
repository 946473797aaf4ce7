"""Hostile inputs through the commands that open a GL context (issue 16): a deep hierarchy renders and exports
with finite output, a broken graph file stops the demo with one `error:` line, absurd spring parameters are one
`error:` line on the GPU path; nothing is written when the command refuses.
"""
from __future__ import annotations

import numpy as np
import pytest

from engine.assets.writer import GltfBuilder
from game import cli
from tests.helpers.hostile import one_error_line

pytestmark = pytest.mark.gl



def _deep_chain(path, n: int):  # noqa: ANN001, ANN202
    """A triangle skinned to the two ends of an ``n``-node chain (each node 1 mm above its parent)."""
    b = GltfBuilder(generator="tests/gl/test_hostile_commands.py")
    tri = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0]], np.float32)
    mesh = b.add_mesh("tri", [dict(positions=tri, normals=np.tile(np.array([0, 0, 1], np.float32), (3, 1)),
                                   indices=np.array([0, 1, 2], np.uint16),
                                   joints=np.array([[0, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]], np.uint8),
                                   weights=np.array([[1, 0, 0, 0]] * 3, np.float32))])
    ids = [b.add_node(f"n{i}", translation=(0, 0.001, 0)) for i in range(n)]
    for parent, child in zip(ids[:-1], ids[1:]):
        b.set_children(parent, [child])
    ibm = np.tile(np.eye(4, dtype=np.float32), (2, 1, 1))
    ibm[0, 1, 3] = -0.001
    ibm[1, 1, 3] = -0.001 * n
    skin = b.add_skin([ids[0], ids[-1]], inverse_bind=ibm, skeleton=ids[0])
    b.add_scene([ids[0], b.add_node("body", mesh=mesh, skin=skin)])
    return b.save_glb(path)


def test_deep_chain_exports_and_renders(capsys, tmp_path):
    asset = _deep_chain(tmp_path / "chain.glb", 3000)
    assert cli.run(["export-frame", str(asset), "--out", str(tmp_path / "x.npz")]) == 0
    with np.load(tmp_path / "x.npz") as z:
        pos = np.concatenate([z[k] for k in z.files])
    assert np.isfinite(pos).all()
    np.testing.assert_allclose(pos[0], [0, 0, 0], atol=1e-5)  # the root joint's vertex stays at bind
    assert cli.run(["render", str(asset), "--width", "64", "--height", "48", "--out", str(tmp_path / "x.png")]) == 0
    assert (tmp_path / "x.png").stat().st_size > 0
    capsys.readouterr()


@pytest.mark.parametrize("text", ["nodes = 5\n", "outputs = 5\n[[nodes]]\nstage = 'skin'\n", "nodes = ['skin']\n"])
def test_demo_with_a_broken_graph_file_is_one_error_line(capsys, tmp_path, text):
    graph = tmp_path / "graph.toml"
    graph.write_text(text)
    shot = tmp_path / "demo.png"
    line = one_error_line(capsys, ["--headless", "--frames", "1", "--graph", str(graph), "--screenshot", str(shot)])
    assert str(graph) in line and "expected" in line, line
    assert not shot.exists() or shot.stat().st_size == 0


def test_absurd_spring_parameters_on_the_gpu_path(capsys, tmp_path):
    asset = _deep_chain(tmp_path / "chain.glb", 4)
    line = one_error_line(capsys, ["export-frame", str(asset), "--deformer", "spring", "--device", "gpu",
                                    "--spring-dt", "1e-300", "--out", str(tmp_path / "s.npz")])
    assert "spring.dt = 1e-300 is below what float32 can step" in line and "valid: [" in line, line
    assert not (tmp_path / "s.npz").exists()


def test_tiny_spring_dt_is_harmless_without_springs_and_refused_with_them(tmp_path, capsys):
    """A spring dt float32 cannot step: ignored by graphs without a spring stage (no overflow warning from the
    unused record field), refused with the valid range where the springs run."""
    import warnings

    from tests.conftest import ROOT

    asset = str(ROOT / "assets" / "cylinder.glb")
    out = tmp_path / "x.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cli.run(["export-frame", asset, "--clip", "bend", "--deformer", "lbs", "--spring-dt", "1e-300",
                        "--out", str(out)]) == 0
    with np.load(out) as data:
        assert data.files and all(np.isfinite(data[k]).all() for k in data.files)
    capsys.readouterr()
    assert cli.run(["export-frame", asset, "--clip", "bend", "--deformer", "spring", "--spring-dt", "1e-300",
                    "--out", str(tmp_path / "y.npz")]) == 2
    assert "spring.dt" in capsys.readouterr().err and not (tmp_path / "y.npz").exists()
