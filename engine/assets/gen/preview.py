"""Look at a generated character: pose it from a clip with numpy LBS and render front and side views
to a PNG (headless moderngl when available, else a Pillow point splat). A debugging aid, not engine code.

    python -m engine.assets.gen.preview humanoid walk 0.3 out.png
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from engine.assets.gen.rig import Character
from engine.math import quat


def _segments(times: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Key index (..,) of the segment holding each time ``t`` (clamped to the key range) and the fraction in it."""
    t = np.clip(np.asarray(t, np.float64), times[0], times[-1])
    if len(times) == 1:
        return np.zeros(t.shape, np.intp), np.zeros(t.shape)
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2)
    return i, (t - times[i]) / (times[i + 1] - times[i])


def slerp_keys(times: np.ndarray, quats: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Sample LINEAR rotation keys (glTF: slerp) at times ``t`` (clamped to the key range)."""
    times, quats = np.asarray(times, np.float64), np.asarray(quats, np.float64)
    i, u = _segments(times, t)
    if len(times) == 1:
        return np.broadcast_to(quats[0], (*u.shape, 4)).copy()
    return quat.slerp(quats[i], quats[i + 1], u)


def lerp_keys(times: np.ndarray, values: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Sample LINEAR vector keys at times ``t`` (clamped to the key range)."""
    times = np.asarray(times, np.float64)
    values = np.asarray(values, np.float64)
    return np.stack([np.interp(t, times, values[:, c]) for c in range(values.shape[1])], axis=-1)


def pose(ch: Character, clip: str | None, t: float) -> np.ndarray:
    """World joint matrices (J,4,4) of ``clip`` at time t (rest pose when clip is None)."""
    rig = ch.rig
    tr, rq, sc = rig.rest_t.copy(), rig.rest_q.copy(), rig.rest_s.copy()
    for c in ch.clips.get(clip, []) if clip else []:
        times = np.asarray(c.times, np.float64)
        if c.path == "rotation":
            rq[c.node] = slerp_keys(times, np.asarray(c.values, np.float64), np.array(t))
        else:
            v = lerp_keys(times, c.values, np.array([t]))[0]
            (tr if c.path == "translation" else sc)[c.node] = v
    return rig.world(tr, rq, sc)


def skin(ch: Character, world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LBS positions and normals (N,3) for joint world matrices (J,4,4)."""
    if ch.normals is None:
        raise ValueError(f"character {ch.name!r} has no normals to skin")
    mats = world @ np.linalg.inv(ch.rig.world())
    m = np.einsum("nk,nkij->nij", ch.weights.astype(np.float64), mats[ch.joints.astype(np.int64)])
    p = np.einsum("nij,nj->ni", m[:, :3, :3], ch.positions) + m[:, :3, 3]
    n = np.einsum("nij,nj->ni", np.linalg.inv(m[:, :3, :3]).transpose(0, 2, 1), ch.normals)
    return p, n / np.linalg.norm(n, axis=1, keepdims=True)


_VS = """#version 330
in vec3 in_pos; in vec3 in_nrm; uniform mat4 mvp; uniform mat3 rot; out vec3 v_n;
void main() { gl_Position = mvp * vec4(in_pos, 1.0); v_n = rot * in_nrm; }"""
_FS = """#version 330
in vec3 v_n; uniform vec3 color; out vec4 frag;
void main() { vec3 n = normalize(v_n); float d = max(dot(n, normalize(vec3(0.4, 0.7, 0.6))), 0.0);
  frag = vec4(color * (0.25 + 0.75 * d) + 0.08 * (n.y * 0.5 + 0.5), 1.0); }"""


def render(ch: Character, views: list[tuple[str | None, float]], path: str | Path, *, size: int = 512) -> Path:
    """Render each (clip, time) as a front view and a side view (from +X) side by side."""
    import moderngl
    from PIL import Image

    from engine.gpu.context import egl_context
    from engine.gpu.shaderlib import uniform

    ctx = egl_context(330)
    try:
        prog = ctx.program(vertex_shader=_VS, fragment_shader=_FS)
        w, h = size * 2 * len(views), size
        fbo = ctx.simple_framebuffer((w, h))
        fbo.use()
        fbo.clear(0.12, 0.12, 0.14, 1.0)
        ctx.enable(moderngl.DEPTH_TEST)
        ibo = ctx.buffer(np.asarray(ch.indices, np.uint32).tobytes())
        posed = [skin(ch, pose(ch, clip, t)) for clip, t in views]
        lo = np.min([p.min(axis=0) for p, _ in posed], axis=0)
        hi = np.max([p.max(axis=0) for p, _ in posed], axis=0)
        center = 0.5 * (lo + hi)
        half = 0.55 * float(np.max(hi - lo))
        for vi, (p, n) in enumerate(posed):
            vbo = ctx.buffer(np.hstack([p, n]).astype(np.float32).tobytes())
            vao = ctx.vertex_array(prog, [(vbo, "3f 3f", "in_pos", "in_nrm")], ibo)
            for k, yaw in enumerate((0.0, np.pi / 2)):
                c, s = np.cos(yaw), np.sin(yaw)
                rot = np.array([[c, 0, -s], [0, 1, 0], [s, 0, c]])  # yaw: view from +Z, then from +X
                m = np.eye(4)
                m[:3, :3] = rot / half
                m[:3, 3] = -rot @ center / half
                m[2, :] *= -0.5  # depth: nearer the camera (+z view space) -> smaller depth
                uniform(prog, "mvp").write(m.T.astype(np.float32).tobytes())
                uniform(prog, "rot").write(rot.T.astype(np.float32).tobytes())
                uniform(prog, "color").value = tuple(float(v) for v in ch.base_color[:3])
                ctx.viewport = ((2 * vi + k) * size, 0, size, size)
                vao.render()
            vao.release()
            vbo.release()
        img = Image.frombytes("RGB", (w, h), fbo.read(components=3)).transpose(Image.Transpose.FLIP_TOP_BOTTOM)
        out = Path(path)
        img.save(out)
        return out
    finally:
        ctx.release()


if __name__ == "__main__":
    from engine.assets.gen.characters import build

    name, clip, t, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    ch = build(name)
    render(ch, [(None, 0.0), (None if clip == "-" else clip, t)], out)
    print(out)
