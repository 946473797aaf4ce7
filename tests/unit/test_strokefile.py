"""The strokes file parser (engine/input/strokefile.py): a valid file parses into dataclasses with the stroke's
other keys kept, and every problem is one StrokeFileError saying what and where."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from engine.input.strokefile import StrokeFileError, load_stroke_file, parse_stroke_file
from engine.render.camera import Camera

ROLES = ("baseline", "offset")

GOOD = {
    "version": 1,
    "camera": {"eye": [0, 1, 3], "target": [0, 1, 0], "up": [0, 1, 0], "fov": 40, "width": 640, "height": 480},
    "brush_radius": 0.2,
    "strokes": [
        {"role": "baseline", "space": "world", "points": [[0, 0, 0], [0, 1, 0], [0, 2, 0]], "times": [0, 0.1, 0.2]},
        {"role": "offset", "space": "window", "points": [[10, 20], [30, 40.5]], "rings": 3},
    ],
}


def _bad(mutate, roles=ROLES, **kw) -> str:
    data = copy.deepcopy(GOOD)
    mutate(data)
    with pytest.raises(StrokeFileError) as e:
        parse_stroke_file(data, roles=roles, **kw)
    return str(e.value)


def test_valid_file_parses_into_dataclasses():
    f = parse_stroke_file(GOOD, roles=ROLES, required=("baseline",))
    assert f.version == 1 and f.brush_radius == pytest.approx(0.2)
    assert f.camera is not None and f.camera.width == 640 and f.camera.fov == 40.0
    np.testing.assert_array_equal(f.camera.eye, [0, 1, 3])
    assert f.camera.aspect == pytest.approx(640 / 480)
    base, off = f.strokes
    assert base.role == "baseline" and base.space == "world" and base.points.shape == (3, 3)
    np.testing.assert_array_equal(base.times, [0, 0.1, 0.2])
    assert off.points.shape == (2, 2) and off.times is None and off.extra == {"rings": 3}
    assert off.where == "strokes[1]" and f.by_role("offset") == [off]
    cam = Camera.from_spec(f.camera, near=0.1, far=10.0)
    np.testing.assert_allclose(cam.eye, [0, 1, 3])
    assert cam.fov_y == 40.0 and cam.aspect == pytest.approx(640 / 480)


def test_defaults_and_optional_parts():
    data = copy.deepcopy(GOOD)
    del data["camera"]["up"], data["camera"]["fov"]
    f = parse_stroke_file(data, roles=ROLES)
    np.testing.assert_array_equal(f.camera.up, [0, 1, 0])
    assert f.camera.fov == 45.0
    world_only = {"version": 1, "strokes": [GOOD["strokes"][0]], "custom": True}
    f = parse_stroke_file(world_only, roles=ROLES, brush_radius=False)
    assert f.camera is None and f.brush_radius is None and f.extra == {"custom": True}


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d.update(version=2), "version: unsupported version 2"),
    (lambda d: d.pop("version"), "missing 'version'"),
    (lambda d: d.pop("camera"), "strokes[1]: window-space points need a 'camera'"),
    (lambda d: d["strokes"][0].update(role="elbow"), "strokes[0].role: unknown role 'elbow'"),
    (lambda d: d["strokes"][1].update(space="screen"), "strokes[1].space: unknown space 'screen'"),
    (lambda d: d["strokes"][1].update(points=[]), "strokes[1].points: a stroke needs at least two points, got 0"),
    (lambda d: d["strokes"][0].update(points=[[0, 0, 0]]), "strokes[0].points: a stroke needs at least two"),
    (lambda d: d["strokes"][1]["points"].append([1, 2, 3]),
     "strokes[1].points[2]: expected 2 numbers (window space), got [1, 2, 3]"),
    (lambda d: d["strokes"][0]["points"].__setitem__(1, [0, "a", 0]), "strokes[0].points[1]: expected 3 numbers"),
    (lambda d: d["strokes"][0]["points"].__setitem__(1, [0, float("nan"), 0]),
     "strokes[0].points[1]: expected finite numbers"),
    (lambda d: d["strokes"][0].update(points=[[1, 1, 1], [1, 1, 1]]), "strokes[0].points: the stroke has zero length"),
    (lambda d: d["strokes"][0].update(times=[0, 0.2, 0.1]), "strokes[0].times[2]: times must increase"),
    (lambda d: d["strokes"][0].update(times=[0, 1]), "strokes[0].times: expected 3 numbers (one per point), got 2"),
    (lambda d: d["strokes"][0].update(times=[0, float("inf"), 3]), "strokes[0].times[1]: expected a finite number"),
    (lambda d: d["strokes"][0].pop("points"), "strokes[0]: missing 'points'"),
    (lambda d: d.update(strokes={}), "strokes: expected a list"),
    (lambda d: d.update(brush_radius=-1), "brush_radius: expected a number > 0"),
    (lambda d: d.pop("brush_radius"), "missing 'brush_radius'"),
    (lambda d: d["camera"].update(fov=0), "camera.fov: expected degrees in [1, 170]"),
    (lambda d: d["camera"].update(width=0), "camera.width: expected a whole number of pixels"),
    (lambda d: d["camera"].update(eye=[0, 1]), "camera.eye: expected 3 numbers"),
    (lambda d: d["camera"].update(target=[0, 1, 3]), "camera: eye and target coincide"),
    (lambda d: d["camera"].update(up=[0, 0, 1]), "camera.up: [0.0, 0.0, 1.0] is zero or parallel"),
    (lambda d: d["camera"].pop("height"), "camera: missing 'height'"),
    (lambda d: d["camera"].update(zoom=2), "camera: unknown key 'zoom'"),
])
def test_each_problem_names_itself_and_its_place(mutate, expected):
    assert expected in _bad(mutate)


def test_required_roles_and_caller_roles():
    msg = _bad(lambda d: d["strokes"].pop(0), required=("baseline",))
    assert "no 'baseline' stroke" in msg
    assert "unknown role 'baseline'" in _bad(lambda d: None, roles=("surface", "silhouette"))
    with pytest.raises(StrokeFileError, match="expected a JSON object"):
        parse_stroke_file([1, 2], roles=ROLES)
    with pytest.raises(ValueError, match="roles"):
        parse_stroke_file(GOOD, roles=())


def test_load_names_the_file_and_reports_bad_json(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD))
    assert len(load_stroke_file(good, roles=ROLES).strokes) == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1,\n "strokes": [}')
    with pytest.raises(StrokeFileError, match=r"bad.json: not JSON: .* line 2 column"):
        load_stroke_file(bad, roles=ROLES)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(StrokeFileError, match="not UTF-8"):
        load_stroke_file(binary, roles=ROLES)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**GOOD, "version": 3}))
    with pytest.raises(StrokeFileError, match=r"^wrong.json: version: unsupported version 3"):
        load_stroke_file(wrong, roles=ROLES)
