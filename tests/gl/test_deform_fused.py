"""The fused skin_copy stage (gpu_plan fusion of a bind-mode LBS/DQS skin node and the copy that alone reads its
target): where the planner fuses and what it then leaves unwritten, and that the one fused dispatch equals the
numpy references and the unfused skin -> copy path, over batches of several assets and instances, holes left
by removed meshes, joint ids using all 8 packed bits, and images of several rows; the pooled ranges keep the
renderer's contract (vec4 positions with w = 1, normals with w = 0).
"""
from __future__ import annotations

import numpy as np
import pytest

from engine.skinning import meshprep as M
from engine.skinning import skinning as S
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu import stages as gpu_stages
from engine.skinning.gpu.graph import DeformerGraph
from engine.skinning.gpu.plan import COMPUTE_READ_BITS, GraphConfig, default_config, fusions, plan
from tests.conftest import count_dispatches
from tests.helpers.tube_rig import tube

TOL = 1e-5


def _cfg(method, *, fuse=True, normals=None):
    return GraphConfig.from_dict({**default_config(method, normals=normals).to_dict(), "fuse": fuse})


# ---- the plan (no GL) -------------------------------------------------------------------------------------
def test_planner_fuses_only_where_nothing_else_reads_the_control_points():
    for method in ("lbs", "dqs"):
        for normals in (None, "surface"):
            p = plan(default_config(method, normals=normals))
            assert p.steps[0].node.stage == "skin_copy" and p.steps[0].covers == ("skin", "copy")
            assert p.elided == ("skinned",)
            assert ("normals" in p.steps[0].node.outputs) == (normals is None)
        assert [s.node.stage for s in plan(_cfg(method, fuse=False)).steps] == ["skin", "copy"]
        assert plan(_cfg(method, fuse=False)).elided == ()
    for method in ("rigid", "irs", "spring", "spring-feedback"):
        p = plan(default_config(method))
        assert "skin_copy" not in [s.node.stage for s in p.steps] and p.elided == ()
    # a second reader of the skinned control points (a spring) keeps skin and copy apart
    d = default_config("lbs", normals="surface").to_dict()
    d["nodes"].append({"name": "spring", "stage": "spring", "inputs": {"source": "skinned"},
                       "outputs": {"target": "sprung"}})
    assert fusions(GraphConfig.from_dict(d)) == {}
    # a skin reading something other than the bind positions is not fused either
    d = default_config("lbs", normals="surface").to_dict()
    d["nodes"][0]["inputs"]["source"] = "skinned@previous"
    d["nodes"][0]["options"]["mode"] = "differential"
    assert fusions(GraphConfig.from_dict(d)) == {}
    # the file format: fuse written only where false; anything but a bool refused
    assert "fuse" not in default_config("lbs").to_dict()
    assert _cfg("lbs", fuse=False).to_dict()["fuse"] is False
    with pytest.raises(ValueError, match="fuse"):
        GraphConfig.from_dict({**default_config("lbs").to_dict(), "fuse": "no"})


def test_fused_step_runs_where_the_copy_stood():
    # a node reading positions@previous must run before positions are overwritten: the fused step (which writes
    # them) comes after it, with the write-after-read barrier, as the unfused copy would
    d = {"name": "prev", "nodes": [
        {"name": "skin", "stage": "skin", "inputs": {"source": "bind"}, "outputs": {"target": "skinned"},
         "options": {"method": "lbs"}},
        {"name": "copy", "stage": "copy", "inputs": {"source": "skinned"}, "outputs": {"target": "positions"}},
        {"name": "fn", "stage": "face_normals", "inputs": {"positions": "positions@previous"},
         "outputs": {"target": "faces"}},
        {"name": "vn", "stage": "vertex_normals", "inputs": {"positions": "positions", "faces": "faces"},
         "outputs": {"target": "normals"}}]}
    p = plan(GraphConfig.from_dict(d))
    assert [s.node.name for s in p.steps] == ["fn", "skin+copy", "vn"]
    assert p.steps[1].barrier_before == COMPUTE_READ_BITS
    unfused = plan(GraphConfig.from_dict({**d, "fuse": False}))
    assert [s.node.name for s in unfused.steps].index("copy") > [s.node.name for s in unfused.steps].index("fn")


def test_joint_packing_and_image_rows():
    j = np.array([[0, 1, 254, 255], [7, 128, 3, 200]])
    packed = L.pack_joint_ids(j)
    back = np.stack([(packed >> (L.JOINT_ID_BITS * k)) & 0xFF for k in range(4)], 1)
    np.testing.assert_array_equal(back, j)
    with pytest.raises(ValueError, match="< 256"):
        L.pack_joint_ids(np.array([[256, 0, 0, 0]]))
    rec = L.SKIN_JOINT_DQS.zeros(L.IMAGE_ROW_ITEMS + 3)
    rec["qd"][:, 0] = np.arange(rec.shape[0])
    img = L.image_rows(rec)  # two rows, record i at row i >> shift, texels 4 (i & mask) + field
    assert img.shape == (2, L.IMAGE_ROW_ITEMS * 4, 4) and img.dtype == np.float32
    i = L.IMAGE_ROW_ITEMS + 2
    t = L.image_record_defines()
    assert img[i >> L.IMAGE_ROW_SHIFT, 4 * (i & (L.IMAGE_ROW_ITEMS - 1)) + t["SKIN_JOINT_DQS_QD"], 0] == i
    assert t["SKIN_VERTEX_TEXELS"] == 3 and t["SKIN_JOINT_LBS_TEXELS"] == 3 and t["SKIN_JOINT_DQS_TEXELS"] == 4


def test_fast_dual_quats_equal_the_svd_ones():
    # the per-frame DQS upload's polar decomposition (Newton) gives gpu_spring.dual_quats' results (SVD):
    # rigid, stretched, mirrored and singular joints, and the per-skin identity rule of the stretch
    from engine.skinning.gpu import spring as gpu_spring
    from engine.skinning.gpu.graph import _dual_quats

    rng = np.random.default_rng(5)
    rig = _Random(7, 60, rings=3, segments=3)
    m = rig.skin_mats(False)
    m[20:40] = rig.skin_mats(True)[20:40]  # skin 2 stretched (every third joint), skins 1 and 3 rigid
    m[41, :3, :3] = m[41, :3, :3] @ np.diag([1.0, -1.0, 1.0])  # mirrored
    m[42, :3, :3] = m[42, :3, :3] @ np.diag([1.0, 0.0, 1.0])  # singular
    m[43, :3, :3] = 0.0
    m[44, :3, :3] += rng.normal(scale=1e-7, size=(3, 3))  # float noise on a rigid joint
    starts = np.array([0, 20, 40])
    ref = gpu_spring.dual_quats(m, starts)
    got = _dual_quats(m, starts)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, atol=1e-6, rtol=0)
    assert not np.allclose(ref[2][20:40], np.eye(4)) and np.array_equal(ref[2][:20], got[2][:20])
    np.testing.assert_array_equal(got[2][:20], np.broadcast_to(np.eye(4), (20, 4, 4)))


# ---- the GPU stage ------------------------------------------------------------------------------------------
class _Random:
    """A rig over a tube topology with 4 random influences per control point among many joints (ids up to 255:
    every bit of the packed ids), random bind normals, and random skin matrices (rotations, translations and,
    for some joints, non-uniform scale: the stretch / cofactor paths)."""

    def __init__(self, seed: int, n_joints: int, rings: int, segments: int):
        rng = np.random.default_rng(seed)
        base = tube(rings=rings, segments=segments)
        self.topology = topo = base.topology
        v = topo.n_control
        self.n_joints = n_joints
        self.joints = np.stack([rng.choice(n_joints, 4, replace=False) for _ in range(v)]).astype(np.int32)
        if n_joints > 128:  # the highest id and one with the top bit set
            self.joints[0] = [n_joints - 1, 0, 128, 1]
        w = rng.random((v, 4)) * (rng.random((v, 4)) > 0.2)
        w[:, 0] += 0.05
        self.weights = (w / w.sum(1, keepdims=True)).astype(np.float32)
        n = rng.normal(size=(topo.n_display, 3))
        self.normals = (n / np.linalg.norm(n, axis=1, keepdims=True)).astype(np.float32)
        self.inverse_bind = np.tile(np.eye(4), (n_joints, 1, 1))
        self.parents = -np.ones(n_joints, np.int32)
        self.rng = rng

    def add(self, graph, config, **kw):
        return graph.add_mesh(self.topology, None, self.joints, self.weights, self.inverse_bind, self.parents,
                              config=config, normals=self.normals, asset_key=id(self), **kw)

    def skin_mats(self, stretch: bool) -> np.ndarray:
        q = self.rng.normal(size=(self.n_joints, 4))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        x, y, z, w = q.T
        r = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                      2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                      2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], 1).reshape(-1, 3, 3)
        m = np.tile(np.eye(4), (self.n_joints, 1, 1))
        m[:, :3, :3] = r
        if stretch:
            m[::3, :3, :3] = m[::3, :3, :3] @ np.diag([1.3, 0.8, 1.1])
        m[:, :3, 3] = self.rng.normal(scale=0.3, size=(self.n_joints, 3))
        return m

    def reference(self, method: str, skin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        topo = self.topology
        c = topo.control_of_display
        m = skin.astype(np.float32)
        pos = (S.lbs if method == "lbs" else S.dqs)(topo.positions, self.joints, self.weights, m)
        nf = S.lbs_normals if method == "lbs" else S.dqs_normals
        return M.copy_to_display(topo, pos), nf(self.normals, self.joints[c], self.weights[c], m)


@pytest.fixture(scope="module")
def rigs():
    # two assets: 255 joints (ids use all 8 bits) over two display work groups; 40 joints, a single one
    return [_Random(1, 255, rings=9, segments=8), _Random(2, 40, rings=4, segments=5)]


def _check(graph, rig, h, method, skin, normals_skinned=True):
    pref, nref = rig.reference(method, skin)
    diag = M.bbox_diagonal(rig.topology.positions)
    (pb, po, ps), (nb, no, ns) = graph.output_ranges(h)
    p4 = np.frombuffer(pb.read(size=ps, offset=po), np.float32).reshape(-1, 4)
    n4 = np.frombuffer(nb.read(size=ns, offset=no), np.float32).reshape(-1, 4)
    assert np.abs(pref - rig.topology.positions[rig.topology.control_of_display]).max() > 0.1 * diag  # posed
    np.testing.assert_allclose(p4[:, :3], pref, atol=TOL * max(diag, np.abs(pref).max()), rtol=0)
    np.testing.assert_array_equal(p4[:, 3], 1.0)
    np.testing.assert_array_equal(n4[:, 3], 0.0)
    if normals_skinned:
        np.testing.assert_allclose(n4[:, :3], nref, atol=1e-5, rtol=0)
    return p4, n4


@pytest.mark.gl
@pytest.mark.parametrize("method", ["lbs", "dqs"])
@pytest.mark.parametrize("stretch", [False, True])
def test_fused_equals_references_and_unfused_path(gl_ctx, resources, rigs, method, stretch, monkeypatch):
    graph = DeformerGraph(gl_ctx, resources)
    try:
        order = [0, 1, 0, 0, 1]
        fused = [rigs[k].add(graph, _cfg(method)) for k in order]
        plain = [rigs[k].add(graph, _cfg(method, fuse=False)) for k in order]
        skins = [rigs[k].skin_mats(stretch) for k in order]
        for hs in (fused, plain):
            for h, k, skin in zip(hs, order, skins):
                graph.set_pose(h, skin, skin @ np.linalg.inv(rigs[k].inverse_bind))
        calls = count_dispatches(monkeypatch)
        graph.run()
        assert len(calls) == 3  # the fused batch: one skin_copy; the unfused one: skin + copy
        for hf, hp, k, skin in zip(fused, plain, order, skins):
            pf, nf = _check(graph, rigs[k], hf, method, skin)
            pp, np_ = _check(graph, rigs[k], hp, method, skin)
            np.testing.assert_allclose(pf, pp, atol=1e-5, rtol=0)
            np.testing.assert_allclose(nf, np_, atol=1e-5, rtol=0)
        with pytest.raises(ValueError, match="fuse = false"):
            graph.download_control(fused[0], "skinned")
        assert graph.download_control(plain[0], "skinned").shape == (rigs[0].topology.n_control, 3)
        assert "skin_joints_" + method in graph.gpu_bytes() and "d_skinned" in graph.gpu_bytes()
    finally:
        graph.release()


@pytest.mark.gl
def test_fused_surface_normals_graph(gl_ctx, resources, rigs):
    # normals = "surface": skin_copy writes positions only, the face / vertex normal stages follow it
    rig = rigs[0]
    graph = DeformerGraph(gl_ctx, resources)
    try:
        h = rig.add(graph, default_config("lbs", normals="surface"))
        skin = rig.skin_mats(False)
        graph.set_pose(h, skin, skin)
        graph.run()
        topo = rig.topology
        p, n = graph.download(h)
        pref, _ = rig.reference("lbs", skin)
        np.testing.assert_allclose(p, pref, atol=TOL * np.abs(pref).max(), rtol=0)
        control = S.lbs(topo.positions, rig.joints, rig.weights, skin.astype(np.float32))
        nref = M.vertex_normals(control, topo.triangles, display_triangles=topo.display_triangles,
                                n_display=topo.n_display)
        np.testing.assert_allclose(n, nref, atol=1e-4, rtol=0)
    finally:
        graph.release()


@pytest.mark.gl
@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_holes_relayout_and_multi_row_images(gl_ctx, resources, rigs, method, monkeypatch):
    # 4 records per image row: the joint, vertex and head images all span many rows
    monkeypatch.setattr(L, "IMAGE_ROW_SHIFT", 2)
    monkeypatch.setattr(L, "IMAGE_ROW_ITEMS", 4)
    monkeypatch.setitem(L.CONSTANTS, "IMAGE_ROW_SHIFT", 2)
    monkeypatch.setattr(gpu_stages, "_DEFINES_CACHE", {})
    graph = DeformerGraph(gl_ctx, resources)
    try:
        cfg = _cfg(method)
        order = [0, 1, 0, 1]
        hs = [rigs[k].add(graph, cfg) for k in order]
        graph.remove_mesh(hs[1])  # a hole in the display pool (its groups now have no instance)
        hs[1] = None
        order.append(1)
        hs.append(rigs[1].add(graph, cfg))  # reuses the hole
        batch = next(iter(graph._batches.values()))
        assert batch.images["skin_joints_" + method].height > 1 and batch.images["dskin"].height > 1
        for _frame in range(2):  # a second frame: the per-frame joint image rewrite
            skins = {}
            for i, (h, k) in enumerate(zip(hs, order)):
                if h is not None:
                    skins[i] = rigs[k].skin_mats(True)
                    graph.set_pose(h, skins[i], skins[i])
            graph.run()
            for i, skin in skins.items():
                _check(graph, rigs[order[i]], hs[i], method, skin)
    finally:
        graph.release()
