"""The layout the code keeps (../shared/ARCHITECTURE.md, issue 28): the application (game/) sits above the engine,
the engine never imports it, the engine's packages import only down their floors, and no module takes part in
an import circle. Imports are read from the source (every ``import`` statement, also those inside functions),
so a lazy import counts like any other; imports under ``if TYPE_CHECKING:`` are annotations only and do not.

Floors, top to bottom (a module may import its own floor and those below, never one above):

    4  game (the application: command line, commands, editor, demo, ui) and main.py
    3  engine.session, engine.character, engine.frame, engine.authoring, engine.scene, engine.bake,
       engine.runloop, engine.controls, engine (the package itself)
    2  engine.anim, engine.skinning, engine.render, engine.input, engine.components
    1  engine.gpu, engine.ecs, engine.assets, engine.profile
    0  engine.math, engine.log, engine.paths, engine.textfile

Within floor 2, input imports none of the others, and skinning and render do not import each other. The
spring deformer (engine.skinning.springs) does not import config.py, edits.py or radial.py: they depend on it.
"""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

FLOORS: dict[str, int] = {
    "game": 4, "main": 4,
    "engine": 3, "engine.__main__": 3, "engine.session": 3, "engine.frame": 3, "engine.authoring": 3,
    "engine.scene": 3, "engine.bake": 3, "engine.runloop": 3, "engine.controls": 3,
    "engine.anim": 2, "engine.skinning": 2, "engine.render": 2, "engine.input": 2, "engine.components": 2,
    "engine.gpu": 1, "engine.ecs": 1, "engine.assets": 1, "engine.profile": 1,
    "engine.math": 0, "engine.log": 0, "engine.paths": 0, "engine.textfile": 0,
}
#: (importing package, imported package) pairs that the floors allow but the design forbids
FORBIDDEN = {
    ("engine.input", "engine.render"), ("engine.input", "engine.skinning"), ("engine.input", "engine.anim"),
    ("engine.input", "engine.components"),
    ("engine.skinning", "engine.render"), ("engine.render", "engine.skinning"),
}
#: what the spring deformer package must not import (they import it)
SPRINGS_DOWNSTREAM = ("engine.skinning.config", "engine.skinning.edits", "engine.skinning.radial")


def _modules() -> dict[str, Path]:
    mods = {"main": ROOT / "main.py"}
    for pkg in ("engine", "game"):
        for p in (ROOT / pkg).rglob("*.py"):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = p
    return mods


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Every module's imports of the project's own modules (the deepest module an import names)."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    out: dict[str, set[str]] = {}
    for mod, path in mods.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        found: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                       for stmt in block.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            found.update(r for r in map(resolve, names) if r is not None and r != mod)
        out[mod] = found
    return out


def _floor_of(mod: str) -> tuple[str, int]:
    """The floor entry (the longest FLOORS key that is ``mod`` or a package above it) and its floor."""
    parts = mod.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in FLOORS:
            return key, FLOORS[key]
    raise AssertionError(f"{mod} is on no floor: add its package to FLOORS in tests/unit/test_layout.py")


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


GRAPH = _imports(_modules())


def test_the_walk_sees_the_imports_it_must():
    # the checks below are only as good as the walk: it must see top-level, relative and lazy imports
    assert "engine.session" in GRAPH["engine"]  # a lazy import inside engine.__getattr__
    assert "game.cli" in GRAPH["main"]
    assert "engine.frame" in GRAPH["engine.session"]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle():
    assert _circles(GRAPH) == []


def test_the_engine_never_imports_the_application():
    up = sorted(f"{m} -> {t}" for m, ts in GRAPH.items() if m.startswith("engine") for t in ts
                if t == "main" or t.startswith("game"))
    assert up == []


def test_imports_run_down_the_floors():
    wrong = []
    for mod, targets in GRAPH.items():
        key, floor = _floor_of(mod)
        for t in targets:
            tkey, tfloor = _floor_of(t)
            if tfloor > floor:
                wrong.append(f"{mod} (floor {floor}) -> {t} (floor {tfloor})")
            elif (key, tkey) in FORBIDDEN:
                wrong.append(f"{mod} -> {t} (the design forbids {key} -> {tkey})")
    assert sorted(wrong) == []


def test_the_springs_package_depends_on_nothing_that_depends_on_it():
    springs = [m for m in GRAPH if m == "engine.skinning.springs" or m.startswith("engine.skinning.springs.")]
    assert len(springs) > 1, "engine/skinning/springs/ is a package"
    bad = sorted(f"{m} -> {t}" for m in springs for t in GRAPH[m] if t in SPRINGS_DOWNSTREAM)
    assert bad == []


def test_engine_files_stay_short_or_say_why():
    """No file in engine/ over ~700 lines of Python without the reason in its module docstring (a paragraph
    starting "Why one file")."""
    long = []
    for path in sorted((ROOT / "engine").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 720 and "Why one file" not in (ast.get_docstring(ast.parse(text)) or ""):
            long.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
    assert long == []
