"""The editor's cutscene timeline model and panel (game/editor/timeline.py), headless: scrubbing shows the frame a
render would, key and segment moves are undoable and checked by the document's parser (a refused one changes
nothing), pose keys come from the pose layer, weight keys reach the track, save round-trips, and the imgui
panel draws."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.authoring.stage import export_vertices
from game.cutscene.document import load
from game.cutscene.player import CutscenePlayer
from game.editor.timeline import CutsceneTimeline, draw_timeline
from game.editor.undo import CommandStack
from tests.conftest import ROOT

pytestmark = pytest.mark.gl


def _small_example(tmp_path):
    text = (ROOT / "assets" / "cutscenes" / "example.toml").read_text()
    text = text.replace("width = 640", "width = 64").replace("height = 360", "height = 36")
    text = text.replace('deformer = "spring"            # surface edits are spring forces',
                        'deformer = "spring"\n[characters.config.spring]\nmax_iterations = 4')
    edits = (ROOT / "assets" / "cutscenes" / "belly.edits.json").as_posix()
    text = text.replace('file = "belly.edits.json"', f'file = "{edits}"')
    p = tmp_path / "ex.toml"
    p.write_text(text)
    return p


def test_timeline_scrubs_edits_undoes_and_saves(tmp_path):
    p = _small_example(tmp_path)
    doc = load(p)
    with Session(width=64, height=36, strict=True) as s:
        undo = CommandStack()
        tl = CutsceneTimeline(doc, s, undo)
        assert not tl.frame_dependent
        tl.scrub(40)
        seen = export_vertices(s)
        with CutscenePlayer(load(p)) as ref:
            ref.render(40)
            want = export_vertices(ref.session)
        assert seen.keys() == want.keys()
        for k in want:
            np.testing.assert_allclose(seen[k], want[k], atol=1e-5)

        edits = next(i for i, t in enumerate(doc.tracks) if t.type == "edits")
        assert tl.move_key(edits, 1, 1.2)
        assert doc.tracks[edits].keys[1]["time"] == 1.2
        assert not tl.move_key(edits, 1, 2.5)  # past the next key: refused, nothing changed
        assert "refused" in tl.status and doc.tracks[edits].keys[1]["time"] == 1.2
        undo.undo()
        assert doc.tracks[edits].keys[1]["time"] == 1.0
        undo.redo()
        assert doc.tracks[edits].keys[1]["time"] == 1.2

        anim = 0
        assert tl.move_segment(anim, 0, end=2.0)
        assert doc.tracks[anim].clips[0].end == 2.0
        assert not tl.move_segment(anim, 0, end=3.0)  # would overlap the next segment

        tl.scrub(12)
        assert tl.add_weight_key(edits, 0.25)
        assert {"time": 0.5, "weight": 0.25, "ease": "linear"} in doc.tracks[edits].keys

        rot = np.tile(np.array([0, 0, 0, 1], np.float32), (tl.loaded["friend"].rig.count, 1))
        head = tl.loaded["friend"].rig.names.index("head")
        rot[head] = [0.0, 0.258819, 0.0, 0.965926]
        tl.scrub(48)  # 2.0 s: the pose track sets the layer; then the pose tool changes it
        tl.player.characters["friend"].set_pose_layer(rot)
        assert tl.add_pose_key("friend")
        pose = next(t for t in doc.tracks if t.type == "pose")
        key = next(k for k in pose.keys if k["time"] == 2.0)
        assert set(key["joints"]) == {"head"} and np.allclose(key["joints"]["head"], rot[head], atol=1e-6)

        out = tl.save(tmp_path / "saved.toml")
        assert load(out) == doc
        assert len(undo.history) == 4
        tl.release()
        assert not s.characters


def test_timeline_panel_draws(tmp_path):
    from imgui_bundle import imgui

    from game.ui.imgui_layer import ImGuiLayer

    p = _small_example(tmp_path)
    with Session(width=320, height=240, strict=True) as s:
        tl = CutsceneTimeline(load(p), s, CommandStack())
        tl.selected = ("key", next(i for i, t in enumerate(tl.doc.tracks) if t.type == "edits"), 1)
        assert s.ctx is not None
        fbo = s.ctx.framebuffer(color_attachments=[s.ctx.texture((320, 240), 4)])
        fbo.clear(0.0, 0.0, 0.0, 1.0)
        layer = ImGuiLayer(s.ctx, 320, 240)
        try:
            for _ in range(2):  # imgui sizes a new window on its first frame and shows it from the second
                layer.draw(lambda: draw_timeline(tl, imgui), fbo, dt=1 / 60)
            assert layer.last_draw_commands > 0
            px = np.frombuffer(fbo.read(components=4), np.uint8)
            assert (px.reshape(-1, 4)[:, :3].sum(1) > 0).sum() > 1000  # the panel's pixels
        finally:
            layer.release()
            fbo.release()
            tl.release()
