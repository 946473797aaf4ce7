"""The deformer graph as data: order, barriers, feedback and validation follow from the node declarations."""
from __future__ import annotations

import json

import pytest

from engine.skinning.gpu.plan import (
    COMPUTE_READ_BITS,
    RENDER_READ_BITS,
    GraphConfig,
    default_config,
    plan,
)


def test_default_graph_order_and_barriers():
    p = plan(default_config("spring"))
    assert [s.node.name for s in p.steps] == ["skin", "spring", "copy", "face_normals", "vertex_normals"]
    # every stage reads what the previous one wrote: a storage barrier before each but the first
    assert [s.barrier_before for s in p.steps] == [0] + [COMPUTE_READ_BITS] * 4
    assert p.final_barrier & RENDER_READ_BITS == RENDER_READ_BITS
    assert p.feedback == ()


def test_order_follows_data_not_declaration():
    cfg = default_config("lbs", normals="surface").to_dict()
    cfg["nodes"].reverse()
    p = plan(GraphConfig.from_dict({**cfg, "fuse": False}))
    assert [s.node.stage for s in p.steps] == ["skin", "copy", "face_normals", "vertex_normals"]
    # fused: skin + copy run as one step where the copy stood, the normal stages still after it
    p = plan(GraphConfig.from_dict(cfg))
    assert [s.node.stage for s in p.steps] == ["skin_copy", "face_normals", "vertex_normals"]
    assert p.steps[0].covers == ("skin", "copy") and p.elided == ("skinned",)


def test_feedback_loop_has_no_cycle_and_reads_previous():
    p = plan(default_config("spring-feedback"))
    assert p.feedback == ("deformed",)
    skin = p.steps[0].node
    assert skin.inputs["source"] == "deformed@previous" and skin.options["mode"] == "differential"
    assert [s.node.name for s in p.steps][:2] == ["skin", "spring"]


def test_cycle_double_writer_and_bad_ports_raise():
    nodes = [{"name": "a", "stage": "spring", "inputs": {"source": "y"}, "outputs": {"target": "x"}},
             {"name": "b", "stage": "spring", "inputs": {"source": "x"}, "outputs": {"target": "y"}}]
    tail = default_config("lbs", normals="surface").to_dict()["nodes"][1:]
    with pytest.raises(ValueError, match="cycle"):
        GraphConfig.from_dict({"nodes": nodes + tail
                               + [{"name": "s", "stage": "skin", "inputs": {"source": "bind"},
                                   "outputs": {"target": "skinned"}}]})
    twice = default_config("lbs", normals="surface").to_dict()
    twice["nodes"].append({"name": "again", "stage": "skin", "inputs": {"source": "bind"},
                           "outputs": {"target": "skinned"}})
    with pytest.raises(ValueError, match="written by both"):
        GraphConfig.from_dict(twice)
    bad = default_config("lbs", normals="surface").to_dict()
    bad["nodes"][1]["inputs"] = {"source": "face_normals"}
    with pytest.raises(ValueError, match="control resource"):
        GraphConfig.from_dict(bad)
    with pytest.raises(ValueError, match="unknown stage"):
        GraphConfig.from_dict({"nodes": [{"stage": "blur"}]})
    with pytest.raises(ValueError, match="skin method"):
        GraphConfig.from_dict({"nodes": [{"stage": "skin", "inputs": {"source": "bind"},
                                          "outputs": {"target": "s"}, "options": {"method": "x"}}]})
    with pytest.raises(ValueError, match="graph method"):
        default_config("nope")


def test_load_toml_and_json(tmp_path):
    d = default_config("dqs").to_dict()
    (tmp_path / "g.json").write_text(json.dumps(d))
    assert GraphConfig.load(tmp_path / "g.json").to_dict() == GraphConfig.from_dict(d).to_dict()
    toml = '''
name = "mine"
[[nodes]]
name = "skin"
stage = "skin"
inputs = { source = "bind" }
outputs = { target = "s" }
options = { method = "rigid" }
[[nodes]]
name = "copy"
stage = "copy"
inputs = { source = "s" }
outputs = { target = "positions" }
[[nodes]]
name = "fn"
stage = "face_normals"
inputs = { positions = "positions" }
outputs = { target = "f" }
[[nodes]]
name = "vn"
stage = "vertex_normals"
inputs = { positions = "positions", faces = "f" }
outputs = { target = "normals" }
options = { crease_angle = 0.5 }
'''
    (tmp_path / "g.toml").write_text(toml)
    cfg = GraphConfig.load(tmp_path / "g.toml")
    assert cfg.name == "mine" and cfg.node("vn").options["crease_angle"] == 0.5
    with pytest.raises(ValueError, match="crease_angle"):
        bad = cfg.to_dict()
        bad["nodes"][3]["options"]["crease_angle"] = 4.0
        GraphConfig.from_dict(bad)


def test_skinned_normals_graphs_and_their_validation():
    # the built-in LBS/DQS graphs skin normals: skin -> copy (positions + normals), no normal stages
    for method in ("lbs", "dqs"):
        p = plan(GraphConfig.from_dict({**default_config(method).to_dict(), "fuse": False}))
        assert [s.node.stage for s in p.steps] == ["skin", "copy"]
        assert p.steps[0].node.options["normals"] == "skinned"
        assert p.domains["normals"] == "display" and p.outputs == {"positions": "positions", "normals": "normals"}
        assert p.steps[1].barrier_before == COMPUTE_READ_BITS
        # by default the planner fuses them: one step writing both display outputs, no barrier before it
        p = plan(default_config(method))
        assert [s.node.stage for s in p.steps] == ["skin_copy"]
        fused = p.steps[0]
        assert fused.node.outputs == {"target": "positions", "normals": "normals"}
        assert fused.node.options["method"] == method and fused.barrier_before == 0
    # surface normals stay the default where the surface changes shape
    for method in ("rigid", "irs", "spring"):
        assert "face_normals" in [s.node.stage for s in plan(default_config(method)).steps]
        with pytest.raises(ValueError, match="normals='skinned'"):
            default_config(method, normals="skinned")
    with pytest.raises(ValueError, match="normals 'bent'"):
        default_config("lbs", normals="bent")
    d = default_config("lbs").to_dict()
    d["nodes"][0]["options"]["method"] = "rigid"
    with pytest.raises(ValueError, match="needs method 'lbs' or 'dqs'"):
        GraphConfig.from_dict(d)
    d = default_config("lbs").to_dict()
    d["nodes"][0]["options"]["normals"] = "surface"  # the copy's normals output now has no normal transform
    with pytest.raises(ValueError, match="normals='skinned'"):
        GraphConfig.from_dict(d)
    d = default_config("lbs").to_dict()
    d["nodes"][1]["outputs"]["tangents"] = "t"
    with pytest.raises(ValueError, match="optional"):
        GraphConfig.from_dict(d)
