"""The renderer's fast paths keep the results of the plain ones: only depth targets are cleared (id texels
of pixels without a surface are masked by depth, however stale), and only where the last frame drew (the
G-buffer after moving meshes is the one a fresh renderer draws; a layer change or a failed frame clears it
whole), single-sided meshes cull back faces (glTF
doubleSided false) and look the same from outside, batched submission (glFlush every few meshes) changes
nothing in the frame; and the render benchmark's helpers: the batched crowd animation equals per-instance
sampling, and the copy of CesiumMan handed to Panda3D (skeleton parents moved onto the Actor) skins to the
same vertices as the original."""
from __future__ import annotations

import numpy as np
import pytest

from engine.render import shapes
from engine.render.camera import Camera
from engine.render.renderer import LookSettings, SceneRenderer, gl_flush_function
from tests.conftest import shared_dir

pytestmark = pytest.mark.gl

W, H = 64, 48


@pytest.fixture()
def renderer(gl_ctx, res):
    r = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
    yield r
    r.release()


def _camera(eye=(0.0, 0.3, 3.0), target=(0.0, 0.0, 0.0)):
    return Camera(eye=np.array(eye), target=np.array(target), fov_y=50.0, near=0.1, far=10.0, aspect=W / H)


def test_stale_ids_of_uncovered_pixels_are_masked(renderer):
    p, t, _ = shapes.uv_sphere(0.5, (-0.5, 0.0, 0.0), rings=8, segments=12)
    h = renderer.add_mesh(t, len(p), positions=p)
    renderer.render(_camera())
    before = renderer.surface_arrays()["mesh"] >= 0
    assert before.sum() > 50
    # move the sphere to the other side: its old pixels now show nothing, in every source
    renderer.update_vertices(h, p + np.array([1.0, 0.0, 0.0], np.float32))
    renderer.render(_camera())
    for source in ("frame", "gbuffer"):
        g = renderer.surface_arrays(source)
        now = g["mesh"] >= 0
        vacated = before & ~now
        assert vacated.sum() > 30, source
        assert np.all(g["triangle"][vacated] == -1) and not g["normal"][vacated].any(), source
        assert np.all(g["depth"][vacated] == 1.0), source
    y, x = np.argwhere(before & ~(renderer.surface_arrays()["mesh"] >= 0))[0]
    assert renderer.query(int(x), int(y)) is None
    assert renderer.query(int(x), int(y), layer="gbuffer") is None
    pending = renderer.query_async([(int(x), int(y))])
    renderer.render(_camera())
    assert pending.result() == [None]
    # and a hidden mesh leaves nothing behind either
    h.visible = False
    renderer.invalidate()
    renderer.render(_camera())
    assert (renderer.surface_arrays()["mesh"] < 0).all()


def _sphere_frames(r, centres, *, layer=None):
    """Render one sphere at each centre in turn (one mesh, moved); returns the handle."""
    p, t, _ = shapes.uv_sphere(0.4, rings=8, segments=12)
    h = r.add_mesh(t, len(p), positions=p + np.asarray(centres[0], np.float32), layer=layer)
    for c in centres:
        r.update_vertices(h, p + np.asarray(c, np.float32))
        r.render(_camera())
    return h


def _assert_same_gbuffer(a, b, source="gbuffer"):
    ga, gb = a.surface_arrays(source), b.surface_arrays(source)
    for key in ("mesh", "triangle", "depth", "normal"):
        np.testing.assert_array_equal(ga[key], gb[key], err_msg=key)


def test_gbuffer_cleared_where_the_last_frame_drew_equals_a_full_clear(gl_ctx, res, renderer, monkeypatch):
    import moderngl

    full_clears = []
    original = moderngl.Framebuffer.clear
    monkeypatch.setattr(moderngl.Framebuffer, "clear",
                        lambda self, *a, **k: (full_clears.append(self), original(self, *a, **k)))
    path = [(-0.8, 0.0, 0.0), (-0.2, 0.3, 0.0), (0.7, -0.2, 0.0), (0.1, 0.0, -2.0)]
    _sphere_frames(renderer, path)
    scene = renderer._targets.scene
    assert not scene.stale and sum(fb is scene.clear_fbo for fb in full_clears) == 1  # the first frame only
    assert renderer.screen_rect() is not None
    fresh = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
    try:
        _sphere_frames(fresh, path[-1:])
        _assert_same_gbuffer(renderer, fresh)
        assert (renderer.surface_arrays("gbuffer")["mesh"] >= 0).sum() > 50
        np.testing.assert_array_equal(renderer.read_pixels(), fresh.read_pixels())
    finally:
        fresh.release()


def test_layer_change_and_failed_frame_clear_the_gbuffers_whole(gl_ctx, res, renderer, monkeypatch):
    _sphere_frames(renderer, [(-0.6, 0.0, 0.0), (0.0, 0.0, 0.0)])
    renderer.add_layer("a")
    renderer.add_layer("b")
    scene = renderer._targets.scene
    assert renderer._targets.layers["b"].stale and not scene.stale  # a new G-buffer starts stale
    hb = _sphere_frames(renderer, [(0.5, 0.2, 0.0), (0.3, -0.2, 0.0)], layer="b")
    assert not renderer._targets.layers["b"].stale
    renderer.remove_layer("a")  # b moves to a's rectangle slot: every G-buffer is cleared whole next frame
    assert scene.stale and renderer._targets.layers["b"].stale
    renderer.render(_camera())
    assert not scene.stale

    from engine.render.passes.shadow import ShadowPass

    def fail(self, state, frame):  # after the rectangles were reset, before the G-buffers were drawn
        raise RuntimeError("shadow failed")

    monkeypatch.setattr(ShadowPass, "run", fail)
    renderer.update_vertices(hb, shapes.uv_sphere(0.4, (-0.7, 0.0, 0.0), rings=8, segments=12)[0])
    with pytest.raises(RuntimeError, match="shadow failed"):
        renderer.render(_camera())
    assert scene.stale and renderer._targets.layers["b"].stale
    monkeypatch.undo()
    renderer.render(_camera())
    fresh = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
    try:
        fresh.add_layer("b")
        p, t, _ = shapes.uv_sphere(0.4, rings=8, segments=12)
        fresh.add_mesh(t, len(p), positions=p)
        fresh.add_mesh(t, len(p), positions=shapes.uv_sphere(0.4, (-0.7, 0.0, 0.0), rings=8, segments=12)[0],
                       layer="b")
        fresh.render(_camera())
        _assert_same_gbuffer(renderer, fresh)
        _assert_same_gbuffer(renderer, fresh, "b")
    finally:
        fresh.release()


def test_single_sided_mesh_culls_back_faces_only(renderer):
    p, t, _ = shapes.box((1.0, 1.0, 1.0))
    two = renderer.add_mesh(t, len(p), positions=p, double_sided=True)
    renderer.render(_camera())
    outside_two = renderer.surface_arrays()
    img_two = renderer.read_pixels()
    renderer.remove_mesh(two)
    one = renderer.add_mesh(t, len(p), positions=p, double_sided=False)
    assert not one.double_sided
    renderer.render(_camera())
    outside_one = renderer.surface_arrays()
    # from outside a closed mesh the front faces are all there is to see: the same frame
    np.testing.assert_array_equal(outside_one["triangle"], outside_two["triangle"])
    assert np.abs(renderer.read_pixels().astype(int) - img_two.astype(int)).max() <= 1
    # from inside, the single-sided box shows nothing (only back faces face the camera) ...
    inside = _camera(eye=(0.0, 0.0, 0.2), target=(0.0, 0.0, -1.0))
    renderer.render(inside)
    assert (renderer.surface_arrays()["mesh"] < 0).all()
    # ... while a double-sided one shows its inside, with normals turned towards the eye
    renderer.remove_mesh(one)
    renderer.add_mesh(t, len(p), positions=p)
    renderer.render(inside)
    g = renderer.surface_arrays()
    hit = g["mesh"] >= 0
    assert hit.mean() > 0.9
    to_eye = np.array([0.0, 0.0, 0.2]) - g["position"][hit]
    assert (np.einsum("ij,ij->i", g["normal"][hit], to_eye) > 0).mean() > 0.95


def test_batched_submission_changes_nothing(gl_ctx, renderer):
    assert gl_flush_function(gl_ctx) is not None  # the EGL loader provides glFlush
    for k in range(6):
        p, t, _ = shapes.uv_sphere(0.3, (-1.0 + 0.4 * k, 0.1 * k, -0.3 * k), rings=6, segments=10)
        renderer.add_mesh(t, len(p), positions=p, base_color=(0.2 + 0.1 * k, 0.5, 0.3, 1.0),
                          double_sided=bool(k % 2))
    frames = {}
    for every in (0, 1, 100):
        renderer.flush_triangles = every
        renderer.render(_camera(eye=(0.0, 0.5, 3.5)))
        frames[every] = (renderer.read_pixels(), renderer.surface_arrays()["triangle"])
    assert (frames[0][1] >= 0).sum() > 200
    for every in (1, 100):
        np.testing.assert_array_equal(frames[every][0], frames[0][0])
        np.testing.assert_array_equal(frames[every][1], frames[0][1])


def test_bench_crowd_animation_is_the_per_instance_one(gl_ctx):
    """The bench's crowd runs the engine's frame, whose animation system samples every character playing the
    same clip in one batch: each character's pose is the one its own clip time gives, desynchronised."""
    shared_dir("gltf-samples")
    from bench.bench_render import PHASE_S, Crowd
    from engine.anim import ClipSampler, Pose
    from engine.anim.fk import global_matrices
    from engine.components import SkeletonPose

    crowd = Crowd(gl_ctx, 32, 32, 3)
    try:
        s = crowd.session
        for _ in range(4):
            crowd.frame()
        rig = crowd.characters[0].loaded.rig
        clip = crowd.characters[0].asset.clips[0]
        sampler = ClipSampler(rig, clip)
        g = [s.world.get(ch.entity, SkeletonPose).globals for ch in crowd.characters]
        for i, ch in enumerate(crowd.characters):
            pose = Pose.rest(rig)
            sampler.sample((PHASE_S * i + 4 * s.clock.step) % sampler.duration, pose)
            np.testing.assert_allclose(g[i], ch.matrix @ global_matrices(rig, pose), atol=1e-5)
        assert np.abs(g[0] - g[1]).max() > 1e-3  # the instances are desynchronised
        assert all(not h.double_sided for h in crowd.renderer.meshes.values())  # CesiumMan: single-sided
    finally:
        crowd.release()


def test_panda_copy_of_the_asset_skins_to_the_same_vertices(tmp_path):
    shared_dir("gltf-samples")
    import warnings

    from bench.bench_render import ASSET, _panda_asset
    from engine.anim import ClipSampler, Pose, Rig
    from engine.anim.fk import global_matrices
    from engine.assets import load
    from engine.skinning.instances import skinned_primitives

    path, root = _panda_asset(tmp_path)
    assert np.abs(root - np.eye(4)).max() > 0.5  # CesiumMan's parents do rotate the skeleton

    def skinned(p):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            asset = load(p)
        rig = Rig.from_asset(asset)
        pose = Pose.rest(rig)
        ClipSampler(rig, asset.clips[0]).sample(0.4, pose)
        sp = skinned_primitives(asset, rig)[0]
        return sp.deform(global_matrices(rig, pose), "lbs").astype(np.float64)

    original = skinned(ASSET)
    flat = skinned(path)
    moved = flat @ root[:3, :3].T + root[:3, 3]
    np.testing.assert_allclose(moved, original, atol=1e-4)
    assert np.abs(flat - original).max() > 0.1  # without the Actor transform they differ


def test_light_count_variants_and_unit_directions(renderer):
    from engine.gpu.layouts import LIGHT
    from engine.render.renderer import default_lights

    p, t, _ = shapes.uv_sphere(0.6, rings=12, segments=18)
    renderer.add_mesh(t, len(p), positions=p, base_color=(0.6, 0.5, 0.4, 1.0))
    cam = _camera()
    renderer.render(cam)
    three = renderer.read_pixels().astype(int)
    scaled = default_lights()
    scaled["direction"][:, :3] *= np.array([[3.0], [0.2], [7.0]])  # same directions, other lengths
    renderer.set_lights(scaled)
    renderer.render(cam)
    assert np.abs(renderer.read_pixels().astype(int) - three).max() <= 1
    renderer.set_lights(default_lights()[:1])  # key light only: another compiled variant, a darker frame
    renderer.render(cam)
    one = renderer.read_pixels().astype(int)
    mask = renderer.surface_arrays()["mesh"] >= 0
    assert one[mask][:, :3].mean() < three[mask][:, :3].mean() - 3
    bad = LIGHT.zeros(1)
    with pytest.raises(ValueError, match="non-zero"):
        renderer.set_lights(bad)


def test_profiled_frame_records_wall_times_and_draws_the_same(renderer):
    p, t, _ = shapes.uv_sphere(0.6, rings=10, segments=16)
    renderer.add_mesh(t, len(p), positions=p)
    renderer.render(_camera())
    plain = renderer.read_pixels()
    assert renderer.last_wall_ms == {}
    renderer.render(_camera(), profile=True)
    np.testing.assert_array_equal(renderer.read_pixels(), plain)
    ms = renderer.last_wall_ms
    assert {"gbuffer", "compose", "shadow", "ui", "present"} <= set(ms)
    assert all(v >= 0.0 for v in ms.values()) and ms["gbuffer"] > 0.0
