"""Spring-solved silhouette edits without the ridge (issue 12): pulled by a one-vertex-wide chain of handles the
springs leave a ridge along the outline (shading ripples on the humanoid's belly); ``smooth`` gives the whole
region targets (the chain's displacement spread by Laplacian editing), which the roughness metric
(engine.skinning.metrics) measures as far smoother while the outline still moves onto the accent stroke."""
from __future__ import annotations

import json

import numpy as np
import pytest

from engine import Session
from engine.authoring.silhouette import silhouette_edit
from engine.authoring.view import strokes_camera
from engine.input.strokefile import load_stroke_file
from engine.scene import quiet_load
from engine.skinning import metrics
from game.cli import run
from game.commands.edit import EDIT_ROLES
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

BELLY = ROOT / "examples" / "edit_belly.json"


def test_smooth_silhouette_edit_has_no_ridge():
    sf = load_stroke_file(BELLY, roles=EDIT_ROLES, brush_radius=False)
    assert sf.camera is not None
    with Session(width=sf.camera.width, height=sf.camera.height, deformer="spring", strict=True) as s:
        ch = s.spawn(quiet_load(ROOT / "assets" / "humanoid.glb"), clip="idle", speed=0.0, mode="clamp")
        lo, hi = s.bounds()
        s.camera = strokes_camera(sf.camera, lo, hi)
        s.render()
        stroke = np.asarray(sf.strokes[0].points, np.float64)  # window points
        found = {}
        for smooth in (False, True):
            key, edit = silhouette_edit(s, ch, stroke, rings=4, smooth=smooth)
            found[smooth] = (key, edit)
        key = found[False][0]
        topo = ch.topology(key)
        dc = np.asarray(topo.display_of_control)
        plain = ch.vertices()[key][dc].astype(np.float64)
        attach, rot = ch.edit_frame(key)
        edges = metrics.mesh_edges(np.asarray(topo.triangles))
        chain = found[False][1].kinematic
        region = np.zeros(topo.n_control, bool)
        region[chain] = True
        region[found[False][1].passive] = True
        rough, miss = {}, {}
        for smooth, (k, edit) in found.items():
            assert k == key
            ch.add_edit(key, edit)
            s.render()
            x = ch.vertices()[key][dc].astype(np.float64)
            ch.clear_edits()
            rough[smooth] = metrics.roughness(x, plain, edges, region)["roughness"]
            miss[smooth] = float(np.linalg.norm(x[chain] - edit.targets(attach, rot)[:chain.size], axis=1).mean())
    smooth_edit = found[True][1]
    # the sets: the chain first (its targets unchanged), then the region it grew, nothing left passive
    np.testing.assert_array_equal(smooth_edit.kinematic[:chain.size], chain)
    np.testing.assert_allclose(smooth_edit.targets(attach, rot)[:chain.size], found[False][1].targets(attach, rot),
                               atol=1e-9)
    assert smooth_edit.passive.size == 0 and set(smooth_edit.kinematic[chain.size:]) == set(found[False][1].passive)
    assert rough[True] < 0.4 * rough[False], rough
    assert miss[True] <= miss[False] + 1e-3, miss  # the outline still reaches the stroke


def test_smooth_key_is_checked(tmp_path, capsys):
    doc = json.loads(BELLY.read_text())
    doc["strokes"][0]["smooth"] = "yes"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert run(["edit", str(ROOT / "assets" / "cylinder.glb"), "--strokes", str(tmp_path / "bad.json"),
                "--export-frame", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "smooth" in err[0]
