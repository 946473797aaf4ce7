"""The demo in a real window (pyglet + GLX) under Xvfb: the window loop runs the same frame as headless
(fixed steps, interpolated drawing, hot-reload polling) and presents into the window."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from tests.conftest import ROOT

pytestmark = pytest.mark.gl


def test_demo_window_under_xvfb(tmp_path):
    if shutil.which("xvfb-run") is None:
        if os.environ.get("CI", "").lower() == "true" and os.geteuid() == 0:
            pytest.fail("CI=true as root but xvfb-run is missing: `make test` installs xvfb")
        pytest.skip("xvfb-run not installed (apt-get install xvfb xauth)")
    png = tmp_path / "window.png"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    r = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 640x480x24", sys.executable, str(ROOT / "main.py"),
                        "--frames", "6", "--width", "192", "--height", "108", "--characters", "2",
                        "--screenshot", str(png)], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert re.search(r"frames 6: mean [\d.]+ ms", r.stdout), r.stdout
    img = np.asarray(Image.open(png).convert("RGB")).astype(np.float32)
    assert img.shape == (108, 192, 3) and img.std() > 10.0
