"""The shipped surface-editing session (assets/sessions/surface_edit.jsonl, issue 12 in the editor): the ``replay``
command reproduces it headless bit for bit (vertices and image, two replays), the forearm's bulge and the belly's
new outline moved the skin against the same frame without edits, and both stay on the walking character;
``--save EDITS.json`` writes the edits."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from engine.input.record import read_recording
from engine.skinning.edits import parse_edits_document
from game.cli import run
from game.editor import open_recording, replay
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

SHIPPED = ROOT / "assets" / "sessions" / "surface_edit.jsonl"


def test_the_shipped_surface_session_replays_bit_exact_with_its_edits(tmp_path, capsys):
    rec = read_recording(SHIPPED)
    assert rec.header.assets[0]["source"] == "humanoid" and rec.header.assets[0]["clip"] == "idle"
    npz, png, saved = tmp_path / "a.npz", tmp_path / "a.png", tmp_path / "edits.json"
    assert run(["replay", str(SHIPPED), "--headless", "--export-frame", str(npz), "--screenshot", str(png),
                "--save", str(saved)]) == 0
    assert "replayed" in capsys.readouterr().out
    first = dict(np.load(npz))
    ed = open_recording(rec)
    try:
        replay(rec, ed)
        s = ed.session
        ch = s.characters[0]
        # the second replay: the same vertices and the same image, bit for bit
        got = {k.export_key: v for k, v in ch.vertices().items() if k in set(ch.skinned_primitives)}
        assert got.keys() == first.keys()
        for k in got:
            assert np.array_equal(got[k], first[k]), k
        s.render()
        s.save_png(tmp_path / "b.png")
        assert np.array_equal(np.asarray(Image.open(png)), np.asarray(Image.open(tmp_path / "b.png")))
        # what the user did: a bulge on the forearm, an outline of the belly (Laplacian), the walk playing
        assert ed.undo.history[:2] == ["config of humanoid: {'spring_max_iterations': 20}", "bulge 1 on humanoid"]
        assert ed.undo.history[-1] == "outline 2 of humanoid (laplacian)"
        assert ch.deformer == "spring" and ch.clips[ch.playback().clip] == "walk" and ch.time > 0.1
        key = ch.skinned_primitives[0]
        bulge, outline = ch.edits[key].edits
        # --save EDITS.json wrote them in the versioned edits file
        doc = parse_edits_document(json.loads(saved.read_text()))
        assert [e.to_dict() for e in doc[key.export_key]] == [bulge.to_dict(), outline.to_dict()]
        assert bulge.profile is not None and bulge.profile.height == pytest.approx(0.03)
        assert ed.state.settings.surface_rings == 5
        edited = np.asarray(ch.vertices()[key], np.float64)
        topo = ch.topology(key)
        g = ch.joints()[:, :3, 3]
        names = [n.name for n in ch.asset.nodes]
        # the same frame without the edits
        ch.clear_edits()
        s.settle()
        plain = np.asarray(ch.vertices()[key], np.float64)
        cod = np.asarray(topo.control_of_display)
        moved = np.linalg.norm(edited - plain, axis=1)
        on_bulge, on_outline = np.isin(cod, bulge.kinematic), np.isin(cod, outline.kinematic)
        assert moved[on_bulge].max() > 0.01  # the forearm rose by centimetres
        forearm = g[names.index("forearm_L")]
        assert np.linalg.norm(edited[on_bulge].mean(0) - forearm) < 0.3  # ... on the forearm, as it walks
        assert moved[on_outline].max() > 0.01  # the belly's outline moved
        assert edited[on_outline, 2].max() > plain[on_outline, 2].max() + 0.005  # forwards (+z)
        far = ~np.isin(cod, np.concatenate([bulge.kinematic, bulge.passive, bulge.static, outline.kinematic,
                                            outline.passive, outline.static]))
        assert np.median(moved[far]) < 1e-3  # the rest of the body is where the deformer puts it
    finally:
        ed.session.release()
