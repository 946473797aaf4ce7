"""The surface tools' settings, keys and help (no GL): the editor settings validate the surface_* values and name a bad
one, key nudges clamp to the range, the key table and the help overlay list the surface tools' keys, and a
recording header with the new settings reads back."""
from __future__ import annotations

import json

import pytest

from engine.input.events import Modifiers
from engine.input.record import parse_recording
from game.editor.state import SURFACE_TOOLS, TOOLS, EditorSettings
from game.editor.systems import KEY_BINDINGS


def test_surface_settings_validate_and_name_the_bad_value():
    s = EditorSettings(tool="bulge", surface_profile="sine", surface_ease="cubicInOut", surface_rings=6)
    assert s.tool in SURFACE_TOOLS and set(SURFACE_TOOLS) <= set(TOOLS)
    assert s.surface_rings == 6 and isinstance(s.surface_rings, int)
    for bad, needle in ((dict(surface_profile="zigzag"), "surface_profile must be one of bulge, sine"),
                        (dict(surface_ease="bounce"), "surface_ease must be one of"),
                        (dict(surface_solver="magic"), "surface_solver must be one of springs, laplacian"),
                        (dict(surface_rings=2.5), "surface_rings must be a whole number"),
                        (dict(surface_height=float("nan")), "surface_height must be a number in [-0.25, 0.25]"),
                        (dict(surface_stiffness=-1.0), "surface_stiffness"),
                        (dict(tool="surface_paint"), "tool must be one of orbit, pose, bulge, silhouette")):
        with pytest.raises(ValueError, match=needle.replace("[", r"\[").replace("]", r"\]")):
            s.update(**bad)
    assert s.surface_profile == "sine" and s.surface_rings == 6  # a refused update changes nothing


def test_nudges_clamp_and_refuse_non_numeric_settings():
    s = EditorSettings(surface_height=0.248, surface_rings=0)
    s.nudge(surface_height=0.005, surface_rings=-1)
    assert s.surface_height == 0.25 and s.surface_rings == 0
    with pytest.raises(ValueError, match="'surface_profile' is not a numeric setting"):
        s.nudge(surface_profile=1.0)


def test_keys_and_help_list_the_surface_tools():
    from game.editor.window import HELP_LINES

    assert KEY_BINDINGS[("b", Modifiers.NONE)] == ("tool", {"name": "bulge"})
    assert KEY_BINDINGS[("s", Modifiers.NONE)] == ("tool", {"name": "silhouette"})
    assert KEY_BINDINGS[("r", Modifiers.SHIFT)] == ("surface_nudge", {"surface_rings": -1})
    assert KEY_BINDINGS[("equal", Modifiers.NONE)][0] == "surface_nudge"
    text = "\n".join(HELP_LINES)
    assert "B  bulge tool" in text and "S  silhouette tool" in text and "= / - height" in text


def test_a_header_with_surface_settings_reads_back():
    header = {"format": "skinengine-session", "version": 1, "window": {"width": 64, "height": 48},
              "camera": {"eye": [0, 1, 3], "target": [0, 1, 0]}, "assets": [{"source": "humanoid"}],
              "editor": EditorSettings(tool="silhouette", surface_solver="laplacian").to_dict()}
    rec = parse_recording([json.dumps(header) + "\n", '{"type": "end", "frames": 0}\n'])
    assert EditorSettings.from_dict(rec.header.editor).surface_solver == "laplacian"


def test_the_handle_grab_distance_is_a_checked_setting():
    assert EditorSettings().surface_grab_px == 8.0
    with pytest.raises(ValueError, match="surface_grab_px must be a number in"):
        EditorSettings(surface_grab_px=0.0)
