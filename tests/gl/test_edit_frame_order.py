"""The frame after ``Character.add_edit`` draws the edit (issue 12): the surface-edit system runs before the
deformation and the drawing of the same frame, on either device (registering it once moved render_system ahead
of the deformation, so every edited frame drew the previous frame's mesh and ``edit --screenshot`` the
unedited one)."""
from __future__ import annotations

import numpy as np
import pytest

from engine import Session
from engine.render.camera import Camera
from engine.skinning.edits import SurfaceEdit

pytestmark = pytest.mark.gl


@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_first_frame_after_add_edit_draws_it(device):
    with Session(device=device, width=160, height=160, deformer="spring", strict=True) as s:
        ch = s.spawn("cylinder", clip=None)
        s.camera = Camera(eye=np.array([0.0, 0.5, 1.2]), target=np.array([0.0, 0.5, 0.0]), aspect=1.0, near=0.1,
                          far=10.0)
        s.render()

        def right_outline() -> int:
            row = s.gbuffer()["mesh"][80]
            return int(np.flatnonzero(row >= 0).max())

        before = right_outline()
        key = ch.skinned_primitives[0]
        x = np.asarray(ch.topology(key).positions, np.float64)
        kin = np.flatnonzero((x[:, 0] > 0.09) & (np.abs(x[:, 1] - 0.5) < 0.1))
        attach, rot = ch.edit_frame(key)
        ch.add_edit(key, SurfaceEdit.from_world(kin, x[kin] + [0.05, 0.0, 0.0], attach, rot, stiffness=20.0))
        order = s.schedule.order()
        assert order.index("surface_edit_frame_system") < order.index("deform_frame_system") < \
            order.index("render_system")
        s.render()
        first = right_outline()
        assert first >= before + 4  # 5 cm out at 1.2 m: about 8 px, drawn in this very frame
        s.render()
        assert right_outline() == first
