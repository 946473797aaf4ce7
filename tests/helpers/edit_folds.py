"""Prints docs/benchmarks.md's table of surface-edit folds (issue 26 item 5): the largest dihedral change in a
bulge's passive region (degrees, against the same pose without the edit) per bulge height in limb radii, before
(the profile on the kinematic vertices only) and after (spread over the passive region), on the family's tube
and the humanoid's left forearm (numpy reference, default spring parameters, 4 rings).

    PYTHONPATH=. python tests/helpers/edit_folds.py
"""
from __future__ import annotations

import numpy as np

from engine.skinning.edits import SurfaceEdit
from engine.skinning.metrics import region_dihedral_change
from tests.unit.test_edit_spread import ScaledTube, settled_forearm

HEIGHTS = (0.05, 0.1, 0.2, 0.3, 0.6, 1.0, 2.4)


def _before(ch, samples, profile) -> SurfaceEdit:
    """The edit as surface_edit built it before the spread: the profile along the stroke itself (0 at its
    ends), on the kinematic vertices only."""
    from engine.input.strokes import Stroke
    from engine.skinning import roi

    topo = ch.topology(samples.key)
    tri = np.asarray(topo.triangles, np.int64)
    x = np.asarray(ch.vertices()[samples.key], np.float64)[np.asarray(topo.display_of_control)]
    region = roi.region_of_interest(topo, samples.faces, samples.barycentrics, positions=x)
    pts = roi.surface_positions(x, tri, samples.faces, samples.barycentrics)
    stroke = Stroke.fit(pts, epsilon=1e-3)
    t = np.array([stroke.closest(p)[0] for p in x[region.kinematic]])
    face = int(samples.faces[int(np.argmin(np.linalg.norm(pts - stroke.point(0.5), axis=1)))])
    a, b, c = x[tri[face]]
    attach, rot = ch.edit_frame(samples.key)
    return SurfaceEdit.from_profile(region.kinematic, x[region.kinematic], t, profile, attach, rot,
                                    normal=np.cross(b - a, c - a), passive=region.passive, static=region.static)


def main() -> None:
    from engine.authoring.surface import surface_edit
    from engine.skinning.edits import Profile

    tube = ScaledTube()
    for h in HEIGHTS:
        row = []
        for spread in (False, True):
            edit, x, plain = tube.bulge(h, spread=spread)
            row.append(region_dihedral_change(x, plain, tube.topology.triangles, edit.passive))
        print(f"tube r={tube.radius:g}  h={h:.2f}r  before {row[0]:5.1f}  after {row[1]:5.1f}", flush=True)
    with settled_forearm() as (s, ch, key, topo, cod, plain, samples, radius):
        for h in HEIGHTS:
            row = []
            for spread in (False, True):
                profile = Profile("bulge", h * radius)
                edit = surface_edit(ch, samples, profile=profile) if spread else _before(ch, samples, profile)
                ch.add_edit(key, edit)
                s.settle()
                x = np.asarray(ch.vertices()[key], np.float64)[cod]
                row.append(region_dihedral_change(x, plain, topo.triangles, edit.passive))
                ch.clear_edits()
                s.settle()
            print(f"forearm r={radius * 1000:.1f} mm  h={h:.2f}r ({h * radius * 1000:.0f} mm)  before {row[0]:5.1f}  "
                  f"after {row[1]:5.1f}", flush=True)


if __name__ == "__main__":
    main()
