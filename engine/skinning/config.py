"""Deformer parameter configuration: one `DeformerConfig` for every deformer, loaded from TOML.

Layout (every key optional; unknown keys are errors that list the valid ones):

    skinning = "spring"            # lbs | dqs | rigid | irs | spring | spring-feedback
    [spring]                       # SpringParams fields: k_s, k_l, k_t, k_b, k_r, k_e, use_*, dt, integrator,
    dt = 1.0                       # damping, max_iterations, convergence, ..., mode, initial_skinning,
    acceleration = "none"          # none | momentum (heavy ball, explicit only; momentum = 0.5 its beta)
    warm_start = false             # start from last frame's output when the pose moved < warm_limit radians
    contact = false                # the contact term (engine/skinning/contact.py): contact_thickness, contact_passes
    [irs]       parent_influence, child_influence, length_correction, blend
    [binding]   method, smooth_passes, weld_tolerance
    [arap]      iterations, weights, anchor_weight
    [laplacian] weights, rotation_iterations
    [radial]    profile, amount

Errors name the bad key as `section.key` with its value and the valid range. `to_toml()` writes the same
layout back (load_config(to_toml()) round-trips). Command-line overrides go through `with_overrides`, e.g.
`config.with_overrides(spring_iterations=100, spring_dt=1/60)`; any `section_field` name works, with the
aliases in OVERRIDE_ALIASES.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import tomli_w

from engine.skinning import registry
from engine.skinning.laplacian import WEIGHTS
from engine.skinning.radial import PROFILES
from engine.skinning.springs.limits import FLOAT32_STEP, check_spring_ranges, spring_advice, spring_ranges
from engine.skinning.springs.params import SpringParams
from engine.textfile import MAX_JSON_DEPTH, check_numbers, parse_json, read_user_text

__all__ = ["SKINNING", "IrsConfig", "BindingConfig", "ArapConfig", "LaplacianConfig", "RadialConfig",
           "DeformerConfig", "load_config", "loads_config", "read_table", "OVERRIDE_ALIASES",
           # the mesh-derived spring ranges live with the springs (engine.skinning.springs.limits); kept
           # importable from here
           "FLOAT32_STEP", "spring_ranges", "check_spring_ranges", "spring_advice"]

#: methods a deformer config may name: every GPU row of the deformer table (engine/skinning/registry.py)
SKINNING = registry.names(device="gpu", public_only=False)
#: largest deformer config or graph file read (they are a few kilobytes)
MAX_TABLE_BYTES = 4 << 20
OVERRIDE_ALIASES = {"spring_iterations": "spring.max_iterations", "spring_dt": "spring.dt"}


def _check_number(where: str, v: Any, lo: float, hi: float, *, integer: bool = False, lo_open: bool = False) -> None:
    kind = "an integer" if integer else "a number"
    rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v))
            or (integer and int(v) != v)):
        raise ValueError(f"{where} = {v!r:.60}; valid: {kind} in {rng}")
    if not ((v > lo if lo_open else v >= lo) and v <= hi):  # ints of any size compare exactly
        raise ValueError(f"{where} = {v!r:.60} is out of range; valid: {rng}")


def _check_choice(where: str, v: Any, choices) -> None:
    if v not in choices:
        raise ValueError(f"{where} = {v!r}; valid: {', '.join(map(str, choices))}")


@dataclass(frozen=True)
class IrsConfig:
    """Incremental rotation skinning (skinning.irs): joint influences p_i, c_i in [0, 1] (eq. 14)."""

    parent_influence: float = 0.5
    child_influence: float = 0.5
    length_correction: bool = False
    blend: str = "nlerp"

    def validate(self, prefix: str = "irs") -> None:
        _check_number(f"{prefix}.parent_influence", self.parent_influence, 0.0, 1.0)
        _check_number(f"{prefix}.child_influence", self.child_influence, 0.0, 1.0)
        if not isinstance(self.length_correction, bool):
            raise ValueError(f"{prefix}.length_correction = {self.length_correction!r}; valid: true or false")
        _check_choice(f"{prefix}.blend", self.blend, ("nlerp", "matrix"))


@dataclass(frozen=True)
class BindingConfig:
    """Attachment binding (binding.bind): method, smoothing/reprojection passes (< 10), weld tolerance."""

    method: str = "planar"
    smooth_passes: int = 6
    weld_tolerance: float = 1e-6

    def validate(self, prefix: str = "binding") -> None:
        _check_choice(f"{prefix}.method", self.method, ("planar", "project", "weights"))
        _check_number(f"{prefix}.smooth_passes", self.smooth_passes, 0, 9, integer=True)
        _check_number(f"{prefix}.weld_tolerance", self.weld_tolerance, 0.0, 1e-2)


@dataclass(frozen=True)
class ArapConfig:
    """ARAP baselines: alternating iterations, edge weights, soft anchor weight (scale-vector ARAP)."""

    iterations: int = 2
    weights: str = "cotangent"
    anchor_weight: float = 1e-2

    def validate(self, prefix: str = "arap") -> None:
        _check_number(f"{prefix}.iterations", self.iterations, 0, 1000, integer=True)
        _check_choice(f"{prefix}.weights", self.weights, WEIGHTS)
        _check_number(f"{prefix}.anchor_weight", self.anchor_weight, 0.0, 1e6, lo_open=True)


@dataclass(frozen=True)
class LaplacianConfig:
    """Laplacian surface editing baseline: edge weights and rotation refinement passes."""

    weights: str = "cotangent"
    rotation_iterations: int = 2

    def validate(self, prefix: str = "laplacian") -> None:
        _check_choice(f"{prefix}.weights", self.weights, WEIGHTS)
        _check_number(f"{prefix}.rotation_iterations", self.rotation_iterations, 0, 100, integer=True)


@dataclass(frozen=True)
class RadialConfig:
    """Radial deformation profile (eq. 24) and its amount."""

    profile: str = "bulge"
    amount: float = 1.0

    def validate(self, prefix: str = "radial") -> None:
        _check_choice(f"{prefix}.profile", self.profile, tuple(PROFILES))
        _check_number(f"{prefix}.amount", self.amount, -10.0, 10.0)


_SECTIONS = {"spring": SpringParams, "irs": IrsConfig, "binding": BindingConfig, "arap": ArapConfig,
             "laplacian": LaplacianConfig, "radial": RadialConfig}


@dataclass(frozen=True)
class DeformerConfig:
    """Parameters of every deformer of a mesh."""

    skinning: str = "spring"
    spring: SpringParams = field(default_factory=SpringParams)
    irs: IrsConfig = field(default_factory=IrsConfig)
    binding: BindingConfig = field(default_factory=BindingConfig)
    arap: ArapConfig = field(default_factory=ArapConfig)
    laplacian: LaplacianConfig = field(default_factory=LaplacianConfig)
    radial: RadialConfig = field(default_factory=RadialConfig)

    def validate(self) -> DeformerConfig:
        """Raise ValueError naming `section.key`, the value and the valid range; return self."""
        _check_choice("skinning", self.skinning, SKINNING)
        try:
            self.spring.validate()
        except ValueError as exc:
            raise ValueError(str(exc).replace("SpringParams.", "spring.")) from None
        for name in ("irs", "binding", "arap", "laplacian", "radial"):
            getattr(self, name).validate(name)
        return self

    # -- dict / TOML ----------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        out: dict[str, Any] = {"skinning": self.skinning}
        for name in _SECTIONS:
            sec = getattr(self, name)
            out[name] = sec.to_dict() if name == "spring" else {f.name: getattr(sec, f.name) for f in fields(sec)}
        return out

    @classmethod
    def from_dict(cls, d: dict) -> DeformerConfig:
        """Build and validate; unknown sections or keys raise ValueError naming them and the valid ones."""
        if not isinstance(d, dict):
            raise ValueError(f"a deformer config must be a table, got {type(d).__name__} {d!r:.60}")
        valid_top = ["skinning", *_SECTIONS]
        unknown = [k for k in d if k not in valid_top]
        if unknown:
            raise ValueError(f"unknown config key {unknown[0]!r}; valid: {', '.join(valid_top)}")
        kwargs: dict[str, Any] = {}
        if "skinning" in d:
            kwargs["skinning"] = d["skinning"]
        for name, typ in _SECTIONS.items():
            if name not in d:
                continue
            sec = d[name]
            if not isinstance(sec, dict):
                raise ValueError(f"{name} = {sec!r:.60} ({type(sec).__name__}); expected a table ([{name}])")
            names = [f.name for f in fields(typ)]
            bad = [k for k in sec if k not in names]
            if bad:
                raise ValueError(f"unknown config key '{name}.{bad[0]}'; valid: {', '.join(names)}")
            kwargs[name] = typ(**sec)
        return cls(**kwargs).validate()

    def to_toml(self) -> str:
        """TOML text of the whole configuration (None values, e.g. spring.force_tol = auto, are left out)."""
        d = self.to_dict()
        doc: dict[str, Any] = {"skinning": d["skinning"]}
        for name in _SECTIONS:
            doc[name] = {k: v for k, v in d[name].items() if v is not None}
        return tomli_w.dumps(doc)

    # -- overrides ------------------------------------------------------------------------------------------
    def with_overrides(self, **overrides: Any) -> DeformerConfig:
        """A validated copy with overrides applied; None values are ignored (unset CLI options).
        Names: OVERRIDE_ALIASES (spring_iterations, spring_dt) or `section_field` (spring_k_s, arap_iterations)."""
        d = self.to_dict()
        for key, value in overrides.items():
            if value is None:
                continue
            path = OVERRIDE_ALIASES.get(key)
            if path is None:
                section, _, fname = key.partition("_")
                if section not in _SECTIONS or fname not in {f.name for f in fields(_SECTIONS[section])}:
                    if key == "skinning":
                        d["skinning"] = value
                        continue
                    valid = sorted(OVERRIDE_ALIASES) + ["skinning", "<section>_<field>"]
                    raise ValueError(f"unknown override {key!r}; valid: {', '.join(valid)}")
                path = f"{section}.{fname}"
            section, fname = path.split(".")
            d[section][fname] = value
        return DeformerConfig.from_dict(d)


def loads_config(text: str) -> DeformerConfig:
    """Parse TOML text into a validated DeformerConfig."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"invalid TOML: {exc}") from None
    return DeformerConfig.from_dict(data)


def read_table(path: str | Path, what: str = "config file") -> dict[str, Any]:
    """The top-level table of a .toml file (.json files too), for the deformer config and graph files.

    Every problem is a ValueError starting with the file name and saying what was expected: the file cannot
    be read (missing, a folder, a FIFO or device, over MAX_TABLE_BYTES: engine.textfile reads it), is not
    UTF-8 text, is not valid TOML/JSON (or nested deeper than MAX_JSON_DEPTH), or its top level is not a table.
    """
    p = Path(path)
    kind = "JSON" if p.suffix.lower() == ".json" else "TOML"
    text = read_user_text(p, what, max_bytes=MAX_TABLE_BYTES, kind=kind)
    if kind == "JSON":
        data = parse_json(text, str(p), max_depth=MAX_JSON_DEPTH)
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{p}: invalid {kind}: {exc}") from None
        except RecursionError:
            raise ValueError(f"{p}: invalid {kind}: nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError(f"{p}: the top level is {type(data).__name__} {data!r:.60}; expected a table")
    check_numbers(data, str(p))
    return data


def load_config(path: str | Path) -> DeformerConfig:
    """Load a deformer configuration from a TOML file; errors name the file and the bad key."""
    p = Path(path)
    data = read_table(p, "deformer config")
    try:
        return DeformerConfig.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None
