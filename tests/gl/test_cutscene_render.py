"""Cutscenes drawn end to end at tiny sizes: ``cutscene frame`` equals ``render`` pixel for pixel, ffv1 movies
decode (PyAV) to ``cutscene frame`` exactly, the process backend (and Ray when installed) writes the same frames
as serial bit for bit (frames for frame-independent deformers, shots with preroll for frame-dependent springs),
resume keeps valid frames and redoes a truncated one, an edit-weight key reaches the deformer, and the example
in assets/cutscenes/ renders."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from game.cli import run
from game.cutscene.document import load
from game.cutscene.render import frame_name, plan_output, render_cutscene
from tests.conftest import ROOT

pytestmark = pytest.mark.gl

EXAMPLES = ROOT / "assets" / "cutscenes"

ONE_CLIP = """\
format = "skinengine-cutscene"
version = 1
fps = 8
duration = 0.5
width = 64
height = 36
[[characters]]
name = "hero"
asset = "humanoid"
deformer = "lbs"
[[tracks]]
character = "hero"
type = "animation"
[[tracks.clips]]
clip = "walk"
start = 0.0
end = 0.5
offset = 0.3
speed = 1.5
[[cameras]]
name = "fixed"
[[cameras.keys]]
time = 0.0
eye = [0.5, 1.4, 3.0]
target = [0.0, 0.9, 0.0]
fov = 40.0
[[events]]
time = 0.2
name = "step"
"""


def _png(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def _doc(tmp_path: Path, text: str = ONE_CLIP, name: str = "c.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _decode(movie: Path) -> list[np.ndarray]:
    import av

    with av.open(str(movie)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def test_frame_equals_render_pixel_for_pixel(tmp_path):
    p = _doc(tmp_path)
    for k in (0, 3):
        assert run(["cutscene", "frame", str(p), "--frame", str(k), "--out", str(tmp_path / f"c{k}.png"),
                    "--export-frame", str(tmp_path / f"c{k}.npz"), "--gbuffer", str(tmp_path / f"cg{k}.npz")]) == 0
        assert run(["render", "humanoid", "--clip", "walk", "--time", repr(0.3 + k * 1.5 / 8), "--camera",
                    "0.5,1.4,3.0:0.0,0.9,0.0", "--fov", "40", "--width", "64", "--height", "36",
                    "--out", str(tmp_path / f"r{k}.png"), "--gbuffer", str(tmp_path / f"rg{k}.npz")]) == 0
        cg, rg = np.load(tmp_path / f"cg{k}.npz"), np.load(tmp_path / f"rg{k}.npz")
        assert cg.files == rg.files and all(np.array_equal(cg[f], rg[f]) for f in cg.files)
        a, b = _png(tmp_path / f"c{k}.png"), _png(tmp_path / f"r{k}.png")
        assert a.shape == (36, 64, 3) and a.std() > 1.0  # something is drawn
        assert np.array_equal(a, b), f"frame {k} differs from render in {(a != b).any(-1).sum()} pixels"
    v0, v3 = np.load(tmp_path / "c0.npz"), np.load(tmp_path / "c3.npz")
    assert v0.files == ["node21_mesh0_prim0"] and not np.allclose(v0[v0.files[0]], v3[v3.files[0]])


def test_ffv1_movie_decodes_to_cutscene_frames_with_events(tmp_path, capsys):
    p = _doc(tmp_path)
    movie = tmp_path / "out" / "m.mkv"
    assert run(["cutscene", "render", str(p), "--out", str(movie), "--codec", "ffv1"]) == 0
    frames = _decode(movie)
    assert len(frames) == 4
    for k in range(4):
        assert run(["cutscene", "frame", str(p), "--frame", str(k), "--out", str(tmp_path / "f.png")]) == 0
        assert np.array_equal(frames[k], _png(tmp_path / "f.png")), k
    import json

    assert json.loads((tmp_path / "out" / "m.events.json").read_text()) == [{"time": 0.2, "frame": 2, "name": "step"}]
    # h264 at an even size: four frames of the right size (lossy, so only near)
    assert run(["cutscene", "render", str(p), "--out", str(tmp_path / "m.mp4"), "--range", "1:2"]) == 0
    h = _decode(tmp_path / "m.mp4")
    assert len(h) == 2 and h[0].shape == (36, 64, 3)
    assert np.abs(h[0].astype(int) - frames[1]).mean() < 12


def _render_dir(doc_path: Path, out: Path, backend: str, **kw) -> object:
    doc = load(doc_path)
    output = plan_output(str(out) + "/", None, doc.width, doc.height)
    return render_cutscene(doc, output, list(range(doc.frames)), backend=backend, **kw)


def _same_dirs(a: Path, b: Path, n: int) -> None:
    for k in range(n):
        x, y = _png(a / frame_name(k)), _png(b / frame_name(k))
        assert np.array_equal(x, y), f"frame {k} differs"


def test_process_backend_equals_serial(tmp_path):
    p = _doc(tmp_path)
    _render_dir(p, tmp_path / "serial", "serial")
    res = _render_dir(p, tmp_path / "proc", "process", workers=2)
    assert res.drawn == [0, 1, 2, 3]
    _same_dirs(tmp_path / "serial", tmp_path / "proc", 4)


@pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                    reason="Ray is an optional extra (pip install '.[ray]'); the process backend is tested instead")
def test_ray_backend_equals_serial(tmp_path):
    p = _doc(tmp_path)
    _render_dir(p, tmp_path / "serial", "serial")
    _render_dir(p, tmp_path / "ray", "ray", workers=2)
    _same_dirs(tmp_path / "serial", tmp_path / "ray", 4)


def test_resume_keeps_valid_frames_and_redoes_a_truncated_one(tmp_path):
    p = _doc(tmp_path)
    out = tmp_path / "seq"
    first = _render_dir(p, out, "serial")
    assert first.drawn == [0, 1, 2, 3] and first.kept == []
    before = {k: _png(out / frame_name(k)) for k in range(4)}
    raw = (out / frame_name(1)).read_bytes()
    (out / frame_name(1)).write_bytes(raw[: len(raw) // 2])  # a render killed while writing
    (out / frame_name(2)).unlink()
    again = _render_dir(p, out, "serial")
    assert again.kept == [0, 3] and again.drawn == [1, 2]
    for k in range(4):
        assert np.array_equal(_png(out / frame_name(k)), before[k])
    # another document in the same folder: nothing is reused
    p2 = _doc(tmp_path, ONE_CLIP.replace("speed = 1.5", "speed = 1.0"), "c2.toml")
    third = _render_dir(p2, out, "serial")
    assert third.kept == [] and third.drawn == [0, 1, 2, 3]
    # back to the first document for two frames: the other document's frames 2 and 3 go, and are drawn again later
    doc = load(p)
    render_cutscene(doc, plan_output(str(out) + "/", None, 64, 36), [0, 1])
    assert sorted(f.name for f in out.glob("frame_*.png")) == [frame_name(0), frame_name(1)]
    fourth = _render_dir(p, out, "serial")
    assert fourth.kept == [0, 1] and fourth.drawn == [2, 3]
    for k in range(4):
        assert np.array_equal(_png(out / frame_name(k)), before[k])


EDITS = """\
format = "skinengine-cutscene"
version = 1
fps = 8
duration = 0.5
width = 64
height = 36
[[characters]]
name = "friend"
asset = "humanoid"
deformer = "spring"
[characters.config.spring]
max_iterations = 10
[[tracks]]
character = "friend"
type = "edits"
file = "{edits}"
[[tracks.keys]]
time = 0.0
weight = 0.0
[[tracks.keys]]
time = 0.25
weight = 1.0
[[cameras]]
name = "front"
[[cameras.keys]]
time = 0.0
eye = [1.5, 1.1, 0.0]
target = [0.0, 1.1, 0.0]
"""


def test_edit_weight_key_reaches_the_deformer(tmp_path):
    from engine.authoring.stage import export_vertices
    from game.cutscene.player import CutscenePlayer

    edits = EXAMPLES / "belly.edits.json"
    doc = load(_doc(tmp_path, EDITS.format(edits=edits.as_posix())))
    plain = load(_doc(tmp_path, EDITS.format(edits=edits.as_posix()).split("[[tracks]]")[0]
                      + "[[cameras]]" + EDITS.split("[[cameras]]")[1], "plain.toml"))
    with CutscenePlayer(doc, device="gpu") as p:
        p.render(0)
        off = next(iter(export_vertices(p.session).values()))
        p.render(2)
        on = next(iter(export_vertices(p.session).values()))
        edit = p.characters["friend"].edits
        assert all(float(e.weight(0.0)) == 1.0 for st in edit.values() for e in st)  # the key reached the edit
    with CutscenePlayer(plain, device="gpu") as p:
        p.render(0)
        none = next(iter(export_vertices(p.session).values()))
    np.testing.assert_allclose(off, none, atol=1e-5)  # weight 0: as if there were no edit
    moved = np.linalg.norm(on - off, axis=1)
    assert moved.max() > 5e-3, "weight 1 should move the edited region"


SPRINGS = """\
format = "skinengine-cutscene"
version = 1
fps = 30
duration = 0.2
width = 32
height = 32
[[characters]]
name = "tube"
asset = "cylinder"
deformer = "spring"
[characters.config.spring]
mode = "dependent"
max_iterations = 8
[[tracks]]
character = "tube"
type = "animation"
[[tracks.clips]]
clip = "bend"
start = 0.0
end = 0.2
speed = 5.0
[[cameras]]
name = "a"
[[cameras.keys]]
time = 0.0
eye = [0.0, 0.5, 3.0]
target = [0.0, 0.5, 0.0]
[[cameras]]
name = "b"
[[cameras.keys]]
time = 0.0
eye = [3.0, 0.5, 0.0]
target = [0.0, 0.5, 0.0]
[[cuts]]
time = 0.0
camera = "a"
[[cuts]]
time = 0.1
camera = "b"
"""


def test_frame_dependent_springs_render_shots_with_preroll(tmp_path):
    from game.cutscene.player import frame_dependent

    p = _doc(tmp_path, SPRINGS)
    doc = load(p)
    assert frame_dependent(doc) and [(s.first, s.last) for s in doc.shots()] == [(0, 2), (3, 5)]
    _render_dir(p, tmp_path / "serial", "serial", preroll=0.1)
    _render_dir(p, tmp_path / "proc", "process", workers=2, preroll=0.1)
    _same_dirs(tmp_path / "serial", tmp_path / "proc", 6)
    # one frame alone simulates its shot the same way
    assert run(["cutscene", "frame", str(p), "--frame", "4", "--preroll", "0.1",
                "--out", str(tmp_path / "f.png")]) == 0
    assert np.array_equal(_png(tmp_path / "f.png"), _png(tmp_path / "serial" / frame_name(4)))


def test_example_renders_at_a_small_size(tmp_path, capsys):
    text = (EXAMPLES / "example.toml").read_text()
    text = text.replace("width = 640", "width = 64").replace("height = 360", "height = 36")
    text = text.replace('file = "belly.edits.json"', f'file = "{(EXAMPLES / "belly.edits.json").as_posix()}"')
    p = _doc(tmp_path, text, "example.toml")
    assert run(["cutscene", "validate", str(p)]) == 0
    out = tmp_path / "seq"
    assert run(["cutscene", "render", str(p), "--out", str(out) + "/", "--range", "70:73"]) == 0
    imgs = [_png(out / frame_name(k)) for k in range(70, 74)]
    assert all(i.shape == (36, 64, 3) and i.std() > 1.0 for i in imgs)
    assert np.abs(imgs[1].astype(int) - imgs[2]).mean() > np.abs(imgs[0].astype(int) - imgs[1]).mean(), \
        "the cut at frame 72 changes the picture more than a frame of motion"
    assert (out / "events.json").is_file()


def test_pose_key_from_a_glb_poses_like_its_joints(tmp_path):
    from engine.authoring.stage import export_vertices
    from game.cutscene.player import CutscenePlayer, glb_pose_deltas

    posed = tmp_path / "posed.glb"
    assert run(["pose", "humanoid", "--strokes", str(ROOT / "examples" / "pose_arm.json"), "--device", "cpu",
                "--out", str(posed)]) == 0
    joints = "".join(f"{j} = {q}\n" for j, q in glb_pose_deltas(posed, "pose").items())
    pose = '[[tracks]]\ncharacter = "hero"\ntype = "pose"\n[[tracks.keys]]\ntime = 0.0\n'
    by_file = ONE_CLIP.replace("[[cameras]]", pose + 'file = "posed.glb"\n[[cameras]]', 1)
    by_joints = ONE_CLIP.replace("[[cameras]]", pose + "[tracks.keys.joints]\n" + joints + "[[cameras]]", 1)
    out = []
    for i, text in enumerate((by_file, by_joints, ONE_CLIP)):
        with CutscenePlayer(load(_doc(tmp_path, text, f"p{i}.toml")), device="cpu") as p:
            p.render(1)
            out.append(next(iter(export_vertices(p.session).values())))
    np.testing.assert_array_equal(out[0], out[1])
    assert np.abs(out[0] - out[2]).max() > 0.05  # the arm is raised


def test_sine_edit_travels_with_the_live_clip_time(tmp_path):
    """A sine profile moves over clip time; in a cutscene that is the live segment's clip time."""
    import json

    from engine.authoring.stage import export_vertices
    from game.cutscene.player import CutscenePlayer

    data = json.loads((EXAMPLES / "belly.edits.json").read_text())
    for stack in data["primitives"].values():
        for e in stack["edits"]:
            tl = np.asarray(e["target_local"])
            e["profile"] = {"type": "sine", "height": 0.03, "direction": "normal", "waves": 1.0, "speed": 1.0}
            e["param"] = np.linspace(0.0, 1.0, len(tl)).tolist()
            e["direction_local"] = (tl / np.linalg.norm(tl, axis=1, keepdims=True)).tolist()
    sine = tmp_path / "sine.edits.json"
    sine.write_text(json.dumps(data))
    text = EDITS.format(edits=sine.as_posix()).replace("time = 0.25\nweight = 1.0", "time = 0.1\nweight = 1.0")
    text = text.replace('[[tracks]]\ncharacter = "friend"\ntype = "edits"', '[[tracks]]\ncharacter = "friend"\n'
                        'type = "animation"\n[[tracks.clips]]\nclip = "idle"\nstart = 0.0\nend = 0.5\n'
                        '[[tracks]]\ncharacter = "friend"\ntype = "edits"')
    plain = text.split('[[tracks]]\ncharacter = "friend"\ntype = "edits"')[0] + "[[cameras]]" + \
        text.split("[[cameras]]")[1]
    verts = {}
    for i, t in enumerate((text, plain)):
        with CutscenePlayer(load(_doc(tmp_path, t, f"s{i}.toml"))) as p:
            for k in (1, 3):  # 0.125 s and 0.375 s: weight 1 at both, the wave a quarter period on
                p.render(k)
                verts[i, k] = next(iter(export_vertices(p.session).values()))
    offsets = [verts[0, k] - verts[1, k] for k in (1, 3)]
    change = np.linalg.norm(offsets[0] - offsets[1], axis=1).max()
    assert change > 0.01, f"the wave should move by about its height between the frames, moved {change:.4f} m"
