"""`main.py vr` end to end on the simulated headset (game/commands/vr.py, game/vr/session.py): the arm posed in
VR equals `pose` with the same world strokes, the exported eye matrices follow the script, the screenshot holds
both eyes side by side, the controller camera draws a stroke all around the cylinder while the head looks away,
a recorded VR session replays bit for bit, and bad input exits 2 with one `error:` line."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from engine.input.simulated_vr import SimulatedHeadset, parse_rig_script
from engine.input.vr import EyeGeometry, pose_matrix
from engine.render.camera import perspective
from game.cli import run

pytestmark = pytest.mark.gl

HEAD = """version = 1
fps = 20
[[hmd]]
time = 0.0
position = [0.0, 1.6, 1.2]
look_at = [0.0, 1.2, 0.0]
[[hmd]]
time = 1.0
position = [0.2, 1.5, 1.0]
look_at = [0.1, 1.2, 0.0]
"""


def _key(t, p, trigger, direction=(0.0, 0.0, -1.0), hand="right"):
    return (f"[[{hand}]]\ntime = {t!r}\nposition = [{p[0]!r}, {p[1]!r}, {p[2]!r}]\n"
            f"direction = [{direction[0]!r}, {direction[1]!r}, {direction[2]!r}]\ntrigger = {trigger!r}\n")


#: a baseline along the humanoid's left arm, then an offset stroke raised above it (not on one line)
ARM = HEAD + "".join(_key(*k) for k in [
    (0.0, (0.185, 1.43, 0.0), 1.0), (0.3, (0.37, 1.23, 0.0), 1.0), (0.5, (0.546, 1.029, 0.0), 0.0),
    (0.6, (0.185, 1.43, 0.0), 1.0), (0.8, (0.35, 1.57, 0.02), 1.0), (1.0, (0.415, 1.79, 0.04), 0.0)])


def _ring(y=0.5, r=0.25, n=12, t0=0.1, span=1.2, sweep=330.0):
    """Controller keys all around the cylinder's axis at height y, pointing at it (the bulge tool)."""
    keys = []
    for i in range(n + 1):
        a = np.radians(-sweep / 2 + sweep * i / n)
        p = (float(r * np.sin(a)), y, float(r * np.cos(a)))
        keys.append(_key(t0 + span * i / n, p, 1.0, (-p[0] / r, 0.0, -p[2] / r)))
    keys.append(_key(t0 + span + 0.05, p, 0.0, (-p[0] / r, 0.0, -p[2] / r)))
    return "".join(keys)


#: the head looks AWAY from the cylinder (along +Z) while the ring is drawn
RING = """version = 1
fps = 20
[bulge]
height = 0.02
rings = 2
[[hmd]]
time = 0.0
position = [0.0, 0.6, 1.5]
look_at = [0.0, 0.6, 3.0]
[[actions]]
time = 0.0
name = "tool:bulge"
""" + _ring()


def _script(tmp_path, text, name="rig.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _strokes_of(script_text):
    """The world strokes the simulated right controller draws (trigger >= 0.5, one sample per frame)."""
    s = parse_rig_script(script_text)
    dev = SimulatedHeadset(s, eye_size=16)
    strokes, cur = [], None
    for i in range(dev.frames):
        r = dev.sample_frame(i).samples["right"]
        if r.pressure >= 0.5:
            cur = cur or {"points": [], "times": []}
            cur["points"].append(list(r.position))
            cur["times"].append(r.t)
        elif cur is not None:
            strokes.append(cur)
            cur = None
    if cur is not None:
        strokes.append(cur)
    return strokes


def test_vr_pose_equals_pose_with_the_same_world_strokes(tmp_path):
    rig = _script(tmp_path, ARM)
    vr_npz, pose_npz = tmp_path / "vr.npz", tmp_path / "pose.npz"
    assert run(["vr", "humanoid", "--device", "simulated", "--script", str(rig), "--headless", "--eye-size", "32",
                "--export-frame", str(vr_npz)]) == 0
    base, off = _strokes_of(ARM)
    doc = {"version": 1, "brush_radius": 0.15, "strokes": [{"role": "baseline", "space": "world", **base},
                                                            {"role": "offset", "space": "world", **off}]}
    strokes = tmp_path / "strokes.json"
    strokes.write_text(json.dumps(doc))
    assert run(["pose", "humanoid", "--strokes", str(strokes), "--export-frame", str(pose_npz)]) == 0
    assert run(["export-frame", "humanoid", "--out", str(tmp_path / "rest.npz")]) == 0
    a, b, rest = np.load(vr_npz), np.load(pose_npz), np.load(tmp_path / "rest.npz")
    key = "node21_mesh0_prim0"
    np.testing.assert_array_equal(a[key], b[key])
    assert np.abs(a[key] - rest[key]).max() > 0.1  # the arm moved
    assert not any(k.endswith("_kinematic") for k in a)  # no edits, no region keys


def test_eye_matrices_follow_the_script_and_screenshot_is_side_by_side(tmp_path):
    rig = _script(tmp_path, ARM)
    npz, png = tmp_path / "f.npz", tmp_path / "eyes.png"
    assert run(["vr", "humanoid", "--device", "simulated", "--script", str(rig), "--headless", "--eye-size", "48",
                "--frames", "5", "--export-frame", str(npz), "--screenshot", str(png)]) == 0
    d = np.load(npz)
    assert d["eye_view"].dtype == np.float32 and d["eye_view"].shape == (2, 4, 4)
    assert d["eye_projection"].shape == (2, 4, 4)
    k = parse_rig_script(ARM).sample("head", 4 / 20)  # the last of 5 frames at 20 fps
    geo = EyeGeometry.simulated(48)
    head = pose_matrix(k.position, k.orientation)
    for eye in (0, 1):
        np.testing.assert_allclose(d["eye_view"][eye], geo.view(eye, head), atol=1e-6)
        np.testing.assert_allclose(d["eye_projection"][eye], perspective(100.0, 1.0, geo.near, geo.far), atol=1e-6)
    # the left eye sits 0.032 m to the head's left
    eye_l = np.linalg.inv(d["eye_view"][0].astype(np.float64))[:3, 3]
    np.testing.assert_allclose(eye_l, head[:3, 3] - 0.032 * head[:3, 0], atol=1e-5)
    img = np.asarray(Image.open(png))
    assert img.shape[:2] == (48, 96)
    left, right = img[:, :48].astype(int), img[:, 48:].astype(int)
    assert left.std() > 5 and np.abs(left - right).max() > 0  # something drawn; the eyes differ (disparity)


def test_controller_camera_draws_all_around_the_cylinder_while_the_head_looks_away():
    from engine import Session
    from game.vr.session import VRSession

    dev = SimulatedHeadset(parse_rig_script(RING), eye_size=32)
    with Session(width=32, height=32, deformer="lbs", strict=True) as s:
        ch = s.spawn("cylinder", clip=None, speed=0.0, mode="clamp")
        rest = np.asarray(next(iter(ch.vertices().values())), np.float64)
        vr = VRSession(s, ch, dev, bulge={"height": 0.02, "rings": 2}, probe_size=16)
        try:
            i = 0
            while vr.frame(dev.actions_at(i)):
                i += 1
            vr.finish()
            surface = [smp for role, smp in vr.strokes if role == "surface"]
            assert len(surface) == 1
            smp = surface[0]
            topo = ch.topology(smp.key)
            tri = np.asarray(topo.triangles)
            x = rest[np.asarray(topo.display_of_control)]
            centres = x[tri[smp.faces]].mean(axis=1)
            angles = np.degrees(np.arctan2(centres[:, 0], centres[:, 2]))
            # every side: the front, both flanks and the back (which the head never sees)
            for lo, hi in ((-45, 45), (45, 135), (-135, -45)):
                assert ((angles > lo) & (angles < hi)).any(), (lo, hi, np.sort(angles))
            assert (np.abs(angles) > 135).any()
            # the reference: each hit lies where the controller's ray meets the cylinder (radius 0.1)
            assert np.allclose(np.hypot(centres[:, 0], centres[:, 2]), 0.1, atol=0.01)
            assert np.allclose(centres[:, 1], 0.5, atol=0.02)
            assert len(ch.edits[smp.key]) == 1 and ch.deformer == "spring"
            assert dev.pulses and dev.pulses[0][0] == "right"  # the snap to the skin pulsed once
            assert len(dev.pulses) == 1
        finally:
            vr.release()


def test_recorded_vr_session_replays_bit_for_bit(tmp_path):
    rig = _script(tmp_path, RING)
    a, b, rec = tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / "s.jsonl"
    assert run(["vr", "cylinder", "--device", "simulated", "--script", str(rig), "--headless", "--eye-size", "32",
                "--export-frame", str(a), "--record", str(rec), "--save", str(tmp_path / "e.json")]) == 0
    head = json.loads(rec.read_text().splitlines()[0])
    assert head["version"] == 2 and head["vr"]["eyes"]["width"] == 32
    assert any('"type": "tracked"' in line and '"controls"' in line for line in rec.read_text().splitlines())
    assert run(["replay", str(rec), "--headless", "--export-frame", str(b)]) == 0
    da, db = np.load(a), np.load(b)
    assert sorted(da) == sorted(db) and "node3_mesh0_prim0_kinematic" in da
    for k in da:
        np.testing.assert_array_equal(da[k], db[k])
    assert json.loads((tmp_path / "e.json").read_text())["primitives"]["node3_mesh0_prim0"]["edits"]


@pytest.mark.parametrize("extra, needle", [
    ([], "--device simulated needs --script"),
    (["--script", "SCRIPT", "--eye-size", "8"], "--eye-size must be in [16"),
    (["--script", "SCRIPT", "--frames", "0"], "--frames must be in [1"),
    (["--script", "SCRIPT", "--save", "out.txt"], "--save must end in .glb or .json"),
    (["--script", "BAD"], "bad.toml: hmd[1].time: keys must be in time order"),
    (["--script", "SCRIPT", "--controller-camera", "0"], "--controller-camera must be in [1, 256]"),
])
def test_refusals_are_one_line(tmp_path, capsys, extra, needle):
    good = _script(tmp_path, ARM)
    bad = _script(tmp_path, HEAD.replace("time = 0.0", "time = 3.0", 1), "bad.toml")
    args = [str(good) if a == "SCRIPT" else str(bad) if a == "BAD" else str(tmp_path / a) if a.startswith("out")
            else a for a in extra]
    assert run(["vr", "humanoid", "--device", "simulated", "--headless", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and needle in err


GRAB = """version = 1
fps = 10
[[hmd]]
time = 0.0
position = [0.0, 1.0, 2.0]
look_at = [0.0, 0.5, 0.0]
""" + "".join(
    f"[[left]]\ntime = {t!r}\nposition = [{lx!r}, 1.0, 0.5]\ngrip = true\n"
    f"[[right]]\ntime = {t!r}\nposition = [{rx!r}, 1.0, 0.5]\ngrip = true\n"
    for t, lx, rx in ((0.0, -0.1, 0.1), (0.5, 0.1, 0.3), (1.0, -0.1, 0.5)))


def test_both_grips_grab_the_world_and_profiler_has_the_eyes():
    """Hands moved together: the world follows them (what was under the hands stays there); hands moved apart
    to twice their distance: the world scale halves; each eye is a profiler scope of the frame."""
    from engine import Session
    from game.vr.session import VRSession

    dev = SimulatedHeadset(parse_rig_script(GRAB), eye_size=16)
    with Session(width=16, height=16, deformer="lbs", strict=True) as s:
        ch = s.spawn("cylinder", clip=None, speed=0.0, mode="clamp")
        vr = VRSession(s, ch, dev)
        try:
            for _ in range(6):  # t = 0 .. 0.5: both hands moved +0.2 in x
                vr.frame()
            t = vr.tracking_to_world
            np.testing.assert_allclose(t @ [0.1, 1.0, 0.5, 1.0], [-0.1, 1.0, 0.5, 1.0], atol=1e-9)
            assert abs(vr.world_scale - 1.0) < 1e-9
            while vr.frame():
                pass
            # at t = 1: the hands are 0.6 apart (0.2 at the grab): 1 m of tracking is 1/3 m of world
            assert abs(vr.world_scale - 0.2 / 0.6) < 1e-9
            names = [e.name for e in s.schedule.history.last.events]
            assert "vr eye left" in names and "vr eye right" in names
        finally:
            vr.release()


def test_shipped_example_poses_the_arm_and_bulges_the_forearm(tmp_path):
    from engine.paths import shipped_file

    out, png = tmp_path / "ex.npz", tmp_path / "eyes.png"
    rig = shipped_file("assets/vr/pose_and_bulge.toml")
    assert run(["vr", "humanoid", "--device", "simulated", "--script", str(rig), "--headless", "--eye-size", "32",
                "--export-frame", str(out), "--screenshot", str(png)]) == 0
    assert run(["export-frame", "humanoid", "--out", str(tmp_path / "rest.npz")]) == 0
    d, rest = np.load(out), np.load(tmp_path / "rest.npz")
    key = "node21_mesh0_prim0"
    moved = np.linalg.norm(d[key] - rest[key], axis=1)
    assert moved.max() > 0.2  # the left arm is raised
    kin = d[f"{key}_kinematic"]
    assert kin.size > 10
    # the bulge is on the RIGHT forearm (x < -0.3 in the rest pose), between elbow and wrist
    assert (rest[key][kin, 0] < -0.3).all() and (rest[key][kin, 1] > 0.95).all() and (rest[key][kin, 1] < 1.3).all()
    assert moved[kin].max() > 0.005  # the right arm is not posed: what moved there is the bulge
    assert np.asarray(Image.open(png)).shape[:2] == (32, 64)


MIRROR_SCRIPT = """
import numpy as np
from engine import Session
from engine.input.simulated_vr import SimulatedHeadset, parse_rig_script
from game.vr.mirror import run_mirror
from game.vr.session import VRSession
from tests.gl.test_vr import RING

dev = SimulatedHeadset(parse_rig_script(RING), eye_size=64, frames=4)
with Session(width=64, height=64, window=True, deformer="lbs", strict=True) as s:
    assert s.gl.window is not None
    ch = s.spawn("cylinder", clip=None, speed=0.0, mode="clamp")
    vr = VRSession(s, ch, dev)
    n = run_mirror(vr, dev.actions_at)
    assert s.ctx.error == "GL_NO_ERROR"
    screen = np.frombuffer(s.ctx.screen.read(viewport=(0, 0, 64, 64), components=4, alignment=1), np.uint8)
    screen = screen.reshape(64, 64, 4)[::-1, :, :3].astype(int)
    left, right = vr.targets.read(0)[..., :3].astype(int), vr.targets.read(1)[..., :3].astype(int)
    s.ctx.error  # reading the window's own framebuffer back leaves GL_INVALID_OPERATION on Mesa/Xvfb: cleared
    print("frames", n, "left", np.abs(screen - left).max(), "right", np.abs(screen - right).max())
    vr.release()
"""


def test_mirror_window_shows_the_left_eye():
    """A real window under Xvfb (THE window loop): the mirror runs the VR frames and shows the left eye."""
    from tests.helpers.xvfb import run_under_xvfb

    r = run_under_xvfb(MIRROR_SCRIPT, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    words = r.stdout.split()
    frames, to_left, to_right = int(words[1]), int(words[3]), int(words[5])
    assert frames == 4 and to_left <= 2 and to_right > to_left


def test_undo_redo_actions_and_buttons_and_flying(tmp_path):
    """The script's undo and redo actions step the pose back and forth; the left controller's primary button
    undoes, its menu button redoes; one grip with the stick pushed flies along the head's forward."""
    from engine import Session
    from engine.input.events import TrackedSample, VRButtons
    from game.vr.session import FLY_SPEED, VRSession

    text = ARM + '[[actions]]\ntime = 1.05\nname = "undo"\n[[actions]]\ntime = 1.1\nname = "redo"\n'
    dev = SimulatedHeadset(parse_rig_script(text), eye_size=16)
    with Session(width=16, height=16, deformer="lbs", strict=True) as s:
        ch = s.spawn("humanoid", clip=None, speed=0.0, mode="clamp")
        vr = VRSession(s, ch, dev)
        try:
            layers = []
            for i in range(dev.frames):
                vr.frame(dev.actions_at(i))
                layer = ch.pose_layer
                layers.append(None if layer is None else np.abs(layer.rotation[:, :3]).max())
            # posed at t=1.0 (frame 20), undone at 1.05 (frame 21), redone at 1.1 (frame 22)
            assert layers[20] is not None and layers[20] > 0.1
            assert not layers[21]
            assert layers[22] == layers[20]
            t = dev.frames / 20.0
            head = dev.sample_frame(0).samples["head"]
            down = TrackedSample(t, "left", (0.0, 1.0, 0.5), controls=VRButtons.PRIMARY)
            vr.run_events([head, down])  # pressed: undo
            assert not np.abs(ch.pose_layer.rotation[:, :3]).max() if ch.pose_layer is not None else True
            vr.run_events([head, TrackedSample(t, "left", (0.0, 1.0, 0.5))])  # released
            vr.run_events([head, TrackedSample(t, "left", (0.0, 1.0, 0.5), controls=VRButtons.MENU)])  # redo
            assert np.abs(ch.pose_layer.rotation[:, :3]).max() == layers[20]
            before = vr.tracking_to_world.copy()
            vr.run_events([head, TrackedSample(t, "left", (0.0, 1.0, 0.5), controls=VRButtons.GRIP, axis=(0.0, 1.0))])
            moved = vr.tracking_to_world[:3, 3] - before[:3, 3]
            # the head looks along -Z (and down): forward flattened to the ground is -Z
            np.testing.assert_allclose(moved, [0.0, 0.0, -FLY_SPEED / 20.0], atol=1e-9)
        finally:
            vr.release()


def test_hand_menu_switches_the_tool_and_sets_parameters():
    """The right controller points at the hand menu's "bulge" button and clicks (trigger down, up): the tool is
    the bulge; then it drags the height slider; the trigger on the menu draws no stroke."""
    from engine import Session
    from engine.input.events import TrackedSample
    from game.vr.hand_menu import PIXELS, SIZE
    from game.vr.session import VRSession

    dev = SimulatedHeadset(parse_rig_script(HEAD), eye_size=16)
    head = dev.sample_frame(0).samples["head"]
    left = TrackedSample(0.0, "left", (-0.2, 1.2, 0.6))  # identity orientation: the menu faces +Z
    with Session(width=16, height=16, deformer="lbs", strict=True) as s:
        ch = s.spawn("cylinder", clip=None, speed=0.0, mode="clamp")
        vr = VRSession(s, ch, dev)
        try:
            vr.run_events([head, left])
            menu = vr.menu
            assert menu is not None and menu.pose is not None and vr.tool == "pose"

            def at(name, trigger, x_frac=0.5):
                x0, y0, x1, y1 = menu.rects[name]
                px, py = x0 + (x1 - x0) * x_frac, (y0 + y1) / 2
                u, v = (px / PIXELS * 2 - 1) * SIZE / 2, (1 - py / PIXELS * 2) * SIZE / 2
                target = menu.pose[:3, 3] + menu.pose[:3, 0] * u + menu.pose[:3, 1] * v
                pos = target + np.array([0.0, 0.0, 0.3])  # 0.3 m in front, pointing back along -Z at it
                return TrackedSample(0.0, "right", tuple(pos.tolist()), (0.0, 0.0, 0.0, 1.0), pressure=trigger)

            for trigger in (0.0, 1.0, 1.0, 0.0, 0.0):
                vr.run_events([head, left, at("tool:bulge", trigger)])
            assert vr.tool == "bulge"
            assert menu.pointer is not None and vr.stroke is None and not vr.strokes
            before = float(vr.bulge.get("height", 0.02))
            for trigger, frac in ((0.0, 0.5), (1.0, 0.5), (1.0, 0.9), (1.0, 0.9), (0.0, 0.9)):
                vr.run_events([head, left, at("bulge.height", trigger, frac)])
            assert float(vr.bulge["height"]) > before
        finally:
            vr.release()


@pytest.mark.parametrize("size", [16, 5, 1])
def test_controller_camera_matches_its_numpy_reference(size):
    """The probe's centre pixel names the triangle the numpy ray cast (engine.render.probe.probe_reference)
    finds on the deformed mesh, at the same place, from several controller poses, at 16x16, 5x5 and 1x1, culled
    and full pass alike. The barycentric and position are the centre ray's on the named triangle's deformed
    corners read back from the GPU, not the rasteriser's interpolation (off by up to ~3e-3 on NVIDIA at 5x5 and
    1x1, where its sub-pixel snapping is coarse against the 10 deg frustum): float32 precision, on any device."""
    from engine import Session
    from engine.input.vr import look_rotation
    from engine.render.probe import ProbeCamera, ProbeRenderer, probe_reference

    with Session(width=32, height=32, deformer="lbs", strict=True) as s:
        ch = s.spawn("humanoid", clip="walk", time=0.3, speed=0.0, mode="clamp")
        s.render()
        (key, display), = ch.vertices().items()
        topo = ch.topology(key)  # triangles over the welded control points (glTF triangle order)
        tri = np.asarray(topo.triangles)
        verts = np.asarray(display, np.float64)[np.asarray(topo.display_of_control)]
        probes = [ProbeRenderer(s.renderer, size, cull=True), ProbeRenderer(s.renderer, size, cull=False)]
        try:
            poses = [((0.0, 1.1, 0.5), (0.0, 0.0, -1.0)), ((0.5, 1.3, 0.3), (-1.0, -0.2, -0.6)),
                     ((0.0, 1.2, -0.6), (0.05, 0.0, 1.0)), ((-0.3, 0.5, 0.4), (0.2, 0.1, -1.0)),
                     ((0.0, 1.1, 0.5), (0.0, 0.0, 1.0))]  # the last one points away from him: nothing
            checked = misses = 0
            for pos, direction in poses:
                cam = ProbeCamera(pose_matrix(pos, look_rotation(direction)))
                ref = probe_reference(verts, tri, cam, size)
                for probe in probes:
                    hit = probe.centre(cam)
                    assert (hit is None) == (ref is None), (pos, probe.cull, hit, ref)
                    if hit is None:
                        misses += 1
                        continue
                    k, bary, where = ref
                    assert hit.triangle == k and hit.entity == ch.entity
                    np.testing.assert_allclose(hit.barycentric, bary, atol=1e-5)
                    np.testing.assert_allclose(hit.position, where, atol=1e-5)
                    vp = np.asarray(cam.projection, np.float64) @ np.asarray(cam.view, np.float64)
                    clip = vp @ np.append(where, 1.0)
                    assert abs(hit.depth - (clip[2] / clip[3] * 0.5 + 0.5)) < 1e-6
                    # the normal: the deformed normals at the exact barycentric, facing the probe like the
                    # G-buffer's (its 16-bit octahedral code at the rasteriser's barycentric: close, not equal)
                    raster = probe.read_rasterised()
                    assert raster is not None and raster.triangle == k
                    assert abs(np.linalg.norm(hit.normal) - 1.0) < 1e-5
                    np.testing.assert_allclose(hit.normal, raster.normal, atol=2e-2)
                    checked += 1
            assert checked >= 6 and misses >= 2  # a miss after a hit: the id target does not keep stale texels
            if size == 16:  # the scene's Phong tessellation does not change what the probe finds (flat triangles)
                cam = ProbeCamera(pose_matrix(poses[0][0], look_rotation(poses[0][1])))
                before = probes[0].centre(cam)
                s.renderer.set_tessellation(True, level=3.0)
                after = [probe.centre(cam) for probe in probes]
                s.renderer.set_tessellation(False)
                assert before is not None and all(h is not None for h in after)
                for h in after:
                    assert h.triangle == before.triangle
                    np.testing.assert_array_equal(h.barycentric, before.barycentric)
        finally:
            for probe in probes:
                probe.release()


def test_silhouette_stroke_beside_the_outline_moves_it():
    """With the silhouette tool, a stroke drawn in the air beside the cylinder's right outline (as the left eye
    sees it) moves that outline out onto it."""
    from engine import Session
    from game.vr.session import VRSession

    text = ("version = 1\nfps = 20\n[bulge]\nrings = 2\n[[hmd]]\ntime = 0.0\nposition = [0.032, 0.5, 0.7]\n"
            "look_at = [0.032, 0.5, 0.0]\n[[actions]]\ntime = 0.0\nname = \"tool:silhouette\"\n"
            + "".join(_key(t, (0.16, y, 0.0), trig) for t, y, trig in
                      ((0.1, 0.35, 1.0), (0.4, 0.5, 1.0), (0.7, 0.65, 1.0), (0.75, 0.65, 0.0), (1.2, 0.65, 0.0))))
    dev = SimulatedHeadset(parse_rig_script(text), eye_size=256)
    with Session(width=256, height=256, deformer="lbs", strict=True) as s:
        ch = s.spawn("cylinder", clip=None, speed=0.0, mode="clamp")
        rest = np.asarray(next(iter(ch.vertices().values())), np.float64)
        vr = VRSession(s, ch, dev)
        try:
            i = 0
            while vr.frame(dev.actions_at(i)):
                i += 1
            vr.finish()
            assert [r for r, _ in vr.strokes] == ["silhouette"] and ch.deformer == "spring"
            now = np.asarray(next(iter(ch.vertices().values())), np.float64)
            band = (rest[:, 1] > 0.4) & (rest[:, 1] < 0.6)
            assert now[band, 0].max() > rest[band, 0].max() + 0.01  # the right outline moved out
        finally:
            vr.release()


def test_vr_recording_replays_from_another_folder(tmp_path, monkeypatch):
    """The recording keeps the asset as given plus its absolute path and hash (engine.input.record), so a
    relative asset path recorded in one folder replays from any other."""
    import shutil

    from tests.conftest import ROOT

    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    shutil.copy(ROOT / "assets" / "cylinder.glb", work / "cyl.glb")
    rig = _script(tmp_path, RING)
    a, b, rec = tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / "s.jsonl"
    monkeypatch.chdir(work)
    assert run(["vr", "cyl.glb", "--device", "simulated", "--script", str(rig), "--headless", "--eye-size", "16",
                "--frames", "3", "--export-frame", str(a), "--record", str(rec)]) == 0
    head = json.loads(rec.read_text().splitlines()[0])
    assert head["assets"][0]["source"] == "cyl.glb" and len(head["assets"][0]["sha256"]) == 64
    monkeypatch.chdir(elsewhere)
    assert run(["replay", str(rec), "--headless", "--export-frame", str(b)]) == 0
    da, db = np.load(a), np.load(b)
    for k in da:
        np.testing.assert_array_equal(da[k], db[k])


def test_controller_camera_cluster_culling_keeps_every_pixel():
    """The culled probe pass (only the clusters the probe's frustum meets) draws far fewer triangles than the
    character has and gives every pixel of the probe image the full pass gives (same mesh, triangle)."""
    from engine import Session
    from engine.input.vr import look_rotation
    from engine.render.probe import ProbeCamera, ProbeRenderer

    with Session(width=32, height=32, deformer="lbs", strict=True) as s:
        ch = s.spawn("humanoid", clip="walk", time=0.3, speed=0.0, mode="clamp")
        s.render()
        culled, full = ProbeRenderer(s.renderer, 5, cull=True), ProbeRenderer(s.renderer, 5, cull=False)
        total = sum(h.triangle_count for h in s.renderer.shared_state().meshes.draw_lists(())[None])
        try:
            pixels = [(x, y) for y in range(5) for x in range(5)]
            on_skin = 0
            for pos, direction in [((0.0, 1.1, 0.5), (0.0, 0.0, -1.0)), ((0.5, 1.3, 0.3), (-1.0, -0.2, -0.6)),
                                   ((0.0, 1.2, -0.6), (0.05, 0.0, 1.0))]:
                cam = ProbeCamera(pose_matrix(pos, look_rotation(direction)))
                culled.render(cam, entities=(ch.entity,))
                full.render(cam, entities=(ch.entity,))
                a = culled._reader.query_many(pixels, layer="gbuffer")
                b = full._reader.query_many(pixels, layer="gbuffer")
                for ha, hb in zip(a, b):
                    assert (ha is None) == (hb is None)
                    if ha is not None:
                        assert (ha.mesh_id, ha.triangle) == (hb.mesh_id, hb.triangle)
                        on_skin += 1
                assert culled.drawn_triangles < total / 4, (culled.drawn_triangles, total)
            assert on_skin >= 25
            away = ProbeCamera(pose_matrix((0.0, 1.1, 0.5), look_rotation((0.0, 0.0, 1.0))))  # its back to him
            assert culled.centre(away) is None and culled.drawn_triangles == 0 and full.centre(away) is None
            near = ProbeCamera(pose_matrix((0.0, 1.1, 0.5), look_rotation((0.0, 0.0, -1.0))))
            hit, ref = culled.centre(near), full.centre(near)  # after the empty frame, a hit again
            assert hit is not None and ref is not None and (hit.mesh_id, hit.triangle) == (ref.mesh_id, ref.triangle)
        finally:
            culled.release()
            full.release()


TELEPORT = """version = 1
fps = 20
[[hmd]]
time = 0.0
position = [0.0, 1.6, 1.2]
look_at = [0.0, 1.2, 0.0]
[[right]]
time = 0.0
position = [0.2, 1.2, 0.8]
direction = [0.0, 0.2, -1.0]
grip = true
stick = [0.0, 1.0]
[[right]]
time = 0.3
position = [0.2, 1.2, 0.8]
direction = [0.0, 0.2, -1.0]
grip = true
[[right]]
time = 0.35
position = [0.2, 1.2, 0.8]
direction = [0.0, 0.2, -1.0]
[[left]]
time = 0.0
position = [-0.2, 1.2, 0.8]
[[left]]
time = 0.4
position = [-0.2, 1.2, 0.8]
grip = true
stick = [1.0, 0.0]
[[left]]
time = 0.5
position = [-0.2, 1.2, 0.8]
"""


def test_teleport_and_fly_from_the_script_sticks():
    """The right grip with its stick pushed (the script's ``stick``) aims a parabola and moves nothing; the stick
    released, the head moves horizontally to where the arc lands on the ground. Then the left grip with its stick
    pushed right flies sideways."""
    from engine import Session
    from game.vr.session import FLY_SPEED, VRSession, teleport_arc

    dev = SimulatedHeadset(parse_rig_script(TELEPORT), eye_size=16)
    with Session(width=16, height=16, deformer="lbs", strict=True) as s:
        ch = s.spawn("cylinder", clip=None, speed=0.0, mode="clamp")
        vr = VRSession(s, ch, dev)
        try:
            for i in range(6):  # t 0 .. 0.25: aiming
                vr.frame(dev.actions_at(i))
                assert vr.teleport_target is not None
                np.testing.assert_array_equal(vr.tracking_to_world, np.eye(4))
            right = vr.world_pose("right")
            pts, land = teleport_arc(right[:3, 3], -right[:3, 2])
            assert land is not None and land[2] < -1.0 and pts[:, 1].max() > 1.2  # up, then down, ahead
            np.testing.assert_allclose(vr.teleport_target, land)
            vr.frame(dev.actions_at(6))  # t 0.3: the stick released: teleported
            assert vr.teleport_target is None
            head = vr.world_pose("head")[:3, 3]
            np.testing.assert_allclose(head, [land[0], 1.6, land[2]], atol=1e-9)
            before = vr.tracking_to_world.copy()
            for i in range(7, 9):  # t 0.35 (the right grip let go) .. 0.4 (the left grip and stick)
                vr.frame(dev.actions_at(i))
            moved = vr.tracking_to_world[:3, 3] - before[:3, 3]
            np.testing.assert_allclose(moved, [FLY_SPEED / 20.0, 0.0, 0.0], atol=1e-9)  # the head's right is +X
        finally:
            vr.release()
