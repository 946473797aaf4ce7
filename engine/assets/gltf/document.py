"""The glTF JSON: strict decoding (UTF-8 without a BOM, no NaN/Infinity literals) and pygltflib's ``GLTF2`` object
model built from the validated document."""
from __future__ import annotations

import json

from engine.assets.errors import AssetError


def parse_json(data: bytes):
    if not data:
        raise AssetError("JSON", "empty document")
    if data.startswith(b"\xef\xbb\xbf"):
        raise AssetError("JSON", "byte order mark (BOM) at the start; glTF JSON must be UTF-8 without a BOM")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AssetError("JSON", f"not valid UTF-8: {exc}") from exc

    def _no_constant(name: str):
        raise AssetError("JSON", f"invalid JSON literal {name}")

    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise AssetError("JSON", f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc


_HINTS: dict[type, dict[str, tuple[str, type | None]]] = {}


def _field_plan(cls: type) -> dict[str, tuple[str, type | None]]:
    """For each dataclass field: ("obj", cls) / ("list", cls) when it nests pygltflib objects, else
    ("raw", None). Cached per class (typing introspection is slow)."""
    import dataclasses
    import typing

    plan = _HINTS.get(cls)
    if plan is not None:
        return plan
    plan = {}
    for name, hint in typing.get_type_hints(cls).items():
        kind, target = "raw", None
        args = typing.get_args(hint)
        if typing.get_origin(hint) is typing.Union:  # Optional[X]
            hint = next(a for a in args if a is not type(None))
            args = typing.get_args(hint)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint) and hint.__name__ != "Attributes":
            kind, target = "obj", hint
        elif typing.get_origin(hint) is list and args and isinstance(args[0], type) \
                and dataclasses.is_dataclass(args[0]) and args[0].__name__ != "Attributes":
            kind, target = "list", args[0]
        plan[name] = (kind, target)
    _HINTS[cls] = plan
    return plan


def _build(cls: type, d: dict):
    """Construct pygltflib dataclass ``cls`` from a validated JSON object: known fields only, nested
    objects converted, ``extras`` dropped (ignored by the loader; glTF allows non-object extras, which
    pygltflib's own decoder rejects), mesh ``attributes``/``targets`` kept as dicts."""
    plan = _field_plan(cls)
    kwargs = {}
    for key, value in d.items():
        entry = plan.get(key)
        if entry is None or key == "extras":
            continue
        kind, target = entry
        if target is None:  # a "raw" field
            pass
        elif kind == "obj" and isinstance(value, dict):
            value = _build(target, value)
        elif kind == "list" and isinstance(value, list):
            value = [_build(target, v) for v in value]
        kwargs[key] = value
    return cls(**kwargs)


def to_pygltflib(doc: dict):
    """pygltflib's ``GLTF2`` object model of the validated document.

    Built directly through the dataclass constructors: ``GLTF2.from_dict`` (dataclasses_json) takes
    seconds on a 900-node file and rejects non-object ``extras``."""
    import pygltflib

    try:
        return _build(pygltflib.GLTF2, doc)
    except Exception as exc:  # noqa: BLE001 - wrap whatever the constructors raise
        raise AssetError("root", f"pygltflib could not build the document: {type(exc).__name__}: {exc}") from exc
