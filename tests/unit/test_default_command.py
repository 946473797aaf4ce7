"""`python main.py` with no sub-command opens the editor; a demo-only option (the headless contract) or a
missing display runs the demo as before and one log line says why; `demo` stays the showcase; the help says
so and `make demo` names the demo explicitly."""
from __future__ import annotations

import logging
from typing import Any

import pytest

from game import cli
from tests.conftest import ROOT


@pytest.mark.parametrize(("argv", "display", "want"), [
    ([], True, "editor"),
    (["--width", "800", "--height", "600"], True, "editor"),  # options the editor takes too
    (["--asset", "x.glb", "--deformer", "dqs", "--device", "cpu"], True, "editor"),
    (["--headless", "--frames", "3", "--screenshot", "out.png"], True, "demo"),  # the headless contract
    (["--characters", "8"], True, "demo"),
    (["--compare"], True, "demo"),
    (["--overlay"], True, "demo"),
    (["--profile", "t.json"], True, "demo"),
    (["--graph", "g.toml"], True, "demo"),
    ([], False, "demo"),  # no display: the editor cannot open
    (["--width", "800"], False, "demo"),
    (["--record", "s.jsonl"], True, "editor"),
    (["--record", "s.jsonl"], False, "editor"),  # --record asks for the editor (it refuses without a display)
])
def test_default_command_choice(argv: list[str], display: bool, want: str) -> None:
    args = cli.parse(argv)
    assert args.command is None
    which, why = cli.default_command(args.top_options, display=display, record=args.record is not None)
    assert which == want
    if want == "editor":
        assert why is None
    elif not display and not set(args.top_options) - set(cli.EDITOR_OPTIONS):
        assert why is not None and why.startswith("no display")
    else:
        assert why is not None and "is a demo option" in why
        flag = why.split()[0]
        assert flag.startswith("--") and flag in argv


def test_sub_commands_keep_their_meaning() -> None:
    assert cli.parse(["demo"]).command == "demo"
    assert cli.parse(["editor"]).command == "editor"
    assert cli.parse(["demo", "--headless"]).top_options == ()  # only a bare command line is routed
    assert set(cli.EDITOR_OPTIONS) < set(cli.DEMO_DEFAULTS)


def _route(monkeypatch: pytest.MonkeyPatch, argv: list[str], *, display: bool) -> tuple[int, list[str]]:
    """Run the command line with the editor and the demo replaced by recorders: which one ran."""
    import engine.gpu.context
    import game.demo
    import game.editor.window

    ran: list[str] = []

    def editor(args: Any) -> int:
        ran.append(f"editor {args.command}")
        return 0

    def demo(args: Any) -> int:
        ran.append(f"demo {args.command}")
        return 0

    monkeypatch.setattr(game.editor.window, "run_editor", editor)
    monkeypatch.setattr(game.demo, "run_demo", demo)
    monkeypatch.setattr(engine.gpu.context, "display_present", lambda: display)
    return cli.run(argv), ran


def test_a_bare_command_line_runs_the_editor_with_a_display(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert _route(monkeypatch, [], display=True) == (0, ["editor editor"])
    assert capsys.readouterr().err == ""  # nothing to explain
    assert _route(monkeypatch, ["demo"], display=True) == (0, ["demo demo"])


def test_no_display_runs_the_demo_with_a_warning(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert _route(monkeypatch, [], display=False) == (0, ["demo demo"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("warning: no display") and "main.py editor" in err[0], err


def test_demo_options_run_the_demo_and_say_so_once(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str],
                                                   caplog: pytest.LogCaptureFixture) -> None:
    argv = ["--headless", "--frames", "3", "--screenshot", "out.png"]
    # the headless contract's output stays as it was: no extra line at the default verbosity ...
    assert _route(monkeypatch, argv, display=True) == (0, ["demo demo"])
    assert capsys.readouterr().err == ""
    # ... and with -v the one line says why this is the demo
    with caplog.at_level(logging.INFO, logger="game.cli"):
        assert _route(monkeypatch, ["-v", *argv], display=True) == (0, ["demo demo"])
    lines = [r.getMessage() for r in caplog.records if r.name == "game.cli"]
    assert len(lines) == 1 and lines[0].startswith("--headless is a demo option: playing the demo"), lines


def test_help_and_makefile_name_the_default() -> None:
    text = cli.build_parser().format_help()
    assert "With no command: the editor window" in " ".join(text.split())
    make = (ROOT / "Makefile").read_text()
    demo_rule = make.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "main.py demo" in demo_rule
