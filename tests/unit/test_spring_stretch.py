"""Issue 26, item 4: rings stay round when a bone scales. An unseen two-bone tube (radius 0.5, not a family
member: other ring and segment counts, elbow off centre) stretched 1.3x keeps every ring round (spread of its
points' distances from its centre <= 5 %) and its radius (>= 0.9 R), with the default springs."""
from __future__ import annotations

from engine.assets.gen.family import TubePose, tube_member
from engine.skinning.family import MemberRig


def test_unseen_tube_stays_round_under_stretch():
    rig = MemberRig(tube_member("unseen", radius=0.5, length=4.4, rings=29, segments=20, elbows=(0.45,)))
    pose = TubePose("stretch1.3", stretch=1.3)
    springs = rig.measure(rig.deform(pose, "springs"), pose)
    assert springs["ring_spread"] <= 0.05
    assert springs["radius_min"] >= 0.9
