"""`main.py pose` end to end (game/commands/pose.py): world and window strokes pose the cylinder as the solver
does, --export-frame holds the posed vertices in the export-frame contract, --out round-trips through the
loader (`export-frame POSED.glb --clip pose --time 0` gives the same vertices, the other clips kept),
--screenshot renders the strokes over the posed character, and bad files exit 2 with one `error:` line."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from engine import Session
from engine.input.strokefile import parse_stroke_file
from engine.render.camera import Camera
from engine.scene import quiet_load
from game.cli import run
from game.commands.pose import BASELINE_RGB, OFFSET_RGB, ROLES

pytestmark = pytest.mark.gl

CAMERA = {"eye": [0.0, 0.5, 3.0], "target": [0.0, 0.5, 0.0], "up": [0, 1, 0], "fov": 40, "width": 160,
          "height": 120}
UP = [[0.0, y, 0.0] for y in np.linspace(0, 1, 11).tolist()]
BENT = [[0.0, 0.0, 0.0], [0.0, 0.25, 0.0], [0.0, 0.5, 0.0], [0.25, 0.5, 0.0], [0.5, 0.5, 0.0]]


def _write(tmp_path, strokes, *, camera=CAMERA, radius=0.05, name="strokes.json"):
    doc = {"version": 1, "brush_radius": radius, "strokes": strokes}
    if camera is not None:
        doc["camera"] = camera
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def _pose(*args):
    return run(["pose", *map(str, args), "--device", "cpu"])


def _elbow_angle(verts_or_glb) -> float:
    """The cylinder's elbow angle from the 'pose' clip of a posed file."""
    from engine.anim import Pose, global_matrices
    from engine.anim.sampling import ClipSampler

    loaded = quiet_load(verts_or_glb)
    clip = next(c for c in loaded.asset.clips if c.name == "pose")
    pose = ClipSampler(loaded.rig, clip).sample(0.0, Pose.rest(loaded.rig))
    p = global_matrices(loaded.rig, pose)[:3, :3, 3].astype(np.float64)
    u, v = p[1] - p[0], p[2] - p[1]
    return float(np.degrees(np.arccos(u @ v / np.linalg.norm(u) / np.linalg.norm(v))))


def test_world_strokes_export_frame_and_out_round_trip(tmp_path, capsys):
    f = _write(tmp_path, [{"role": "baseline", "space": "world", "points": UP},
                          {"role": "offset", "space": "world", "points": BENT}], camera=None)
    npz, glb = tmp_path / "posed.npz", tmp_path / "posed.glb"
    assert _pose("cylinder", "--strokes", f, "--export-frame", npz, "--out", glb) == 0
    assert "3 joint(s) (root, mid, tip)" in capsys.readouterr().out
    posed = np.load(npz)
    with Session(device="cpu", render=False) as s:  # the same pose through the scripting API
        ch = s.spawn("cylinder", clip=None)
        ch.apply_line_of_action(UP, BENT, brush_radius=0.05)
        want = {k.export_key: v for k, v in ch.vertices().items()}
    assert set(posed.files) == set(want)
    for k in want:
        assert posed[k].dtype == np.float32
        np.testing.assert_allclose(posed[k], want[k], atol=1e-6)
    assert _elbow_angle(glb) == pytest.approx(90.0, abs=2.0)
    back = tmp_path / "back.npz"
    assert run(["export-frame", str(glb), "--clip", "pose", "--time", "0", "--device", "cpu",
                "--out", str(back)]) == 0
    again = np.load(back)
    for k in want:
        np.testing.assert_allclose(again[k], posed[k], atol=1e-5)
    names = [c.name for c in quiet_load(glb).asset.clips]
    assert names == [c.name for c in quiet_load("cylinder").asset.clips] + ["pose"]


def _pixels(points, spec):
    cam = Camera.from_spec(parse_stroke_file({"version": 1, "camera": spec, "brush_radius": 1, "strokes": []},
                                             roles=ROLES).camera, near=0.1, far=10)
    m = cam.projection_for(spec["width"] / spec["height"]).astype(np.float64) @ cam.view.astype(np.float64)
    clip = np.c_[np.asarray(points, float), np.ones(len(points))] @ m.T
    ndc = clip[:, :2] / clip[:, 3:]
    return np.c_[(ndc[:, 0] + 1) / 2 * spec["width"], (1 - ndc[:, 1]) / 2 * spec["height"]].tolist()


def test_window_strokes_are_unprojected_onto_the_posing_plane(tmp_path, capsys):
    """Drawn on screen: a baseline over the cylinder, an offset at 90 degrees: the whole limb turns to +X."""
    base = _pixels(UP, CAMERA)
    side = _pixels([[x, 0.0, 0.0] for x in np.linspace(0, 1, 11)], CAMERA)
    f = _write(tmp_path, [{"role": "baseline", "space": "window", "points": base, "times": list(range(11))},
                          {"role": "offset", "space": "window", "points": side}], radius=4)
    npz, png = tmp_path / "w.npz", tmp_path / "w.png"
    assert _pose("cylinder", "--strokes", f, "--export-frame", npz, "--screenshot", png) == 0
    verts = np.concatenate([np.load(npz)[k] for k in np.load(npz).files])
    assert verts[:, 0].max() == pytest.approx(1.0, abs=0.03)  # the tip now points along +X
    assert verts[:, 1].max() < 0.15
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    assert img.shape == (CAMERA["height"], CAMERA["width"], 3)
    for rgb in (BASELINE_RGB, OFFSET_RGB):  # both strokes are drawn over the frame
        assert (np.abs(img - rgb).sum(axis=2) < 30).sum() > 20, rgb
    assert "wrote" in capsys.readouterr().out


def test_screenshot_without_camera_uses_the_default_view(tmp_path):
    f = _write(tmp_path, [{"role": "baseline", "space": "world", "points": UP},
                          {"role": "offset", "space": "world", "points": BENT}], camera=None)
    png = tmp_path / "d.png"
    assert _pose("cylinder", "--strokes", f, "--screenshot", png) == 0
    assert Image.open(png).size == (1280, 720)


def test_the_projection_of_a_world_pair_on_the_posing_plane_poses_like_it(tmp_path, capsys):
    """A world pair on the default posing plane (the camera looks from a little above and aside) and the same
    pair as window pixels, each in its own strokes file: the same joint chain, the same vertices."""
    from engine.authoring.posing import brush_metres, posing_plane, skeleton_root

    spec = {"eye": [0.9, 1.5, 2.5], "target": [0.3, 1.2, 0.0], "up": [0, 1, 0], "fov": 35, "width": 400,
            "height": 300}
    cam = Camera(eye=spec["eye"], target=spec["target"], fov_y=spec["fov"], aspect=4 / 3)
    with Session(device="cpu", render=False) as s:
        ch = s.spawn("humanoid", clip=None)
        arm = [ch.loaded.rig.node_index(n) for n in ("shoulder_L", "upper_arm_L", "forearm_L", "hand_L")]
        joints = ch.joints()[arm, :3, 3].astype(np.float64)
        plane = posing_plane(skeleton_root(ch), cam)
    on = joints - np.outer((joints - plane.point) @ plane.normal, plane.normal)
    base = np.vstack([a + np.linspace(0, 1, 10, endpoint=False)[:, None] * (b - a)
                      for a, b in zip(on[:-1], on[1:])] + [on[-1:]])
    arc = np.radians(np.linspace(0.0, 120.0, 25))
    off = on[0] + 0.55 * (np.outer(np.sin(arc), plane.right) + np.outer(1 - np.cos(arc), plane.up))
    world = _write(tmp_path, [{"role": "baseline", "space": "world", "points": base.tolist()},
                              {"role": "offset", "space": "world", "points": off.tolist()}],
                   camera=spec, radius=0.15, name="world.json")
    window = _write(tmp_path, [{"role": "baseline", "space": "window", "points": _pixels(base, spec)},
                               {"role": "offset", "space": "window", "points": _pixels(off, spec)}],
                    camera=spec, radius=0.15 / brush_metres(1.0, cam, spec["height"], plane), name="window.json")
    out = {}
    for f in (world, window):
        npz = tmp_path / f"{f.stem}.npz"
        assert _pose("humanoid", "--strokes", f, "--export-frame", npz) == 0
        assert "4 joint(s) (shoulder_L, upper_arm_L, forearm_L, hand_L)" in capsys.readouterr().out
        out[f.stem] = np.load(npz)
    assert out["world"].files == out["window"].files
    for k in out["world"].files:
        np.testing.assert_allclose(out["window"][k], out["world"][k], atol=1e-5)


BAD = [
    ({"strokes": [{"role": "offset", "space": "world", "points": UP}]}, "no 'baseline' stroke"),
    ({"strokes": [{"role": "baseline", "space": "world", "points": UP}]}, "needs an offset stroke after it"),
    ({"strokes": [{"role": "baseline", "space": "world", "points": [[0, 0, 0]]},
                  {"role": "offset", "space": "world", "points": UP}]},
     "strokes[0].points: a stroke needs at least two"),
    ({"strokes": [{"role": "baseline", "space": "world", "points": []},
                  {"role": "offset", "space": "world", "points": UP}]}, "at least two points, got 0"),
    ({"strokes": [{"role": "elbow", "space": "world", "points": UP}]}, "strokes[0].role: unknown role 'elbow'"),
    ({"strokes": [{"role": "baseline", "space": "screen", "points": UP}]}, "unknown space 'screen'"),
    ({"camera": None, "strokes": [{"role": "baseline", "space": "window", "points": [[1, 2], [3, 4]]},
                                  {"role": "offset", "space": "window", "points": [[1, 2], [3, 9]]}]},
     "window-space points need a 'camera'"),
    ({"strokes": [{"role": "baseline", "space": "world", "points": [[5, 5, 5], [5, 6, 5]]},
                  {"role": "offset", "space": "world", "points": UP}]}, "selects no joint"),
    ({"version": 7, "strokes": []}, "unsupported version 7"),
]


@pytest.mark.parametrize("doc, needle", BAD)
def test_bad_files_exit_2_with_one_error_line(tmp_path, capsys, doc, needle):
    full = {"version": 1, "camera": CAMERA, "brush_radius": 0.05, **doc}
    if full["camera"] is None:
        del full["camera"]
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(full))
    assert _pose("cylinder", "--strokes", f, "--out", tmp_path / "x.glb") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err
    assert not (tmp_path / "x.glb").exists()


def test_bad_paths_exit_2(tmp_path, capsys):
    (tmp_path / "nojson.json").write_text("{oops")
    assert _pose("cylinder", "--strokes", tmp_path / "nojson.json") == 2
    assert "not JSON" in capsys.readouterr().err
    assert _pose("cylinder", "--strokes", tmp_path / "missing.json") == 2
    f = _write(tmp_path, [{"role": "baseline", "space": "world", "points": UP},
                          {"role": "offset", "space": "world", "points": BENT}])
    assert _pose("cylinder", "--strokes", f, "--out", tmp_path / "p.gltf") == 2
    assert "--out must end in .glb" in capsys.readouterr().err


def test_the_shipped_example_raises_the_humanoids_arm_and_the_readme_has_the_contract(tmp_path, capsys):
    from tests.conftest import ROOT

    npz = tmp_path / "arm.npz"
    assert _pose("humanoid", "--strokes", ROOT / "examples" / "pose_arm.json", "--export-frame", npz) == 0
    assert "(upper_arm_L, forearm_L, hand_L)" in capsys.readouterr().out
    posed = np.concatenate([np.load(npz)[k] for k in np.load(npz).files])
    with Session(device="cpu", render=False) as s:
        rest = np.concatenate(list(s.spawn("humanoid", clip=None).vertices().values()))
    assert posed[:, 1].max() > rest[:, 1].max() + 0.1  # the hand is now above the head
    readme = (ROOT / "README.md").read_text()
    assert ("`python main.py pose ASSET --strokes FILE.json [--clip C --time T] [--deformer D] "
            "[--export-frame OUT.npz] [--out POSED.glb] [--screenshot S.png]`") in readme
    assert "](docs/posing.png)" in readme and (ROOT / "docs" / "posing.png").stat().st_size > 10000


def test_gpu_and_cpu_devices_pose_the_same_vertices(tmp_path):
    f = _write(tmp_path, [{"role": "baseline", "space": "world", "points": UP},
                          {"role": "offset", "space": "world", "points": BENT}], camera=None)
    cpu, gpu = tmp_path / "cpu.npz", tmp_path / "gpu.npz"
    assert _pose("cylinder", "--strokes", f, "--export-frame", cpu) == 0
    assert run(["pose", "cylinder", "--strokes", str(f), "--export-frame", str(gpu), "--device", "gpu"]) == 0
    a, b = np.load(cpu), np.load(gpu)
    assert a.files == b.files
    for k in a.files:
        np.testing.assert_allclose(b[k], a[k], atol=1e-4)


def test_the_readme_example_names_its_strokes_file_from_any_folder(tmp_path, monkeypatch, capsys):
    # `examples/pose_arm.json` is not in tmp_path: it is read from the engine's copy (checkout or wheel)
    monkeypatch.chdir(tmp_path)
    assert run(["pose", "humanoid", "--strokes", "examples/pose_arm.json"]) == 0
    assert "(upper_arm_L, forearm_L, hand_L)" in capsys.readouterr().out
    assert run(["pose", "humanoid", "--strokes", "examples/no_such.json"]) == 2
    assert "no_such.json" in capsys.readouterr().err
