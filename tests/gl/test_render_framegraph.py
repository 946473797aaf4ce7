"""The renderer's frame graph: passes declare what they read and write, and the execution order, the memory
barriers and the GPU timer scopes follow from the declarations alone (engine/render/framegraph.py); the
renderer's own plan, and the barriers and scopes a rendered frame really issues."""
from __future__ import annotations

import random

import moderngl
import numpy as np
import pytest

from engine.render.framegraph import (
    ATTACHMENT,
    COPY,
    HOST,
    IMAGE,
    SAMPLED,
    STORAGE,
    UNIFORM,
    PassSpec,
    barrier_bits,
    plan_frame,
    uses,
)

SSB = moderngl.SHADER_STORAGE_BARRIER_BIT
IMG = moderngl.SHADER_IMAGE_ACCESS_BARRIER_BIT


def _frame_specs(layers=(), shadow_map=False) -> list[PassSpec]:
    """The renderer's declarations, written out by hand (as engine/render/passes/ declares them)."""
    names = ["scene", *layers]
    read_gb = SAMPLED if layers else IMAGE
    specs = [PassSpec("rects", writes=uses(HOST, "screen_rects")),
             PassSpec("shadow", reads=uses(STORAGE, "vertices"), writes=uses(ATTACHMENT, "shadow_map"),
                      timer="shadow")]
    for n in names:
        name = "gbuffer" if n == "scene" else f"layer:{n}"
        specs.append(PassSpec(name, reads=uses(STORAGE, "vertices", "screen_rects", "screen_rects.previous"),
                              writes=uses(ATTACHMENT, f"gbuffer.{n}") + uses(STORAGE, f"rect.{n}"), timer=name))
    compose_reads = (uses(read_gb, *(f"gbuffer.{n}" for n in names)) + uses(STORAGE, *(f"rect.{n}" for n in names))
                     + uses(COPY, "backdrop") + uses(read_gb, "backdrop") + uses(UNIFORM, "lights"))
    if shadow_map:
        compose_reads += uses(SAMPLED, "shadow_map")
    specs += [PassSpec("backdrop", reads=uses(UNIFORM, "lights"), writes=uses(ATTACHMENT, "backdrop"),
                       timer="compose"),
              PassSpec("compose", reads=compose_reads, writes=uses(ATTACHMENT, "composed"), timer="compose"),
              PassSpec("ui", reads=uses(ATTACHMENT, "composed"), writes=uses(ATTACHMENT, "frame"), timer="ui"),
              PassSpec("present", reads=uses(SAMPLED, "frame"), writes=uses(ATTACHMENT, "target"), timer="present")]
    return specs


EXTERNAL = ("vertices", "lights", "screen_rects.previous")


def test_plan_of_the_frame_from_its_declarations():
    plan = plan_frame(_frame_specs(), external=EXTERNAL)
    assert plan.order == ("rects", "shadow", "gbuffer", "backdrop", "compose", "ui", "present")
    # the compositor reads the rectangles the G-buffer's vertex stage grew (SSBO atomics) and the G-buffer
    # and backdrop through image loads; nothing else needs a barrier (framebuffer writes, CPU writes)
    assert plan.barriers == {"compose": SSB | IMG}
    assert [(t, tuple(s.name for s in steps)) for t, steps in plan.scopes] == [
        (None, ("rects",)), ("shadow", ("shadow",)), ("gbuffer", ("gbuffer",)),
        ("compose", ("backdrop", "compose")), ("ui", ("ui",)), ("present", ("present",))]


def test_layers_add_passes_and_change_the_compositor_barrier():
    plan = plan_frame(_frame_specs(layers=("skin", "cloth"), shadow_map=True), external=EXTERNAL)
    assert plan.order == ("rects", "shadow", "gbuffer", "layer:skin", "layer:cloth", "backdrop", "compose", "ui",
                          "present")
    assert plan.barriers == {"compose": SSB}  # with layers the G-buffers are sampled: storage bit only
    assert [t for t, _ in plan.scopes] == [None, "shadow", "gbuffer", "layer:skin", "layer:cloth", "compose", "ui",
                                           "present"]


def test_order_follows_dependencies_not_the_declaration_order():
    specs = _frame_specs(layers=("skin",), shadow_map=True)
    reference = plan_frame(specs, external=EXTERNAL)
    rng = random.Random(7)
    for _ in range(20):
        shuffled = specs[:]
        rng.shuffle(shuffled)
        plan = plan_frame(shuffled, external=EXTERNAL)
        pos = {n: i for i, n in enumerate(plan.order)}
        for a, b in [("rects", "gbuffer"), ("rects", "layer:skin"), ("gbuffer", "compose"), ("layer:skin", "compose"),
                     ("shadow", "compose"), ("backdrop", "compose"), ("compose", "ui"), ("ui", "present")]:
            assert pos[a] < pos[b], (a, b, plan.order)
        assert pos["compose"] == pos["backdrop"] + 1  # one timer scope, never split
        assert plan.barriers == reference.barriers


def test_barriers_cover_each_write_once():
    specs = [PassSpec("a", writes=uses(STORAGE, "x") + uses(IMAGE, "y")),
             PassSpec("b", reads=uses(STORAGE, "x"), writes=uses(ATTACHMENT, "z")),
             PassSpec("c", reads=uses(STORAGE, "x") + uses(SAMPLED, "y")),
             PassSpec("d", reads=uses(SAMPLED, "y") + uses(SAMPLED, "z"))]
    plan = plan_frame(specs)
    # b makes x visible to storage reads; c still needs the texture-fetch bit for y; d needs nothing more
    assert plan.barriers == {"b": SSB, "c": moderngl.TEXTURE_FETCH_BARRIER_BIT}
    assert barrier_bits(ATTACHMENT, SAMPLED) == 0 and barrier_bits(HOST, STORAGE) == 0
    assert barrier_bits(STORAGE, HOST) == moderngl.BUFFER_UPDATE_BARRIER_BIT
    assert barrier_bits(ATTACHMENT, IMAGE) == IMG
    with pytest.raises(ValueError, match="access kind"):
        barrier_bits("texture", SAMPLED)


@pytest.mark.parametrize("specs, message", [
    ([PassSpec("a", writes=uses(ATTACHMENT, "x")), PassSpec("b", writes=uses(ATTACHMENT, "x"))],
     "written by both 'a' and 'b'"),
    ([PassSpec("a", reads=uses(SAMPLED, "x"))], "reads 'x', which no pass writes"),
    ([PassSpec("a", reads=uses(SAMPLED, "x"), writes=uses(ATTACHMENT, "x"))], "reads and writes"),
    ([PassSpec("a", reads=uses(SAMPLED, "y"), writes=uses(ATTACHMENT, "x")),
      PassSpec("b", reads=uses(SAMPLED, "x"), writes=uses(ATTACHMENT, "y"))], "cycle"),
    # t's first pass must run before u and its second after u: the scope would be split
    ([PassSpec("a", writes=uses(ATTACHMENT, "x"), timer="t"), PassSpec("u", reads=uses(SAMPLED, "x"),
                                                                        writes=uses(ATTACHMENT, "y"), timer="u"),
      PassSpec("b", reads=uses(SAMPLED, "y"), writes=uses(ATTACHMENT, "z"), timer="t")], "split"),
    ([PassSpec("a", writes=uses("texture", "x"))], "access kind"),
    ([PassSpec("a"), PassSpec("a")], "unique"),
])
def test_bad_declarations_raise(specs, message):
    with pytest.raises(ValueError, match=message):
        plan_frame(specs)


def test_external_resources_cannot_be_written():
    with pytest.raises(ValueError, match="external"):
        plan_frame([PassSpec("a", writes=uses(STORAGE, "vertices"))], external=EXTERNAL)


# -- the renderer's plan and what a frame issues ----------------------------------------------------------
@pytest.mark.gl
def test_renderer_runs_its_plan(gl_ctx, res, monkeypatch):
    from engine.render import shapes
    from engine.render.camera import Camera
    from engine.render.renderer import LookSettings, SceneRenderer

    r = SceneRenderer(gl_ctx, res, 48, 32, look=LookSettings(shadows="map"), shadow_size=64)
    try:
        p, t, _ = shapes.uv_sphere(0.5, rings=6, segments=8)
        r.add_mesh(t, len(p), positions=p)
        cam = Camera(eye=np.array([0.0, 0.5, 3.0]), target=np.zeros(3), fov_y=50.0)
        expect = plan_frame(_frame_specs(shadow_map=True), external=EXTERNAL)
        assert r.frame_plan() == expect
        issued: list[int] = []
        original = moderngl.Context.memory_barrier
        monkeypatch.setattr(moderngl.Context, "memory_barrier",
                            lambda self, *a, **k: (issued.append(a[0] if a else k["barriers"]),
                                                   original(self, *a, **k)))
        r.render(cam, profile=True)
        assert issued == [SSB | IMG]  # the one barrier the plan derives, before the compositor
        assert list(r.last_wall_ms) == ["shadow", "gbuffer", "compose", "ui", "present"]  # the plan's scopes
        r.add_layer("solo")
        plan = r.frame_plan()
        assert plan == plan_frame(_frame_specs(layers=("solo",), shadow_map=True), external=EXTERNAL)
        issued.clear()
        r.render(cam, profile=True)
        assert issued == [SSB]
        assert list(r.last_wall_ms) == ["shadow", "gbuffer", "layer:solo", "compose", "ui", "present"]
        r.remove_layer("solo")
        r.look.shadows = "off"
        assert r.frame_plan() == plan_frame(_frame_specs(), external=EXTERNAL)
    finally:
        r.release()
