"""The G-buffer's corner-vertex draw (engine/render/corners.py) and what the renderer shares per asset:
corner topologies keep every triangle (same vertices, same winding, one provoking corner each) and
their fragment-side decode restores barycentrics in the input corner order; the strip order shades
fewer vertices through llvmpipe's vertex cache (a numpy model of it); the G-buffer names the right
triangles whatever provoking-vertex convention was left set; meshes of one asset share index buffers,
corner vertices, texcoords and the base-colour texture, released with their last user; base-colour
mips are filtered in linear light."""
from __future__ import annotations

import moderngl
import numpy as np
import pytest

from engine.render import shapes
from engine.render.camera import Camera
from engine.render.corners import MAX_TRIANGLES, build_corner_topology, strip_order
from engine.render.renderer import LookSettings, SceneRenderer, albedo_levels, srgb_to_linear
from engine.render.surface import interpolate_surface

pytestmark = pytest.mark.gl

W, H = 72, 54


def _bumpy_sphere(radius=0.8, center=(0.0, 0.0, 0.0), seed=0, rings=10, segments=14):
    p, t, _ = shapes.uv_sphere(radius, (0.0, 0.0, 0.0), rings=rings, segments=segments)
    rng = np.random.default_rng(seed)
    p = p * (1.0 + 0.15 * rng.standard_normal((len(p), 1))).astype(np.float32)
    return (p + np.asarray(center, np.float32)).astype(np.float32), t


def _meshes():
    """Triangle lists with seams, boundaries, a non-manifold edge and degenerate triangles."""
    sphere = shapes.uv_sphere(0.5, rings=9, segments=13)[1]
    box = shapes.box((1.0, 1.0, 1.0))[1]
    rng = np.random.default_rng(5)
    soup = rng.integers(0, 40, (150, 3))  # random: repeated corners, edges shared by many triangles
    fan = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 2, 4], [2, 1, 5]])  # non-manifold edge 1-2
    return [(sphere, int(sphere.max()) + 1), (box, int(box.max()) + 1), (soup, 40), (fan, 6)]


def _simulated_vertex_shader_runs(indices: np.ndarray) -> int:
    """Vertex shader invocations of llvmpipe's indexed-draw splitter: segments of 1023 indices, each
    through a direct-mapped cache of 256 entries keyed by index % 256 and cleared per segment."""
    runs = 0
    flat = indices.ravel().tolist()
    for s in range(0, len(flat), 1023):
        cache = {}
        for i in flat[s:s + 1023]:
            if cache.get(i % 256) != i:
                cache[i % 256] = i
                runs += 1
    return runs


@pytest.mark.parametrize("reorder", [True, False])
def test_corner_topology_keeps_every_triangle_and_restores_barycentrics(reorder):
    rng = np.random.default_rng(0)
    for tri, v in _meshes():
        ct = build_corner_topology(tri, v, reorder=reorder)
        n = len(tri)
        assert ct.triangle_count == n and ct.vertex_count == v
        assert sorted(ct.order.tolist()) == list(range(n))  # a permutation of the triangles
        if not reorder:
            np.testing.assert_array_equal(ct.order, np.arange(n))
        # each row is its input triangle rotated (same vertices, same winding)
        j = (ct.rotation.astype(np.int64)[:, None] + np.arange(3)) % 3
        np.testing.assert_array_equal(ct.corners[ct.indices, 0], np.take_along_axis(tri[ct.order], j, axis=1))
        # three colours per triangle, one private provoking corner per triangle naming its input index
        col = ct.colors()[ct.indices]
        assert (np.sort(col, axis=1) == [0, 1, 2]).all()
        prov = ct.indices[:, 2]
        assert len(np.unique(prov)) == n
        np.testing.assert_array_equal(ct.corners[prov, 1] >> 6, ct.order)
        assert n <= ct.corner_count <= 3 * n
        # fragments: interpolating the colour unit vectors with barycentrics b (input corner order)
        # gives colour weights w; the fragment model must give b back, and the input triangle
        b = rng.dirichlet([1.0, 1.0, 1.0], n)  # per draw row, input corner order
        w = np.zeros_like(b)
        for k in range(3):  # row corner k is input corner j[:, k] with colour col[:, k]
            np.put_along_axis(w, col[:, k:k + 1], np.take_along_axis(b, j[:, k:k + 1], axis=1), axis=1)
        t, bb = ct.fragment(np.arange(n), w)
        np.testing.assert_array_equal(t, ct.order)
        np.testing.assert_allclose(bb, b, atol=1e-12)


def test_strip_order_walks_over_edges_and_saves_vertex_shading():
    with np.errstate(under="ignore"):  # tiny pole coordinates
        p, tri, _ = shapes.uv_sphere(0.5, rings=40, segments=60)
    order = strip_order(tri, len(p))
    assert sorted(order.tolist()) == list(range(len(tri)))
    a = np.sort(tri[order[:-1]], axis=1)
    b = np.sort(tri[order[1:]], axis=1)
    shared = np.array([len(set(x) & set(y)) for x, y in zip(a.tolist(), b.tolist())])
    assert (shared >= 2).mean() > 0.9  # consecutive triangles mostly share an edge
    # input order shuffled (as a converter may leave it): the strip order must shade much less
    shuffled = tri[np.random.default_rng(1).permutation(len(tri))]
    plain = build_corner_topology(shuffled, len(p), reorder=False)
    strips = build_corner_topology(shuffled, len(p), reorder=True)
    runs_plain = _simulated_vertex_shader_runs(plain.indices)
    runs_strips = _simulated_vertex_shader_runs(strips.indices)
    assert runs_strips < 0.6 * runs_plain, (runs_strips, runs_plain)
    assert runs_strips < 1.5 * len(tri)  # near one vertex per triangle (expanded: 3)


def test_corner_topology_validates():
    with pytest.raises(ValueError, match=r"\(T,3\) integer"):
        build_corner_topology(np.zeros((4, 2), np.int32), 4)
    with pytest.raises(ValueError, match=r"\(T,3\) integer"):
        build_corner_topology(np.zeros((2, 3), np.float32), 4)
    with pytest.raises(ValueError, match=r"in \[0, 3\], got \[0, 4\]"):
        build_corner_topology(np.array([[0, 1, 4]]), 4)
    assert MAX_TRIANGLES == 1 << 26


def test_albedo_levels_filter_in_linear_light():
    img = np.zeros((4, 6, 4), np.uint8)
    img[..., 3] = 255
    img[::2, ::2, :3] = 255  # 1 white texel per 2x2 block: mean linear 0.25
    img[1::2, 1::2, :3] = 255  # now 2 per block: 0.5
    levels = albedo_levels(img)
    assert [lv.shape[:2] for lv in levels] == [(4, 6), (2, 3), (1, 1)]
    assert levels[0].dtype == np.uint8
    np.testing.assert_array_equal(levels[0][0, 0, :3], 255)
    np.testing.assert_array_equal(levels[0][0, 1, :3], 0)
    # level 1: mean in linear light 0.5, stored as sqrt(0.5) = 0.707 (an sRGB-space mean would give 0.5)
    np.testing.assert_allclose(levels[1][..., :3], round(np.sqrt(0.5) * 255), atol=1)
    np.testing.assert_array_equal(levels[1][..., 3], 255)
    mid = np.full((2, 2, 4), 128, np.uint8)
    want = np.sqrt(srgb_to_linear(128 / 255.0)) * 255
    np.testing.assert_allclose(albedo_levels(mid)[0][..., :3], want, atol=0.51)
    with pytest.raises(ValueError, match=r"\(H,W,4\) uint8"):
        albedo_levels(np.zeros((2, 2, 3), np.uint8))


@pytest.fixture()
def renderer(gl_ctx, res):
    r = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
    yield r
    r.release()


def _camera():
    return Camera(eye=np.array([0.3, 0.4, 3.0]), target=np.zeros(3), fov_y=50.0, near=0.5, far=10.0,
                  aspect=W / H)


def _check_positions(renderer, h, p, t):
    g = renderer.surface_arrays("gbuffer")
    hit = g["mesh"] == h.id
    assert hit.sum() > 300
    interp, _ = interpolate_surface(p, t, g["triangle"][hit], g["barycentric"][hit])
    err = np.linalg.norm(g["position"][hit] - interp, axis=1)
    assert err.max() < 2e-3, f"max position error {err.max():.2e}"
    return g


def test_gbuffer_ignores_a_changed_provoking_vertex_convention(gl_ctx, renderer):
    """The corner draw needs the last vertex to provoke; the renderer sets it, whatever was left."""
    p, t = _bumpy_sphere()
    h = renderer.add_mesh(t, len(p), positions=p)
    assert h.corner_topology is not None and h.corner_topology.triangle_count == len(t)
    renderer.render(_camera())
    ref = _check_positions(renderer, h, p, t)
    gl_ctx.provoking_vertex = moderngl.FIRST_VERTEX_CONVENTION  # as some other code might leave it
    try:
        renderer.render(_camera())
        g = _check_positions(renderer, h, p, t)
    finally:
        gl_ctx.provoking_vertex = moderngl.LAST_VERTEX_CONVENTION
    np.testing.assert_array_equal(g["triangle"], ref["triangle"])


def test_meshes_of_one_asset_share_gpu_data_until_the_last_goes(renderer, res):
    p, t = _bumpy_sphere(0.5)
    uv = np.stack([p[:, 0], p[:, 1]], axis=1).astype(np.float32) * 0.5 + 0.5
    img = np.zeros((8, 8, 4), np.uint8)
    img[..., 0], img[..., 3] = 200, 255
    renderer.render(_camera())  # the passes' own vertex arrays now exist
    base = res.live_count
    kw = dict(texcoords=uv, image=img)
    a = renderer.add_mesh(t, len(p), positions=p - [0.6, 0, 0], **kw)
    n_one = res.live_count
    b = renderer.add_mesh(t, len(p), positions=p + [0.6, 0, 0], **kw)
    assert a.indices is b.indices and a.corners is b.corners and a.corner_indices is b.corner_indices
    assert a.texcoords is b.texcoords and a.texture is b.texture
    assert res.live_count - n_one == 2  # b owns only its vertex buffers
    other = renderer.add_mesh(t[::-1].copy(), len(p), positions=p + [0, 0.6, 0])
    assert other.corners is not a.corners and other.texture is None
    renderer.remove_mesh(other)
    renderer.render(_camera())
    both = renderer.surface_arrays("gbuffer")
    assert {a.id, b.id} <= set(np.unique(both["mesh"]).tolist())
    renderer.remove_mesh(a)  # b keeps the shared objects
    assert b.texture.glo > 0 and b.corners.glo > 0
    renderer.render(_camera())
    only_b = renderer.surface_arrays("gbuffer")
    mask = only_b["mesh"] == b.id
    assert mask.sum() > 100 and not (only_b["mesh"] == a.id).any()
    np.testing.assert_array_equal(only_b["triangle"][mask], both["triangle"][mask])
    albedo = only_b["albedo"][mask]
    lin = srgb_to_linear(200 / 255.0)
    np.testing.assert_allclose(albedo[:, 0], lin, atol=0.02)  # the texture's red in linear light
    renderer.remove_mesh(b)
    assert res.live_count == base  # the last user released the shared objects
