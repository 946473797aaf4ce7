"""Bad assets past the loader: a singular inverse-bind matrix is an asset error naming the skin and joint;
transforms whose products overflow float32 are refused by the commands (nothing written), never NaN output."""
from __future__ import annotations

import warnings

import pytest

from engine import Session
from engine.assets import load
from engine.assets.errors import AssetError
from engine.scene import require_finite
from tests.conftest import ROOT

CYLINDER = ROOT / "assets" / "cylinder.glb"


def _cylinder():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(CYLINDER)


def test_singular_inverse_bind_names_skin_and_joint():
    asset = _cylinder()
    asset.skins[0].inverse_bind[1, :3, :3] = 0.0
    with Session(device="cpu", render=False, deformer="rigid") as s:
        with pytest.raises(AssetError, match=r"skins\[0\]\.inverseBindMatrices\[1\]"):
            s.spawn(asset, clip=0)
        assert s.characters == []


def test_overflowing_transforms_are_refused_not_written(tmp_path):
    asset = _cylinder()
    asset.skins[0].inverse_bind[1, :3, 3] = 3.0e38
    with Session(device="cpu", render=False) as s:
        ch = s.spawn(asset, clip="bend", time=0.5)
        v = ch.vertices()
        with pytest.raises(ValueError, match=r"node\d+_mesh0_prim0 are not finite .*overflow float32"):
            require_finite(v)
