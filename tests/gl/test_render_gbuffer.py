"""G-buffer correctness on llvmpipe: positions are the barycentric interpolation of the triangle a pixel
names, that triangle is the nearest hit of the pixel's camera ray (numpy ray cast), the compositor lets
the nearest surface win with and without layers, layers can be queried under what covers them, batched
and asynchronous queries agree with single ones, surface points follow the deformed mesh, debug views,
Phong tessellation, GPU timer scopes for layers and their copy into the profiler's FrameTimings."""
from __future__ import annotations

import numpy as np
import pytest

from engine.render import shapes
from engine.render.camera import Camera
from engine.render.renderer import VIEWS, LookSettings, SceneRenderer
from engine.render.surface import decode_ids, interpolate_surface, oct_decode, oct_encode, pixel_of

pytestmark = pytest.mark.gl

W, H = 72, 54


@pytest.fixture()
def renderer(gl_ctx, res):
    r = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
    yield r
    r.release()


def _camera(eye=(0.3, 0.4, 3.0), target=(0.0, 0.0, 0.0)):
    return Camera(eye=np.array(eye), target=np.array(target), fov_y=50.0, near=0.5, far=10.0, aspect=W / H)


def _bumpy_sphere(radius=0.8, center=(0.0, 0.0, 0.0), seed=0):
    """A coarse sphere with random radial noise (a 'deformed' mesh with uneven triangles)."""
    p, t, _ = shapes.uv_sphere(radius, (0.0, 0.0, 0.0), rings=8, segments=12)
    rng = np.random.default_rng(seed)
    p = p * (1.0 + 0.15 * rng.standard_normal((len(p), 1))).astype(np.float32)
    return (p + np.asarray(center, np.float32)).astype(np.float32), t


def _ray_cast(origin, dirs, p, t):
    """Nearest hit (triangle index, distance) per ray, -1 for none (Moller-Trumbore, all triangles)."""
    a, b, c = p[t[:, 0]].astype(np.float64), p[t[:, 1]].astype(np.float64), p[t[:, 2]].astype(np.float64)
    e1, e2 = b - a, c - a
    d = dirs[:, None, :]
    pv = np.cross(d, e2[None])
    det = np.einsum("rtk,tk->rt", pv, e1)
    ok = np.abs(det) > 1e-12
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    tv = origin[None, None, :] - a[None]
    u = np.einsum("rtk,rtk->rt", tv, pv) * inv
    qv = np.cross(tv, e1[None])
    v = np.einsum("rk,rtk->rt", dirs, qv) * inv
    dist = np.einsum("tk,rtk->rt", e2, qv) * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (dist > 0)
    dist = np.where(hit, dist, np.inf)
    best = np.argmin(dist, axis=1)
    bd = dist[np.arange(len(dirs)), best]
    return np.where(np.isfinite(bd), best, -1), bd


def test_position_is_the_barycentric_interpolation_of_the_named_triangle(renderer):
    p, t = _bumpy_sphere()
    h = renderer.add_mesh(t, len(p), positions=p)
    renderer.render(_camera())
    g = renderer.surface_arrays("gbuffer")
    hit = g["mesh"] == h.id
    assert hit.sum() > 300
    tri = g["triangle"][hit]
    bary = g["barycentric"][hit]
    assert np.all(bary >= -1e-4) and np.allclose(bary.sum(axis=1), 1.0, atol=1e-4)
    interp, _ = interpolate_surface(p, t, tri, bary)
    size = float(np.linalg.norm(p.max(0) - p.min(0)))
    err = np.linalg.norm(g["position"][hit] - interp, axis=1)
    assert err.max() < 1e-3 * size, f"max position error {err.max():.2e} of model size {size:.2f}"
    # and the frame-level (composited) channels agree with the scene G-buffer here (one mesh, no ground)
    f = renderer.surface_arrays()
    np.testing.assert_array_equal(f["triangle"], g["triangle"])
    np.testing.assert_allclose(f["position"], g["position"], atol=1e-6)


def test_named_triangle_is_the_nearest_ray_hit(renderer):
    p1, t1 = _bumpy_sphere(0.6, (-0.3, 0.0, 0.0), seed=1)
    p2, t2 = _bumpy_sphere(0.5, (0.4, 0.1, 0.5), seed=2)  # in front of the first, overlapping it
    h1 = renderer.add_mesh(t1, len(p1), positions=p1)
    h2 = renderer.add_mesh(t2, len(p2), positions=p2)
    cam = _camera()
    renderer.render(cam)
    g = renderer.surface_arrays()
    rows, cols = np.mgrid[0:H:3, 0:W:3]
    rows, cols = rows.ravel(), cols.ravel()
    # camera rays through the pixel centres (row 0 = top)
    ndc = np.stack([(cols + 0.5) / W * 2 - 1, 1 - (rows + 0.5) / H * 2], axis=1)
    inv = np.linalg.inv(renderer.last_view_proj.astype(np.float64))
    far = np.c_[ndc, np.ones(len(ndc)), np.ones(len(ndc))] @ inv.T
    far = far[:, :3] / far[:, 3:]
    eye = cam.eye.astype(np.float64)
    dirs = far - eye
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    pall = np.concatenate([p1, p2])
    tall = np.concatenate([t1, t2 + len(p1)])
    best, dist = _ray_cast(eye, dirs, pall, tall)
    mesh = g["mesh"][rows, cols]
    tri = g["triangle"][rows, cols]
    expect_mesh = np.where(best < 0, -1, np.where(best < len(t1), h1.id, h2.id))
    expect_tri = np.where(best < 0, -1, np.where(best < len(t1), best, best - len(t1)))
    # pixel centres within a hair of a triangle edge may go either way: require near-total agreement
    same = (mesh == expect_mesh) & (tri == expect_tri)
    assert (best >= 0).sum() > 60 and len(set(mesh[mesh >= 0])) == 2
    assert same.mean() > 0.97, f"{(~same).sum()} of {len(same)} pixels disagree with the ray cast"
    # where they agree, the G-buffer depth is the hit distance along the ray
    ok = same & (best >= 0)
    gd = np.linalg.norm(g["position"][rows, cols][ok] - eye, axis=1)
    np.testing.assert_allclose(gd, dist[ok], atol=1e-3)


def test_background_is_minus_one_and_zero(renderer):
    p, t = _bumpy_sphere(0.3)
    renderer.add_mesh(t, len(p), positions=p)
    renderer.render(_camera())
    g = renderer.surface_arrays()
    bg = g["mesh"] < 0
    assert bg.sum() > 0.5 * W * H and (~bg).sum() > 20
    assert np.all(g["triangle"][bg] == -1)
    assert np.all(g["depth"][bg] == 1.0) and np.all(g["depth"][~bg] < 1.0)
    assert not g["position"][bg].any() and not g["normal"][bg].any() and not g["barycentric"][bg].any()
    assert renderer.query(0, 0) is None


def _two_quads(renderer):
    """A far quad (z=0) and a near quad (z=0.5) overlapping in the middle of the image."""
    quad = np.array([[-0.6, -0.5, 0], [0.6, -0.5, 0], [0.6, 0.5, 0], [-0.6, 0.5, 0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]])
    far = renderer.add_mesh(tris, 4, positions=quad - [0.4, 0, 0], base_color=(0.1, 0.8, 0.1, 1), entity=1)
    near = renderer.add_mesh(tris, 4, positions=quad + [0.4, 0, 0.5], base_color=(0.8, 0.1, 0.1, 1), entity=2)
    return far, near


@pytest.mark.parametrize("layered", [None, "near", "far", "both"])
def test_nearest_wins_with_and_without_layers(renderer, layered):
    far, near = _two_quads(renderer)
    cam = _camera(eye=(0.0, 0.0, 3.0))
    if layered in ("near", "both"):
        renderer.add_layer("front")
        renderer.set_layer(near, "front")
    if layered in ("far", "both"):
        renderer.add_layer("back")
        renderer.set_layer(far, "back")
    renderer.render(cam)
    img = renderer.read_pixels()
    g = renderer.surface_arrays()
    x_far = np.floor(pixel_of(renderer.last_view_proj, [-0.7, 0.0, 0.0], W, H)[:2]).astype(int)
    x_both = np.floor(pixel_of(renderer.last_view_proj, [0.0, 0.0, 0.5], W, H)[:2]).astype(int)
    assert g["mesh"][x_far[1], x_far[0]] == far.id
    assert g["mesh"][x_both[1], x_both[0]] == near.id  # overlap: the nearer quad wins
    r, gr, _ = img[x_both[1], x_both[0], :3].astype(int)
    assert r > gr + 60  # and it is the red one that shows
    hit = renderer.query(int(x_both[0]), int(x_both[1]))
    assert hit.mesh is near and hit.entity == 2 and hit.layer is None
    # nearest wins everywhere: compare with the depths of the sources
    covered = g["mesh"] >= 0
    assert set(np.unique(g["mesh"][covered])) == {far.id, near.id}
    if layered == "near":
        # the layer of the near quad alone, and the scene G-buffer holding only the far one
        lay = renderer.surface_arrays("front")
        assert set(np.unique(lay["mesh"][lay["mesh"] >= 0])) == {near.id}
        sc = renderer.surface_arrays("gbuffer")
        assert set(np.unique(sc["mesh"][sc["mesh"] >= 0])) == {far.id}
    if layered == "far":
        # the far quad's layer still sees its surface where the near quad covers it
        under = renderer.query(int(x_both[0]), int(x_both[1]), layer="back")
        assert under is not None and under.mesh is far and under.layer == "back"
        np.testing.assert_allclose(under.position[2], 0.0, atol=2e-3)
        assert under.depth > hit.depth
    assert renderer.gpu_ms is not None


def _layer_cycle(renderer, far):
    renderer.add_layer("skin")
    renderer.set_layer([far], "skin")
    renderer.render(_camera(eye=(0.0, 0.0, 3.0)))
    renderer.resize(W // 2, H // 2)
    renderer.render(_camera(eye=(0.0, 0.0, 3.0)))
    renderer.remove_layer("skin")
    renderer.resize(W, H)
    renderer.render(_camera(eye=(0.0, 0.0, 3.0)))


def test_layer_lifecycle_and_validation(renderer, res):
    far, near = _two_quads(renderer)
    renderer.add_layer("skin")
    assert "layer:skin" in renderer.timers.passes
    with pytest.raises(ValueError, match="exists already"):
        renderer.add_layer("skin")
    with pytest.raises(ValueError, match="no layer 'cloth'"):
        renderer.set_layer(far, "cloth")
    with pytest.raises(ValueError, match="non-empty str"):
        renderer.add_layer("frame")
    renderer.set_layer([far], "skin")
    for _ in range(renderer.timers.latency + 2):
        renderer.render(_camera(eye=(0.0, 0.0, 3.0)))
    assert "layer:skin" in renderer.gpu_ms and renderer.gpu_ms["layer:skin"] >= 0.0
    renderer.remove_layer("skin")
    assert far.layer is None and renderer.layers == () and "layer:skin" not in renderer.timers.passes
    _layer_cycle(renderer, far)
    n1 = res.live_count  # cached programs of both compose variants now exist
    _layer_cycle(renderer, far)
    assert res.live_count == n1  # a second add/resize/remove cycle leaks nothing


def test_batched_and_async_queries_agree_with_single_ones(renderer):
    p, t = _bumpy_sphere()
    h = renderer.add_mesh(t, len(p), positions=p)
    renderer.render(_camera())
    rng = np.random.default_rng(3)
    pts = np.c_[rng.integers(10, W - 10, 64), rng.integers(8, H - 8, 64)]
    many = renderer.query_many(pts)
    pending = renderer.query_async(pts)
    assert not pending.ready
    # the next frame moves the mesh away: the result is still of the frame the query was issued after
    renderer.update_vertices(h, p + np.array([5.0, 0.0, 0.0], np.float32))
    renderer.render(_camera())
    assert pending.ready and renderer.query_many(pts) == [None] * len(pts)
    late = pending.result()
    renderer.update_vertices(h, p)
    renderer.render(_camera())
    for (x, y), a, b in zip(pts, many, late):
        one = renderer.query(int(x), int(y))
        assert (one is None) == (a is None) == (b is None)
        if one is not None:
            assert a.mesh is h and a.triangle == one.triangle == b.triangle
            np.testing.assert_allclose(a.position, one.position, atol=1e-6)
            np.testing.assert_allclose(b.barycentric, one.barycentric, atol=1e-6)
    assert sum(a is not None for a in many) > 20
    # asked before the next frame, the result copies and maps at once (same answer)
    renderer.update_vertices(h, p)
    renderer.render(_camera())
    early = renderer.query_async(pts)
    assert [x is None for x in early.result()] == [x is None for x in many]
    with pytest.raises(ValueError, match=r"pixel \(72, 3\) outside the 72x54 frame"):
        renderer.query_many([(1, 1), (W, 3)])


def test_surface_points_follow_the_deformed_mesh(renderer):
    p, t = _bumpy_sphere()
    h = renderer.add_mesh(t, len(p), positions=p)
    renderer.render(_camera())
    hits = [x for x in renderer.query_many([(W // 2 + d, H // 2) for d in range(-8, 9, 2)]) if x is not None]
    assert len(hits) >= 6
    points = [x.surface_point for x in hits]
    pos0, _ = renderer.evaluate(points)
    np.testing.assert_allclose(pos0, np.array([x.position for x in hits]), atol=2e-3)
    # deform: stretch along y and move; the stroke re-evaluates on the new vertices
    m = np.diag([1.0, 1.5, 1.0]).astype(np.float32)
    p2 = p @ m.T + np.array([0.2, 0.1, -0.3], np.float32)
    renderer.update_vertices(h, p2)
    pos1, nrm1 = renderer.evaluate(points)
    expect = np.array([np.asarray(x.barycentric) @ p2[t[x.triangle]] for x in points])
    np.testing.assert_allclose(pos1, expect, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(nrm1, axis=1), 1.0, atol=1e-5)
    assert np.abs(pos1 - pos0).max() > 0.1


def test_codec_round_trips():
    rng = np.random.default_rng(0)
    n = rng.standard_normal((500, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    np.testing.assert_allclose(oct_decode(oct_encode(n)), n, atol=1e-6)
    ids = np.zeros((3, 4), np.uint32)
    ids[1] = (5, 17, (40000 << 16) | 10000, 0)
    dec = decode_ids(ids)
    assert dec["mesh"].tolist() == [-1, 4, -1] and dec["triangle"].tolist() == [-1, 17, -1]
    np.testing.assert_allclose(dec["barycentric"][1], [1 - (10000 + 40000) / 65535, 10000 / 65535, 40000 / 65535],
                               atol=1e-6)


def test_debug_views_show_distinct_channels(renderer):
    p, t = _bumpy_sphere()
    renderer.add_mesh(t, len(p), positions=p, base_color=(0.7, 0.3, 0.2, 1.0))
    cam = _camera()
    imgs = {}
    for v in VIEWS:
        renderer.view = v
        renderer.render(cam)
        imgs[v] = renderer.read_pixels()[..., :3].astype(int)
    mask = renderer.surface_arrays()["mesh"] >= 0
    names = list(VIEWS)
    for i, a in enumerate(names):
        assert imgs[a][mask].std() > 3 or a in ("albedo", "mesh"), a  # not flat (albedo/mesh are uniform here)
        for b in names[i + 1:]:
            assert np.abs(imgs[a] - imgs[b])[mask].mean() > 5, f"views {a} and {b} look the same"
    # the normal view encodes n * 0.5 + 0.5 of the G-buffer's normal
    g = renderer.surface_arrays()
    yx = np.argwhere(mask)[len(np.argwhere(mask)) // 2]
    np.testing.assert_allclose(imgs["normal"][yx[0], yx[1]] / 255.0, g["normal"][yx[0], yx[1]] * 0.5 + 0.5, atol=0.02)
    with pytest.raises(ValueError, match="view must be one of"):
        renderer.view = "nope"
    renderer.view = "color"
    assert renderer.cycle_view() == VIEWS[1]


def test_phong_tessellation_rounds_the_silhouette(renderer):
    p, t, _ = shapes.uv_sphere(0.8, rings=5, segments=6)  # very coarse: flat facets
    renderer.add_mesh(t, len(p), positions=p)
    cam = _camera(eye=(0.0, 0.0, 3.0))
    renderer.render(cam)
    flat = renderer.surface_arrays()
    renderer.set_tessellation(True, level=6.0)
    renderer.render(cam)
    tess = renderer.surface_arrays()
    renderer.set_tessellation(False)
    n_flat, n_tess = (flat["mesh"] >= 0).sum(), (tess["mesh"] >= 0).sum()
    # the true sphere's disc area in pixels
    proj = renderer.last_projection.astype(np.float64)
    r_px = proj[1, 1] * 0.8 / np.sqrt(3.0 ** 2 - 0.8 ** 2) * H / 2
    disc = np.pi * r_px ** 2
    assert n_tess > n_flat and abs(n_tess - disc) < abs(n_flat - disc)
    tri = tess["triangle"][tess["mesh"] >= 0]
    assert tri.min() >= 0 and tri.max() < len(t)  # ids still name the original triangles
    b = tess["barycentric"][tess["mesh"] >= 0]
    assert np.allclose(b.sum(axis=1), 1.0, atol=1e-4) and b.min() > -1e-4
    with pytest.raises(ValueError, match="tess_level"):
        renderer.set_tessellation(True, level=100.0)


def test_blob_shadow_darkens_the_ground_under_a_mesh(gl_ctx, res):
    r = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(shadows="off"), shadow_size=64)
    p, t, _ = shapes.box((0.5, 1.0, 0.5), (0.0, 0.5, 0.0))
    r.add_mesh(t, len(p), positions=p, entity=0)
    cam = Camera(eye=np.array([0.0, 2.0, 2.5]), target=np.array([0.0, 0.3, 0.0]), fov_y=50.0)
    r.render(cam)
    plain = r.read_pixels()[..., :3].astype(int).sum(-1)
    r.look.shadows = "blob"
    r.render(cam)
    blob = r.read_pixels()[..., :3].astype(int).sum(-1)
    foot = np.floor(pixel_of(r.last_view_proj, [0.0, 0.0, 0.3], W, H)[:2]).astype(int)
    mesh = r.surface_arrays()["mesh"] >= 0
    assert not mesh[foot[1], foot[0]]
    assert plain[foot[1], foot[0]] - blob[foot[1], foot[0]] > 30  # darker just in front of the box
    assert np.array_equal(plain[mesh], blob[mesh])  # the mesh itself is untouched
    assert np.array_equal(plain[:3], blob[:3])  # far away (top rows: sky) unchanged
    with pytest.raises(ValueError, match="shadows must be one of"):
        r.look.shadows = "soft"
        r.render(cam)
    r.look.shadows = "off"
    r.release()


def test_gpu_timings_reach_the_profiler(renderer):
    from engine.gpu.timers import record_gpu_timings
    from engine.profile.timings import FrameTimings

    p, t = _bumpy_sphere()
    renderer.add_mesh(t, len(p), positions=p)
    for _ in range(renderer.timers.latency + 2):
        renderer.render(_camera(), ui=lambda r: r.framebuffer.use())
    ft = FrameTimings(index=1, start_ns=1000)
    record_gpu_timings(ft, renderer.gpu_ms)
    assert {"gpu:gbuffer", "gpu:compose", "gpu:ui"} <= set(ft.scopes)
    assert ft.scope_ms("gpu:gbuffer") == pytest.approx(renderer.gpu_ms["gbuffer"], abs=1e-6)
    with pytest.raises(ValueError, match="must be >= 0 ms"):
        record_gpu_timings(ft, {"x": -1.0})


def _covered_bounds(arrays):
    """(x0, y0, x1, y1) in GL pixels (row 0 at the bottom, x1/y1 exclusive) of the covered pixels."""
    rows, cols = np.nonzero(arrays["mesh"][::-1] >= 0)
    return cols.min(), rows.min(), cols.max() + 1, rows.max() + 1


@pytest.mark.parametrize("where", ["inside", "clipped", "behind"])
def test_compose_rect_is_exact_and_conservative(renderer, where):
    """The compositor runs only inside the screen rectangle the G-buffer pass's vertices cover: it holds
    every covered pixel (the frame equals the scene G-buffer everywhere), hugs an on-screen mesh within
    the 1-pixel margin, is clamped for a mesh leaving the view, and is the whole view when a vertex lies
    behind the eye; each layer has its own."""
    radius, center = {"inside": (0.35, (0.2, 0.1, 0.0)), "clipped": (0.35, (1.85, 0.0, 0.0)),
                      "behind": (0.9, (0.7, 0.0, 2.5))}[where]  # behind: reaches past the eye (z = 3)
    p, t = _bumpy_sphere(radius, center=center)
    assert where != "behind" or p[:, 2].max() > 3.0
    renderer.add_mesh(t, len(p), positions=p)
    renderer.render(_camera(eye=(0.0, 0.0, 3.0)))
    frame, scene = renderer.surface_arrays(), renderer.surface_arrays("gbuffer")
    np.testing.assert_array_equal(frame["mesh"], scene["mesh"])
    np.testing.assert_array_equal(frame["triangle"], scene["triangle"])
    assert (frame["mesh"] >= 0).sum() > 20
    rect = renderer.screen_rect()
    x0, y0, x1, y1 = _covered_bounds(scene)
    assert rect[0] <= x0 and rect[1] <= y0 and rect[2] >= x1 and rect[3] >= y1
    if where == "inside":  # back faces' vertices lie inside the silhouette: 1 px margin + rounding
        assert rect[0] >= x0 - 2 and rect[1] >= y0 - 2 and rect[2] <= x1 + 2 and rect[3] <= y1 + 2
    elif where == "clipped":
        assert rect[2] == W and rect[0] > 0
    else:
        assert rect == (0, 0, W, H)
    # a layer's rectangle is its own: move the mesh into one, the scene's becomes empty
    renderer.add_layer("solo")
    renderer.set_layer(list(renderer.meshes.values()), "solo")
    renderer.render(_camera(eye=(0.0, 0.0, 3.0)))
    assert renderer.screen_rect() is None and renderer.screen_rect("solo") == rect
    np.testing.assert_array_equal(renderer.surface_arrays()["mesh"], frame["mesh"])
    with pytest.raises(ValueError, match="layer"):
        renderer.screen_rect("nope")


def test_frame_ids_with_and_without_the_compositor_writing_them(gl_ctx, res):
    """Without layers the compositor writes only colour and the scene G-buffer, tested against the
    backdrop depth, serves as the frame's id buffer; with a layer it writes the frame ids. Both agree,
    also where the ground hides part of a mesh (a sphere half under the ground plane)."""
    r = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=True, shadows="off"), shadow_size=64)
    try:
        p, t = _bumpy_sphere(0.6, center=(0.0, 0.0, 0.0))
        h = r.add_mesh(t, len(p), positions=p)
        cam = _camera(eye=(0.0, 1.6, 2.4))
        r.render(cam)
        assert not r._frame_ids_written
        virtual, scene = r.surface_arrays(), r.surface_arrays("gbuffer")
        hidden = (scene["mesh"] >= 0) & (virtual["mesh"] < 0)
        assert hidden.sum() > 10, "the ground should hide part of the sphere"
        assert np.all(scene["position"][hidden][:, 1] < 0.01)  # what the ground hides is below it
        y, x = np.argwhere(hidden)[0]
        assert r.query(int(x), int(y)) is None
        assert r.query(int(x), int(y), layer="gbuffer").mesh is h
        pending = r.query_async([(int(x), int(y))])
        r.render(cam)
        assert pending.result() == [None]
        r.add_layer("empty")  # a layer (even empty) makes the compositor write the frame ids
        r.render(cam)
        assert r._frame_ids_written
        written = r.surface_arrays()
        np.testing.assert_array_equal(written["mesh"], virtual["mesh"])
        np.testing.assert_array_equal(written["triangle"], virtual["triangle"])
        np.testing.assert_allclose(written["depth"], virtual["depth"])
        assert r.query(int(x), int(y)) is None
    finally:
        r.release()


def test_async_query_survives_resize_and_layer_removal(renderer):
    """A pending query copies its texels before what it reads goes away: a resize, the removal of the layer
    it asked, or the renderer's next frame; its result is of the frame it was issued after."""
    p, t = _bumpy_sphere()
    h = renderer.add_mesh(t, len(p), positions=p)
    renderer.add_layer("solo")
    renderer.set_layer(h, "solo")
    renderer.render(_camera())
    pts = np.argwhere(renderer.surface_arrays("solo")["mesh"] >= 0)[:5][:, ::-1]  # (x, y)
    expect = renderer.query_many(pts, layer="solo")
    assert all(e is not None and e.mesh is h for e in expect)
    on_layer = renderer.query_async(pts, layer="solo")
    on_frame = renderer.query_async(pts)
    renderer.remove_layer("solo")
    renderer.resize(W // 2, H // 2)
    got_layer, got_frame = on_layer.result(), on_frame.result()
    assert [g.triangle for g in got_layer] == [e.triangle for e in expect]
    assert [g.mesh for g in got_frame] == [h] * len(pts)


def test_async_query_of_a_released_renderer_says_so(gl_ctx, res):
    r = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
    p, t = _bumpy_sphere()
    r.add_mesh(t, len(p), positions=p)
    r.render(_camera())
    pending = r.query_async([(W // 2, H // 2)])
    r.release()
    with pytest.raises(RuntimeError, match="released"):
        pending.result()
