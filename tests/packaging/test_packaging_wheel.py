"""The installable tool: a wheel built from the repository works from any folder.

Builds the wheel from a copy of the checkout (``pip wheel --no-deps --no-build-isolation``), installs it into a
fresh venv OUTSIDE the checkout (the dependencies come from the running interpreter's site-packages through a
.pth file, so nothing is downloaded) and runs the ``skinengine`` console script there from another folder:
``--version``, a render, a GPU ``export-frame`` (equal to the checkout's numpy reference), and ``bench`` (which
needs the checkout and says so). A unit check keeps pyproject's package list equal to the packages on disk.
"""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.packaging

_SKIP_COPY = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", "out", "cache",
                                    ".pytest_cache", ".mypy_cache", ".ruff_cache")


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _engine_version() -> str:
    """The version the wheel must carry: engine/__init__.py's ``__version__`` (pyproject.toml reads it)."""
    from engine import __version__

    return __version__


def test_pyproject_lists_every_package_and_not_bench():
    from setuptools import find_packages

    listed = _pyproject()["tool"]["setuptools"]["packages"]
    on_disk = find_packages(str(ROOT), include=["engine", "engine.*", "game", "game.*"])
    dirs = _pyproject()["tool"]["setuptools"]["package-dir"]
    data = sorted(dirs)
    # every data folder and its subfolders (but the git-ignored cache of large characters) is a listed package:
    # setuptools warns about data in a folder it is not told about
    data_packages = [f"{name}.{'.'.join(sub.relative_to(ROOT / folder).parts)}" for name, folder in dirs.items()
                     for sub in (ROOT / folder).rglob("*") if sub.is_dir() and "cache" not in sub.parts
                     and "__pycache__" not in sub.parts]
    assert sorted(listed) == sorted(on_disk + data + data_packages), \
        "add new packages and data folders to [tool.setuptools] packages in pyproject"
    assert data == ["engine._data.assets", "engine._data.examples", "engine._data.shaders"]
    assert not any(p == "bench" or p.startswith("bench.") for p in listed)
    assert _pyproject()["project"]["scripts"]["skinengine"] == "game.cli:main"


def _require(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {module} is missing: `make test` installs it with the dev extra")
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv folder, environment, a working folder outside the checkout) with the wheel installed."""
    _require("setuptools")
    _require("wheel")
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=_SKIP_COPY)
    dist = base / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "-w", str(dist), str(src)], check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = dist.glob("skinengine-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # the dependencies (and pip) from this interpreter's site-packages, after the venv's own
    deps = [p for p in dict.fromkeys(site.getsitepackages() + sys.path) if p.endswith("site-packages")]
    (Path(purelib) / "_skinengine_test_deps.pth").write_text("\n".join(deps) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SKINENGINE_ASSETS_DIR")}
    env["XDG_CACHE_HOME"] = str(base / "xdg-cache")
    subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)],
                   check=True, capture_output=True, text=True, env=env, timeout=300)
    work = base / "elsewhere"
    work.mkdir()
    return venv, env, work


def _run(installed, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    venv, env, work = installed
    return subprocess.run([str(venv / "bin" / "skinengine"), *args], capture_output=True, text=True, env=env,
                          cwd=work, timeout=timeout)


def _python(installed, code: str) -> list[str]:
    venv, env, work = installed
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, env=env,
                       cwd=work, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_installed_engine_reads_its_packaged_data(installed):
    venv, env, work = installed
    engine_file, shaders, cylinder, dense, bench = _python(installed, (
        "import importlib.util, engine, engine.paths as p\n"
        "from engine.assets.library import character_path, expected_path\n"
        "print(engine.__file__); print(p.data_dir('shaders')); print(character_path('cylinder'))\n"
        "print(expected_path('humanoid_dense')); print(importlib.util.find_spec('bench'))"))
    assert Path(engine_file).is_relative_to(venv) and not Path(engine_file).is_relative_to(ROOT)
    assert Path(shaders).is_relative_to(venv) and (Path(shaders) / "include").is_dir()
    assert Path(cylinder).is_relative_to(venv) and Path(cylinder).name == "cylinder.glb"
    assert Path(dense) == Path(env["XDG_CACHE_HOME"]) / "skinengine" / "humanoid_dense.glb"
    assert bench == "None"  # bench/ is not in the wheel
    examples, pose_arm, session, rig = _python(installed, (
        "from engine.paths import data_dir, shipped_file\n"
        "print(data_dir('examples')); print(shipped_file('examples/pose_arm.json'))\n"
        "print(shipped_file('assets/sessions/arm_pose.jsonl')); print(shipped_file('assets/vr/pose_and_bulge.toml'))"))
    assert Path(examples).is_relative_to(venv) and (Path(examples) / "quickstart.py").is_file()
    assert Path(pose_arm).is_relative_to(venv) and Path(pose_arm).is_file()
    assert Path(session).is_relative_to(venv) and Path(session).is_file()
    assert Path(rig).is_relative_to(venv) and Path(rig).is_file()  # the VR example script ships
    r = _run(installed, "--version")
    assert r.returncode == 0 and r.stdout.strip() == f"skinengine {_engine_version()}", r
    r = _run(installed, "bench", "deform")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "bench needs a checkout" in lines[0], r.stderr


@pytest.mark.gl
def test_installed_render_and_gpu_export_frame(installed, gl_ctx, tmp_path):
    venv, env, work = installed
    (cylinder,) = _python(installed, "from engine.assets.library import character_path; "
                                     "print(character_path('cylinder'))")
    r = _run(installed, "render", cylinder, "--clip", "bend90", "--time", "0.5", "--width", "64", "--height",
             "48", "--out", "frame.png")
    assert r.returncode == 0, r.stderr
    from PIL import Image

    img = np.asarray(Image.open(work / "frame.png").convert("RGB")).astype(np.float32)
    assert img.shape == (48, 64, 3) and img.std() > 5.0
    r = _run(installed, "export-frame", cylinder, "--clip", "bend90", "--time", "0.5", "--device", "gpu",
             "--out", "gpu.npz")
    assert r.returncode == 0, r.stderr
    # the same frame from the checkout's numpy reference
    ref = tmp_path / "cpu.npz"
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "export-frame", str(ROOT / "assets" / "cylinder.glb"),
                        "--clip", "bend90", "--time", "0.5", "--device", "cpu", "--out", str(ref)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    gpu, cpu = np.load(work / "gpu.npz"), np.load(ref)
    assert gpu.files == cpu.files and len(gpu.files) == 1
    key = gpu.files[0]
    diag = float(np.linalg.norm(cpu[key].max(0) - cpu[key].min(0)))
    assert np.abs(gpu[key] - cpu[key]).max() < 1e-5 * diag
