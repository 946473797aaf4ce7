"""Schema-level validation of a glTF 2.0 JSON document (the dict from ``json.loads``), before any data is read.

What is checked here (every check raises :class:`AssetError` naming the part JSON-pointer style,
``accessors[3].count``):

* the root is an object with ``asset``; every top-level collection is a non-empty array of objects;
* every property the loader can meet has the right JSON type (integers may be written ``1.0``), numbers
  are finite, required properties are present, numeric ranges and multiples hold (glTF 2.0 JSON schema);
* every index reference resolves (``nodes[2].mesh: mesh 7 does not exist (3 meshes)``);
* "exactly one of" and dependency rules (image uri/bufferView, camera type, byteOffset needs bufferView,
  node.skin needs node.mesh, ...);
* ``asset.version`` / ``minVersion``; extension declarations (``extensionsRequired`` within
  ``extensionsUsed``, every extension object declared, required extensions supported, extension objects
  only where the extension defines them).

Unknown string enum values (an accessor type ``"NotaVEC3"``, a channel path ``"unknown"``) are only warned
about here, as the validator does for forward compatibility; the loader refuses them where it has to
read the object. Data-dependent checks (bounds, alignment, values) live in ``engine.assets.accessors``
and ``engine.assets.gltf``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from engine.assets.errors import AssetError

# Extensions this loader implements. Others are ignored when merely used and refused when required.
SUPPORTED_EXTENSIONS = frozenset({"KHR_mesh_quantization", "KHR_draco_mesh_compression", "EXT_meshopt_compression"})
# Where the known extensions may put an extension object ("kind" of the enclosing object).
# KHR_mesh_quantization defines no extension object at all.
EXTENSION_OBJECT_KINDS: dict[str, frozenset[str]] = {
    "KHR_mesh_quantization": frozenset(),
    "KHR_animation_pointer": frozenset({"animation.channel.target"}),
    "KHR_draco_mesh_compression": frozenset({"mesh.primitive"}),
    "EXT_meshopt_compression": frozenset({"bufferView", "buffer"}),
    "KHR_texture_transform": frozenset({"textureInfo", "normalTextureInfo", "occlusionTextureInfo"}),
    "KHR_materials_unlit": frozenset({"material"}),
}
# Extensions that are only valid when also listed in extensionsRequired.
MUST_BE_REQUIRED = frozenset({"KHR_mesh_quantization"})

_VERSION_RE = re.compile(r"^([0-9]+)\.([0-9]+)$")
_EXT_NAME_RE = re.compile(r"^[A-Z0-9]+_[A-Za-z0-9_]+$")
_POINTER_RE = re.compile(r"^(?:/(?:[^/~]|~0|~1)*)+$")


# ---------------------------------------------------------------------------------------------- spec types
@dataclass(frozen=True)
class Int:
    lo: int | None = None
    hi: int | None = None
    multiple: int | None = None


@dataclass(frozen=True)
class Num:
    lo: float | None = None
    hi: float | None = None
    lo_exclusive: bool = False


@dataclass(frozen=True)
class Str:
    enum: tuple[str, ...] | None = None  # unknown values: warning only (forward compatibility) unless strict
    pattern: re.Pattern | None = None
    strict: bool = False  # the spec allows exactly these values (an unknown one is an error)


@dataclass(frozen=True)
class IntEnum:
    values: tuple[int, ...]
    strict: bool = False  # as Str.strict


class Bool:
    pass


@dataclass(frozen=True)
class Ref:
    collection: str  # top-level collection the index points into


@dataclass(frozen=True)
class Arr:
    item: Any
    min_items: int = 1
    max_items: int | None = None
    unique: bool = False


@dataclass(frozen=True)
class Obj:
    kind: str
    props: dict
    required: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dict:
    """A JSON object used as a map (mesh attributes): any key, every value of type ``value``."""

    value: Any
    min_props: int = 0


# ---------------------------------------------------------------------------------------------- the schema
COMPONENT_TYPES = (5120, 5121, 5122, 5123, 5125, 5126)
ACCESSOR_TYPES = ("SCALAR", "VEC2", "VEC3", "VEC4", "MAT2", "MAT3", "MAT4")

_TEXTURE_INFO = Obj("textureInfo", {"index": Ref("textures"), "texCoord": Int(0)}, ("index",))
_SPARSE = Obj("accessor.sparse", {
    "count": Int(1),
    "indices": Obj("accessor.sparse.indices", {"bufferView": Ref("bufferViews"), "byteOffset": Int(0),
                                               "componentType": IntEnum((5121, 5123, 5125), strict=True)},
                   ("bufferView", "componentType")),
    "values": Obj("accessor.sparse.values", {"bufferView": Ref("bufferViews"), "byteOffset": Int(0)},
                  ("bufferView",)),
}, ("count", "indices", "values"))

SCHEMA: dict[str, Obj] = {
    "accessors": Obj("accessor", {
        "bufferView": Ref("bufferViews"), "byteOffset": Int(0), "componentType": IntEnum(COMPONENT_TYPES),
        "normalized": Bool(), "count": Int(1), "type": Str(ACCESSOR_TYPES),
        "max": Arr(Num(), 1, 16), "min": Arr(Num(), 1, 16), "sparse": _SPARSE,
    }, ("componentType", "count", "type")),
    "animations": Obj("animation", {
        "channels": Arr(Obj("animation.channel", {
            "sampler": Int(0),
            "target": Obj("animation.channel.target", {
                "node": Ref("nodes"), "path": Str(("translation", "rotation", "scale", "weights"))}, ("path",)),
        }, ("sampler", "target"))),
        "samplers": Arr(Obj("animation.sampler", {
            "input": Ref("accessors"), "output": Ref("accessors"),
            "interpolation": Str(("LINEAR", "STEP", "CUBICSPLINE"), strict=True),
        }, ("input", "output"))),
    }, ("channels", "samplers")),
    "buffers": Obj("buffer", {"uri": Str(), "byteLength": Int(1)}, ("byteLength",)),
    "bufferViews": Obj("bufferView", {
        "buffer": Ref("buffers"), "byteOffset": Int(0), "byteLength": Int(1),
        "byteStride": Int(4, 252, 4), "target": IntEnum((34962, 34963)),
    }, ("buffer", "byteLength")),
    "cameras": Obj("camera", {
        "type": Str(("perspective", "orthographic")),
        "perspective": Obj("camera.perspective", {
            "aspectRatio": Num(0, lo_exclusive=True), "yfov": Num(0, lo_exclusive=True),
            "zfar": Num(0, lo_exclusive=True), "znear": Num(0, lo_exclusive=True)}, ("yfov", "znear")),
        "orthographic": Obj("camera.orthographic", {
            "xmag": Num(), "ymag": Num(), "zfar": Num(0, lo_exclusive=True), "znear": Num(0)},
            ("xmag", "ymag", "zfar", "znear")),
    }, ("type",)),
    "images": Obj("image", {"uri": Str(), "mimeType": Str(("image/jpeg", "image/png")),
                            "bufferView": Ref("bufferViews")}),
    "materials": Obj("material", {
        "pbrMetallicRoughness": Obj("material.pbrMetallicRoughness", {
            "baseColorFactor": Arr(Num(0, 1), 4, 4), "baseColorTexture": _TEXTURE_INFO,
            "metallicFactor": Num(0, 1), "roughnessFactor": Num(0, 1), "metallicRoughnessTexture": _TEXTURE_INFO}),
        "normalTexture": Obj("normalTextureInfo", {"index": Ref("textures"), "texCoord": Int(0), "scale": Num()},
                             ("index",)),
        "occlusionTexture": Obj("occlusionTextureInfo", {"index": Ref("textures"), "texCoord": Int(0),
                                                         "strength": Num(0, 1)}, ("index",)),
        "emissiveTexture": _TEXTURE_INFO, "emissiveFactor": Arr(Num(0, 1), 3, 3),
        "alphaMode": Str(("OPAQUE", "MASK", "BLEND")), "alphaCutoff": Num(0), "doubleSided": Bool(),
    }),
    "meshes": Obj("mesh", {
        "primitives": Arr(Obj("mesh.primitive", {
            "attributes": Dict(Ref("accessors"), 1), "indices": Ref("accessors"), "material": Ref("materials"),
            "mode": IntEnum((0, 1, 2, 3, 4, 5, 6)), "targets": Arr(Dict(Ref("accessors"), 1)),
        }, ("attributes",))),
        "weights": Arr(Num()),
    }, ("primitives",)),
    "nodes": Obj("node", {
        "camera": Ref("cameras"), "children": Arr(Ref("nodes"), unique=True), "skin": Ref("skins"),
        "matrix": Arr(Num(), 16, 16), "mesh": Ref("meshes"), "rotation": Arr(Num(-1, 1), 4, 4),
        "scale": Arr(Num(), 3, 3), "translation": Arr(Num(), 3, 3), "weights": Arr(Num()),
    }),
    "samplers": Obj("sampler", {"magFilter": IntEnum((9728, 9729)),
                                "minFilter": IntEnum((9728, 9729, 9984, 9985, 9986, 9987)),
                                "wrapS": IntEnum((33071, 33648, 10497)), "wrapT": IntEnum((33071, 33648, 10497))}),
    "scenes": Obj("scene", {"nodes": Arr(Ref("nodes"), unique=True)}),
    "skins": Obj("skin", {"inverseBindMatrices": Ref("accessors"), "skeleton": Ref("nodes"),
                          "joints": Arr(Ref("nodes"), unique=True)}, ("joints",)),
    "textures": Obj("texture", {"sampler": Ref("samplers"), "source": Ref("images")}),
}
COLLECTIONS = tuple(SCHEMA)
ROOT = Obj("root", {
    "asset": Obj("asset", {"version": Str(), "minVersion": Str(), "generator": Str(), "copyright": Str()},
                 ("version",)),
    "extensionsUsed": Arr(Str(), unique=True), "extensionsRequired": Arr(Str(), unique=True),
    "scene": Ref("scenes"), **{name: Arr(obj) for name, obj in SCHEMA.items()},
}, ("asset",))
_SINGULAR = {"accessors": "accessor", "animations": "animation", "buffers": "buffer", "bufferViews": "bufferView",
             "cameras": "camera", "images": "image", "materials": "material", "meshes": "mesh", "nodes": "node",
             "samplers": "sampler", "scenes": "scene", "skins": "skin", "textures": "texture"}


# ---------------------------------------------------------------------------------------------- helpers
def is_int(v: Any) -> bool:
    """JSON integer: an int (not a bool) or a finite float with an integral value (``1.0``)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and math.isfinite(v) and v.is_integer()


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object" if isinstance(v, dict) else type(v).__name__


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def join(path: str, key: str | int) -> str:
    """JSON-pointer-like path: ``join("meshes[0]", "primitives")`` -> ``meshes[0].primitives``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Validator:
    """Walks the JSON document against :data:`SCHEMA`; collects warnings, raises on the first error."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc
        self.warnings: list[str] = []
        self.sizes: dict[str, int] = {}
        self.extension_uses: list[tuple[str, str, str]] = []  # (name, path, kind)

    # -- entry point
    def run(self) -> None:
        doc = self.doc
        if not isinstance(doc, dict):
            raise AssetError("root", f"the JSON root must be an object, got {_type_name(doc)}")
        for name in COLLECTIONS:
            v = doc.get(name)
            self.sizes[name] = len(v) if isinstance(v, list) else 0
        self._value(ROOT, doc, "")
        self._asset_version(doc["asset"])
        self._extensions(doc)
        self._semantics(doc)

    # -- generic walk
    def _value(self, spec: Any, v: Any, path: str, kind: str = "root") -> None:
        where = path or "root"
        if isinstance(spec, Obj):
            if not isinstance(v, dict):
                raise AssetError(where, f"expected an object, got {_type_name(v)} {_short(v)}")
            for req in spec.required:
                if req not in v:
                    raise AssetError(where, f"required property '{req}' is missing")
            for key, sub in v.items():
                if key == "extensions":
                    self._extension_dict(sub, join(path, key), spec.kind)
                elif key == "extras":
                    continue
                elif key == "name" and spec.kind != "root":
                    if not isinstance(sub, str):
                        raise AssetError(join(path, key), f"expected a string, got {_type_name(sub)}")
                elif key in spec.props:
                    self._value(spec.props[key], sub, join(path, key), spec.kind)
            return
        if isinstance(spec, Arr):
            if not isinstance(v, list):
                raise AssetError(where, f"expected an array, got {_type_name(v)} {_short(v)}")
            if len(v) < spec.min_items:
                raise AssetError(where, f"empty array (at least {spec.min_items} item(s) required)"
                                 if not v else f"{len(v)} items, at least {spec.min_items} required")
            if spec.max_items is not None and len(v) > spec.max_items:
                raise AssetError(where, f"{len(v)} items, at most {spec.max_items} allowed")
            for i, item in enumerate(v):
                self._value(spec.item, item, join(path, i), kind)
            if spec.unique:
                seen: set = set()
                for i, item in enumerate(v):
                    key = repr(item)
                    if key in seen:
                        raise AssetError(join(path, i), f"duplicate element {_short(item)}")
                    seen.add(key)
            return
        if isinstance(spec, Dict):
            if not isinstance(v, dict):
                raise AssetError(where, f"expected an object, got {_type_name(v)} {_short(v)}")
            if len(v) < spec.min_props:
                raise AssetError(where, "empty object (at least one property required)")
            for key, sub in v.items():
                self._value(spec.value, sub, join(path, key), kind)
            return
        if isinstance(spec, Ref):
            if not is_int(v):
                raise AssetError(where, f"expected an index (integer), got {_type_name(v)} {_short(v)}")
            n = self.sizes[spec.collection]
            if not 0 <= int(v) < n:
                raise AssetError(where, f"unresolved reference: {spec.collection}[{int(v)}] does not exist "
                                        f"({n} {spec.collection})")
            return
        if isinstance(spec, Int):
            if not is_int(v):
                raise AssetError(where, f"expected an integer, got {_type_name(v)} {_short(v)}")
            iv = int(v)
            if (spec.lo is not None and iv < spec.lo) or (spec.hi is not None and iv > spec.hi):
                lo = "-inf" if spec.lo is None else spec.lo
                hi = "inf" if spec.hi is None else spec.hi
                raise AssetError(where, f"value {iv} out of range [{lo}, {hi}]")
            if spec.multiple and iv % spec.multiple:
                raise AssetError(where, f"value {iv} is not a multiple of {spec.multiple}")
            return
        if isinstance(spec, IntEnum):
            if not is_int(v):
                raise AssetError(where, f"expected an integer, got {_type_name(v)} {_short(v)}")
            if int(v) not in spec.values:
                valid = ", ".join(map(str, spec.values))
                if spec.strict:
                    raise AssetError(where, f"value {int(v)} is not allowed (valid: {valid})")
                self.warn(where, f"unknown value {int(v)} (valid: {valid})")
            return
        if isinstance(spec, Num):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise AssetError(where, f"expected a number, got {_type_name(v)} {_short(v)}")
            if not math.isfinite(v):
                raise AssetError(where, f"value {v} is not a finite number")
            if spec.lo is not None and (v < spec.lo or (spec.lo_exclusive and v == spec.lo)):
                rng = f"{'(' if spec.lo_exclusive else '['}{spec.lo}, {'inf' if spec.hi is None else spec.hi}]"
                raise AssetError(where, f"value {v} out of range {rng}")
            if spec.hi is not None and v > spec.hi:
                raise AssetError(where, f"value {v} out of range [{spec.lo}, {spec.hi}]")
            return
        if isinstance(spec, Str):
            if not isinstance(v, str):
                raise AssetError(where, f"expected a string, got {_type_name(v)} {_short(v)}")
            if spec.enum is not None and v not in spec.enum:
                if spec.strict:
                    raise AssetError(where, f"value {v!r} is not allowed (valid: {', '.join(spec.enum)})")
                self.warn(where, f"unknown value {v!r} (valid: {', '.join(spec.enum)})")
            return
        if isinstance(spec, Bool):
            if not isinstance(v, bool):
                raise AssetError(where, f"expected a boolean, got {_type_name(v)} {_short(v)}")
            return

    def _extension_dict(self, v: Any, path: str, kind: str) -> None:
        if not isinstance(v, dict):
            raise AssetError(path, f"expected an object, got {_type_name(v)} {_short(v)}")
        for name, obj in v.items():
            if not isinstance(obj, dict):
                raise AssetError(join(path, name), f"extension object must be an object, got {_type_name(obj)}")
            self.extension_uses.append((name, join(path, name), kind))

    def warn(self, where: str, reason: str) -> None:
        self.warnings.append(f"{where}: {reason}")

    # -- asset.version
    def _asset_version(self, asset: dict) -> None:
        m = _VERSION_RE.match(asset["version"])
        if not m:
            raise AssetError("asset.version", f"{asset['version']!r} is not a version string 'major.minor'")
        major, minor = int(m.group(1)), int(m.group(2))
        if major != 2:
            raise AssetError("asset.version", f"unsupported glTF major version {asset['version']!r} (expected 2.x)",
                             unsupported=True)
        if "minVersion" in asset:
            mm = _VERSION_RE.match(asset["minVersion"])
            if not mm:
                raise AssetError("asset.minVersion", f"{asset['minVersion']!r} is not a version string 'major.minor'")
            mv = (int(mm.group(1)), int(mm.group(2)))
            if mv > (major, minor):
                raise AssetError("asset.minVersion", f"minVersion {asset['minVersion']} is greater than version "
                                                     f"{asset['version']}")
            if mv > (2, 0):
                raise AssetError("asset.minVersion", f"the asset needs glTF {asset['minVersion']}; this loader "
                                                     "implements 2.0", unsupported=True)
        if minor > 0:
            self.warn("asset.version", f"unknown minor version {asset['version']}; read as 2.0")

    # -- extensions
    def _extensions(self, doc: dict) -> None:
        used = doc.get("extensionsUsed", [])
        required = doc.get("extensionsRequired", [])
        if required and "extensionsUsed" not in doc:
            raise AssetError("extensionsRequired", "extensionsUsed must be defined when extensionsRequired is")
        for i, name in enumerate(required):
            if name not in used:
                raise AssetError(join("extensionsRequired", i), f"required extension {name!r} is not listed in "
                                                                "extensionsUsed")
        for i, name in enumerate(used):
            if not _EXT_NAME_RE.match(name):
                self.warn(join("extensionsUsed", i), f"extension name {name!r} does not follow PREFIX_name")
        for name, path, kind in self.extension_uses:
            if name not in used:
                raise AssetError(path, f"extension {name!r} is not declared in extensionsUsed")
            allowed = EXTENSION_OBJECT_KINDS.get(name)
            if allowed is not None and kind not in allowed:
                raise AssetError(path, f"extension {name!r} does not define an object on a {kind}")
        for i, name in enumerate(used):
            if name in MUST_BE_REQUIRED and name not in required:
                raise AssetError(join("extensionsUsed", i), f"extension {name!r} must also be in extensionsRequired")
        for i, name in enumerate(required):
            if name not in SUPPORTED_EXTENSIONS:
                raise AssetError(join("extensionsRequired", i), f"unsupported required extension {name!r} "
                                 f"(supported: {', '.join(sorted(SUPPORTED_EXTENSIONS))})", unsupported=True)

    # -- cross-property rules the JSON schema expresses with oneOf / dependencies
    def _semantics(self, doc: dict) -> None:
        for i, img in enumerate(doc.get("images", [])):
            where = join("images", i)
            if ("uri" in img) == ("bufferView" in img):
                raise AssetError(where, "exactly one of 'uri' and 'bufferView' must be defined")
            if "bufferView" in img and "mimeType" not in img:
                raise AssetError(join(where, "mimeType"), "required when the image uses a bufferView")
        for i, cam in enumerate(doc.get("cameras", [])):
            where = join("cameras", i)
            kinds = [k for k in ("perspective", "orthographic") if k in cam]
            if len(kinds) > 1:
                raise AssetError(where, "exactly one of 'perspective' and 'orthographic' must be defined")
            t = cam["type"]
            if t in ("perspective", "orthographic"):
                if t not in cam:
                    raise AssetError(join(where, t), f"required when type is {t!r}")
                sub = cam[t]
                if "zfar" in sub and sub["zfar"] <= sub["znear"]:
                    raise AssetError(join(join(where, t), "zfar"), f"zfar {sub['zfar']} must be > znear {sub['znear']}")
                if t == "orthographic" and (sub["xmag"] == 0 or sub["ymag"] == 0):
                    raise AssetError(where + ".orthographic", "xmag and ymag must not be zero")
        for i, acc in enumerate(doc.get("accessors", [])):
            if "byteOffset" in acc and "bufferView" not in acc:
                raise AssetError(join(join("accessors", i), "byteOffset"), "defined without a bufferView")
        for i, node in enumerate(doc.get("nodes", [])):
            where = join("nodes", i)
            if "skin" in node and "mesh" not in node:
                raise AssetError(join(where, "skin"), "a node with a skin must have a mesh")
            if "weights" in node and "mesh" not in node:
                raise AssetError(join(where, "weights"), "a node with morph weights must have a mesh")
        for a, anim in enumerate(doc.get("animations", [])):
            n = len(anim["samplers"])
            for c, ch in enumerate(anim["channels"]):
                s = int(ch["sampler"])
                if s >= n:
                    raise AssetError(f"animations[{a}].channels[{c}].sampler",
                                     f"unresolved reference: sampler {s} does not exist ({n} samplers)")
                target = ch["target"]
                ext = target.get("extensions", {}).get("KHR_animation_pointer")
                if ext is not None:  # the loader skips these channels, but their structure must hold
                    where = f"animations[{a}].channels[{c}].target.extensions.KHR_animation_pointer"
                    if "pointer" not in ext:
                        raise AssetError(where, "required property 'pointer' is missing")
                    ptr = ext["pointer"]
                    if not isinstance(ptr, str) or not _POINTER_RE.match(ptr):
                        raise AssetError(f"{where}.pointer", f"{_short(ptr)} is not a JSON pointer")
                    if "node" in target:
                        raise AssetError(f"animations[{a}].channels[{c}].target.node",
                                         "must be undefined when KHR_animation_pointer is used")
                    if target["path"] != "pointer":
                        raise AssetError(f"animations[{a}].channels[{c}].target.path",
                                         f"must be 'pointer' with KHR_animation_pointer, got {target['path']!r}")


def validate_document(doc: Any) -> list[str]:
    """Validate the JSON document; return the warnings (strings ``"where: reason"``), raise AssetError."""
    v = Validator(doc)
    v.run()
    return v.warnings
