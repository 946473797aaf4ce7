"""`python main.py compare`: the metrics table and the side-by-side sheet, and its parameter errors."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
from PIL import Image

from tests.conftest import ROOT

CYLINDER = ROOT / "assets" / "cylinder.glb"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), "compare", str(CYLINDER), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_compare_prints_metrics_and_writes_sheet(tmp_path):
    out = tmp_path / "sheet.png"
    r = _run("--clip", "twist180", "--time", "0.5", "--deformers", "lbs,spring", "--out", str(out),
             "--width", "64", "--height", "80")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()
            if line.split()[:1] in (["lbs"], ["spring"])}
    assert set(rows) == {"lbs", "spring"}
    collapse = {k: float(v[2]) for k, v in rows.items()}  # columns: deformer volume collapse ...
    assert collapse["lbs"] < 0.1 < 0.7 < collapse["spring"]
    img = np.asarray(Image.open(out).convert("RGB"))
    assert img.shape == (80, 128, 3)
    assert np.abs(img[:, :64].astype(int) - img[:, 64:].astype(int)).max() > 30  # the panels differ


def test_compare_refuses_unknown_deformer():
    r = _run("--deformers", "lbs,magic")
    assert r.returncode == 2 and "magic" in r.stderr and "Traceback" not in r.stderr
