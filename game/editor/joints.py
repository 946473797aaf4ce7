"""The classic fallbacks beside strokes: the skeleton drawn (K), a click on a joint selects it, a rotate gizmo
(ImGuizmo, imgui-bundle) on the selected joint, and the current pose keyed at the playhead (Ctrl+K).

Everything that changes the character is an :class:`engine.input.events.Action` (recorded and replayed like
any event) run by :func:`joint_action`:

* ``select_joint`` {"joint": node index or null};
* ``rotate_joint`` {"joint", "rotation": [x, y, z, w]}: the joint's new pose-layer rotation (the same additive
  layer over the clip that the strokes write, parent space); undoable, one gizmo drag one step (merged by the
  joint, closed by the ``end_edit`` the UI sends when the drag ends);
* ``key_pose`` {"clip": name (default "keys"), "time": seconds (default the playhead: the clip's local
  time)}: the current local pose keyed into that clip (the saved .glb carries it); undoable.

:func:`gizmo_rotation` turns the gizmo's new world matrix of a joint into that layer rotation: the world
rotation change ``R_w = R_new R_old^-1`` seen from the parent (``P^-1 R_w P``, P the parent's world rotation,
the placement for a root) multiplies the joint's layer delta, since the layer acts as ``local = delta * clip``.
"""
from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from engine.math import quat
from game.editor.undo import SnapshotCommand

__all__ = ["joint_action", "gizmo_rotation", "skeleton_segments", "joint_under", "DEFAULT_KEY_CLIP",
           "JOINT_PICK_PX"]

#: the clip ``key_pose`` keys into by default (``save`` writes the current pose into "pose" at 0 s)
DEFAULT_KEY_CLIP = "keys"
#: how near (window pixels) a click must be to a drawn joint to select it
JOINT_PICK_PX = 8.0


def _rotation(m: np.ndarray) -> np.ndarray:
    """The rotation of a 4x4 (or 3x3) matrix with its columns' scale removed."""
    r = np.asarray(m, np.float64)[:3, :3]
    return r / np.linalg.norm(r, axis=0, keepdims=True)


def _parent_rotation(ch: Any, joint: int) -> np.ndarray:
    parent = int(ch.loaded.rig.parents[joint])
    return _rotation(ch.joints()[parent] if parent >= 0 else ch.matrix)


def gizmo_rotation(ch: Any, joint: int, new_world: np.ndarray) -> np.ndarray:
    """The pose-layer rotation (xyzw, parent space) of ``joint`` that turns its current world matrix into
    ``new_world``'s rotation (see the module docstring)."""
    old = _rotation(ch.joints()[joint])
    r_w = _rotation(new_world) @ old.T
    p = _parent_rotation(ch, joint)
    r_p = p.T @ r_w @ p
    layer = ch.pose_layer
    delta = quat.identity() if layer is None else np.asarray(layer.rotation[joint], np.float64)
    q = quat.multiply(quat.from_matrix(r_p), delta)
    return np.asarray(quat.normalize(np.asarray(q, np.float64)), np.float64)


def _check_joint(ch: Any, joint: Any) -> int:
    n = int(ch.loaded.rig.count)
    if isinstance(joint, bool) or not isinstance(joint, (int, np.integer)) or not 0 <= int(joint) < n:
        raise ValueError(f"joint must be a node index in [0, {n - 1}], got {joint!r}")
    return int(joint)


def joint_action(ed: Any, ch: Any, name: str, args: dict[str, Any]) -> None:
    """Run ``select_joint``, ``rotate_joint`` or ``key_pose`` on ``ch`` (ValueError naming a bad value)."""
    st = ed.state
    if name == "select_joint":
        j = args.get("joint")
        st.joint = None if j is None else _check_joint(ch, j)
        if st.joint is not None:
            st.say(f"joint {st.joint} ({ch.loaded.rig.names[st.joint]})")
        return
    if name == "rotate_joint":
        j = _check_joint(ch, args.get("joint"))
        q = np.asarray(args.get("rotation"), np.float64)
        if q.shape != (4,) or not np.isfinite(q).all() or not 0.5 < float(np.linalg.norm(q)) < 2.0:
            raise ValueError(f"rotation must be a unit quaternion [x, y, z, w], got {args.get('rotation')!r}")
        layer = ch.pose_layer
        n = int(ch.loaded.rig.count)
        before = None if layer is None else layer.rotation.copy()
        after = np.tile(np.array([0, 0, 0, 1], np.float32), (n, 1)) if before is None else before.copy()
        after[j] = q / np.linalg.norm(q)

        def apply(rotation: Any, ch: Any = ch) -> None:
            ch.set_pose_layer(rotation)

        ed.undo.push(SnapshotCommand(f"rotate joint {j} of {ch.name}", apply, before, after,
                                     merge_key=("gizmo", ch.entity, j)))
        return
    if name == "key_pose":
        clip = args.get("clip", DEFAULT_KEY_CLIP)
        time = args.get("time")
        if time is None:
            time = float(ch.playback().local_time) if ch.clips else 0.0
        if isinstance(time, bool) or not isinstance(time, (int, float)) or not math.isfinite(time) or time < 0:
            raise ValueError(f"time must be a finite number of seconds >= 0, got {time!r}")
        keyed_before = copy.deepcopy(ch.keyed.get(clip))
        ch.key_pose(clip, time=float(time))
        keyed_after = copy.deepcopy(ch.keyed.get(clip))

        def set_keys(keys: Any, ch: Any = ch, clip: str = clip) -> None:
            if keys is None:
                ch.keyed.pop(clip, None)
            else:
                ch.keyed[clip] = keys

        ed.undo.push(SnapshotCommand(f"key the pose into {clip!r} at {float(time):.2f} s", set_keys, keyed_before,
                                     keyed_after), execute=False)
        ed.undo.close()
        st.say(f"keyed the pose into {clip!r} at {float(time):.2f} s")
        return
    raise ValueError(f"unknown joint action {name!r}")


def skeleton_segments(ch: Any) -> tuple[np.ndarray, list[tuple[int, int]], list[int]]:
    """World positions (N,3) of every node, the (child, parent) pairs of the skin joints' bones, and the
    skin joints (what the skeleton overlay draws and a click can select)."""
    g = ch.joints()[:, :3, 3].astype(np.float64)
    rig = ch.loaded.rig
    joints: set[int] = set()
    for skin in ch.asset.skins:
        joints.update(int(j) for j in skin.joints)
    if not joints:
        joints = set(range(int(rig.count)))
    bones = [(j, int(rig.parents[j])) for j in sorted(joints) if int(rig.parents[j]) in joints]
    return g, bones, sorted(joints)


def joint_under(points: np.ndarray, joints: list[int], x: float, y: float) -> int | None:
    """The joint whose window point (``points`` (N,2), NaN behind the camera) is nearest (x, y) within
    :data:`JOINT_PICK_PX`; None when none is."""
    if not joints:
        return None
    p = np.asarray(points, np.float64)[joints]
    d = np.hypot(p[:, 0] - x, p[:, 1] - y)
    d[~np.isfinite(d)] = np.inf
    k = int(np.argmin(d))
    return joints[k] if d[k] <= JOINT_PICK_PX else None
