"""The demo as a showcase: the composed cast (>= 8 characters, walkers on their loop path, pedestals), the
comparison mode (the expected methods in a row, each labelled under its feet, labels on screen), the deformer
switch for all and per character, the overlay keys, and headless ``--profile`` / ``--overlay``."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.helpers.trace_check import assert_nested


class _GL:  # the session only needs .ctx from the context wrapper
    def __init__(self, ctx):
        self.ctx = ctx


def test_showcase_cast_walks_its_loop_and_fills_the_frame(gl_ctx):
    from engine import Session
    from engine.components import Placement
    from game.demo import SHOWCASE, DemoScene

    with Session(gl=_GL(gl_ctx), width=160, height=90, deformer="lbs", strict=True) as s:
        scene = DemoScene(s, deformer="lbs")
        cast = scene.build_showcase()
        assert len(cast) == len(SHOWCASE) >= 8
        assert len(scene.props) == sum(1 for slot in SHOWCASE if slot.pedestal > 0)
        assert {ch.deformer for ch in cast} == {"lbs"}
        assert {ch.name for ch in cast} >= {"humanoid", "cylinder", "plus", "box"}
        scene.frame()
        walker, slot, _angle = scene._walkers[0]
        before = s.world.get(walker.entity, Placement).matrix[:3, 3].copy()
        s.step(6)
        after = s.world.get(walker.entity, Placement).matrix[:3, 3]
        assert np.linalg.norm(after - before) > 0.05  # it walked
        assert math.hypot(after[0] - slot.x, after[2] - slot.z) == pytest.approx(slot.loop, abs=1e-4)
        # framed: the cast's vertices are on screen and span most of the width
        from engine.authoring.view import window_points

        pts = np.concatenate([p for ch in cast for p in ch.vertices().values()])
        xy = window_points(s.camera, 160, 90, pts)
        assert np.all(np.isfinite(xy))
        assert xy[:, 0].min() >= -1 and xy[:, 0].max() <= 161 and xy[:, 1].min() >= -1 and xy[:, 1].max() <= 91
        assert xy[:, 0].max() - xy[:, 0].min() > 0.7 * 160
        scene.clear()
        assert s.characters == []
        scene.release()
        assert DemoScene.WALK_SYSTEM not in s.schedule


def test_comparison_mode_shows_the_methods_labelled(gl_ctx):
    from engine import Session
    from engine.authoring.view import window_points
    from game.demo import DemoScene
    from game.ui.labels import draw_labels
    from game.ui.overlay import SessionOverlay

    with Session(gl=_GL(gl_ctx), width=240, height=120, deformer="lbs", strict=True) as s:
        scene = DemoScene(s, deformer="lbs")
        scene.build_showcase()
        methods = ("lbs", "dqs", "irs", "spring")
        row = scene.build_compare(methods)
        assert scene.mode == "compare" and scene.props == []
        assert [ch.deformer for ch in row] == list(methods)
        assert len({ch.name for ch in row}) == 1  # the same character ...
        assert len({round(ch.time, 6) for ch in row}) == 1  # ... at the same time of the same clip
        xs = [ch.matrix[0, 3] for ch in row]
        assert xs == sorted(xs)  # left to right in the order given
        scene.frame()
        labels = scene.labels()
        assert [lb.text for lb in labels] == list(methods)
        xy = window_points(s.camera, 240, 120, np.array([lb.position for lb in labels]))
        assert np.all((xy[:, 0] > 0) & (xy[:, 0] < 240) & (xy[:, 1] > 0) & (xy[:, 1] < 120))
        assert list(np.argsort(xy[:, 0])) == [0, 1, 2, 3]
        drawn = []
        overlay = SessionOverlay(s, show_profiler=False)
        overlay.panels.append(lambda: drawn.append(draw_labels(s.camera, 240, 120, scene.labels())))
        plain = s.renderer.read_pixels()
        s.settle()
        assert drawn[-1] == 4
        assert np.abs(s.renderer.read_pixels().astype(int) - plain.astype(int)).max() > 60  # the labels
        assert "profile_collect" not in s.schedule  # a hidden profiler panel costs no profiling
        # back to the cast it replaced
        assert scene.toggle_compare() == "showcase"
        assert len(scene.characters) >= 8 and scene.labels() == []
        overlay.release()
        scene.release()


def test_cast_panel_switches_all_or_one_and_reports_refusals(gl_ctx):
    from engine import Session
    from game.demo import SWITCH_DEFORMERS, DemoScene
    from game.ui.cast import CastPanel

    with Session(gl=_GL(gl_ctx), width=64, height=48, deformer="lbs", strict=True) as s:
        scene = DemoScene(s, deformer="lbs")
        scene.build_grid(3)
        switched = []
        panel = CastPanel(lambda: scene.characters, choices=SWITCH_DEFORMERS, on_all=switched.append)
        assert panel.set_all("dqs") == 3
        assert [ch.deformer for ch in scene.characters] == ["dqs"] * 3 and switched == ["dqs"]
        assert panel.set_one(scene.characters[1], "rigid")
        assert [ch.deformer for ch in scene.characters] == ["dqs", "rigid", "dqs"]
        with pytest.raises(ValueError, match="unknown deformer 'arap'"):
            panel.set_all("arap")

        class Stubborn:
            name = "stub"
            deformer = "lbs"

            def set_deformer(self, name):
                raise ValueError(f"deformer {name!r} does not run here")

        assert not panel.set_one(Stubborn(), "irs")
        assert panel.message == "stub: deformer 'irs' does not run here"
        scene.release()


def test_overlay_keys_toggle_profiler_freeze_help(gl_ctx):
    from engine import Session
    from engine.runloop import toggle_overlay
    from game.ui.overlay import SessionOverlay

    with Session(gl=_GL(gl_ctx), width=64, height=48, deformer="lbs", strict=True) as s:
        s.spawn("box", clip=0)
        overlay = SessionOverlay(s, show_profiler=False)
        assert "profile_collect" not in s.schedule
        assert toggle_overlay(overlay, "profiler") is True and "profile_collect" in s.schedule
        assert toggle_overlay(overlay, "freeze") is True and overlay.panel.frozen
        assert toggle_overlay(overlay, "help") is True and overlay.show_help
        assert toggle_overlay(overlay, "profiler") is False and "profile_collect" not in s.schedule
        with pytest.raises(ValueError, match="unknown overlay toggle 'zoom'"):
            toggle_overlay(overlay, "zoom")
        overlay.release()


def test_demo_flags_parse():
    from game.cli import UsageError, parse

    a = parse(["--headless", "--profile", "t.json", "--overlay", "--compare"])
    assert (a.profile, a.overlay, a.compare, a.characters) == ("t.json", True, "lbs,dqs,irs,spring", None)
    b = parse(["demo", "--compare", "lbs,dqs"])
    assert b.compare == "lbs,dqs" and b.overlay is False and b.profile is None
    assert parse(["bench", "scene", "--quick"]).which == "scene"
    with pytest.raises(UsageError, match="--overlay is a demo option"):
        parse(["inspect", "x.glb", "--overlay"])


def test_headless_demo_writes_profile_trace_and_overlay(tmp_path):
    png, trace = tmp_path / "shot.png", tmp_path / "t" / "trace.json"
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "--headless", "--frames", "3", "--overlay",
                        "--profile", str(trace), "--screenshot", str(png), "--width", "480", "--height", "200",
                        "--characters", "2"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert f"wrote {trace} (3 frames" in r.stdout
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(1 for e in events if e["name"] == "frame" and e["ph"] == "X") == 3
    threads = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    gpu_tids = {t for t, name in threads.items() if "GPU" in name}
    assert any(e["ph"] == "X" and e["tid"] in gpu_tids for e in events)  # the deformer stages at least
    assert {"animation_system", "render_system", "ui overlay"} <= {e["name"] for e in events}
    assert assert_nested(events) >= 3  # frame > phase > system
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB")).astype(np.float32)
    assert img.shape == (200, 480, 3)
    panel = img[140:196, 20:460]  # the profiler panel docked along the bottom: dark background with text
    assert panel.mean() < 110 and panel.std() > 10


def test_demo_refuses_bad_profile_and_compare(tmp_path):
    def run(*extra: str):
        return subprocess.run([sys.executable, str(ROOT / "main.py"), "--headless", "--frames", "1", *extra],
                              capture_output=True, text=True, timeout=120, cwd=ROOT)

    r = run("--profile", str(tmp_path / "t.txt"))
    assert r.returncode == 2 and "--profile must end in .json" in r.stderr
    r = run("--compare", "lbs,warp")
    assert r.returncode == 2 and "unknown deformer 'warp'" in r.stderr
    r = run("--compare", "lbs", "--characters", "4")
    assert r.returncode == 2 and "cannot be combined with --characters" in r.stderr
