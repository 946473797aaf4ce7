"""The cutscene document without GL: round trip, every refusal as one ``error:`` line naming the key (through the
command line), shots and ``info --json``, camera and weight keys, path timing, clip segments against their clips
sampled directly (crossfades included), ``--range``/``--out`` checks and the OpenTimelineIO export."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from engine.anim import Pose, blend_poses
from engine.anim.timeline import ClipSegment, TimelinePlayback, sample_segments
from engine.scene import quiet_load
from game.cli import run
from game.cutscene.document import Cutscene, CutsceneError, load, loads
from game.cutscene.player import camera_pose, check_assets, path_at, pose_rotations, weight_at
from game.cutscene.render import parse_range, plan_output
from tests.conftest import ROOT

EXAMPLE = ROOT / "assets" / "cutscenes" / "example.toml"

BASE = """\
format = "skinengine-cutscene"
version = 1
fps = 24
duration = 2.0
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
end = 1.0
[[tracks.clips]]
clip = "wave"
start = 1.0
end = 2.0
blend_in = 0.5
[[cameras]]
name = "wide"
[[cameras.keys]]
time = 0.0
eye = [0.0, 1.5, 4.0]
target = [0.0, 1.0, 0.0]
fov = 40.0
[[cameras.keys]]
time = 1.0
eye = [2.0, 1.5, 4.0]
target = [0.0, 1.0, 0.0]
fov = 50.0
ease = "smooth"
[[cameras]]
name = "close"
[[cameras.keys]]
time = 0.0
eye = [0.0, 1.6, 1.5]
target = [0.0, 1.5, 0.0]
[[cuts]]
time = 0.0
camera = "wide"
[[cuts]]
time = 0.75
camera = "close"
[[events]]
time = 0.5
name = "step"
[[events]]
time = 0.51
name = "late"
"""


def _write(tmp_path, text, name="c.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_example_round_trips(tmp_path):
    doc = load(EXAMPLE)
    again = tmp_path / "again.toml"
    doc.save(again)
    back = load(again)
    assert back == doc
    assert loads(back.dumps()) == doc
    assert back.frames == 96 and len(back.shots()) == 3
    # every table kind made it through
    assert {t.type for t in back.tracks} == {"animation", "path", "edits", "pose"}
    assert back.cameras[1].follow == "hero/head"


def test_shots_events_and_info_json(tmp_path, capsys):
    p = _write(tmp_path, BASE)
    doc = load(p)
    assert doc.frames == 48
    assert [(s.camera, s.first, s.last) for s in doc.shots()] == [("wide", 0, 17), ("close", 18, 47)]
    assert doc.shot_of(17).camera == "wide" and doc.shot_of(18).camera == "close"  # the cut switches at its frame
    # the first frame at or after each time
    assert [(e["name"], e["frame"]) for e in doc.event_frames()] == [("step", 12), ("late", 13)]
    assert run(["cutscene", "info", str(p), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info == {"frames": 48, "fps": 24, "duration": 2.0,
                    "shots": [{"camera": "wide", "first": 0, "last": 17}, {"camera": "close", "first": 18, "last": 47}],
                    "characters": ["hero"]}
    assert run(["cutscene", "validate", str(p)]) == 0


REFUSALS = [
    ("duration = 2.0", "duration = -1.0", "duration"),
    ('deformer = "lbs"', 'deformer = "squish"', "characters[0].deformer"),
    ('camera = "close"', 'camera = "crane"', "cuts[1].camera"),
    ("start = 1.0\nend = 2.0", "start = 0.5\nend = 2.0", "tracks[0].clips[1].start"),
    ("time = 1.0\neye = [2.0", "time = 0.0\neye = [2.0", "cameras[0].keys[1].time"),
    ('format = "skinengine-cutscene"', 'format = "skinengine-edits"', "format"),
    ("version = 1", "version = 2", "version"),
    ("fps = 24", "fps = 24\nfsp = 3", "fsp"),
    ('type = "animation"', 'type = "dance"', "tracks[0].type"),
    ("fov = 40.0", "fov = 400.0", "cameras[0].keys[0].fov"),
]


@pytest.mark.parametrize("old,new,key", REFUSALS)
def test_refusals_name_the_key(tmp_path, capsys, old, new, key):
    assert old in BASE
    p = _write(tmp_path, BASE.replace(old, new, 1))
    assert run(["cutscene", "validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert key in err and "Traceback" not in err


def test_refusals_that_need_the_assets(tmp_path, capsys):
    cases = [(BASE.replace('asset = "humanoid"', 'asset = "missing/hero.glb"'), "characters[0].asset"),
             (BASE.replace('clip = "wave"', 'clip = "moonwalk"'), "tracks[0].clips[1].clip"),
             (BASE.replace('name = "wide"', 'name = "wide"\nfollow = "hero/tail"'), "cameras[0].follow")]
    for text, key in cases:
        p = _write(tmp_path, text)
        assert run(["cutscene", "validate", str(p)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: ") and key in err, err
    # cuts in the same frame, or out of order, and a cut at the end
    for cut, msg in (("0.745", "same frame"), ("0.5", "not after"), ("0.0", "not after")):
        p = _write(tmp_path, BASE.replace('time = 0.75\ncamera = "close"',
                                          f'time = 0.74\ncamera = "close"\n[[cuts]]\ntime = {cut}\ncamera = "wide"'))
        with pytest.raises(CutsceneError, match=rf"cuts\[2\]\.time: .*{msg}"):
            load(p)
    with pytest.raises(CutsceneError, match=r"cuts\[1\]\.time: .*end"):
        loads(BASE.replace("time = 0.75", "time = 2.0"))
    with pytest.raises(CutsceneError, match=r"tracks\[0\]\.character: .*spring"):
        loads(_edits_on_lbs())


def _edits_on_lbs() -> str:
    head, rest = BASE.split("[[tracks]]", 1)
    cams = "[[cameras]]" + rest.split("[[cameras]]", 1)[1]
    track = ('[[tracks]]\ncharacter = "hero"\ntype = "edits"\nfile = "x.json"\n'
             '[[tracks.keys]]\ntime = 0.0\nweight = 1.0\n')
    return head + track + cams


def test_camera_keys_interpolate_as_documented():
    doc = loads(BASE)
    wide = doc.camera("wide")
    eye, target, fov = camera_pose(wide, 0.5)  # linear from key 0 (its ease) halfway
    assert np.allclose(eye, [1.0, 1.5, 4.0]) and np.allclose(target, [0, 1, 0]) and math.isclose(fov, 45.0)
    eye, _, fov = camera_pose(wide, 3.0)  # held after the last key
    assert np.allclose(eye, [2.0, 1.5, 4.0]) and fov == 50.0
    smooth = loads(BASE.replace('time = 0.0\neye = [0.0, 1.5, 4.0]', 'time = 0.0\nease = "smooth"\n'
                                'eye = [0.0, 1.5, 4.0]'))
    eye, _, _ = camera_pose(smooth.camera("wide"), 0.25)
    assert np.isclose(eye[0], 2.0 * (0.25 ** 2 * (3 - 2 * 0.25)))  # smoothstep


def test_track_sampled_equals_its_clips_sampled_directly():
    la = quiet_load("humanoid")
    walk, wave = la.asset.clip_index("walk"), la.asset.clip_index("wave")
    segs = [ClipSegment(walk, 0.0, 1.0, offset=0.2, speed=1.5), ClipSegment(wave, 1.0, 2.0, blend_in=0.5)]
    rest = Pose.rest(la.rig)
    fps = 24

    def direct(clip, t):
        return la.samplers[clip].sample(t, Pose.rest(la.rig))

    out = Pose.rest(la.rig)
    # inside the first segment: walk at offset + k * speed / fps (clamped by its duration 1.1 s)
    for k in (0, 5, 13):
        sample_segments(la.samplers, segs, k, fps, out, rest)
        ref = direct(walk, min(0.2 + k * 1.5 / fps, la.samplers[walk].duration))
        assert np.array_equal(out.rotation, ref.rotation) and np.array_equal(out.translation, ref.translation)
    # in the crossfade: blend of walk held at its trim end and wave, weight (t - start) / blend_in
    k = 30  # 1.25 s
    sample_segments(la.samplers, segs, k, fps, out, rest)
    held = direct(walk, min(0.2 + 1.0 * 1.5, la.samplers[walk].duration))
    target = direct(wave, 0.25)
    ref = blend_poses(held, target, 0.5)
    np.testing.assert_allclose(out.rotation, ref.rotation, atol=1e-6)
    np.testing.assert_allclose(out.translation, ref.translation, atol=1e-6)
    # after the fade: wave alone
    sample_segments(la.samplers, segs, 42, fps, out, rest)
    assert np.array_equal(out.rotation, direct(wave, 42 / fps - 1.0).rotation)
    # the playback reads the same and a driven one stays where it is put
    pb = TimelinePlayback(la.rig, la.samplers, segs, fps=fps, frame=30, driven=True)
    pb.advance(1.0)
    assert pb.frame == 30
    np.testing.assert_allclose(pb.evaluate().rotation, ref.rotation, atol=1e-6)
    free = TimelinePlayback(la.rig, la.samplers, segs, fps=fps)
    free.advance(0.5)
    assert free.frame == 12.0


def test_weight_pose_and_path_keys():
    doc = load(EXAMPLE)
    edits = next(t for t in doc.tracks if t.type == "edits")
    assert weight_at(edits, 0.0) == 0.0 and weight_at(edits, 1.0) == 1.0
    assert math.isclose(weight_at(edits, 0.5), 0.5)  # smoothstep is symmetric at the middle
    assert math.isclose(weight_at(edits, 0.25), 0.25 ** 2 * (3 - 0.5))
    pose = next(t for t in doc.tracks if t.type == "pose")
    la = check_assets(doc)["friend"]
    names = {n: i for i, n in enumerate(la.rig.names)}
    before = pose_rotations(pose, names, la.rig.count, 0.0)
    after = pose_rotations(pose, names, la.rig.count, 3.0)
    assert np.allclose(before, [0, 0, 0, 1])
    arm = names["upper_arm_L"]
    q = np.array(pose.keys[1]["joints"]["upper_arm_L"])
    assert np.allclose(after[arm], q / np.linalg.norm(q), atol=1e-6)
    mid = pose_rotations(pose, names, la.rig.count, 2.2)[arm]
    assert 0.6 < abs(mid[3]) < 0.999  # part of the way
    path = next(t for t in doc.tracks if t.type == "path")
    pos, heading = path_at(path, 0.5)
    assert np.allclose(pos, path.points[1]) and heading is not None and 0 < heading < 180
    pos, _ = path_at(path, 0.75)
    assert np.allclose(pos, (np.array(path.points[1]) + path.points[2]) / 2)
    pos, _ = path_at(path, 10.0)
    assert np.allclose(pos, path.points[-1])


def test_range_and_output_checks(tmp_path):
    assert parse_range(None, 4) == [0, 1, 2, 3]
    assert parse_range("1:2", 4) == [1, 2] and parse_range(":1", 4) == [0, 1] and parse_range("2:", 4) == [2, 3]
    for bad in ("3:1", "0:4", "x", "1-2"):
        with pytest.raises(ValueError, match="--range"):
            parse_range(bad, 4)
    with pytest.raises(ValueError, match=r"h264 cannot encode 65x36.*even"):
        plan_output(str(tmp_path / "m.mp4"), "h264", 65, 36)
    with pytest.raises(ValueError, match=r"--codec h264"):
        plan_output(str(tmp_path) + "/", "h264", 64, 36)
    with pytest.raises(ValueError, match="--out"):
        plan_output(str(tmp_path / "m.gif"), None, 64, 36)
    o = plan_output(str(tmp_path / "m.mp4"), None, 64, 36)
    assert o.codec == "h264" and o.events == tmp_path / "m.events.json" and o.frames == tmp_path / "m.mp4.frames"
    o = plan_output(str(tmp_path / "odd.mkv"), "ffv1", 65, 37)  # ffv1 takes any size
    assert o.codec == "ffv1"


def test_odd_size_h264_refused_by_the_command(tmp_path, capsys):
    p = _write(tmp_path, BASE.replace("width = 64", "width = 65"))
    assert run(["cutscene", "render", str(p), "--out", str(tmp_path / "m.mp4")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "even" in err
    assert not (tmp_path / "m.mp4").exists()


def test_export_otio(tmp_path, capsys):
    import opentimelineio as otio

    p = _write(tmp_path, BASE)
    out = tmp_path / "cuts.otio"
    assert run(["cutscene", "export-otio", str(p), "--out", str(out), "--frames", str(tmp_path / "frames")]) == 0
    tl = otio.adapters.read_from_file(str(out))
    clips = list(tl.find_clips())
    assert [c.name for c in clips] == ["wide", "close"]
    assert [(c.source_range.start_time.value, c.source_range.duration.value) for c in clips] == [(0, 18), (18, 30)]
    assert clips[0].source_range.start_time.rate == 24
    assert tl.duration().value == 48
    markers = tl.tracks[0].markers
    assert [(m.name, m.marked_range.start_time.value) for m in markers] == [("step", 12), ("late", 13)]
    assert isinstance(clips[0].media_reference, otio.schema.ImageSequenceReference)


def test_document_object_is_plain_data():
    doc = loads(BASE)
    assert isinstance(doc, Cutscene) and doc.time_of(12) == 0.5
    with pytest.raises(CutsceneError, match="invalid TOML"):
        loads("format = ")


def test_bad_files_and_options_are_one_line(tmp_path, capsys):
    (tmp_path / "dir.toml").mkdir()
    p = _write(tmp_path, BASE)
    cases = [["cutscene", "validate", str(tmp_path / "dir.toml")],
             ["cutscene", "validate", str(tmp_path / "none.toml")],
             ["cutscene", "info", str(tmp_path / "c.json")],
             ["cutscene", "frame", str(p), "--frame", "48", "--out", str(tmp_path / "f.png")],
             ["cutscene", "frame", str(p), "--frame", "0", "--out", str(tmp_path / "f.jpg")],
             ["cutscene", "render", str(p), "--out", str(tmp_path / "m.mp4"), "--range", "5:99"],
             ["cutscene", "render", str(p), "--out", str(tmp_path / "m.mp4"), "--backend", "slurm"],
             ["cutscene"]]
    for argv in cases:
        assert run(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
    assert not (tmp_path / "f.png").exists()


def test_pose_key_from_a_posed_glb_matches_the_strokes(tmp_path):
    """The example's pose key was made from examples/pose_arm.json; the same strokes through ``pose --out``
    give a posed .glb whose pose, keyed by file, is the same layer."""
    from game.cutscene.player import glb_pose_deltas

    posed = tmp_path / "posed.glb"
    assert run(["pose", "humanoid", "--strokes", str(ROOT / "examples" / "pose_arm.json"), "--device", "cpu",
                "--out", str(posed)]) == 0
    deltas = glb_pose_deltas(posed, "pose")
    example = next(t for t in load(EXAMPLE).tracks if t.type == "pose").keys[1]["joints"]
    assert set(deltas) == set(example)
    for j, q in example.items():
        assert np.allclose(deltas[j], q, atol=2e-6), j
    text = BASE.replace('[[cameras]]', '[[tracks]]\ncharacter = "hero"\ntype = "pose"\n[[tracks.keys]]\ntime = 0.5\n'
                        'file = "posed.glb"\n[[cameras]]', 1)
    p = _write(tmp_path, text)
    doc = load(p)
    assert load(doc.save(tmp_path / "again.toml")) == doc  # the file key round-trips
    la = check_assets(doc)["hero"]
    rot = pose_rotations(doc.tracks[1], {n: i for i, n in enumerate(la.rig.names)}, la.rig.count, 1.0,
                         joints=[glb_pose_deltas(posed, "pose")])
    assert np.allclose(rot[la.rig.names.index("upper_arm_L")], deltas["upper_arm_L"], atol=1e-6)
    bad = _write(tmp_path, text.replace('file = "posed.glb"', 'file = "posed.glb"\nclip = "dance"'), "bad.toml")
    with pytest.raises(CutsceneError, match=r"tracks\[1\]\.keys\[0\]\.file: .*dance"):
        check_assets(load(bad))
