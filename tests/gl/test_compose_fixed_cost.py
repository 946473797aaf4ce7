"""The compose pass's fixed per-frame cost (engine/render/passes/compose.py) cut without changing the picture:
the contact-shadow cache (still blobs are drawn twice, then copied from the cached backdrop-with-blobs, with the
same pixels; moving ones are drawn every frame and never copied), and uniforms written only when they change
(a frame after a camera, look or view change equals a fresh renderer's)."""
from __future__ import annotations

import numpy as np
import pytest

from engine.render import shapes
from engine.render.camera import Camera
from engine.render.renderer import LookSettings, SceneRenderer

pytestmark = pytest.mark.gl

W, H = 96, 64


def _camera() -> Camera:
    return Camera(eye=np.array([0.0, 2.0, 2.5]), target=np.array([0.0, 0.3, 0.0]), fov_y=50.0)


def _scene(gl_ctx, res, look: LookSettings | None = None):
    r = SceneRenderer(gl_ctx, res, W, H, look=look or LookSettings(), shadow_size=64)
    p, t, _ = shapes.box((0.5, 1.0, 0.5), (0.0, 0.5, 0.0))
    h = r.add_mesh(t, len(p), positions=p, entity=0)
    return r, h, p


def _blob_draws(r, monkeypatch) -> list[int]:
    calls: list[int] = []
    blobs = r._compose.blobs
    draw = blobs.draw
    monkeypatch.setattr(blobs, "draw", lambda *a, **k: (calls.append(1), draw(*a, **k))[1])
    return calls


def test_still_blobs_come_from_the_cache_with_the_same_pixels(gl_ctx, res, monkeypatch):
    r, _, _ = _scene(gl_ctx, res)
    calls = _blob_draws(r, monkeypatch)
    cam = _camera()
    frames = []
    for _ in range(5):
        r.render(cam)
        frames.append(r.read_pixels())
    assert len(calls) == 2 and r._compose.blobs.cache_hits == 3  # drawn, drawn + kept, then copied
    for img in frames[1:]:
        assert np.array_equal(img, frames[0])
    plain, _, _ = _scene(gl_ctx, res, LookSettings(shadows="off"))
    plain.render(cam)
    assert not np.array_equal(plain.read_pixels(), frames[-1])  # the blob is in the cached frames
    plain.release()
    r.release()


def test_moving_blobs_are_drawn_every_frame_and_never_cached(gl_ctx, res, monkeypatch):
    r, h, p = _scene(gl_ctx, res)
    calls = _blob_draws(r, monkeypatch)
    cam = _camera()
    for k in range(4):
        r.update_vertices(h, p + np.array([0.05 * k, 0.0, 0.0], np.float32))
        r.render(cam)
    assert len(calls) == 4 and r._compose.blobs.cache is None and r._compose.blobs.cache_hits == 0
    moved = r.read_pixels()
    fresh, fh, _ = _scene(gl_ctx, res)
    fresh.update_vertices(fh, p + np.array([0.15, 0.0, 0.0], np.float32))
    fresh.render(cam)
    assert np.array_equal(fresh.read_pixels(), moved)
    fresh.release()
    r.release()


def test_a_change_after_caching_draws_again_and_matches_a_fresh_frame(gl_ctx, res, monkeypatch):
    r, h, p = _scene(gl_ctx, res)
    cam = _camera()
    for _ in range(3):
        r.render(cam)
    assert r._compose.blobs.cache_hits == 1
    calls = _blob_draws(r, monkeypatch)
    r.look.blob_strength = 0.3  # the look is part of the key
    r.render(cam)
    assert len(calls) == 1
    r.update_vertices(h, p + np.array([0.0, 0.2, 0.0], np.float32))  # lifted: lighter blob
    r.render(cam)
    assert len(calls) == 2
    lifted = r.read_pixels()
    fresh, fh, _ = _scene(gl_ctx, res, LookSettings(blob_strength=0.3))
    fresh.update_vertices(fh, p + np.array([0.0, 0.2, 0.0], np.float32))
    fresh.render(cam)
    assert np.array_equal(fresh.read_pixels(), lifted)
    fresh.release()
    r.resize(W + 8, H)  # a new size: the cache is remade at it when a key repeats
    for _ in range(3):
        r.render(cam)
    assert r._compose.blobs.cache is not None and r._compose.blobs.cache.size == (W + 8, H)
    r.release()
    assert r._compose.blobs.cache is None


def test_uniforms_written_only_on_change_still_follow_every_change(gl_ctx, res):
    r, _, _ = _scene(gl_ctx, res)
    a = _camera()
    b = Camera(eye=np.array([1.5, 1.2, 2.0]), target=np.array([0.0, 0.5, 0.0]), fov_y=40.0)
    steps = [(a, {}), (a, {}), (b, {}), (b, {"exposure": 1.6}), (b, {"wireframe": True}), (a, {"view": "normal"}),
             (a, {"view": "color"})]
    for cam, change in steps:
        for name, value in change.items():
            if name == "view":
                r.view = value
            elif name == "wireframe":
                r.wireframe = value
            else:
                setattr(r.look, name, value)
        r.render(cam)
        got = r.read_pixels()
        fresh, _, _ = _scene(gl_ctx, res, LookSettings(exposure=r.look.exposure))
        fresh.wireframe = r.wireframe
        fresh.view = r.view
        fresh.render(cam)
        assert np.array_equal(fresh.read_pixels(), got), (cam.eye, change)
        fresh.release()
    r.release()


@pytest.mark.shared
def test_fixed_cost_bench_alternates_the_variants(gl_ctx):
    from bench.bench_fixed_cost import run_case
    from bench.bench_render import ASSET

    if not ASSET.is_file():
        pytest.skip("needs ../shared/gltf-samples/CesiumMan.glb")
    still = run_case(gl_ctx, 160, 90, 1, True, 2)
    assert len(still["before"]) == len(still["after"]) == 2 and min(still["before"] + still["after"]) > 0
    assert still["hits"] == [6.0]  # warm-up frames 3-4, then every "after" frame (settle + timed) of both pairs
    walking = run_case(gl_ctx, 160, 90, 1, False, 2)
    assert walking["hits"] == [0.0]


def test_blob_cache_with_layers_keeps_the_same_pixels(gl_ctx, res):
    r, h, _ = _scene(gl_ctx, res)
    r.add_layer("front")
    r.set_layer(h, "front")  # the blobs then go into the layer's compose framebuffer (frame ids written)
    cam = _camera()
    frames = []
    for _ in range(4):
        r.render(cam)
        frames.append(r.read_pixels())
    assert r._compose.blobs.cache_hits == 2
    assert all(np.array_equal(img, frames[0]) for img in frames[1:])
    r.release()
