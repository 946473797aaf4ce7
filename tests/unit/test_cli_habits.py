"""Command-line habits (game/cli.py, engine/log.py, engine/paths.py): one `error:` line for what argparse
rejects, negative numbers as values, demo options refused next to other commands, help on every option,
--version, a closed pipe ends quietly, logging configured once by -v/-q, progress bars only on a terminal,
and the one function that decides where shaders, characters and the cache live."""
from __future__ import annotations

import argparse
import io
import logging
import math
import os
import subprocess
import sys

import pytest

from engine.log import LEVELS, configure, progress, progress_enabled
from engine.paths import cache_dir, checkout_root, data_dir
from game import cli
from tests.conftest import ROOT

CYLINDER = str(ROOT / "assets" / "cylinder.glb")


@pytest.fixture(autouse=True)
def _restore_logging():
    """cli.run() configures the root logger and the warning hook for the process: undo it after each test."""
    import warnings

    from engine import log

    root = logging.getLogger()
    handlers, level, showwarning = list(root.handlers), root.level, warnings.showwarning
    yield
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
    root.setLevel(level)
    warnings.showwarning = showwarning
    log._state["progress"] = True
    log._state["force"] = False


def _one_error_line(capsys, argv: list[str]) -> str:
    assert cli.run(argv) == cli.EXIT_USAGE
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "usage:" not in captured.err and "Traceback" not in captured.err
    return lines[0]


@pytest.mark.parametrize("argv, needle", [
    (["export-frame", CYLINDER, "--time", "abc", "--out", "x.npz"], "--time"),
    (["export-frame", CYLINDER, "--spring-iterations", "1e3", "--out", "x.npz"], "--spring-iterations"),
    (["export-frame", CYLINDER, "--deformer", "magic", "--out", "x.npz"], "magic"),
    (["render", CYLINDER, "--device", "tpu", "--out", "x.png"], "tpu"),
    (["export-frame", CYLINDER], "--out"),
    (["inspect"], "asset"),
    (["--bogus"], "--bogus"),
    (["frobnicate"], "frobnicate"),
    (["bench", "deform", "--bogus"], "--bogus"),
    (["bench", "nope"], "nope"),
])
def test_rejected_parameters_print_one_error_line(capsys, argv, needle):
    assert needle in _one_error_line(capsys, argv)


@pytest.mark.parametrize("value", ["-inf", "-1e-3", "-.5", "-2", "-NaN"])
def test_negative_numbers_are_values_not_flags(value):
    args = cli.parse(["export-frame", CYLINDER, "--time", value, "--out", "x.npz"])
    expected = float(value)
    assert args.time == expected or (math.isnan(expected) and math.isnan(args.time))
    assert cli.parse(["render", CYLINDER, "--fov", value, "--out", "x.png"]).fov == expected or math.isnan(expected)


def test_time_minus_inf_reaches_the_command_check(capsys):
    line = _one_error_line(capsys, ["export-frame", CYLINDER, "--time", "-inf", "--device", "cpu",
                                    "--out", "x.npz"])
    assert "--time" in line and "-inf" in line  # the command's own finite-time check, not argparse


@pytest.mark.parametrize("argv", [
    ["render", CYLINDER, "--out", "x.png", "--frames", "3"],
    ["export-frame", CYLINDER, "--out", "x.npz", "--screenshot=a.png"],
    ["--frames", "3", "render", CYLINDER, "--out", "x.png"],
    ["--width", "64", "inspect", CYLINDER],
    ["--characters", "2", "doctor"],
])
def test_demo_options_are_refused_with_another_command(capsys, argv):
    line = _one_error_line(capsys, argv)
    assert "demo option" in line and "demo --" in line


def test_demo_options_without_a_command_and_on_demo_agree():
    plain = cli.parse(["--headless", "--frames", "3", "--screenshot", "out.png"])
    sub = cli.parse(["demo", "--headless", "--frames", "3", "--screenshot", "out.png"])
    for name in cli.DEMO_DEFAULTS:
        assert getattr(plain, name) == getattr(sub, name), name
    assert (plain.headless, plain.frames, plain.screenshot, plain.width, plain.characters) == \
        (True, 3, "out.png", 1280, None)  # no --characters: the showcase cast (game/demo.py)
    assert plain.command is None and sub.command == "demo"
    # the demo command's own value wins over one given before it
    assert cli.parse(["--frames", "2", "demo", "--frames", "5"]).frames == 5
    assert cli.parse(["--frames", "2", "demo"]).frames == 2
    assert not any(k.startswith("_top_") for k in vars(plain))


def _actions(parser: argparse.ArgumentParser, path: str = ""):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_every_option_has_help_and_view_lists_its_choices():
    from engine.render.renderer import VIEWS

    parser = cli.build_parser()
    seen = list(_actions(parser))
    assert len(seen) > 50
    missing = [f"{path} {a.option_strings or a.dest}" for path, a in seen if not (a.help or "").strip()]
    assert missing == []
    (view,) = [a for path, a in seen if path == " render" and "--view" in a.option_strings]
    assert all(v in view.help for v in VIEWS)
    subcommands = {path.split()[0] for path, _ in seen if path}
    assert subcommands == {"demo", "editor", "doctor", "inspect", "export-frame", "render", "compare", "pose", "edit",
                           "replay", "bench", "cutscene", "vr", "weights", "influence"}


def test_version_and_main_py_is_the_same_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.run(["--version"], prog="skinengine")
    assert exc.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("skinengine ") and out.split()[1] == cli.version() and out.split()[1][0].isdigit()
    import main

    assert main.build_parser is cli.build_parser and main.run is cli.run


def test_python_dash_m_game_runs_the_cli():
    r = subprocess.run([sys.executable, "-m", "game", "--version"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == f"skinengine {cli.version()}", r.stderr


def test_python_dash_m_engine_says_where_the_command_line_is():
    # the engine is a library and never imports the application: one error line, exit 2, no traceback
    r = subprocess.run([sys.executable, "-m", "engine", "--version"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    assert "python -m game" in lines[0] and r.stdout == ""


def test_closed_pipe_ends_quietly():
    """`main.py inspect X | head -1`: the reader is gone before the command writes; no internal error."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE
    try:
        r = subprocess.run([sys.executable, str(ROOT / "main.py"), "inspect", CYLINDER], stdout=write_end,
                           stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120)
    finally:
        os.close(write_end)
    assert r.returncode == cli.EXIT_BROKEN_PIPE, r.stderr
    assert r.stderr == ""


def test_logging_configured_once_with_levels(capsys):
    assert configure(0) == logging.WARNING and configure(1) == logging.INFO and configure(5) == logging.DEBUG
    assert configure(-1) == logging.ERROR and not progress_enabled()
    configure(0)
    assert progress_enabled()
    ours = [h for h in logging.getLogger().handlers if h.get_name() == "skinengine-cli"]
    assert len(ours) == 1  # configured four times, one handler
    logging.getLogger("engine.somewhere").info("hidden")
    logging.getLogger("engine.somewhere").warning("two\nlines")
    assert capsys.readouterr().err == "warning: two lines\n"
    with pytest.raises(TypeError, match="verbosity"):
        configure("loud")  # type: ignore[arg-type]
    assert set(LEVELS) == {-1, 0, 1, 2}


def test_quiet_flag_hides_warnings_verbose_shows_info(capsys):
    args = cli.parse(["-q", "inspect", CYLINDER])
    assert args.quiet and args.verbose == 0
    assert cli.parse(["inspect", CYLINDER, "-vv"]).verbose == 2
    import warnings

    assert cli.run(["-q", "inspect", CYLINDER]) == 0
    capsys.readouterr()
    assert warnings.showwarning is cli._cli_warning
    cli._cli_warning(UserWarning("noise"), UserWarning, "x.py", 1)  # under -q warnings are dropped
    assert capsys.readouterr().err == ""
    assert cli.run(["inspect", CYLINDER]) == 0
    capsys.readouterr()
    cli._cli_warning(UserWarning("shown"), UserWarning, "x.py", 1)
    assert capsys.readouterr().err == "warning: shown\n"
    # compiling a package's source on Python 3.12 (no .pyc shipped) is not the user's business: no warning line
    cli._cli_warning(SyntaxWarning("invalid escape sequence '\\ '"), SyntaxWarning, "site/pkg.py", 3)
    assert capsys.readouterr().err == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bars_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress(total=3, desc="work") as bar:
        assert bar.disable  # not a terminal
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert list(progress(range(3), desc="work")) == [0, 1, 2]
    assert "work" in term.getvalue()
    with progress(total=3, enabled=False) as bar:
        assert bar.disable
    configure(-1)
    with progress(total=3) as bar:
        assert bar.disable  # -q: never


def test_progress_switch_forces_bars_into_logs(capsys):
    # stderr is captured (no terminal): a bar only with --progress, never with -q
    argv = ["compare", "cylinder", "--clip", "bend90", "--time", "0", "--deformers", "lbs,dqs"]
    assert cli.run(argv) == 0
    assert "comparing primitive" not in capsys.readouterr().err
    assert cli.run([*argv, "--progress"]) == 0
    assert "comparing primitive 0: 100%" in capsys.readouterr().err
    assert cli.run([*argv, "--progress", "-q"]) == 0
    assert "comparing" not in capsys.readouterr().err


def test_data_folders_and_cache_in_a_checkout(monkeypatch, tmp_path):
    assert checkout_root() == ROOT
    assert data_dir("shaders") == ROOT / "shaders" and data_dir("assets") == ROOT / "assets"
    assert cache_dir() == ROOT / "assets" / "cache"
    with pytest.raises(ValueError, match="'textures'"):
        data_dir("textures")
    # installed: the packaged copies beside the engine, the per-user cache
    import engine.paths as paths

    monkeypatch.setattr(paths, "PACKAGED_DIR", tmp_path)
    assert checkout_root() is None and data_dir("shaders") == tmp_path / "shaders"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "skinengine"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: relative paths are invalid
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "skinengine"


def test_bench_runs_from_the_checkout():
    from game.commands.bench import BENCHES, _import_bench

    assert {"deform", "render", "reference", "anim", "bake"} <= set(BENCHES)
    for which in BENCHES:  # every registered bench is a script of bench/ with a main(argv)
        assert callable(_import_bench(which).main), which
