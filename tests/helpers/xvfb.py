"""Run a Python script in a real pyglet window under Xvfb (``xvfb-run``), for the window tests.

Without ``xvfb-run`` the calling test skips with the reason (fails under ``CI=true``: ``make test`` installs
xvfb). The script runs with the checkout on PYTHONPATH, no inherited DISPLAY / WAYLAND_DISPLAY, and its own empty
XDG_CONFIG_HOME / XDG_CACHE_HOME (the editor's panel layout and autosave never touch the user's folders).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.conftest import ROOT

__all__ = ["run_under_xvfb"]


def run_under_xvfb(script: str, *, screen: str = "640x480x24", timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -c script`` on a virtual screen of ``screen`` (WxHxDEPTH); stdout and stderr captured."""
    if shutil.which("xvfb-run") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but xvfb-run is missing: `make test` installs xvfb")
        pytest.skip("xvfb-run not installed (apt-get install xvfb xauth)")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory(prefix="xvfb-user-") as home:
        env["XDG_CONFIG_HOME"], env["XDG_CACHE_HOME"] = f"{home}/config", f"{home}/cache"
        return subprocess.run(["xvfb-run", "-a", "-s", f"-screen 0 {screen}", sys.executable, "-c", script],
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
