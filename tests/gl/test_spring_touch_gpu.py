"""Sheets touching at bind glued to their faces (springs.touch, issue 26) on the GPU spring stage (llvmpipe here):
the generated torso and arm boxes whose ends touch (tests/helpers/touching_boxes.py) match the numpy reference
within 1e-5 of the diagonal after 1, 7 and 50 iterations, untiled and tiled (K = 5, the glued point's corners read
at the block start); the GPU cross no face pair where LBS crosses none, and the glue is what keeps them apart
(the same run with the glued points' records cleared crosses)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning.binding import bind
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.gpu.plan import default_config
from engine.skinning.meshprep import prepare_mesh
from engine.skinning.metrics import intersecting_pairs
from engine.skinning.springs import SpringDeformer, SpringParams
from tests.helpers.touching_boxes import touching_boxes

pytestmark = pytest.mark.gl
TOL = 1e-5
DOWN = 45.0  # deg: the arm turned towards the torso (the springs without the glue cross there)


@pytest.fixture(scope="module")
def boxes():
    b = touching_boxes(False)
    topo = prepare_mesh(b.positions, b.triangles)
    binding = bind(topo, b.bind_joints.astype(np.float32), b.parents)
    return b, topo, binding


def _gpu(gl_ctx, resources, boxes, params, k):
    b, topo, binding = boxes
    posed = b.posed(DOWN)
    cfg = default_config("spring").to_dict()
    cfg["nodes"][1]["options"]["iterations_per_dispatch"] = k
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = graph.add_mesh(topo, binding, b.joints, b.weights, np.linalg.inv(b.bind_joints), b.parents, config=cfg,
                           spring=params)
        graph.set_pose(h, (posed @ np.linalg.inv(b.bind_joints)).astype(np.float32), posed)
        graph.run()
        return graph.download_control(h, "deformed").astype(np.float64)
    finally:
        graph.release()


def _reference(boxes, params, block):
    b, topo, binding = boxes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = SpringDeformer(topo, binding, b.bind_joints, b.parents, params, joints=b.joints, weights=b.weights)
        return d, d.solve(b.posed(DOWN), block=block)[0]


@pytest.mark.parametrize("k", [1, 5])
@pytest.mark.parametrize("iterations", [1, 7, 50])
def test_glued_boxes_match_the_reference(gl_ctx, resources, boxes, iterations, k):
    params = SpringParams(convergence="iterations", max_iterations=iterations)
    d, ref = _reference(boxes, params, None if k == 1 else k)
    assert d.rest.glued is not None and int(d.rest.glued.sum()) >= 8  # the arm's end face
    out = _gpu(gl_ctx, resources, boxes, params, k)
    np.testing.assert_allclose(out, ref, atol=TOL * M.bbox_diagonal(boxes[1].positions), rtol=0)


def test_the_gpu_keeps_the_touching_boxes_apart(gl_ctx, resources, boxes, monkeypatch):
    b, topo, _ = boxes
    out = _gpu(gl_ctx, resources, boxes, SpringParams(), 1)
    assert intersecting_pairs(out, topo.triangles).shape[0] == 0
    # without the glue (nothing touches: no glued record) the same run crosses
    monkeypatch.setattr("engine.skinning.springs.touch.TOUCH", 0.0)
    loose = _gpu(gl_ctx, resources, boxes, SpringParams(), 1)
    assert intersecting_pairs(loose, topo.triangles).shape[0] > 0
