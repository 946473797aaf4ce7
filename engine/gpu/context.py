"""The ONE module that creates OpenGL contexts, plus the facts ``python main.py doctor`` prints.

:func:`create_context` opens a pyglet window with an OpenGL 4.3 core context when a display exists (and
``headless`` is not asked for), else a headless EGL context (Mesa llvmpipe without a GPU). The engine
needs OpenGL 4.3 core for compute shaders and SSBOs; when that is missing :class:`GLUnavailableError`
says what was found and what to install.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import moderngl

from engine.log import quiet_output

if TYPE_CHECKING:
    import pyglet.window

REQUIRED_GL = 430
INSTALL_HINT = ("install an OpenGL 4.3 stack with EGL: on Debian/Ubuntu `sudo apt-get install -y libegl1 "
                "libgl1-mesa-dri libegl-mesa0` (Mesa llvmpipe runs headless without a GPU); on a GPU machine "
                "install the vendor driver with its EGL library (e.g. NVIDIA's libnvidia-egl / nvidia-driver)")


class GLUnavailableError(RuntimeError):
    """No OpenGL 4.3 core context could be made; the message names what was found and what to install."""


@dataclass
class GLContext:
    """A moderngl context and, when windowed, its pyglet window."""

    ctx: moderngl.Context
    window: pyglet.window.Window | None
    headless: bool

    def release(self) -> None:
        """Close the window (if any) and release the context."""
        if self.window is not None:
            self.window.close()
            self.window = None
        self.ctx.release()


def display_present() -> bool:
    """True when a desktop display is reachable (DISPLAY or WAYLAND_DISPLAY set)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def openvr_runtime_present() -> bool:
    """True when the OpenVR (SteamVR) runtime is installed; False without the package or the runtime.

    ``openvr.isRuntimeInstalled`` loads the runtime's shared library and reads its path registry; any
    failure there means "not present", which is exactly what the caller asks."""
    try:
        import openvr
    except ImportError:
        return False
    try:
        with quiet_output():  # the runtime library prints "Unable to read VR Path Registry" itself
            return bool(openvr.isRuntimeInstalled())
    except (OSError, AttributeError, RuntimeError, ValueError):  # ctypes load/lookup failures
        return False


def _check_version(ctx: moderngl.Context, how: str) -> None:
    if ctx.version_code < REQUIRED_GL:
        info = ctx.info
        found = f"{info.get('GL_RENDERER', '?')} / OpenGL {info.get('GL_VERSION', ctx.version_code)}"
        ctx.release()
        raise GLUnavailableError(f"{how}: OpenGL {REQUIRED_GL // 100}.{REQUIRED_GL % 100 // 10} core is required "
                                 f"(compute shaders), found {found}; {INSTALL_HINT}")


def egl_context(require: int | None = None) -> moderngl.Context:
    """A standalone headless EGL context (``require``: the minimum GL version code, e.g. 430)."""
    # moderngl's stub types each **settings value as a dict; the backend setting is a string
    return moderngl.create_standalone_context(require=require, backend="egl")  # type: ignore[arg-type]


def _headless() -> GLContext:
    try:
        ctx = egl_context(REQUIRED_GL)
    except Exception as exc:  # moderngl/glcontext raise plain Exception subclasses for driver errors
        found = _probe_without_requirement()
        raise GLUnavailableError(f"headless EGL context failed: {exc}{found}; {INSTALL_HINT}") from exc
    _check_version(ctx, "headless EGL context")
    return GLContext(ctx=ctx, window=None, headless=True)


def _probe_without_requirement() -> str:
    """What an EGL context without a version requirement reports (for the error message)."""
    try:
        ctx = egl_context()
    except Exception as exc:  # the driver itself is missing: say so
        return f" (no EGL context at all: {exc})"
    info = ctx.info
    found = f" (found {info.get('GL_RENDERER', '?')} / OpenGL {info.get('GL_VERSION', '?')})"
    ctx.release()
    return found


def _windowed(width: int, height: int, title: str, vsync: bool) -> GLContext:
    import pyglet

    # pyglet.gl.Config is the platform's concrete config class at run time; its annotation names the abstract base
    config = pyglet.gl.Config(major_version=4, minor_version=3, forward_compatible=True,  # type: ignore[abstract]
                              double_buffer=True, depth_size=24)
    try:
        window = pyglet.window.Window(width=width, height=height, caption=title, resizable=True, vsync=vsync,
                                      config=config)
    except (pyglet.window.NoSuchConfigException, pyglet.gl.ContextException) as exc:
        raise GLUnavailableError(f"window with an OpenGL 4.3 core context failed: {exc}; "
                                 f"run with --headless or {INSTALL_HINT}") from exc
    try:
        ctx = moderngl.create_context(require=REQUIRED_GL)
    except Exception as exc:  # moderngl raises a plain Exception when the version is too low
        window.close()
        raise GLUnavailableError(f"window context: {exc}; {INSTALL_HINT}") from exc
    try:
        _check_version(ctx, "window context")
    except GLUnavailableError:
        window.close()
        raise
    return GLContext(ctx=ctx, window=window, headless=False)


def create_context(*, headless: bool | None = None, width: int = 1280, height: int = 720,
                   title: str = "skinengine", vsync: bool = True) -> GLContext:
    """An OpenGL >= 4.3 core context: a pyglet window when a display exists and ``headless`` is not
    True, headless EGL otherwise (``headless=None`` picks by the display)."""
    if width <= 0 or height <= 0:
        raise ValueError(f"window size must be positive, got {width}x{height}")
    if headless is None:
        headless = not display_present()
    if not headless and not display_present():
        raise GLUnavailableError("a window was asked for but no display is set (DISPLAY / WAYLAND_DISPLAY); "
                                 "use headless=True (--headless)")
    return _headless() if headless else _windowed(width, height, title, vsync)


def software_rasteriser(ctx: moderngl.Context) -> bool:
    """Whether ``ctx`` renders on the CPU (Mesa llvmpipe / softpipe / swrast, by its GL_RENDERER string): there
    the vertex stage of every triangle is paid on the calling thread and a barrier or read-back waits for queued
    draws, so the cheaper way to do a thing can differ from a hardware GPU's (e.g. the controller camera's
    culling, engine/render/probe.py)."""
    name = str(ctx.info.get("GL_RENDERER", "")).lower()
    return any(k in name for k in ("llvmpipe", "softpipe", "swrast"))


def gl_info(ctx: moderngl.Context) -> dict:
    """Vendor, renderer, version and the compute/SSBO limits the engine depends on."""
    info = ctx.info
    return {
        "vendor": info.get("GL_VENDOR"),
        "renderer": info.get("GL_RENDERER"),
        "version": info.get("GL_VERSION"),
        "version_code": ctx.version_code,
        "max_compute_work_group_size": tuple(info.get("GL_MAX_COMPUTE_WORK_GROUP_SIZE", ())),
        "max_compute_work_group_count": tuple(info.get("GL_MAX_COMPUTE_WORK_GROUP_COUNT", ())),
        "max_compute_work_group_invocations": info.get("GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS"),
        "max_ssbo_block_size": info.get("GL_MAX_SHADER_STORAGE_BLOCK_SIZE"),
        "max_ssbo_bindings": info.get("GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS"),
        "max_color_attachments": info.get("GL_MAX_COLOR_ATTACHMENTS"),
        "display_present": display_present(),
        "openvr_runtime_present": openvr_runtime_present(),
    }


def doctor_report(*, headless: bool | None = True) -> str:
    """A human-readable report of the GL stack, compute limits, display and OpenVR (never raises for a
    missing GL stack: the report says what is wrong and how to fix it)."""
    lines = ["skinengine doctor", f"  display present        : {display_present()}",
             f"  OpenVR runtime present : {openvr_runtime_present()}"]
    try:
        gc = create_context(headless=headless, width=64, height=64, title="doctor", vsync=False)
    except GLUnavailableError as exc:
        lines.append(f"  OpenGL                 : UNAVAILABLE: {exc}")
        return "\n".join(lines)
    try:
        info = gl_info(gc.ctx)
        lines += [
            f"  context                : {'headless EGL' if gc.headless else 'window (pyglet)'}",
            f"  GL vendor              : {info['vendor']}",
            f"  GL renderer            : {info['renderer']}",
            f"  GL version             : {info['version']}",
            f"  compute group size max : {info['max_compute_work_group_size']}",
            f"  compute group count max: {info['max_compute_work_group_count']}",
            f"  compute invocations max: {info['max_compute_work_group_invocations']}",
            f"  SSBO block size max    : {info['max_ssbo_block_size']} bytes",
            f"  SSBO bindings max      : {info['max_ssbo_bindings']}",
            f"  colour attachments max : {info['max_color_attachments']}",
            "  OpenGL 4.3 core        : OK",
        ]
    finally:
        gc.release()
    return "\n".join(lines)
