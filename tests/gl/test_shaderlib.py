"""Shader library: #version/#define/#include/#line preprocessing, error messages naming file and line,
include cycles, the program cache (hits, keyed by defines) and hot reload keeping the old program."""
from __future__ import annotations

import moderngl
import pytest

from engine.gpu.layouts import GLSL_CONSTANTS
from engine.gpu.resources import GpuResources
from engine.gpu.shaderlib import ProgramCache, ShaderError, ShaderIncludeError, ShaderLibrary, uniform

pytestmark = pytest.mark.gl

VERT = """#version 430 core
#include "common.glsl"
out vec4 v_color;
void main() {
    v_color = tint(vec4(1.0));
    gl_Position = vec4(0.0, 0.0, 0.0, 1.0);
}
"""
FRAG = """#version 430 core
in vec4 v_color;
out vec4 o_color;
void main() { o_color = v_color * SCALE; }
"""
COMMON = """// common helpers
vec4 tint(vec4 c) {
    return c * 0.5;
}
"""


@pytest.fixture()
def lib(tmp_path):
    root = tmp_path / "shaders"
    (root / "include").mkdir(parents=True)
    (root / "render").mkdir()
    (root / "render" / "t.vert").write_text(VERT)
    (root / "render" / "t.frag").write_text(FRAG)
    (root / "include" / "common.glsl").write_text(COMMON)
    return ShaderLibrary(root)


def test_version_first_defines_after_and_line_directives(lib):
    src = lib.load("render/t.vert", {"UNUSED_BUT_MENTIONED": 3}, strict=False)
    lines = src.text.split("\n")
    assert lines[0] == "#version 430 core"
    assert "#define" not in src.text  # the define is not mentioned by the file: not injected
    src = lib.load("render/t.frag", {"SCALE": 2.0})
    lines = src.text.split("\n")
    assert lines[0] == "#version 430 core"
    assert lines[1] == "#define SCALE 2.0"
    assert sum(ln.startswith("#define") for ln in lines) == 1
    assert "#line 1 0" in lines
    vsrc = lib.load("render/t.vert")
    vl = vsrc.text.split("\n")
    assert vsrc.files == ["render/t.vert", "include/common.glsl"]
    i = vl.index("#line 1 1")  # the include starts as source string 1, line 1
    assert vl[i + 1] == "// common helpers"
    # after the include, numbering of the stage file resumes at its line 3
    j = vl.index("#line 3 0")
    assert vl[j + 1] == "out vec4 v_color;"
    assert vsrc.line_map[j + 1] == (0, 3)
    assert not any(ln.strip().startswith("#include") for ln in vl)


def test_missing_version_gets_default_and_unused_define_is_refused(lib, tmp_path):
    (lib.root / "render" / "nov.frag").write_text("out vec4 o;\nvoid main() { o = vec4(1.0); }\n")
    src = lib.load("render/nov.frag")
    assert src.text.split("\n")[0] == "#version 430 core"
    with pytest.raises(ValueError, match="TYPO"):
        lib.load("render/t.frag", {"SCALE": 1.0, "TYPO": 1})
    with pytest.raises(ValueError, match="identifier"):
        lib.load("render/t.frag", {"bad name": 1})


def test_include_relative_to_including_file_and_once(lib):
    (lib.root / "render" / "local.glsl").write_text('#include "common.glsl"\nfloat local_fn() { return 1.0; }\n')
    (lib.root / "render" / "d.vert").write_text(
        '#version 430 core\n#include "local.glsl"\n#include "common.glsl"\n'
        'void main() { gl_Position = tint(vec4(local_fn())); }\n')
    src = lib.load("render/d.vert")
    assert src.files == ["render/d.vert", "render/local.glsl", "include/common.glsl"]
    assert src.text.count("vec4 tint(vec4 c)") == 1  # diamond: included once


def test_include_cycle_names_the_chain(lib):
    (lib.root / "include" / "a.glsl").write_text('#include "b.glsl"\n')
    (lib.root / "include" / "b.glsl").write_text('// b\n#include "a.glsl"\n')
    (lib.root / "render" / "c.vert").write_text('#version 430 core\n#include "a.glsl"\nvoid main() {}\n')
    with pytest.raises(ShaderIncludeError) as ei:
        lib.load("render/c.vert")
    msg = str(ei.value)
    assert "cycle" in msg
    assert "render/c.vert:2 -> include/a.glsl:1 -> include/b.glsl:2 -> include/a.glsl" in msg


def test_missing_include_names_file_line_and_chain(lib):
    (lib.root / "include" / "a.glsl").write_text('\n\n#include "nope.glsl"\n')
    (lib.root / "render" / "m.vert").write_text('#version 430 core\n#include "a.glsl"\nvoid main() {}\n')
    with pytest.raises(ShaderIncludeError, match=r"include/a.glsl:3: cannot find include 'nope.glsl'.*"
                                                 r"render/m.vert:2 -> include/a.glsl:3"):
        lib.load("render/m.vert")


def test_version_inside_include_is_an_error(lib):
    (lib.root / "include" / "v.glsl").write_text("#version 430 core\n")
    (lib.root / "render" / "v.vert").write_text('#version 430 core\n#include "v.glsl"\nvoid main() {}\n')
    with pytest.raises(ShaderError, match="include/v.glsl:1: #version"):
        lib.load("render/v.vert")


def test_semantic_error_in_include_names_include_file_and_line(gl_ctx, lib):
    # Mesa reports semantic errors with source string 0: the loader's fallback must still find the file.
    (lib.root / "include" / "common.glsl").write_text(COMMON.replace("return c * 0.5;", "return c * undefined_thing;"))
    with pytest.raises(ShaderError) as ei:
        lib.compile_program(gl_ctx, vertex="render/t.vert", fragment="render/t.frag", defines={"SCALE": 1.0})
    msg = str(ei.value)
    assert "include/common.glsl:3:" in msg
    assert "undefined_thing" in msg
    assert ">     3 |     return c * undefined_thing;" in msg  # the context marks the line itself
    assert "vertex shader render/t.vert" in msg


def test_syntax_error_in_include_maps_source_number(gl_ctx, lib):
    (lib.root / "include" / "common.glsl").write_text(COMMON.replace("return c * 0.5;", "return c * ;"))
    with pytest.raises(ShaderError, match=r"include/common.glsl:3:"):
        lib.compile_program(gl_ctx, vertex="render/t.vert", fragment="render/t.frag", defines={"SCALE": 1.0})


def test_error_in_stage_file_after_include_and_defines(gl_ctx, lib):
    (lib.root / "render" / "t.frag").write_text(FRAG.replace("o_color = v_color * SCALE;", "o_color = nope * SCALE;"))
    with pytest.raises(ShaderError) as ei:
        lib.compile_program(gl_ctx, vertex="render/t.vert", fragment="render/t.frag", defines={"SCALE": 1.0})
    msg = str(ei.value)
    assert "render/t.frag:4:" in msg and "nope" in msg


def test_compute_error_names_file(gl_ctx, lib):
    (lib.root / "deform").mkdir()
    (lib.root / "deform" / "k.comp").write_text(
        "#version 430 core\nlayout(local_size_x = LOCAL_SIZE) in;\n\nvoid main() {\n  bogus();\n}\n")
    with pytest.raises(ShaderError, match=r"deform/k.comp:5:"):
        lib.compile_compute(gl_ctx, "deform/k.comp", {"LOCAL_SIZE": GLSL_CONSTANTS["LOCAL_SIZE"]})


def test_link_error_is_a_shader_error(gl_ctx, lib):
    (lib.root / "render" / "t.frag").write_text(FRAG.replace("in vec4 v_color;", "in vec3 v_color;")
                                                .replace("v_color * SCALE", "vec4(v_color, 1.0) * SCALE"))
    with pytest.raises(ShaderError, match="link"):
        lib.compile_program(gl_ctx, vertex="render/t.vert", fragment="render/t.frag", defines={"SCALE": 1.0})


def test_program_cache_hits_and_keys_by_defines(gl_ctx, lib):
    res = GpuResources(gl_ctx)
    cache = ProgramCache(res, lib)
    p1 = cache.get_program(vertex="render/t.vert", fragment="render/t.frag", defines={"SCALE": 1.0})
    p2 = cache.get_program(vertex="render/t.vert", fragment="render/t.frag", defines={"SCALE": 1.0})
    p3 = cache.get_program(vertex="render/t.vert", fragment="render/t.frag", defines={"SCALE": 2.0})
    assert p1 is p2 and p3 is not p1
    assert (cache.stats.hits, cache.stats.misses) == (1, 2)
    assert res.live_counts() == {"program": 2}
    with pytest.raises(ValueError, match="TYPO"):
        cache.get_program(vertex="render/t.vert", fragment="render/t.frag", defines={"SCALE": 1.0, "TYPO": 2})
    cache.release()
    assert res.live_count == 0


def test_reload_recompiles_changed_include_and_keeps_old_program_on_failure(gl_ctx, lib, caplog):
    res = GpuResources(gl_ctx)
    cache = ProgramCache(res, lib)
    kw = dict(vertex="render/t.vert", fragment="render/t.frag", defines={"SCALE": 1.0})
    old = cache.get_program(**kw)
    assert cache.reload_changed() == []  # nothing changed
    inc = lib.root / "include" / "common.glsl"
    inc.write_text(COMMON.replace("0.5", "0.25"))
    results = cache.reload_changed()
    assert len(results) == 1 and results[0].ok
    new = cache.get_program(**kw)
    assert new is not old and cache.generation == 1
    assert res.live_counts() == {"program": 1}  # the replaced program was released
    inc.write_text(COMMON.replace("return c * 0.5;", "return c * broken;"))
    results = cache.reload_changed()
    assert len(results) == 1 and not results[0].ok
    assert "include/common.glsl:3" in results[0].error
    assert cache.get_program(**kw) is new  # the old (working) program stays
    assert cache.generation == 1 and cache.errors()
    assert "keeping the previous program" in caplog.text
    assert cache.reload_changed() == []  # the same broken text is reported once
    inc.write_text(COMMON)
    assert [r.ok for r in cache.reload_changed()] == [True]
    assert cache.get_program(**kw) is not new and not cache.errors()
    cache.release()
    assert res.live_count == 0


def test_repository_shaders_compile(gl_ctx):
    """The renderer's programs compile from the real shaders/ tree in every variant it builds, including
    the geometry-stage G-buffer path (render/mesh.geom: barycentrics from a geometry stage, as the
    research does; the renderer uses the equivalent corner-vertex draw) and the compositor with and
    without layers and frame ids."""
    from engine.render.renderer import LookSettings, SceneRenderer

    res = GpuResources(gl_ctx)
    cache = ProgramCache(res)
    mesh = {k: GLSL_CONSTANTS[k] for k in ("BINDING_POSITIONS", "BINDING_NORMALS", "BINDING_TEXCOORDS")}
    cache.get_program(vertex="render/mesh.vert", geometry="render/mesh.geom", fragment="render/gbuffer.frag",
                      defines=mesh)
    assert len(cache) == 1
    r = SceneRenderer(gl_ctx, res, 32, 24, programs=cache, look=LookSettings(shadows="off"), shadow_size=64)
    built = set()
    for layers in (0, 2):
        for k in range(layers):
            r.add_layer(f"l{k}")
        for shadows in ("off", "map"):
            r.look.shadows = shadows
            built.add(id(r._compose_program()))
            if layers:
                continue
            for uv in (False, True):
                for wire in (False, True):
                    built.add(id(r._gbuffer_program(uv, tess=False, wire=wire)))
                    built.add(id(r._gbuffer_program(uv, tess=True, wire=wire)))
    assert len(built) == 4 + 8  # compose: (no layers, layers) x (ids or not); G-buffer: uv x wire x tess
    r.release()
    cache.release()


def test_driver_log_formats_are_parsed():
    from engine.gpu.shaderlib import _parse_log

    log = ("0:12(5): error: `foo' undeclared\n"          # Mesa
           "2(7) : error C1008: undefined variable \"x\"\n"  # NVIDIA
           "ERROR: 1:3: 'y' : undeclared identifier\n"   # AMD / Intel
           "unrelated line\n")
    assert _parse_log(log) == [(0, 12, "error: `foo' undeclared"), (2, 7, 'error C1008: undefined variable "x"'),
                               (1, 3, "'y' : undeclared identifier")]


def test_uniform_returns_uniforms_and_refuses_other_members(gl_ctx):
    prog = gl_ctx.program(
        vertex_shader="#version 430 core\nuniform float u_scale;\nin vec3 in_pos;\n"
                      "void main() { gl_Position = vec4(in_pos * u_scale, 1.0); }\n",
        fragment_shader="#version 430 core\nout vec4 o;\nvoid main() { o = vec4(1.0); }\n")
    try:
        u = uniform(prog, "u_scale")
        assert isinstance(u, moderngl.Uniform)
        u.value = 2.5
        assert uniform(prog, "u_scale").value == pytest.approx(2.5)
        with pytest.raises(TypeError, match="in_pos"):
            uniform(prog, "in_pos")  # an attribute, not a uniform
        with pytest.raises(KeyError):
            uniform(prog, "u_missing")
    finally:
        prog.release()
