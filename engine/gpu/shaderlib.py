"""The one loader for every GLSL file under ``shaders/``, and the program cache built on it.

Preprocessing (:meth:`ShaderLibrary.load`) turns a stage file into one source string:

* ``#version`` is line 1 of the output (the file's own, else ``#version 430 core``);
* ``#define NAME value`` lines for the caller's ``defines`` follow it, and nowhere else; a define that
  no line of the expanded source mentions is refused (it would be a silent typo);
* the generated include ``generated/layouts.glsl`` (std430 structs from engine/render/layouts.py) and
  any other virtual file registered with :meth:`ShaderLibrary.add_virtual` can be included like files;
* ``#include "path"`` is resolved relative to the including file, then to ``shaders/include/``; every
  file is included once (a second ``#include`` of it is a no-op), and a file that includes itself
  through a chain raises :class:`ShaderIncludeError` naming the chain;
* ``#line N K`` directives give each file its own source-string number K (0 = the stage file, then
  includes in order of first inclusion), so driver messages carry the real file's line numbers.

Errors: :class:`ShaderError` names the file and line and shows the lines around it. K is mapped back to
the file name. Mesa drops K (prints 0) for semantic errors, so when a message says K = 0 and more than
one file is involved the loader compiles once more with the ``#line`` directives blanked out (same line
count) and maps the raw line numbers through its own table: the message is exact on every driver.

:class:`ProgramCache` keys programs by (stage file names, frozen defines); ``reload_changed()``
recompiles programs whose files (includes included) changed on disk; a failed recompile keeps the old
program and reports the error.
"""
from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import moderngl

from engine.gpu.layouts import layouts_glsl
from engine.paths import data_dir

if TYPE_CHECKING:
    from engine.gpu.resources import GpuResources

log = logging.getLogger(__name__)

#: The checkout's shaders/, or the copy installed with the package (engine.paths decides).
SHADER_ROOT = data_dir("shaders")
DEFAULT_VERSION = "#version 430 core"
GENERATED_LAYOUTS = "generated/layouts.glsl"

_VERSION_RE = re.compile(r"^\s*#\s*version\b")
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+(?:"([^"]*)"|<([^>]*)>)\s*(?://.*)?$')
_LINE_DIRECTIVE = "#line"
# Driver log formats: Mesa "K:L(C): msg", NVIDIA "K(L) : msg", AMD/Intel "ERROR: K:L: msg".
_MSG_RES = (
    re.compile(r"^\s*(\d+):(\d+)\(\d+\):\s*(.*)$"),
    re.compile(r"^\s*(\d+)\((\d+)\)\s*:\s*(.*)$"),
    re.compile(r"^\s*(?:ERROR|WARNING):\s*(\d+):(\d+):\s*(.*)$"),
)
_STAGE_NAMES = {
    "vertex_shader": "vertex", "fragment_shader": "fragment", "geometry_shader": "geometry",
    "tess_control_shader": "tess_control", "tess_evaluation_shader": "tess_evaluation",
    "compute_shader": "compute",
}
CONTEXT_LINES = 2


class ShaderError(RuntimeError):
    """A shader failed to preprocess, compile or link; the message names the file and line."""


class ShaderIncludeError(ShaderError):
    """An ``#include`` could not be resolved, or a chain of includes forms a cycle."""


@dataclass
class ShaderSource:
    """One preprocessed stage. ``files[K]`` is the display name of source string K; ``line_map[i]`` is
    (K, line) of output line i + 1 (K = -1 for generated lines); ``deps`` maps every file that went in
    to a hash of its text (used by the cache to notice changes)."""

    name: str
    text: str
    files: list[str]
    line_map: list[tuple[int, int]]
    file_lines: dict[int, list[str]]
    deps: dict[str, str]

    def text_without_line_directives(self) -> str:
        """The same source with every generated ``#line`` blanked (line count unchanged)."""
        return "\n".join("" if ln.startswith(_LINE_DIRECTIVE + " ") else ln for ln in self.text.split("\n"))

    def locate(self, k: int, line: int, *, raw: bool = False) -> tuple[str, int] | None:
        """(file name, line) of a driver location; ``raw`` = the line counts output lines (no #line)."""
        if raw:
            if 1 <= line <= len(self.line_map) and self.line_map[line - 1][0] >= 0:
                kk, ll = self.line_map[line - 1]
                return self.files[kk], ll
            return None
        if 0 <= k < len(self.files):
            return self.files[k], line
        return None

    def context(self, file: str, line: int, radius: int = CONTEXT_LINES) -> str:
        """The lines around ``line`` of ``file`` with a marker on the line itself."""
        k = self.files.index(file)
        lines = self.file_lines.get(k, [])
        out = []
        for n in range(max(1, line - radius), min(len(lines), line + radius) + 1):
            out.append(f"{'>' if n == line else ' '} {n:5d} | {lines[n - 1]}")
        return "\n".join(out)


def uniform(prog: moderngl.Program | moderngl.ComputeShader, name: str) -> moderngl.Uniform:
    """The uniform ``name`` of ``prog`` (KeyError when the program has no member of that name, TypeError when
    the member is a block, attribute or varying: moderngl's ``prog[name]`` may be any of those)."""
    member = prog[name]
    if not isinstance(member, moderngl.Uniform):
        raise TypeError(f"{name!r} is a {type(member).__name__}, not a uniform")
    return member


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def _define_value(key: str, value: object) -> str:
    if not isinstance(key, str) or not key.isidentifier():
        raise ValueError(f"define name must be a GLSL identifier, got {key!r}")
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        r = repr(value)
        if r in ("inf", "-inf", "nan"):
            raise ValueError(f"define {key} must be finite, got {value!r}")
        return r if ("." in r or "e" in r) else r + ".0"
    if isinstance(value, str) and "\n" not in value:
        return value
    raise ValueError(f"define {key}: value must be bool, int, float or a one-line str, got {value!r}")


class ShaderLibrary:
    """Loads and preprocesses stage files below ``root`` (default: SHADER_ROOT, the checkout's or the installed
    ``shaders/``)."""

    def __init__(self, root: Path | str | None = None, *, default_version: str = DEFAULT_VERSION) -> None:
        self.root = Path(root) if root is not None else SHADER_ROOT
        self.include_dir = self.root / "include"
        self.default_version = default_version
        self._virtual: dict[str, str] = {GENERATED_LAYOUTS: layouts_glsl()}

    # -- files ---------------------------------------------------------------------------------
    def add_virtual(self, name: str, text: str) -> None:
        """Register generated GLSL text that can be ``#include``d as ``name``."""
        self._virtual[name] = text

    def virtual(self, name: str) -> str | None:
        """The text of the virtual file ``name`` (None: none registered under that name)."""
        return self._virtual.get(name)

    def _display(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def _read_stage(self, name: str) -> tuple[str, str]:
        """(display name, text) of a stage given relative to the root (or absolute)."""
        p = Path(name)
        path = p if p.is_absolute() else self.root / p
        if not path.is_file():
            raise ShaderError(f"shader file {name!r} not found (looked for {path})")
        return self._display(path), path.read_text()

    def _resolve_include(self, target: str, including: str) -> tuple[str, str] | None:
        if target in self._virtual:
            return f"<{target}>", self._virtual[target]
        candidates = []
        if not including.startswith("<"):
            base = Path(including)
            base = base if base.is_absolute() else self.root / base
            candidates.append(base.parent / target)
        candidates.append(self.include_dir / target)
        for c in candidates:
            if c.is_file():
                return self._display(c), c.read_text()
        return None

    def _search_list(self, including: str) -> str:
        places = []
        if not including.startswith("<"):
            places.append(str((self.root / including).parent))
        places.append(str(self.include_dir))
        return ", ".join(places)

    # -- preprocessing ---------------------------------------------------------------------------
    def load(self, name: str, defines: Mapping[str, object] | None = None, *,
             strict: bool = True) -> ShaderSource:
        """Preprocess stage file ``name`` (relative to the root) with ``defines``; see the module doc.

        Only the defines the expanded source mentions are injected; with ``strict`` any other define
        raises ValueError (a program checks instead that each define serves at least one stage)."""
        defines = dict(defines or {})
        values = {k: _define_value(k, v) for k, v in defines.items()}
        display, text = self._read_stage(name)
        files: list[str] = []
        file_lines: dict[int, list[str]] = {}
        deps: dict[str, str] = {}
        body: list[tuple[str, int, int]] = []  # (text, K, line) with K=-1 for generated lines
        version: tuple[str, int] | None = None

        def expand(fname: str, ftext: str, chain: list[tuple[str, int]]) -> None:
            nonlocal version
            k = len(files)
            files.append(fname)
            lines = ftext.split("\n")
            file_lines[k] = lines
            deps[fname] = _hash(ftext)
            body.append((f"{_LINE_DIRECTIVE} 1 {k}", -1, 0))
            for i, line in enumerate(lines, 1):
                if _VERSION_RE.match(line):
                    if k != 0:
                        where = " <- ".join(f"{f}:{n}" for f, n in reversed(chain))
                        raise ShaderError(f"{fname}:{i}: #version is only allowed in a stage file, "
                                          f"not in an include (included from {where})")
                    if version is not None:
                        raise ShaderError(f"{fname}:{i}: second #version (first on line {version[1]})")
                    version = (line.strip(), i)
                    body.append(("", k, i))
                    continue
                m = _INCLUDE_RE.match(line)
                if not m:
                    body.append((line, k, i))
                    continue
                target = m.group(1) if m.group(1) is not None else m.group(2)
                found = self._resolve_include(target, fname)
                chain_here = chain + [(fname, i)]
                if found is None:
                    trail = " -> ".join(f"{f}:{n}" for f, n in chain_here)
                    raise ShaderIncludeError(
                        f"{fname}:{i}: cannot find include {target!r} (searched {self._search_list(fname)}); "
                        f"include chain: {trail}")
                inc_name, inc_text = found
                in_chain = [f for f, _ in chain_here]
                if inc_name in in_chain:
                    cyc = " -> ".join(f"{f}:{n}" for f, n in chain_here) + f" -> {inc_name}"
                    raise ShaderIncludeError(f"include cycle: {cyc}")
                if inc_name in files:  # include-once: a diamond is fine, a second copy would redefine
                    body.append((f"// {target} already included", k, i))
                    continue
                expand(inc_name, inc_text, chain_here)
                body.append((f"{_LINE_DIRECTIVE} {i + 1} {k}", -1, 0))

        expand(display, text, [])
        joined_body = "\n".join(t for t, _, _ in body)
        used = [k for k in defines if re.search(rf"\b{re.escape(k)}\b", joined_body)]
        if strict and len(used) < len(defines):
            unused = [k for k in defines if k not in used]
            raise ValueError(f"defines {unused} are not used by {display} or its includes ({files[1:]}); "
                             f"pass only the defines a shader declares")
        out_lines: list[str] = [version[0] if version else self.default_version]
        line_map: list[tuple[int, int]] = [(0, version[1]) if version else (-1, 0)]
        for name in used:
            out_lines.append(f"#define {name} {values[name]}")
            line_map.append((-1, 0))
        for t, k, i in body:
            out_lines.append(t)
            line_map.append((k, i))
        return ShaderSource(display, "\n".join(out_lines) + "\n", files, line_map, file_lines, deps)

    # -- compiling -----------------------------------------------------------------------------
    def _explain(self, exc: moderngl.Error, sources: dict[str, ShaderSource], retry) -> ShaderError:
        """Turn a moderngl compile/link error into a ShaderError naming file, line and context."""
        msg = str(exc)
        stage_key = next((s for s in _STAGE_NAMES if f"\n{s}\n" in "\n" + msg), None)
        src = sources.get(_STAGE_NAMES[stage_key]) if stage_key else None
        if stage_key is None or src is None:  # a link error: name every stage file
            names = ", ".join(f"{st}: {s.name}" for st, s in sources.items())
            return ShaderError(f"GLSL link error ({names}):\n{msg.strip()}")
        errors = _parse_log(msg)
        raw = False
        if errors and len(src.files) > 1 and any(k == 0 for k, _, _ in errors):
            raw_errors = retry(src)
            if raw_errors:
                errors, raw = raw_errors, True
        parts = [f"GLSL compile error in {_STAGE_NAMES[stage_key]} shader {src.name}:"]
        shown: set[tuple[str, int]] = set()
        for k, line, text in errors:
            loc = src.locate(k, line, raw=raw)
            if loc is None:
                parts.append(f"  (line {line} of source {k}): {text}")
                continue
            f, ln = loc
            parts.append(f"{f}:{ln}: {text}")
            if loc not in shown and len(shown) < 4:  # context once per location
                parts.append(src.context(f, ln))
                shown.add(loc)
        if not errors:
            parts.append(msg.strip())
        return ShaderError("\n".join(parts))

    def compile_program(self, ctx: moderngl.Context, *, vertex: str, fragment: str | None = None,
                        geometry: str | None = None, defines: Mapping[str, object] | None = None,
                        tess_control: str | None = None, tess_evaluation: str | None = None,
                        create=None) -> tuple[moderngl.Program, dict[str, str]]:
        """Compile and link a program from stage files; returns (program, deps). ``create`` makes the
        program from keyword sources (default ``ctx.program``; the cache passes its resource owner)."""
        given = {"vertex": vertex, "tess_control": tess_control, "tess_evaluation": tess_evaluation,
                 "geometry": geometry, "fragment": fragment}
        stages = {k: v for k, v in given.items() if v is not None}
        combined: dict[str, object] = dict(defines or {})
        # A define is checked against all stages together: it may serve only one of them.
        sources = {st: self.load(n, combined, strict=False) for st, n in stages.items()}
        self._check_defines_used(combined, sources)
        make = create or ctx.program
        kw: dict[str, Any] = {f"{st}_shader": s.text for st, s in sources.items()}

        def retry(failing: ShaderSource) -> list[tuple[int, int, str]]:
            kw2: dict[str, Any] = {f"{st}_shader": (s.text_without_line_directives() if s is failing else s.text)
                                   for st, s in sources.items()}
            try:
                ctx.program(**kw2).release()
            except moderngl.Error as e2:
                return _parse_log(str(e2))
            return []

        try:
            prog = make(**kw)
        except moderngl.Error as exc:
            raise self._explain(exc, sources, retry) from None
        deps: dict[str, str] = {}
        for s in sources.values():
            deps.update(s.deps)
        return prog, deps

    def compile_compute(self, ctx: moderngl.Context, name: str, defines: Mapping[str, object] | None = None,
                        create=None) -> tuple[moderngl.ComputeShader, dict[str, str]]:
        """Compile a compute shader from ``name``; returns (compute shader, deps)."""
        src = self.load(name, defines)
        make = create or ctx.compute_shader

        def retry(failing: ShaderSource) -> list[tuple[int, int, str]]:
            try:
                ctx.compute_shader(failing.text_without_line_directives()).release()
            except moderngl.Error as e2:
                return _parse_log(str(e2))
            return []

        try:
            cs = make(src.text)
        except moderngl.Error as exc:
            raise self._explain(exc, {"compute": src}, retry) from None
        return cs, dict(src.deps)

    @staticmethod
    def _check_defines_used(defines: Mapping[str, object], sources: dict[str, ShaderSource]) -> None:
        for k in defines:
            if not any(re.search(rf"#define {re.escape(k)} ", s.text) for s in sources.values()):
                names = [s.name for s in sources.values()]
                raise ValueError(f"define {k!r} is not used by any stage of {names}; "
                                 f"pass only the defines a shader declares")


def _parse_log(msg: str) -> list[tuple[int, int, str]]:
    out = []
    for line in msg.splitlines():
        for rx in _MSG_RES:
            m = rx.match(line)
            if m:
                out.append((int(m.group(1)), int(m.group(2)), m.group(3).strip()))
                break
    return out


# --- program cache --------------------------------------------------------------------------------
ProgramKey = tuple


@dataclass
class _Entry:
    kind: str  # "program" | "compute"
    stages: dict[str, str]
    defines: dict[str, object]
    obj: object
    deps: dict[str, str]
    last_error: str | None = None


@dataclass
class ReloadResult:
    """One program whose files changed: ``error`` is None when it recompiled, else the message (the old
    program stays in use)."""

    key: ProgramKey
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    reloads: int = 0
    failed_reloads: int = 0
    extra: dict = field(default_factory=dict)


def _freeze(defines: Mapping[str, object] | None) -> frozenset:
    items = dict(defines or {})
    for k, v in items.items():
        _define_value(k, v)  # validates
    return frozenset((k, (type(v).__name__, v)) for k, v in items.items())


class ProgramCache:
    """Programs keyed by (stage file names, frozen defines), owned through a :class:`GpuResources`.

    ``get_program``/``get_compute`` return the current object for a key (compile on first use); hold
    the key, not the object, across frames, or watch :attr:`generation` (bumped by every successful
    reload) to rebuild what depends on a program (vertex arrays)."""

    def __init__(self, resources: GpuResources, library: ShaderLibrary | None = None) -> None:
        self.resources = resources
        self.ctx = resources.ctx
        self.library = library if library is not None else ShaderLibrary()
        self._entries: dict[ProgramKey, _Entry] = {}
        self.stats = CacheStats()
        self.generation = 0

    @staticmethod
    def program_key(*, vertex: str, fragment: str | None = None, geometry: str | None = None,
                    defines: Mapping[str, object] | None = None, tess_control: str | None = None,
                    tess_evaluation: str | None = None) -> ProgramKey:
        if tess_control is None and tess_evaluation is None:
            return ("program", vertex, geometry, fragment, _freeze(defines))
        return ("program", vertex, geometry, fragment, _freeze(defines), tess_control, tess_evaluation)

    def get_program(self, *, vertex: str, fragment: str | None = None, geometry: str | None = None,
                    defines: Mapping[str, object] | None = None, tess_control: str | None = None,
                    tess_evaluation: str | None = None) -> moderngl.Program:
        """The program of these stage files and defines (tessellation stages optional, as a pair)."""
        if (tess_control is None) != (tess_evaluation is None):
            raise ValueError(f"tessellation needs both stages, got tess_control={tess_control!r}, "
                             f"tess_evaluation={tess_evaluation!r}")
        key = self.program_key(vertex=vertex, fragment=fragment, geometry=geometry, defines=defines,
                               tess_control=tess_control, tess_evaluation=tess_evaluation)
        e = self._entries.get(key)
        if e is not None:
            self.stats.hits += 1
            return e.obj  # type: ignore[return-value]
        self.stats.misses += 1
        given = {"vertex": vertex, "tess_control": tess_control, "tess_evaluation": tess_evaluation,
                 "geometry": geometry, "fragment": fragment}
        stages = {k: v for k, v in given.items() if v is not None}
        prog, deps = self._build("program", stages, dict(defines or {}))
        self._entries[key] = _Entry("program", stages, dict(defines or {}), prog, deps)
        return prog

    def get_compute(self, name: str, defines: Mapping[str, object] | None = None) -> moderngl.ComputeShader:
        key = ("compute", name, _freeze(defines))
        e = self._entries.get(key)
        if e is not None:
            self.stats.hits += 1
            return e.obj  # type: ignore[return-value]
        self.stats.misses += 1
        cs, deps = self._build("compute", {"compute": name}, dict(defines or {}))
        self._entries[key] = _Entry("compute", {"compute": name}, dict(defines or {}), cs, deps)
        return cs

    def _build(self, kind: str, stages: dict[str, str], defines: dict[str, object]):
        label = "+".join(stages.values())
        if kind == "compute":
            return self.library.compile_compute(
                self.ctx, stages["compute"], defines,
                create=lambda src: self.resources.compute_shader(src, label=label))
        return self.library.compile_program(
            self.ctx, defines=defines, create=lambda **kw: self.resources.program(label=label, **kw),
            **stages)

    def _changed(self, e: _Entry) -> bool:
        for name, h in e.deps.items():
            if name.startswith("<"):
                text = self.library.virtual(name[1:-1])
            else:
                p = Path(name)
                p = p if p.is_absolute() else self.library.root / p
                text = p.read_text() if p.is_file() else None
            if text is None or _hash(text) != h:
                return True
        return False

    def reload_changed(self) -> list[ReloadResult]:
        """Recompile every cached program one of whose files changed; keep the old one on failure."""
        results = []
        for key, e in self._entries.items():
            if not self._changed(e):
                continue
            try:
                obj, deps = self._build(e.kind, e.stages, e.defines)
            except (ShaderError, ValueError) as exc:
                e.last_error = str(exc)
                # Remember the failing text so the same broken file is reported once, not every poll.
                e.deps = self._current_deps(e)
                self.stats.failed_reloads += 1
                log.error("shader reload failed, keeping the previous program:\n%s", exc)
                results.append(ReloadResult(key, str(exc)))
                continue
            self.resources.release(e.obj)
            e.obj, e.deps, e.last_error = obj, deps, None
            self.stats.reloads += 1
            self.generation += 1
            results.append(ReloadResult(key, None))
        return results

    def _current_deps(self, e: _Entry) -> dict[str, str]:
        out = {}
        for name in e.deps:
            if name.startswith("<"):
                out[name] = _hash(self.library.virtual(name[1:-1]) or "")
            else:
                p = self.library.root / name if not Path(name).is_absolute() else Path(name)
                out[name] = _hash(p.read_text()) if p.is_file() else ""
        return out

    def errors(self) -> dict[ProgramKey, str]:
        """Programs whose last reload failed, with the message."""
        return {k: e.last_error for k, e in self._entries.items() if e.last_error}

    def __len__(self) -> int:
        return len(self._entries)

    def release(self) -> None:
        """Release every cached program (through the resource owner) and forget them."""
        for e in self._entries.values():
            self.resources.release(e.obj)
        self._entries.clear()
