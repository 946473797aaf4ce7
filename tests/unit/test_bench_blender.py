"""bench bake's Blender column: measured through bench/blender_eval.py when bpy is there, else the quoted
figure, labelled (no bpy import in this process; the subprocess is not run here)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bench import bench_bake


def test_an_interpreter_without_bpy_is_not_taken(monkeypatch, tmp_path):
    import sys

    monkeypatch.setenv("BLENDER_PYTHON", sys.executable)  # the project's venv: never has bpy (numpy >= 2)
    monkeypatch.setattr(bench_bake, "checkout_root", lambda: tmp_path)  # no .venv-blender there
    assert importlib.util.find_spec("bpy") is None
    assert bench_bake.blender_python() is None


def test_without_bpy_the_column_says_so_and_quotes_the_armature_figure(monkeypatch):
    monkeypatch.setattr(bench_bake, "blender_python", lambda: None)
    assert bench_bake.blender_ms_per_frame(Path("x.glb"), 10, 1, 50) == "bpy not installed"
    assert bench_bake._blender_cell("bpy not installed", "armature") == ([bench_bake.BLENDER_MS_PER_FRAME],
                                                                           "quoted")
    assert bench_bake._blender_cell("bpy not installed", "smooth") is None


def test_measured_samples_replace_the_quote():
    got = {"armature": [1.5, 1.2], "smooth": [3.0], "version": "5.0.1", "vertices": 3273}
    assert bench_bake._blender_cell(got, "armature") == ([1.5, 1.2], "measured")
    assert bench_bake._blender_cell(got, "smooth") == ([3.0], "measured")
    assert bench_bake._blender_cell({"armature": [], "smooth": []}, "smooth") is None


def test_blender_script_is_standalone():
    """The helper runs in its own interpreter: it imports neither the engine nor the bench package."""
    text = bench_bake._BLENDER_SCRIPT.read_text()
    assert bench_bake._BLENDER_SCRIPT.is_file()
    assert "import engine" not in text and "from engine" not in text and "from bench" not in text
    assert "BPY_RESULT" in text


@pytest.mark.parametrize("bad", [["--smooth", "-1"], ["--frames", "0"]])
def test_bad_options_are_refused(bad):
    with pytest.raises(SystemExit):
        bench_bake.main(bad)
