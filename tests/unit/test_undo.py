"""The command stack: do/undo/redo, merged drags, the limit, exact state restored."""
from __future__ import annotations

import numpy as np
import pytest

from game.editor.undo import CommandStack, SnapshotCommand


class Target:
    def __init__(self) -> None:
        self.value = np.zeros(4)

    def set(self, v) -> None:
        self.value = v


def edit(t: Target, new, key=None, label="edit"):
    return SnapshotCommand(label, t.set, t.value, np.asarray(new, np.float64), merge_key=key)


def test_do_undo_redo_restore_exact_states():
    t, s = Target(), CommandStack()
    first = np.array([0.1, 0.2, 0.3, 1 / 3])
    s.push(edit(t, first))
    s.push(edit(t, first * 7.0))
    np.testing.assert_array_equal(t.value, first * 7.0)
    assert s.undo() is not None
    assert np.array_equal(t.value, first)  # bit for bit
    s.undo()
    assert np.array_equal(t.value, np.zeros(4)) and not s.can_undo and s.undo() is None
    s.redo()
    s.redo()
    assert np.array_equal(t.value, first * 7.0) and not s.can_redo and s.redo() is None


def test_a_new_edit_drops_the_redo_tail():
    t, s = Target(), CommandStack()
    s.push(edit(t, [1, 1, 1, 1], label="a"))
    s.push(edit(t, [2, 2, 2, 2], label="b"))
    s.undo()
    s.push(edit(t, [3, 3, 3, 3], label="c"))
    assert s.history == ["a", "c"] and s.cursor == 2 and not s.can_redo


def test_continuous_drag_merges_into_one_step_until_closed():
    t, s = Target(), CommandStack()
    for i in range(1, 6):
        s.push(edit(t, [i, 0, 0, 0], key=("knot", 3)))
    assert len(s) == 1
    s.close()
    s.push(edit(t, [9, 0, 0, 0], key=("knot", 3)))
    assert len(s) == 2
    s.undo()
    assert t.value[0] == 5
    s.undo()
    assert np.array_equal(t.value, np.zeros(4))
    # different keys never merge
    s2 = CommandStack()
    s2.push(edit(t, [1, 0, 0, 0], key="a"))
    s2.push(edit(t, [2, 0, 0, 0], key="b"))
    assert len(s2) == 2


def test_state_given_later_changes_never_reach_the_stack():
    t, s = Target(), CommandStack()
    new = np.ones(4)
    s.push(edit(t, new))
    new[:] = 5
    s.undo()
    s.redo()
    assert np.array_equal(t.value, np.ones(4))


def test_limit_drops_the_oldest():
    t, s = Target(), CommandStack(limit=3)
    for i in range(5):
        s.push(edit(t, [i, 0, 0, 0], label=f"e{i}"))
    assert s.history == ["e2", "e3", "e4"]
    while s.undo():
        pass
    assert t.value[0] == 1  # the state before e2


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="limit"):
        CommandStack(limit=0)
    with pytest.raises(TypeError, match="Command"):
        CommandStack().push(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="label"):
        SnapshotCommand("", print, 1, 2)
