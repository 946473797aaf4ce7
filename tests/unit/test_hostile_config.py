"""Hostile deformer-graph and deformer-config files (issue 16): wrong types, unknown keys, bytes that are not
UTF-8, text that is not TOML/JSON. Each is a ValueError (one `error:` line at the command line) naming the file,
the key and what was expected; never another exception.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from engine.skinning.config import load_config, read_table
from engine.skinning.gpu.plan import GraphConfig, default_config

VALID_NODE = '[[nodes]]\nname = "skin"\nstage = "skin"\ninputs = { source = "bind" }\noutputs = { target = "s" }\n'

GRAPHS = {
    "nodes = 5": (b"nodes = 5\n", r"nodes = 5 \(an integer\); expected an array of tables"),
    "a node that is a number": (b"nodes = [5]\n", r"nodes\[0\] = 5 \(an integer\); expected a table"),
    "a node that is a bare string": (b'nodes = ["skin"]\n', r"nodes\[0\] = 'skin' \(a string\); expected a table"),
    "inputs = 5": (b'[[nodes]]\nstage = "skin"\ninputs = 5\n',
                   r"nodes\[0\]\.inputs = 5 \(an integer\); expected a table of port = \"resource\""),
    "a port that is a number": (b'[[nodes]]\nstage = "skin"\ninputs = { source = 5 }\n',
                                r"nodes\[0\]\.inputs\.source = 5 \(an integer\); expected a string"),
    "top-level outputs = 5": (b"outputs = 5\n" + VALID_NODE.encode(), r"outputs = 5 \(an integer\); expected a table"),
    "stage = 5": (b"[[nodes]]\nstage = 5\n", r"nodes\[0\]\.stage = 5 \(an integer\); expected a string"),
    "name = 5": (b"name = 5\n" + VALID_NODE.encode(), r"name = 5 \(an integer\); expected a string"),
    "options = 5": (VALID_NODE.encode() + b"options = 5\n", r"nodes\[0\]\.options = 5 \(an integer\)"),
    "unknown node key": (VALID_NODE.encode() + b"colour = 1\n",
                         r"unknown key 'colour' in nodes\[0\]; valid keys: name, stage, inputs, outputs, options"),
    "unknown top-level key": (b"colour = 1\n" + VALID_NODE.encode(), r"unknown key 'colour' in the graph"),
    "graph = 5": (b"graph = 5\n", r"graph = 5 \(an integer\); expected a table"),
    "influence a string": (VALID_NODE.encode() + b'options = { method = "irs", influence = "x" }\n',
                           r"influence = 'x' \(a string\); expected \[parent, child\]"),
    "crease angle a boolean": (None, r"crease_angle must be in \[0, pi\] radians, got True"),
    "not UTF-8": (b"\xff\xfename = 'x'\n", r"not UTF-8 text \(byte 0xff at offset 0\); expected a UTF-8 TOML file"),
    "not TOML": (b"nodes = = 5\n", r"invalid TOML: "),
    "not TOML (deep)": (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", r"invalid TOML"),
}


def _crease_true() -> bytes:
    d = default_config("rigid").to_dict()
    d["nodes"][-1]["options"] = {"crease_angle": True}
    return json.dumps(d).encode()


@pytest.mark.parametrize("case", sorted(GRAPHS))
def test_graph_file_errors_name_file_key_and_expectation(tmp_path, case):
    data, message = GRAPHS[case]
    suffix = ".toml"
    if data is None:
        data, suffix = _crease_true(), ".json"
    path = tmp_path / f"graph{suffix}"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message) as info:
        GraphConfig.load(path)
    assert str(info.value).startswith(str(path)), str(info.value)
    assert "\n" not in str(info.value)


def test_graph_json_errors_and_unreadable_files(tmp_path):
    path = tmp_path / "g.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"g\.json: the top level is list .*expected a table"):
        GraphConfig.load(path)
    path.write_text("{nodes: 5}")
    with pytest.raises(ValueError, match=r"g\.json: invalid JSON"):
        GraphConfig.load(path)
    with pytest.raises(ValueError, match="cannot read deformer graph"):
        GraphConfig.load(tmp_path / "missing.toml")
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(ValueError, match="cannot read deformer graph"):
        GraphConfig.load(tmp_path / "dir.toml")


def test_valid_graph_files_still_load(tmp_path):
    d = default_config("spring").to_dict()
    (tmp_path / "g.json").write_text(json.dumps(d))
    assert GraphConfig.load(tmp_path / "g.json").to_dict() == d
    (tmp_path / "wrapped.toml").write_text("[other]\nx = 1\n[graph]\nname = 'w'\n"
                                           + VALID_NODE.replace("[[nodes]]", "[[graph.nodes]]")
                                           + "[[graph.nodes]]\nstage = 'copy'\ninputs = { source = 's' }\n"
                                           "outputs = { target = 'positions' }\n"
                                           "[[graph.nodes]]\nname = 'fn'\nstage = 'face_normals'\n"
                                           "inputs = { positions = 'positions' }\noutputs = { target = 'f' }\n"
                                           "[[graph.nodes]]\nname = 'vn'\nstage = 'vertex_normals'\n"
                                           "inputs = { positions = 'positions', faces = 'f' }\n"
                                           "outputs = { target = 'normals' }\n")
    assert GraphConfig.load(tmp_path / "wrapped.toml").name == "w"


CONFIGS = {
    "not UTF-8": (b"[spring]\nk_s = 1 # \xe9t\xe9\n", r"not UTF-8 text \(byte 0xe9 at offset \d+\)"),
    "not TOML": (b"[spring\n", r"invalid TOML"),
    "section a number": (b"spring = 5\n", r"spring = 5 \(int\); expected a table \(\[spring\]\)"),
    "section an array of tables": (b"[[irs]]\nblend = 'x'\n", r"irs = .* \(list\); expected a table"),
    "key of the wrong type": (b"[spring]\ndt = 'fast'\n", r"spring\.dt = 'fast'; valid: a number in"),
    "unknown key": (b"[arap]\nsteps = 3\n", r"unknown config key 'arap\.steps'; valid: iterations"),
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_config_file_errors_name_file_key_and_expectation(tmp_path, case):
    data, message = CONFIGS[case]
    path = tmp_path / "deform.toml"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message) as info:
        load_config(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_seeded_fuzz_of_graph_files_only_raises_value_error(tmp_path):
    """Replace one value anywhere in a valid graph by a hostile one: it loads (and validates) or raises a
    ValueError naming the file."""
    base = default_config("spring-feedback").to_dict()
    hostile: list[object] = [5, -1, 1e308, "x", "", [], {}, [5], ["skin"], {"a": 1}, True, None]
    rng = np.random.default_rng(16)
    paths: list[tuple] = []

    def walk(v: object, prefix: tuple) -> None:
        if prefix:
            paths.append(prefix)
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, sub in items:
            walk(sub, prefix + (k,))

    walk(base, ())
    refused = 0
    for k in range(150):
        d = json.loads(json.dumps(base))
        path = paths[int(rng.integers(len(paths)))]
        target = d
        for key in path[:-1]:
            target = target[key]
        value = hostile[int(rng.integers(len(hostile)))]
        if value is None:
            if isinstance(target, dict):
                del target[path[-1]]
            else:
                target.pop(path[-1])
        else:
            target[path[-1]] = value
        file = tmp_path / f"g{k}.json"
        file.write_text(json.dumps(d))
        try:
            GraphConfig.load(file)
        except ValueError as exc:
            assert str(exc).startswith(str(file)) and "\n" not in str(exc), (path, value, str(exc))
            refused += 1
    assert refused > 100


def test_read_table_is_shared_by_both_files(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text("a = 1\n")
    assert read_table(path) == {"a": 1}
