"""The editor's Weights tool, headless: paint, drag and splines change the live character's deformation, undo
restores the weights bit for bit, and save writes them."""
from __future__ import annotations

import numpy as np

from engine import Session
from engine.scene import load_asset
from engine.skinning.weights.io import primitive_weights
from game.editor.weights_tool import WeightsTool, heat_sets
from tests.helpers.weights_asset import tube_asset


def test_heat_sets_bands():
    s = heat_sets(np.array([0.0, 0.01, 0.1, 0.5, 0.9, 1.0]))
    assert list(s["kinematic"]) == [4, 5] and list(s["passive"]) == [3] and list(s["static"]) == [2]


def test_paint_drag_undo_save(tmp_path):
    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=17, sides=8)
    with Session(device="cpu", render=False, deformer="lbs", strict=True) as s:
        ch = s.spawn(load_asset(src), clip="wave", time=0.5, speed=0.0, mode="clamp")
        tool = WeightsTool(s, ch)
        before = tool.dense.copy()
        v0 = next(iter(tool.character.vertices().values())).copy()
        tool.select_joint("Arm.L2")
        tool.paint(np.array([0.5, 0.1, 0.0]), 0.3, 0.9, "replace")
        assert np.abs(tool.dense - before).max() > 0.1
        v1 = next(iter(tool.character.vertices().values()))
        assert np.abs(v1 - v0).max() > 1e-3  # the live character deforms with the new weights
        tool.undo()
        np.testing.assert_array_equal(tool.dense, before)
        np.testing.assert_allclose(next(iter(tool.character.vertices().values())), v0, atol=1e-6)
        tool.redo()
        key = tool.prim.key
        target = tool.character.vertices()[key][40] + np.array([0.0, 0.01, 0.0])
        res = tool.drag(40, target)
        np.testing.assert_allclose(tool.character.vertices()[key][40], res.reached, atol=1e-5)
        out = tool.save(tmp_path / "saved.glb")
    (p,) = primitive_weights(load_asset(out))
    np.testing.assert_allclose(p.dense(), tool.dense, atol=1e-6)


def test_picking_helpers(tmp_path):
    from types import SimpleNamespace

    src = tube_asset(tmp_path / "tube.glb", influences=4, rings=5, sides=4)
    with Session(device="cpu", render=False, deformer="lbs", strict=True) as s:
        tool = WeightsTool(s, s.spawn(load_asset(src), clip="wave", time=0.0, speed=0.0, mode="clamp"))
        tri = tool.prim.triangles[3]
        hit = SimpleNamespace(triangle=3, barycentric=np.array([0.2, 0.7, 0.1]))
        np.testing.assert_allclose(tool.bind_point(hit), np.array([0.2, 0.7, 0.1]) @ tool.prim.positions[tri],
                                   atol=1e-6)
        assert tool.vertex_at(hit) == tri[1]


def test_hull_edges_of_the_drag_overlay():
    """The drag overlay's wireframe: a tetrahedron's 6 edges, a coplanar square's loop of 4 (no diagonal), a
    triangle with a point inside it in its plane: the triangle's 3; a line: every pair."""
    from game.editor.weights_tool import hull_edges

    tet = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    assert sorted(map(tuple, hull_edges(tet).tolist())) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    sq = np.array([[0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], float)
    assert sorted(map(tuple, hull_edges(sq).tolist())) == [(0, 1), (0, 3), (1, 2), (2, 3)]
    tri_in = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [0.5, 0.5, 0]], float)
    assert sorted(map(tuple, hull_edges(tri_in).tolist())) == [(0, 1), (0, 2), (1, 2)]
    line = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], float)
    assert len(hull_edges(line)) == 6
