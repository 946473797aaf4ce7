# Two commands for a newcomer: `make demo` (the showcase) and `make test`.
# Both create .venv, install the project into it, and make sure a headless OpenGL >= 4.3 stack exists.
# `make test` = `make lint` (ruff, mypy; settings in pyproject.toml) + the whole pytest suite (the packaging
# test builds the wheel and installs it into a fresh venv outside the checkout).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
GL_PACKAGES := libegl1 libgl1-mesa-dri libegl-mesa0
# a virtual X display for the real-window tests (xvfb-run needs xauth)
X_PACKAGES := xvfb xauth
# ldconfig lives in /sbin, which a normal user's PATH may lack
LDCONFIG := $(shell command -v ldconfig 2>/dev/null || echo /sbin/ldconfig)

.PHONY: demo test lint setup gl xvfb venv assets bench blender wheel clean

setup: venv gl xvfb

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# A headless OpenGL 4.3 context through EGL must work (any vendor: Mesa llvmpipe, NVIDIA, ...). When it does not
# and Mesa's EGL is missing: install it with apt-get when root, else print the exact command.
GL_PROBE := import moderngl; c = moderngl.create_standalone_context(require=430, backend="egl"); \
	print("headless OpenGL:", c.info["GL_RENDERER"], "/", c.info["GL_VERSION"])

gl: venv
	@if $(PY) -c '$(GL_PROBE)' 2>/dev/null; then \
		true; \
	elif $(LDCONFIG) -p 2>/dev/null | grep -q 'libEGL_mesa.so.0' && ls /usr/lib/*/dri/swrast_dri.so >/dev/null 2>&1; then \
		echo "headless OpenGL: Mesa EGL is installed but no OpenGL 4.3 context could be made:"; \
		$(PY) -c '$(GL_PROBE)'; exit 1; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "headless OpenGL: installing $(GL_PACKAGES)"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(GL_PACKAGES) && \
		$(PY) -c '$(GL_PROBE)'; \
	else \
		echo "headless OpenGL: Mesa EGL is missing. Install it with:"; \
		echo "    sudo apt-get install -y $(GL_PACKAGES)"; \
		exit 1; \
	fi

# The window tests run the real pyglet window under Xvfb. Missing: installed with apt-get when root, else the
# exact command is printed and those tests skip with the reason (never a failed setup: a desktop has a display).
xvfb:
	@if command -v xvfb-run >/dev/null 2>&1 && command -v xauth >/dev/null 2>&1; then \
		true; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "virtual display: installing $(X_PACKAGES)"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(X_PACKAGES); \
	else \
		echo "virtual display: xvfb-run is missing; the window tests skip. Install it with:"; \
		echo "    sudo apt-get install -y $(X_PACKAGES)"; \
	fi

assets: setup
	$(PY) assets/generate.py

# the showcase, named explicitly: `main.py` alone opens the editor (with a display)
demo: setup
	$(PY) main.py demo

lint: venv
	$(VENV)/bin/ruff check .
	$(PY) -m mypy

test: setup lint
	$(PY) -m pytest -q

# the installable tool: dist/skinengine-*.whl (console script `skinengine`; shaders and characters inside)
wheel: venv
	$(PY) -m pip wheel --no-deps --no-build-isolation --quiet -w dist .

bench: setup
	$(PY) main.py bench deform

# Blender as a module (bpy) for `bench bake`'s Blender column, in its own venv: bpy pins numpy < 2 and CPython
# 3.11, so it never goes into the project's venv. `bench bake` finds it here (or through $$BLENDER_PYTHON).
BLENDER_VENV := .venv-blender
blender:
	$(PYTHON) -m venv $(BLENDER_VENV)
	$(BLENDER_VENV)/bin/python -m pip install --quiet "bpy>=4.2"

clean:
	rm -rf $(VENV) $(BLENDER_VENV) .pytest_cache .mypy_cache .ruff_cache build dist
