"""Instanced G-buffer submission (one draw per material group, engine/render/passes/gbuffer.py): the G-buffer
drawn with instancing equals the one drawn one mesh per draw pixel for pixel (albedo, ids, depth copy, depth and
the screen rectangle) for one mesh, three meshes of one asset and a mix of assets, textures, base colours,
cull states, pooled and own buffers and a layer; with the wireframe variant, every flush split, instance rows
past one uniform block and groups split at the largest bindable range; every instance writes its own mesh id,
so picking names the right mesh. The grouping itself: which meshes share a draw and the rows they get."""
from __future__ import annotations

import numpy as np
import pytest

from engine.render import shapes
from engine.render.camera import Camera
from engine.render.meshes import DrawGroup
from engine.render.renderer import LookSettings, SceneRenderer, vertex_normals

pytestmark = pytest.mark.gl

W, H = 96, 72
STRIDE = 2048  # pool slot size: aligned for any GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT (<= 256)


def _camera(eye=(0.0, 1.2, 4.2)):
    return Camera(eye=np.array(eye), target=np.array([0.0, 0.0, 0.0]), fov_y=55.0, near=0.5, far=12.0,
                  aspect=W / H)


def _sphere(center, seed):
    """A bumpy sphere (same triangles for every seed: one asset), positions per instance."""
    p, t, _ = shapes.uv_sphere(0.3, (0.0, 0.0, 0.0), rings=6, segments=10)
    rng = np.random.default_rng(seed)
    p = p * (1.0 + 0.1 * rng.standard_normal((len(p), 1))).astype(np.float32)
    return (p + np.asarray(center, np.float32)).astype(np.float32), t


def _box(center, size=(0.4, 0.3, 0.35)):
    p, t, uv = shapes.box(size, center)
    return p, t, uv


def _checker() -> np.ndarray:
    img = np.zeros((8, 8, 4), np.uint8)
    img[..., 3] = 255
    img[(np.add.outer(np.arange(8), np.arange(8)) % 2) == 0, :3] = (230, 60, 40)
    img[(np.add.outer(np.arange(8), np.arange(8)) % 2) == 1, :3] = (40, 90, 220)
    return img


class Pool:
    """Two buffers (positions, normals) with numbered slots of STRIDE bytes, like a deformer pool."""

    def __init__(self, res, slots: int) -> None:
        self.res = res
        self.pos = res.buffer(reserve=STRIDE * slots, label="test pool positions")
        self.nrm = res.buffer(reserve=STRIDE * slots, label="test pool normals")

    def ranges(self, slot: int, v: int, normals_slot: int | None = None):
        assert v * 16 <= STRIDE
        ns = slot if normals_slot is None else normals_slot
        return (self.pos, slot * STRIDE, v * 16), (self.nrm, ns * STRIDE, v * 16)

    def release(self) -> None:
        self.res.release(self.pos)
        self.res.release(self.nrm)


def _add(r, p, t, *, pool=None, slot=0, normals_slot=None, **kw):
    v = p.shape[0]
    buffers = None if pool is None else pool.ranges(slot, v, normals_slot)
    h = r.add_mesh(t, v, buffers=buffers, **kw)
    r.update_vertices(h, p, vertex_normals(p, t.astype(np.int64)))
    return h


def _build(r, res, case: str) -> tuple[list, Pool]:
    """The meshes of a case; returns (handles, pool)."""
    pool = Pool(res, 40)
    hs = []
    if case == "one":
        hs.append(_add(r, *_sphere((0.0, 0.0, 0.0), 0), pool=pool, slot=2, base_color=(0.8, 0.5, 0.3, 1.0)))
    elif case == "three":
        # slots out of order and with holes: the rows carry each instance's own base
        for k, slot in enumerate((5, 1, 3)):
            hs.append(_add(r, *_sphere((-0.7 + 0.7 * k, 0.1 * k, 0.0), k), pool=pool, slot=slot,
                           base_color=(0.8, 0.5, 0.3, 1.0)))
    elif case == "mixed":
        r.add_layer("front")
        color = (0.8, 0.5, 0.3, 1.0)
        # one asset, four instances, normals in other slots than positions
        for k, (slot, nslot) in enumerate(((7, 2), (0, 9), (4, 4), (11, 6))):
            hs.append(_add(r, *_sphere((-1.2 + 0.8 * k, 0.5, -0.3), k), pool=pool, slot=slot,
                           normals_slot=nslot, base_color=color))
        # the same asset in another colour, in its own buffers, and in a layer
        hs.append(_add(r, *_sphere((-0.8, -0.35, 0.2), 7), pool=pool, slot=13, base_color=(0.2, 0.7, 0.4, 1.0)))
        hs.append(_add(r, *_sphere((0.0, -0.35, 0.2), 8), base_color=color))
        hs.append(_add(r, *_sphere((0.3, 0.1, 1.0), 9), pool=pool, slot=14, base_color=color, layer="front"))
        # boxes: double- and single-sided, and a textured pair
        p, t, uv = _box((0.8, -0.35, 0.2))
        hs.append(_add(r, p, t, pool=pool, slot=15, base_color=(0.6, 0.6, 0.9, 1.0)))
        p, t, uv = _box((1.5, -0.35, -0.2))
        hs.append(_add(r, p, t, pool=pool, slot=16, base_color=(0.6, 0.6, 0.9, 1.0), double_sided=False))
        img = _checker()
        for k, slot in enumerate((20, 18)):
            p, t, uv = _box((-1.4 + 2.4 * k, -0.9, 0.4), size=(0.5, 0.4, 0.3))
            hs.append(_add(r, p, t, pool=pool, slot=slot, texcoords=uv, image=img, base_color=(1, 1, 1, 1)))
    else:
        raise AssertionError(case)
    return hs, pool


def _read(tex, dtype) -> np.ndarray:
    return np.frombuffer(tex.read(alignment=1), dtype).reshape(H, W, -1)


def _gbuffer(r, layer=None) -> dict[str, np.ndarray]:
    """The raw G-buffer of ``layer``; albedo and ids where a surface was written (never cleared elsewhere)."""
    gb = r._targets.gbuffer(layer)
    zcopy = _read(gb.tex["zcopy"], np.float32)
    hit = zcopy[..., 0] != 0
    out = {"zcopy": zcopy, "depth": np.frombuffer(gb.depth.read(alignment=1), np.float32).reshape(H, W)}
    out["albedo"] = np.where(hit[..., None], _read(gb.tex["albedo"], np.uint8), 0)
    out["ids"] = np.where(hit[..., None], _read(gb.tex["ids"], np.uint32), 0)
    out["rect"] = np.array(r.screen_rect(layer) or (-1, -1, -1, -1))
    return out


def _render(gl_ctx, res, case: str, *, instancing: bool, wireframe: bool = False, flush: int | None = None,
            max_group_bytes: int | None = None):
    """Render a case; returns (G-buffers by layer, frame pixels, ids per group, handles ids, picks)."""
    r = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
    pool = None
    try:
        r._meshes.instancing = instancing
        if max_group_bytes is not None:
            r._meshes.max_group_bytes = max_group_bytes
        if flush is not None:
            r.flush_triangles = flush
        r.wireframe = wireframe
        hs, pool = _build(r, res, case)
        r.render(_camera())
        gbs = {layer: _gbuffer(r, layer) for layer in (None, *r.layers)}
        lists = r._meshes.draw_lists(r.layers)
        groups = {layer: [[h.id for h in g.meshes] for g in r._meshes.draw_groups(layer, lists[layer])]
                  for layer in lists}
        # picking: the first pixel of every mesh id in the scene G-buffer names that mesh
        ids = r.gbuffer_arrays()["mesh"]
        picks = {}
        for h in hs:
            ys, xs = np.nonzero(ids == h.id)
            if len(xs) and h.layer is None:
                hit = r.query(int(xs[0]), int(ys[0]), layer="gbuffer")
                picks[h.id] = None if hit is None else hit.mesh.id
        return gbs, r.read_pixels(), groups, [h.id for h in hs], picks
    finally:
        r.release()
        if pool is not None:
            pool.release()


def _assert_same(a, b) -> None:
    assert a[0].keys() == b[0].keys()
    for layer in a[0]:
        for name in a[0][layer]:
            np.testing.assert_array_equal(a[0][layer][name], b[0][layer][name], err_msg=f"{layer} {name}")
    np.testing.assert_array_equal(a[1], b[1])
    assert a[4] == b[4]


@pytest.mark.parametrize("case,n_groups", [("one", 1), ("three", 1), ("mixed", 6)])
def test_instanced_gbuffer_equals_one_draw_per_mesh(gl_ctx, res, case, n_groups):
    per_mesh = _render(gl_ctx, res, case, instancing=False)
    inst = _render(gl_ctx, res, case, instancing=True)
    _assert_same(inst, per_mesh)
    # per mesh: a group each; instanced: the material groups of the scene list
    assert all(len(g) == 1 for gs in per_mesh[2].values() for g in gs)
    assert len(inst[2][None]) == n_groups
    handles = inst[3]
    scene_ids = [i for g in inst[2][None] for i in g]
    ids_drawn = set(np.unique(inst[0][None]["ids"][..., 0])) - {0}
    # every scene mesh is visible and wrote its own id (+1) into the G-buffer; picking names it
    assert ids_drawn == {i + 1 for i in scene_ids}
    assert inst[4] == {i: i for i in scene_ids}
    if case == "mixed":
        assert sorted(scene_ids + [i for g in inst[2]["front"] for i in g]) == sorted(handles)
        assert inst[2]["front"] == [[handles[6]]]
        # the four instances of one asset and colour in pooled buffers share a draw, in list order
        assert [handles[0], handles[1], handles[2], handles[3]] in inst[2][None]
        assert [handles[9], handles[10]] in inst[2][None]  # the textured pair
        assert np.any(inst[0]["front"]["zcopy"] != 0)


@pytest.mark.parametrize("wireframe,flush", [(True, None), (False, 1), (False, 0), (False, 500)])
def test_instanced_variants_equal_one_draw_per_mesh(gl_ctx, res, wireframe, flush):
    """The wireframe variant, a flush before every instance (1), never (0) and every few instances."""
    per_mesh = _render(gl_ctx, res, "mixed", instancing=False, wireframe=wireframe, flush=flush)
    inst = _render(gl_ctx, res, "mixed", instancing=True, wireframe=wireframe, flush=flush)
    _assert_same(inst, per_mesh)
    if wireframe:  # the variant ran: edge coverage in the albedo's alpha
        assert np.any(inst[0][None]["albedo"][..., 3] > 0)


def test_groups_split_at_the_largest_bindable_range(gl_ctx, res):
    """A group binds one range of each buffer: it is split where that range would exceed the limit."""
    per_mesh = _render(gl_ctx, res, "three", instancing=False)
    split = _render(gl_ctx, res, "three", instancing=True, max_group_bytes=3 * STRIDE)
    _assert_same(split, per_mesh)
    # slots 5, 1, 3: 5 and 1 span 5 slots > 3, so 1 opens a group; 3 joins it (slots 1..3)
    ids = split[3]
    assert split[2][None] == [[ids[0]], [ids[1], ids[2]]]


def test_instance_rows_past_one_uniform_block(gl_ctx, res):
    """More instances than the program's row array holds (128) draw in several blocks, the same frame."""
    p0, t, _ = _box((0.0, 0.0, 0.0), size=(0.05, 0.05, 0.05))
    n = 150
    frames = []
    for instancing in (False, True):
        r = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
        pos = res.buffer(reserve=STRIDE * n, label="test tiny pool positions")
        nrm = res.buffer(reserve=STRIDE * n, label="test tiny pool normals")
        try:
            r._meshes.instancing = instancing
            r.flush_triangles = 0
            for k in range(n):
                c = np.array([(k % 15) * 0.16 - 1.12, (k // 15) * 0.12 - 0.55, 0.0], np.float32)
                slot = (k * 7) % n  # a permutation: rows out of buffer order
                p = p0 + c
                h = r.add_mesh(t, p.shape[0], buffers=((pos, slot * STRIDE, p.shape[0] * 16),
                                                       (nrm, slot * STRIDE, p.shape[0] * 16)))
                r.update_vertices(h, p)
            r.render(_camera(eye=(0.0, 0.0, 3.0)))
            lists = r._meshes.draw_lists(r.layers)
            groups = r._meshes.draw_groups(None, lists[None])
            assert len(groups) == (1 if instancing else n)
            if instancing:
                assert len(groups[0].row_blocks(128)) == 2
            frames.append((_gbuffer(r), r.read_pixels()))
            ids = set(np.unique(frames[-1][0]["ids"][..., 0])) - {0}
            assert ids == {h.id + 1 for h in lists[None]}  # all 150 meshes visible, each its own id
        finally:
            r.release()
            res.release(pos)
            res.release(nrm)
    for name in frames[0][0]:
        np.testing.assert_array_equal(frames[1][0][name], frames[0][0][name], err_msg=name)
    np.testing.assert_array_equal(frames[1][1], frames[0][1])


def test_draw_group_rows_and_blocks(gl_ctx, res):
    """Rows: first vec4 of each mesh's positions / normals from the bound ranges' starts, and its id;
    blocks of a capacity, zero-padded; the cache follows the draw lists and the instancing switch."""
    r = SceneRenderer(gl_ctx, res, W, H, look=LookSettings(ground=False, shadows="off"), shadow_size=64)
    pool = Pool(res, 12)
    try:
        hs = [_add(r, *_sphere((0.3 * k, 0.0, 0.0), k), pool=pool, slot=s, normals_slot=ns)
              for k, (s, ns) in enumerate(((4, 8), (2, 3), (9, 5)))]
        reg = r._meshes
        lists = reg.draw_lists(r.layers)
        (g,) = reg.draw_groups(None, lists[None])
        assert isinstance(g, DrawGroup) and g.meshes == hs and g.head is hs[0]
        assert g.positions[1:] == (2 * STRIDE, 7 * STRIDE + hs[2].vertex_count * 16)
        assert g.normals[1:] == (3 * STRIDE, 5 * STRIDE + hs[0].vertex_count * 16)
        q = STRIDE // 16
        np.testing.assert_array_equal(g.rows, [[2 * q, 5 * q, hs[0].id, 0], [0, 0, hs[1].id, 0],
                                               [7 * q, 2 * q, hs[2].id, 0]])
        blocks = g.row_blocks(2)
        assert len(blocks) == 2 and all(len(b) == 2 * 16 for b in blocks)
        np.testing.assert_array_equal(np.frombuffer(blocks[1], np.uint32).reshape(2, 4)[1], 0)
        with pytest.raises(ValueError, match="capacity"):
            g.row_blocks(0)
        assert reg.draw_groups(None, lists[None])[0] is g  # cached
        reg.instancing = False
        assert len(reg.draw_groups(None, lists[None])) == 3
        with pytest.raises(TypeError, match="instancing"):
            reg.instancing = 1
    finally:
        r.release()
        pool.release()
