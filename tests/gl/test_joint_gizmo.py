"""The rotate gizmo's arithmetic and actions without a window: a world rotation of a joint (what ImGuizmo hands
back) becomes the pose-layer rotation that turns the joint exactly so; the ``rotate_joint`` action is one undo
step per drag that restores the layer exactly; ``key_pose`` keys the pose at the playhead, undoably."""
from __future__ import annotations

import numpy as np
import pytest

from engine.input.events import Action, now
from engine.math import quat

pytestmark = pytest.mark.gl


def _rot(axis, deg):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    return quat.to_matrix(quat.from_axis_angle(a, np.radians(deg)))[:3, :3].astype(np.float64)


def test_a_gizmo_rotation_lands_in_the_pose_layer_and_undoes():
    from engine import Session
    from game.editor import Editor
    from game.editor.joints import gizmo_rotation

    with Session(width=64, height=48, deformer="lbs") as s:
        ed = Editor(s)
        ch = ed.spawn("humanoid", clip="idle", speed=0.0, yaw=30.0)
        s.step()
        j = 7
        g = ch.joints()[j].astype(np.float64)
        old = g[:3, :3] / np.linalg.norm(g[:3, :3], axis=0)
        new = g.copy()
        target = _rot([0.3, 0.2, 1.0], 35.0) @ old
        new[:3, :3] = target
        q = gizmo_rotation(ch, j, new)
        others = ch.joints()[[i for i in range(len(g)) if i != 6]].copy()
        for step in (0.5, 1.0):  # a drag: two frames of the same joint merge into one undo step
            partial = quat.slerp(np.array([0, 0, 0, 1.0]), q, step) if step < 1 else q
            ed.queue.push(Action(now(), "rotate_joint", {"joint": j, "rotation": [float(v) for v in partial]}))
            s.step()
        got = ch.joints()[j].astype(np.float64)
        np.testing.assert_allclose(got[:3, :3] / np.linalg.norm(got[:3, :3], axis=0), target, atol=2e-5)
        np.testing.assert_allclose(got[:3, 3], g[:3, 3], atol=1e-5)  # turned about its own origin
        assert ed.undo.history == ["rotate joint 7 of humanoid"] and ed.unsaved
        assert np.array_equal(ch.joints()[[i for i in range(len(g)) if i != 6]][:5], others[:5])
        ed.queue.push(Action(now(), "undo", {}))
        s.step()
        assert ch.pose_layer is None  # exactly as before the drag
        np.testing.assert_array_equal(ch.joints()[j], g.astype(np.float32))
        ed.queue.push(Action(now(), "end_edit", {}))
        ed.queue.push(Action(now(), "key_pose", {}))
        s.step()
        assert list(ch.keyed["keys"]) == [0.0] and ed.undo.history[-1].startswith("key the pose into 'keys'")
        ed.queue.push(Action(now(), "undo", {}))
        s.step()
        assert "keys" not in ch.keyed
        for bad in ({"joint": 999, "rotation": [0, 0, 0, 1]}, {"joint": j, "rotation": [0, 0, 0]},
                    {"joint": j, "rotation": [0, 0, 0, float("nan")]}):
            ed.queue.push(Action(now(), "rotate_joint", bad))
            s.step()
            assert ed.state.messages[-1].startswith("rotate_joint: ")
