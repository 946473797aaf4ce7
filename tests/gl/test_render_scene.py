"""Scene renderer on llvmpipe: meshes pulled from SSBOs appear where the projection puts them, row 0 of
read_pixels is the top, surface queries name the triangle and barycentrics, compute shaders can write
the same SSBOs, GPU timers arrive a few frames late, and everything is released."""
from __future__ import annotations

import shutil

import moderngl
import numpy as np
import pytest

from engine.gpu.layouts import GLSL_CONSTANTS
from engine.gpu.shaderlib import SHADER_ROOT, ProgramCache, ShaderLibrary
from engine.render import shapes
from engine.render.camera import Camera
from engine.render.renderer import LookSettings, SceneRenderer, vertex_normals

pytestmark = pytest.mark.gl

W, H = 80, 60
TRI = np.array([[-0.9, 0.3, 0.0], [-0.3, 0.3, 0.0], [-0.6, 0.8, 0.0]], np.float32)  # upper left, CCW


def _camera():
    return Camera(eye=np.array([0.0, 0.0, 3.0]), target=np.zeros(3), fov_y=60.0, near=0.1, far=20.0)


def _pixel(vp, p):
    """(column, row-from-top) continuous pixel coordinates of world point p."""
    h = vp.astype(np.float64) @ np.append(p, 1.0)
    ndc = h[:3] / h[3]
    return np.array([(ndc[0] + 1) / 2 * W, (1 - ndc[1]) / 2 * H])


@pytest.fixture()
def renderer(gl_ctx, res):
    look = LookSettings(ground=False, shadows=False)
    r = SceneRenderer(gl_ctx, res, W, H, look=look, shadow_size=256)
    yield r
    r.release()


def _diff_mask(a, b, thresh=12):
    return np.abs(a[..., :3].astype(int) - b[..., :3].astype(int)).max(axis=2) > thresh


def test_triangle_appears_where_the_projection_puts_it(renderer):
    cam = _camera()
    renderer.render(cam)
    empty = renderer.read_pixels()
    renderer.add_mesh(np.array([[0, 1, 2]]), 3, base_color=(1.0, 0.05, 0.05, 1.0), positions=TRI)
    renderer.render(cam)
    img = renderer.read_pixels()
    assert img.shape == (H, W, 4) and img.dtype == np.uint8
    mask = _diff_mask(img, empty)
    assert mask.sum() > 20, "the frame shows no mesh"
    rows, cols = np.nonzero(mask)
    px = np.array([_pixel(renderer.last_view_proj, p) for p in TRI])
    # The covered pixel centres lie inside the projected triangle's bounding box (1 px of slack).
    assert cols.min() >= np.floor(px[:, 0].min()) - 1 and cols.max() <= np.ceil(px[:, 0].max()) + 1
    assert rows.min() >= np.floor(px[:, 1].min()) - 1 and rows.max() <= np.ceil(px[:, 1].max()) + 1
    # ... and fill most of the projected triangle's area.
    a = px[1] - px[0]
    b = px[2] - px[0]
    area = abs(a[0] * b[1] - a[1] * b[0]) / 2
    assert 0.7 * area < mask.sum() < 1.3 * area
    # Orientation: the triangle is in the upper-left quadrant of the image (row 0 = top).
    assert rows.max() < H / 2 and cols.max() < W / 2
    centre = np.round(px.mean(axis=0) - 0.5).astype(int)
    r, g, bl = img[centre[1], centre[0], :3].astype(int)
    assert r > g + 60 and r > bl + 60  # lit red


def test_read_pixels_row_zero_is_top(renderer):
    renderer.add_mesh(np.array([[0, 1, 2]]), 3, positions=TRI)
    renderer.render(_camera())
    img = renderer.read_pixels()
    raw = np.frombuffer(renderer.color_texture.read(alignment=1), np.uint8).reshape(H, W, 4)
    np.testing.assert_array_equal(img[0], raw[-1])  # GL row 0 is the bottom
    # The background gradient is brighter at the horizon (middle) than at the top of the view.
    assert img[H // 2, W - 2, :3].astype(int).sum() > img[0, W - 2, :3].astype(int).sum()


def test_query_names_mesh_triangle_and_barycentrics(renderer):
    quad_p = np.array([[-0.5, -0.5, 0], [0.5, -0.5, 0], [0.5, 0.5, 0], [-0.5, 0.5, 0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]])
    other = renderer.add_mesh(np.array([[0, 1, 2]]), 3, positions=TRI)
    h = renderer.add_mesh(tris, 4, positions=quad_p, base_color=(0.2, 0.6, 0.2, 1))
    renderer.render(_camera())
    vp = renderer.last_view_proj
    for t in (0, 1):
        c = quad_p[tris[t]].mean(axis=0)
        px = np.floor(_pixel(vp, c)).astype(int)
        hit = renderer.query(int(px[0]), int(px[1]))
        assert hit is not None and hit.mesh is h and hit.triangle == t
        np.testing.assert_allclose(hit.barycentric, [1 / 3] * 3, atol=0.12)
        assert hit.barycentric.sum() == pytest.approx(1.0, abs=1e-4)
        # the surface point the barycentrics name is the world position of the pixel
        p_bary = hit.barycentric @ quad_p[tris[t]]
        np.testing.assert_allclose(hit.position, p_bary, atol=1e-4)
        np.testing.assert_allclose(hit.position, c, atol=0.06)
        np.testing.assert_allclose(hit.normal, (0, 0, 1), atol=1e-3)
        assert 0.0 < hit.depth < 1.0
    px = np.floor(_pixel(vp, TRI.mean(axis=0))).astype(int)
    assert renderer.query(int(px[0]), int(px[1])).mesh is other
    assert renderer.query(W - 1, H - 1) is None
    with pytest.raises(ValueError, match=r"\(80, 0\) outside the 80x60"):
        renderer.query(W, 0)
    g = renderer.gbuffer_arrays()
    assert g["mesh"].shape == (H, W) and g["depth"].shape == (H, W)
    covered = g["mesh"] >= 0
    assert set(np.unique(g["mesh"][covered])) == {other.id, h.id}
    assert np.all(g["depth"][~covered] == 1.0) and np.all(g["depth"][covered] < 1.0)


def test_update_vertices_moves_the_mesh(renderer):
    h = renderer.add_mesh(np.array([[0, 1, 2]]), 3, positions=TRI)
    renderer.render(_camera())
    a = renderer.query(*np.floor(_pixel(renderer.last_view_proj, TRI.mean(0))).astype(int))
    renderer.update_vertices(h, TRI + np.array([1.2, -1.0, 0.0], np.float32))
    renderer.render(_camera())
    moved = TRI.mean(0) + np.array([1.2, -1.0, 0.0])
    b = renderer.query(*np.floor(_pixel(renderer.last_view_proj, moved)).astype(int))
    assert a is not None and b is not None and b.mesh is h
    assert renderer.query(*np.floor(_pixel(renderer.last_view_proj, TRI.mean(0))).astype(int)) is None
    with pytest.raises(ValueError, match=r"must be \(3,3\), got \(2, 3\)"):
        renderer.update_vertices(h, TRI[:2])


def test_compute_shader_writes_the_same_ssbos(gl_ctx, renderer, res, tmp_path):
    """The deformer contract: a compute shader including mesh_buffers.glsl writes positions/normals,
    the renderer draws them, and the frame equals the CPU-uploaded one."""
    comp = tmp_path / "offset.comp"
    comp.write_text("""#version 430 core
layout(local_size_x = LOCAL_SIZE) in;
#define MESH_BUFFER_ACCESS writeonly
#include "mesh_buffers.glsl"
layout(std430, binding = 5) readonly buffer Rest { vec4 rest[]; };
uniform uint u_count;
uniform vec3 u_offset;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    positions[i] = vec4(rest[i].xyz + u_offset, 1.0);
    normals[i] = vec4(0.0, 0.0, 1.0, 0.0);
}
""")
    p, t, _ = shapes.uv_sphere(0.6, rings=8, segments=12)
    offset = np.array([0.3, -0.2, 0.0], np.float32)
    h = renderer.add_mesh(t, len(p), positions=p + offset, normals=np.tile([0, 0, 1.0], (len(p), 1)))
    renderer.render(_camera())
    cpu = renderer.read_pixels()
    renderer.update_vertices(h, p * 0.1)  # overwrite: the compute pass must restore it
    defines = {k: GLSL_CONSTANTS[k] for k in ("LOCAL_SIZE", "BINDING_POSITIONS", "BINDING_NORMALS",
                                              "BINDING_TEXCOORDS")}
    cs = renderer.programs.get_compute(str(comp), defines)
    rest = np.zeros((len(p), 4), np.float32)
    rest[:, :3] = p
    rest_buf = res.buffer(rest, label="rest")
    rest_buf.bind_to_storage_buffer(5)
    h.positions.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_POSITIONS"])
    h.normals.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_NORMALS"])
    cs["u_count"].value = len(p)
    cs["u_offset"].value = tuple(offset)
    cs.run((len(p) + GLSL_CONSTANTS["LOCAL_SIZE"] - 1) // GLSL_CONSTANTS["LOCAL_SIZE"])
    gl_ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT | moderngl.VERTEX_ATTRIB_ARRAY_BARRIER_BIT)
    renderer.render(_camera())
    gpu = renderer.read_pixels()
    assert np.abs(gpu.astype(int) - cpu.astype(int)).max() <= 1


def test_vertex_normals_area_weighted_by_hand():
    # Two triangles sharing vertex 0: one in the xy plane (area 2), one in the xz plane (area 0.5).
    p = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [0, 0, 1], [1, 0, 0]], np.float32)
    t = np.array([[0, 1, 2], [0, 3, 4]])
    n = vertex_normals(p, t)
    # face 0 normal (0,0,1) x 2*area 4; face 1: (0,0,1)x(1,0,0) = (0,1,0) x 2*area 1 -> sum (0,1,4)
    np.testing.assert_allclose(n[0], np.array([0, 1, 4]) / np.sqrt(17), atol=1e-6)
    np.testing.assert_allclose(n[1], (0, 0, 1), atol=1e-6)
    np.testing.assert_allclose(n[3], (0, 1, 0), atol=1e-6)
    bp, bt, _ = shapes.box((1, 2, 3))
    bn = vertex_normals(bp, bt)
    # box faces have their own vertices: each normal is the axis pointing out of its face
    np.testing.assert_allclose(np.abs(bn).sum(axis=1), 1.0, atol=1e-6)
    assert np.all(np.einsum("ij,ij->i", bn, bp) > 0)
    sp, st, _ = shapes.uv_sphere(1.0)
    sn = vertex_normals(sp, st)
    used = np.unique(st)
    assert np.all(np.einsum("ij,ij->i", sn[used], sp[used]) > 0.97)  # outward, close to radial


def test_timers_arrive_a_few_frames_late(renderer):
    renderer.add_mesh(np.array([[0, 1, 2]]), 3, positions=TRI)
    renderer.render(_camera())
    assert renderer.gpu_ms == {}  # the first frame's queries are not read yet
    for _ in range(renderer.timers.latency + 1):
        renderer.render(_camera())
    ms = renderer.gpu_ms
    assert {"gbuffer", "compose"} <= set(ms)
    assert all(v >= 0.0 for v in ms.values())


def test_wireframe_and_shadows_change_the_picture(gl_ctx, res):
    look = LookSettings(ground=True, shadows=True)
    r = SceneRenderer(gl_ctx, res, W, H, look=look, shadow_size=512)
    p, t, _ = shapes.box((0.6, 0.6, 0.6), (0.0, 0.8, 0.0))
    r.add_mesh(t, len(p), positions=p)
    cam = Camera(eye=np.array([0.0, 2.5, 3.0]), target=np.array([0.0, 0.3, 0.0]), fov_y=50.0)
    r.render(cam)
    lit = r.read_pixels()
    r.look.shadows = False
    r.render(cam)
    unshadowed = r.read_pixels()
    # The key light comes from the upper right: the ground to the lower left of the box gets darker.
    diff = unshadowed[..., :3].astype(int).sum(-1) - lit[..., :3].astype(int).sum(-1)
    assert (diff > 20).sum() > 30 and (diff < -20).sum() == 0
    r.look.shadows = True
    r.wireframe = True
    r.render(cam)
    wire = r.read_pixels()
    assert _diff_mask(wire, lit, 30).sum() > 20
    r.release()
    assert res.live_count == 0


def test_resize_and_release_leave_nothing_behind(gl_ctx, res):
    r = SceneRenderer(gl_ctx, res, W, H, shadow_size=64)
    p, t, uv = shapes.box()
    img = np.full((4, 4, 4), 200, np.uint8)
    h = r.add_mesh(t, len(p), positions=p, texcoords=uv, image=img)
    r.render(_camera())
    n = res.live_count
    r.resize(40, 30)
    assert res.live_count == n  # targets replaced, not added
    r.render(_camera())
    assert r.read_pixels().shape == (30, 40, 4)
    r.remove_mesh(h)
    with pytest.raises(ValueError, match="not registered"):
        r.remove_mesh(h)
    r.release()
    assert res.live_count == 0


def test_add_mesh_validates(renderer):
    with pytest.raises(ValueError, match=r"\[0, 2\], got \[0, 3\]"):
        renderer.add_mesh(np.array([[0, 1, 3]]), 3)
    with pytest.raises(ValueError, match="texcoords"):
        renderer.add_mesh(np.array([[0, 1, 2]]), 3, image=np.zeros((2, 2, 4), np.uint8))
    with pytest.raises(ValueError, match="base_color"):
        renderer.add_mesh(np.array([[0, 1, 2]]), 3, base_color=(1, 1, 1))
    with pytest.raises(ValueError, match=r"render size"):
        renderer.resize(0, 10)


def test_shader_reload_rebuilds_what_depends_on_programs(gl_ctx, res, tmp_path):
    root = tmp_path / "shaders"
    shutil.copytree(SHADER_ROOT, root)
    cache = ProgramCache(res, ShaderLibrary(root))
    r = SceneRenderer(gl_ctx, res, W, H, programs=cache, look=LookSettings(ground=False, shadows=False),
                      shadow_size=64)
    r.add_mesh(np.array([[0, 1, 2]]), 3, positions=TRI, base_color=(1, 1, 1, 1))
    r.render(_camera())
    before = r.read_pixels()
    frag = root / "render" / "gbuffer.frag"
    text = frag.read_text()
    assert "o_albedo = vec4(albedo, wire);" in text
    frag.write_text(text.replace("o_albedo = vec4(albedo, wire);", "o_albedo = vec4(0.0, 0.0, albedo.b, wire);"))
    assert [x.ok for x in cache.reload_changed()] == [True, True]  # both gbuffer variants
    r.render(_camera())
    after = r.read_pixels()
    px = np.floor(_pixel(r.last_view_proj, TRI.mean(0))).astype(int)
    assert before[px[1], px[0], 0] > 150 and after[px[1], px[0], 0] < 60  # red gone: new shader in use
    r.release()
    cache.release()
    assert res.live_count == 0


def test_present_copies_the_frame_to_a_target(gl_ctx, renderer, res):
    renderer.add_mesh(np.array([[0, 1, 2]]), 3, positions=TRI, base_color=(0.1, 0.5, 0.9, 1.0))
    tex = res.texture((W, H), 4, label="window stand-in")
    fbo = res.framebuffer([tex], label="window stand-in")
    renderer.render(_camera(), target=fbo)
    shown = np.frombuffer(tex.read(alignment=1), np.uint8).reshape(H, W, 4)[::-1]
    np.testing.assert_array_equal(shown, renderer.read_pixels())


def test_meshes_in_ranges_of_one_buffer_draw_the_same_frame(gl_ctx, res):
    """Vertex ranges (glBindBufferRange: buffer, offset, size) of one shared buffer, as the deformer graph's
    pooled outputs, draw and evaluate exactly like per-mesh buffers; update_vertices writes into the range."""
    shapes_ = [shapes.uv_sphere(0.35, (-0.5, 0.1, 0.0), rings=8, segments=12),
               shapes.box((0.5, 0.4, 0.3), (0.5, 0.0, 0.0))]
    shapes_ = [(p, vertex_normals(p, tri.astype(np.int64)), tri) for p, tri, _ in shapes_]
    padded = [-(-p.shape[0] * 16 // 1024) * 1024 for p, _, _ in shapes_]
    cam = _camera()
    look = LookSettings(ground=False, shadows=False)
    stride = 1024  # aligned for any GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT (<= 256)
    frames, hits, evals = [], [], []
    for pooled in (False, True):
        r = SceneRenderer(gl_ctx, res, W, H, look=look, shadow_size=256)
        try:
            if pooled:
                total = sum(padded) + stride
                pos_pool = res.buffer(reserve=total, label="pooled positions")
                nrm_pool = res.buffer(reserve=total, label="pooled normals")
            off = stride  # non-zero first offset: a range, not the buffer start
            handles = []
            for k, (p, n, tri) in enumerate(shapes_):
                v = p.shape[0]
                kw = {}
                if pooled:
                    kw["buffers"] = ((pos_pool, off, v * 16), (nrm_pool, off, v * 16))
                    off += padded[k]
                h = r.add_mesh(tri, v, base_color=(0.9, 0.3 + 0.4 * k, 0.2, 1.0), **kw)
                r.update_vertices(h, p, n)
                handles.append(h)
            if pooled:
                assert [h.positions_offset for h in handles] == [stride, stride + padded[0]]
                raw = np.frombuffer(pos_pool.read(size=shapes_[1][0].shape[0] * 16,
                                                  offset=handles[1].positions_offset), np.float32).reshape(-1, 4)
                np.testing.assert_array_equal(raw[:, :3], shapes_[1][0])  # update_vertices wrote into the range
            r.render(cam)
            frames.append(r.read_pixels())
            hit = r.query(W // 2 + 12, H // 2)
            hits.append(None if hit is None else (handles.index(hit.mesh), hit.triangle))
            if hit is not None:
                evals.append(r.evaluate([hit.surface_point])[0])
        finally:
            r.release()
            if pooled:
                res.release(pos_pool)
                res.release(nrm_pool)
    assert _diff_mask(frames[0], np.zeros_like(frames[0])).mean() > 0.05
    np.testing.assert_array_equal(frames[0], frames[1])
    assert hits[0] is not None and hits[0] == hits[1]
    np.testing.assert_array_equal(evals[0], evals[1])


def test_vertex_ranges_validate(renderer, res):
    buf = res.buffer(reserve=1024, label="range")
    try:
        with pytest.raises(ValueError, match="16-byte aligned"):
            renderer.add_mesh(np.array([[0, 1, 2]]), 3, buffers=((buf, 8, 48), (buf, 0, 48)))
        with pytest.raises(ValueError, match="hold V vec4"):
            renderer.add_mesh(np.array([[0, 1, 2]]), 3, buffers=((buf, 1008, 48), (buf, 0, 48)))
        with pytest.raises(ValueError, match="hold V vec4"):
            renderer.add_mesh(np.array([[0, 1, 2]]), 3, buffers=((buf, 0, 32), (buf, 0, 48)))
    finally:
        res.release(buf)
