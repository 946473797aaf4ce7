"""Regions of interest shown by the renderer (engine/render/marks.py, Character.show_region): the sets' vertices
are drawn in their colours at their projected deformed positions, hidden behind the surface, without a
read-back; refusals name what is wrong."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.skinning import roi
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

CYLINDER = ROOT / "assets" / "cylinder.glb"


def _project(session, points):
    vp = session.renderer.last_view_proj
    h = np.c_[points, np.ones(len(points))] @ vp.T
    ndc = h[:, :3] / h[:, 3:]
    w, hh = session.renderer.width, session.renderer.height
    return np.c_[(ndc[:, 0] + 1) * 0.5 * w, (1 - ndc[:, 1]) * 0.5 * hh], ndc[:, 2]


def test_region_drawn_in_colour_on_the_deformed_mesh():
    with Session(width=320, height=240, strict=True) as s:
        ch = s.spawn(CYLINDER, clip="bend90", speed=0.0)  # a held 90 deg bend: marks sit on the deformed mesh
        s.fit_camera()
        s.step()
        key = ch.skinned_primitives[0]
        topo = ch.topology(key)
        pos = np.asarray(ch.vertices()[key])
        g = s.gbuffer()
        # kinematic: the control points nearest the centre of the visible front
        front = np.argsort(-(pos[np.asarray(topo.display_of_control)] @ (s.camera.eye - s.camera.target)))[:6]
        region = roi.region_around(topo, front, rings=2)
        before = s.render().copy()
        ch.show_region(region, point_size=8.0)
        after = s.render()
        sets = region.display(topo)
        xy, _ = _project(s, pos[sets["kinematic"]])
        hits = 0
        for x, y in np.round(xy).astype(int):
            if 0 <= x < 320 and 0 <= y < 240 and g["triangle"][y, x] >= 0:
                r, gg, b = after[y, x, :3].astype(int)
                hits += int(gg > r + 40 and gg > b + 40)
        assert hits >= len(xy) // 2, (hits, len(xy))
        changed = np.abs(after[..., :3].astype(int) - before[..., :3].astype(int)).sum(-1) > 30
        assert 0 < changed.mean() < 0.2
        ch.show_region(None)
        np.testing.assert_array_equal(s.render(), before)
        with pytest.raises(ValueError, match="unknown vertex set"):
            ch.show_region({"elsewhere": [1]})
        with pytest.raises(ValueError, match="valid"):
            ch.show_region({"kinematic": [10**7]})
        live = s.live_gpu_objects()
        ch.show_region(region)
        ch.remove()
        assert s.live_gpu_objects() < live
