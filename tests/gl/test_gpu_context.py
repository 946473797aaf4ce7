"""GL context creation (headless EGL here), the GL facts for `doctor`, and the errors that say what to
install when OpenGL 4.3 is missing."""
from __future__ import annotations

import moderngl
import pytest

from engine.gpu import context as glc

pytestmark = pytest.mark.gl


@pytest.fixture()
def headless_ctx(gl_ctx):  # gl_ctx skips the test when the machine has no EGL at all
    gc = glc.create_context(headless=True)
    yield gc
    gc.release()


def test_headless_context_is_gl43_core(headless_ctx):
    assert headless_ctx.headless and headless_ctx.window is None
    assert headless_ctx.ctx.version_code >= 430
    assert headless_ctx.ctx.compute_shader  # compute shaders are available on this context


def test_gl_info_reports_limits(headless_ctx):
    info = glc.gl_info(headless_ctx.ctx)
    assert info["renderer"] and info["vendor"] and info["version"]
    # OpenGL 4.3 minimums (spec table 23.53 / 23.64)
    assert info["max_compute_work_group_invocations"] >= 1024
    assert len(info["max_compute_work_group_size"]) == 3 and min(info["max_compute_work_group_size"]) >= 64
    assert min(info["max_compute_work_group_count"]) >= 65535
    assert info["max_ssbo_bindings"] >= 8
    assert info["max_ssbo_block_size"] >= 2 ** 24
    assert isinstance(info["display_present"], bool)
    assert isinstance(info["openvr_runtime_present"], bool)


def test_doctor_report_names_the_renderer(gl_ctx):
    text = glc.doctor_report()
    assert gl_ctx.info["GL_RENDERER"] in text
    assert "OpenGL 4.3 core        : OK" in text
    assert "OpenVR runtime present" in text


def test_window_without_display_is_refused(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert not glc.display_present()
    with pytest.raises(glc.GLUnavailableError, match="no display"):
        glc.create_context(headless=False)


def test_egl_failure_says_what_to_install(monkeypatch):
    def broken(*a, **kw):
        raise Exception("eglGetDisplay failed (test)")

    monkeypatch.setattr(moderngl, "create_standalone_context", broken)
    with pytest.raises(glc.GLUnavailableError) as ei:
        glc.create_context(headless=True)
    msg = str(ei.value)
    assert "eglGetDisplay failed (test)" in msg
    assert "apt-get install -y libegl1 libgl1-mesa-dri libegl-mesa0" in msg
    assert "vendor driver" in msg
    report = glc.doctor_report()  # doctor never raises: it reports the problem
    assert "UNAVAILABLE" in report and "apt-get install" in report


def test_old_gl_version_names_renderer_and_version(monkeypatch):
    class Old:
        version_code = 330
        info = {"GL_RENDERER": "Ancient GPU 9000", "GL_VERSION": "3.3 (Core Profile)"}
        released = False

        def release(self):
            Old.released = True

    monkeypatch.setattr(moderngl, "create_standalone_context", lambda *a, **kw: Old())
    with pytest.raises(glc.GLUnavailableError) as ei:
        glc.create_context(headless=True)
    msg = str(ei.value)
    assert "Ancient GPU 9000" in msg and "3.3 (Core Profile)" in msg and "4.3" in msg
    assert Old.released


def test_bad_size_is_refused():
    with pytest.raises(ValueError, match="0x720"):
        glc.create_context(headless=True, width=0, height=720)


def test_openvr_probe_never_raises():
    assert glc.openvr_runtime_present() in (True, False)
