"""`main.py edit` end to end on the generated characters (issue 12 item 7): a bulge drawn on the humanoid's
forearm through the G-buffer, the npz contract (export-frame keys + K_kinematic/K_passive/K_static), the static
ring held and the rest of the body untouched, --save/--load replaying the same vertices, a geodesic region on
the cylinder, and the refusals (one `error:` line, exit 2)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from engine.render.camera import Camera
from game.cli import run
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

W, H = 320, 240
HUMANOID = ROOT / "assets" / "humanoid.glb"
CYLINDER = ROOT / "assets" / "cylinder.glb"
KEY = "node21_mesh0_prim0"


def _joints(asset, clip, time):
    from engine import Session

    with Session(device="cpu", render=False, strict=True) as s:
        ch = s.spawn(str(asset), clip=clip, time=time, speed=0.0, mode="clamp")
        names = [n.name for n in ch.asset.nodes]
        g = ch.joints()
        return {n: g[i, :3, 3].astype(np.float64) for i, n in enumerate(names)}


def _strokes_file(path, eye, target, strokes_world, **stroke_keys):
    """A strokes file whose window points are the projections of world points through its camera."""
    cam = Camera(eye=np.asarray(eye), target=np.asarray(target), aspect=W / H, near=0.05, far=20.0)
    m = cam.projection_for(W / H) @ cam.view
    strokes = []
    for pts in strokes_world:
        win = []
        for p in pts:
            c = m @ np.r_[p, 1.0]
            win.append([float((c[0] / c[3] + 1) * 0.5 * W), float((1 - c[1] / c[3]) * 0.5 * H)])
        strokes.append({"role": "surface", "space": "window", "points": win, **stroke_keys})
    doc = {"version": 1, "camera": {"eye": list(map(float, eye)), "target": list(map(float, target)),
                                    "fov": 45, "width": W, "height": H}, "strokes": strokes}
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def forearm(tmp_path_factory):
    """The humanoid idle at t=0 with a 3 cm bulge drawn along the left forearm; plain export beside it."""
    tmp = tmp_path_factory.mktemp("edit")
    j = _joints(HUMANOID, "idle", 0.0)
    e, h = j["forearm_L"], j["hand_L"]
    mid = (e + h) / 2
    strokes = _strokes_file(tmp / "forearm.json", mid + [0.0, 0.1, 0.9], mid, [[e + 0.2 * (h - e), e + 0.8 * (h - e)]],
                            rings=4, profile={"type": "bulge", "height": 0.03})
    out = tmp / "edit.npz"
    assert run(["edit", str(HUMANOID), "--strokes", str(strokes), "--clip", "idle", "--time", "0",
                "--export-frame", str(out), "--screenshot", str(tmp / "edit.png"), "--save",
                str(tmp / "edits.json")]) == 0
    assert run(["export-frame", str(HUMANOID), "--clip", "idle", "--time", "0", "--deformer", "spring",
                "--out", str(tmp / "plain.npz")]) == 0
    return tmp


def test_edit_contract_and_sets(forearm):
    a, plain = np.load(forearm / "edit.npz"), np.load(forearm / "plain.npz")
    assert set(a.files) == {KEY} | {f"{KEY}_{s}" for s in ("kinematic", "passive", "static")}
    assert a[KEY].dtype == np.float32 and a[KEY].shape == plain[KEY].shape
    sets = {s: a[f"{KEY}_{s}"] for s in ("kinematic", "passive", "static")}
    for s, idx in sets.items():
        assert idx.dtype == np.int32 and idx.size > 0, s
    assert not (set(sets["kinematic"]) & set(sets["passive"]) or set(sets["passive"]) & set(sets["static"]))
    d = np.linalg.norm(a[KEY] - plain[KEY], axis=1)
    # the kinematic vertices rise most of the 3 cm, the static ring stays, nothing outside the region moves
    assert 0.015 < d[sets["kinematic"]].max() < 0.035
    assert d[sets["static"]].max() < 1e-4
    outside = np.ones(d.size, bool)
    for idx in sets.values():
        outside[idx] = False
    assert d[outside].max() < 1e-4
    # the kinematic vertices are on the forearm, between elbow and wrist
    j = _joints(HUMANOID, "idle", 0.0)
    e, h = j["forearm_L"], j["hand_L"]
    axis = (h - e) / np.linalg.norm(h - e)
    along = (plain[KEY][sets["kinematic"]] - e) @ axis / np.linalg.norm(h - e)
    assert along.min() > 0.05 and along.max() < 0.95
    assert (forearm / "edit.png").stat().st_size > 1000


def test_saved_edits_replay_exactly(forearm, tmp_path):
    doc = json.loads((forearm / "edits.json").read_text())
    assert doc["format"] == "skinengine-edits" and doc["version"] == 1 and KEY in doc["primitives"]
    edit = doc["primitives"][KEY]["edits"][0]
    assert edit["profile"]["type"] == "bulge" and edit["profile"]["height"] == 0.03
    out = tmp_path / "replay.npz"
    assert run(["edit", str(HUMANOID), "--load", str(forearm / "edits.json"), "--clip", "idle", "--time", "0",
                "--export-frame", str(out)]) == 0
    a, b = np.load(forearm / "edit.npz"), np.load(out)
    np.testing.assert_array_equal(a[KEY], b[KEY])
    for s in ("kinematic", "passive", "static"):
        np.testing.assert_array_equal(a[f"{KEY}_{s}"], b[f"{KEY}_{s}"])


def test_offset_stroke_carries_the_region(forearm, tmp_path):
    """An offset stroke drawn 15 px above the surface stroke lifts the kinematic vertices (about 4.7 cm at
    0.9 m with a 45 degree field of view over 240 rows); the static ring stays."""
    doc = json.loads((forearm / "forearm.json").read_text())
    pts = doc["strokes"][0]["points"]
    doc["strokes"][0]["profile"] = {"type": "offset", "points": [[x, y - 15.0] for x, y in pts]}
    (tmp_path / "offset.json").write_text(json.dumps(doc))
    out = tmp_path / "offset.npz"
    assert run(["edit", str(HUMANOID), "--strokes", str(tmp_path / "offset.json"), "--clip", "idle",
                "--export-frame", str(out)]) == 0
    a, plain = np.load(out), np.load(forearm / "plain.npz")
    d = a[KEY] - plain[KEY]
    kin, static = a[f"{KEY}_kinematic"], a[f"{KEY}_static"]
    assert 0.02 < d[kin, 1].mean() < 0.06
    assert np.abs(d[static]).max() < 1e-4


def test_geodesic_region_on_cylinder(tmp_path):
    j = _joints(CYLINDER, 0, 0.0)
    names = sorted(j)
    lo = min(j[n][1] for n in names)
    hi = max(j[n][1] for n in names)
    y = lo + 0.5 * (hi - lo)
    strokes = _strokes_file(tmp_path / "cyl.json", [0.0, y, 1.0], [0.0, y, 0.0],
                            [[np.array([-0.03, y, 0.1]), np.array([0.03, y, 0.1])]],
                            radius=0.08, geodesic=True, profile={"type": "sine", "height": 0.01, "waves": 1})
    out = tmp_path / "cyl.npz"
    assert run(["edit", str(CYLINDER), "--strokes", str(strokes), "--export-frame", str(out)]) == 0
    a = np.load(out)
    key = next(k for k in a.files if not k.endswith(("_kinematic", "_passive", "_static")))
    x = a[key]
    kin, pas = a[f"{key}_kinematic"], a[f"{key}_passive"]
    assert kin.size and pas.size
    # the front of the tube, never its back: the region stays within 0.08 m along the surface
    assert np.all(x[pas][:, 2] > -0.05)
    assert np.abs(x[pas][:, 1] - y).max() < 0.12


def _error(capsys, argv):
    status = run(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith("error: "), (status, err)
    return err[0]


@pytest.mark.parametrize("change, message", [
    (dict(points=[[300.0, 4.0], [316.0, 10.0]]), "hits no surface"),
    (dict(profile={"type": "dent", "height": 0.01}), "unknown profile type"),
    (dict(profile={"type": "bulge", "height": float("inf")}), "finite"),
    (dict(profile={"type": "bulge", "height": "high"}), "finite"),
    (dict(rings=2, radius=0.1), "rings or radius"),
    (dict(role="silhouette"), "unknown key 'profile'"),
    (dict(width=3), "unknown key"),
    (dict(points=[[1e30, 5.0], [3.0, 4.0]]), "outside"),
    (dict(profile={"type": "bulge", "height": 1e9}), "magnitude"),
    (dict(stiffness=1e300), "stiffness"),
])
def test_refusals(forearm, tmp_path, capsys, change, message):
    doc = json.loads((forearm / "forearm.json").read_text())
    doc["strokes"][0].update(change)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    line = _error(capsys, ["edit", str(HUMANOID), "--strokes", str(bad), "--clip", "idle",
                           "--export-frame", str(tmp_path / "x.npz")])
    assert message in line
    assert not (tmp_path / "x.npz").exists()


def test_bad_files(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text("{\"version\": 1, \"strokes\": [")
    assert "not JSON" in _error(capsys, ["edit", str(HUMANOID), "--strokes", str(broken),
                                         "--export-frame", str(tmp_path / "x.npz")])
    assert "--export-frame" in _error(capsys, ["edit", str(HUMANOID), "--strokes", str(broken),
                                               "--export-frame", str(tmp_path / "x.txt")])
    assert "--strokes" in _error(capsys, ["edit", str(HUMANOID), "--export-frame", str(tmp_path / "x.npz")])
    assert "spring" in _error(capsys, ["edit", str(HUMANOID), "--strokes", str(broken), "--deformer", "lbs",
                                       "--export-frame", str(tmp_path / "x.npz")])


@pytest.mark.parametrize("name, role", [("edit_forearm.json", "surface"), ("edit_belly.json", "silhouette")])
def test_shipped_examples_run(tmp_path, name, role):
    """The README's example strokes files: each edits the humanoid (its region moves, the rest stays)."""
    path = ROOT / "examples" / name
    assert json.loads(path.read_text())["strokes"][0]["role"] == role
    assert name in (ROOT / "README.md").read_text()
    out = tmp_path / "ex.npz"
    assert run(["edit", str(HUMANOID), "--strokes", str(path), "--clip", "idle", "--export-frame", str(out)]) == 0
    a = np.load(out)
    assert a[f"{KEY}_kinematic"].size > 5 and a[f"{KEY}_static"].size > 5


def test_cpu_device_equals_gpu(forearm, tmp_path):
    """`edit --device cpu`: the numpy spring reference takes the same edit forces as the GPU spring stage (same
    regions, same vertices within 1e-5 of the mesh's diagonal, the bulge there)."""
    out = tmp_path / "cpu.npz"
    assert run(["edit", str(HUMANOID), "--strokes", str(forearm / "forearm.json"), "--clip", "idle", "--time", "0",
                "--device", "cpu", "--export-frame", str(out)]) == 0
    cpu, gpu, plain = np.load(out), np.load(forearm / "edit.npz"), np.load(forearm / "plain.npz")
    assert set(cpu.files) == set(gpu.files)
    for s in ("kinematic", "passive", "static"):
        np.testing.assert_array_equal(cpu[f"{KEY}_{s}"], gpu[f"{KEY}_{s}"])
    diag = float(np.linalg.norm(np.ptp(gpu[KEY], axis=0)))
    np.testing.assert_allclose(cpu[KEY], gpu[KEY], atol=1e-5 * diag, rtol=0)
    assert np.linalg.norm(cpu[KEY] - plain[KEY], axis=1)[cpu[f"{KEY}_kinematic"]].max() > 0.015
