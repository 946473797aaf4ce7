"""Deformer configuration (engine/skinning/config.py): TOML load/save round trip, errors naming the bad key
and the valid range, CLI-style overrides."""
from __future__ import annotations

import pytest

from engine.skinning.config import DeformerConfig, load_config, loads_config
from engine.skinning.springs import SpringParams


def test_defaults_round_trip_through_toml(tmp_path):
    cfg = DeformerConfig()
    path = tmp_path / "deform.toml"
    path.write_text(cfg.to_toml())
    assert load_config(path) == cfg


def test_load_partial_file(tmp_path):
    path = tmp_path / "deform.toml"
    path.write_text('skinning = "irs"\n[spring]\nk_t = 0.75\nconvergence = "energy"\nforce_tol = 0.01\n'
                    '[irs]\nparent_influence = 0.3\n[binding]\nsmooth_passes = 4\n')
    cfg = load_config(path)
    assert cfg.skinning == "irs"
    assert cfg.spring == SpringParams(k_t=0.75, convergence="energy", force_tol=0.01)
    assert cfg.irs.parent_influence == 0.3 and cfg.irs.child_influence == 0.5
    assert cfg.binding.smooth_passes == 4
    assert loads_config(cfg.to_toml()) == cfg  # force_tol set: written and read back


@pytest.mark.parametrize("text, message", [
    ("[spring]\ndt = 0.0\n", r"spring\.dt = 0\.0 is out of range; valid: \(0, 10\]"),
    ("[spring]\nintegrator = 'rk4'\n", r"spring\.integrator = 'rk4'; valid: explicit, semi_implicit"),
    ("[spring]\nmax_iterations = 0\n", r"spring\.max_iterations = 0 is out of range; valid: \[1, 100000\]"),
    ("[spring]\nstiff = 1\n", r"unknown config key 'spring\.stiff'; valid: k_s, k_l"),
    ("[binding]\nsmooth_passes = 12\n", r"binding\.smooth_passes = 12 is out of range; valid: \[0, 9\]"),
    ("[arap]\nweights = 'harmonic'\n", r"arap\.weights = 'harmonic'; valid: cotangent, uniform"),
    ("[radial]\nprofile = 'sine'\n", r"radial\.profile = 'sine'; valid: linear, cubicIn, quarticOut, bulge"),
    ("[irs]\nlength_correction = 1\n", r"irs\.length_correction = 1; valid: true or false"),
    ("skinning = 'blend'\n", r"skinning = 'blend'; valid: lbs, dqs"),
    ("colour = 3\n", r"unknown config key 'colour'"),
    ("[spring\n", r"invalid TOML"),
])
def test_errors_name_key_and_range(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read deformer config"):
        load_config(tmp_path / "nope.toml")


def test_cli_overrides():
    cfg = DeformerConfig()
    out = cfg.with_overrides(spring_iterations=120, spring_dt=1 / 60, spring_k_s=0.3, arap_iterations=4,
                             laplacian_weights=None)
    assert out.spring.max_iterations == 120 and out.spring.dt == pytest.approx(1 / 60)
    assert out.spring.k_s == 0.3 and out.arap.iterations == 4
    assert out.laplacian == cfg.laplacian and cfg.spring.max_iterations == 50  # None ignored, original unchanged
    with pytest.raises(ValueError, match=r"spring\.dt = -1 is out of range"):
        cfg.with_overrides(spring_dt=-1)
    with pytest.raises(ValueError, match="unknown override 'spring_speed'"):
        cfg.with_overrides(spring_speed=2)
