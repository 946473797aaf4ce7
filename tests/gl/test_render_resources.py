"""GPU resource ownership (release one / all, live counters) and the std430 layout helper, checked
against the driver: a compute shader fills the generated struct and numpy reads it with the dtype."""
from __future__ import annotations

import numpy as np
import pytest

from engine.gpu.layouts import GLSL_CONSTANTS, LIGHT, Std430Struct, layouts_glsl, pack_mat4
from engine.gpu.resources import GpuResources, live_objects
from engine.gpu.shaderlib import ProgramCache, ShaderLibrary

pytestmark = pytest.mark.gl

PROBE = Std430Struct("Probe", [
    ("a", "float"),
    ("b", "vec2"),
    ("c", "vec4"),
    ("d", "uint"),
    ("e", "float", 3),
    ("m", "mat4"),
    ("f", "ivec2"),
])


def test_std430_offsets_by_hand():
    offs = {f.name: f.offset for f in PROBE.fields}
    # a@0 (4), b aligns to 8 -> 8..16, c aligns to 16 -> 16..32, d@32, e[3] stride 4 -> 36..48,
    # m aligns 16 -> 48..112, f aligns 8 -> 112..120; struct aligns to 16 -> size 128.
    assert offs == {"a": 0, "b": 8, "c": 16, "d": 32, "e": 36, "m": 48, "f": 112}
    assert PROBE.size == 128 and PROBE.dtype.itemsize == 128 and PROBE.alignment == 16
    assert Std430Struct("S", [("x", "float"), ("y", "float")]).size == 8  # no std140 rounding
    assert Std430Struct("S", [("v", "vec2"), ("x", "float")]).size == 16
    assert LIGHT.size == 32
    text = PROBE.glsl()
    assert "struct Probe {" in text and "float e[3];" in text and "mat4 m;" in text
    assert "struct Light {" in layouts_glsl()


def test_std430_refuses_vec3_and_bad_fields():
    with pytest.raises(ValueError, match="'vec3'.*use vec4"):
        Std430Struct("Bad", [("p", "vec3")])
    with pytest.raises(ValueError, match="unknown type 'vec5'"):
        Std430Struct("Bad", [("p", "vec5")])
    with pytest.raises(ValueError, match="array count"):
        Std430Struct("Bad", [("p", "float", 0)])
    with pytest.raises(ValueError, match="not a new GLSL identifier"):
        Std430Struct("Bad", [("p", "float"), ("p", "float")])


def test_std430_layout_matches_the_driver(gl_ctx, tmp_path):
    """GLSL writes every field of the generated struct; numpy reads the bytes with the same layout."""
    root = tmp_path / "shaders"
    (root / "deform").mkdir(parents=True)
    (root / "deform" / "probe.comp").write_text("""#version 430 core
layout(local_size_x = LOCAL_SIZE) in;
#include "generated/probe.glsl"
layout(std430, binding = 0) buffer Out { Probe items[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= 2u) return;
    float s = float(i + 1u);
    items[i].a = 1.0 * s;
    items[i].b = vec2(2.0, 3.0) * s;
    items[i].c = vec4(4.0, 5.0, 6.0, 7.0) * s;
    items[i].d = 8u * (i + 1u);
    items[i].e[0] = 9.0 * s; items[i].e[1] = 10.0 * s; items[i].e[2] = 11.0 * s;
    items[i].m = mat4(1.0) * s;
    items[i].m[3] = vec4(12.0, 13.0, 14.0, 1.0);   // column 3 = translation
    items[i].f = ivec2(-1, -2) * int(i + 1u);
}
""")
    lib = ShaderLibrary(root)
    lib.add_virtual("generated/probe.glsl", PROBE.glsl())
    res = GpuResources(gl_ctx)
    cache = ProgramCache(res, lib)
    cs = cache.get_compute("deform/probe.comp", {"LOCAL_SIZE": GLSL_CONSTANTS["LOCAL_SIZE"]})
    buf = res.buffer(PROBE.zeros(2), label="probe")
    buf.bind_to_storage_buffer(0)
    cs.run(1)
    out = np.frombuffer(buf.read(), PROBE.dtype)
    for i in range(2):
        s = i + 1
        assert out["a"][i] == 1 * s
        np.testing.assert_array_equal(out["b"][i], np.array([2, 3]) * s)
        np.testing.assert_array_equal(out["c"][i], np.array([4, 5, 6, 7]) * s)
        assert out["d"][i] == 8 * s
        np.testing.assert_array_equal(out["e"][i], np.array([9, 10, 11]) * s)
        np.testing.assert_array_equal(out["f"][i], np.array([-1, -2]) * s)
        # GLSL is column-major: the bytes read as numpy (4,4) are the transpose of the matrix.
        m = out["m"][i].T
        expect = np.eye(4) * s
        expect[:, 3] = [12, 13, 14, 1]
        np.testing.assert_array_equal(m, expect)
        np.testing.assert_array_equal(pack_mat4(expect), out["m"][i])
    cache.release()
    res.release_all()
    assert res.live_count == 0


def test_release_one_and_all_with_counters(gl_ctx):
    before = live_objects()
    res = GpuResources(gl_ctx)
    b1 = res.buffer(np.arange(4, dtype=np.float32), label="b1")
    res.buffer(reserve=64, label="b2")
    tex = res.texture((8, 4), 4, label="colour")
    depth = res.depth_texture((8, 4), label="depth")
    res.framebuffer([tex], depth, label="fbo")
    res.query(time=True, label="timer")
    assert res.live_counts() == {"buffer": 2, "texture": 2, "framebuffer": 1, "query": 1}
    assert live_objects().get("buffer", 0) == before.get("buffer", 0) + 2
    res.release(b1)
    assert res.live_counts()["buffer"] == 1
    with pytest.raises(ValueError, match="not owned"):
        res.release(b1)  # a second release is an error, not a double free
    other = GpuResources(gl_ctx)
    foreign = other.buffer(reserve=16)
    with pytest.raises(ValueError, match="not owned"):
        res.release(foreign)
    other.release_all()
    res.release_all()
    assert res.live_count == 0 and res.live_counts() == {}
    assert live_objects() == before


def test_creation_validates_arguments(gl_ctx):
    res = GpuResources(gl_ctx)
    with pytest.raises(ValueError, match="reserve=0"):
        res.buffer()
    with pytest.raises(ValueError, match=r"\(0, 4\)"):
        res.texture((0, 4), 4)
    with pytest.raises(ValueError, match="components must be 1..4, got 5"):
        res.texture((4, 4), 5)
    assert res.live_count == 0
