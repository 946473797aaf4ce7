"""Undo/redo: a command stack (a world resource of the editor).

Every edit is a :class:`Command` with ``do`` and ``undo``; the stack runs it (``push``), undoes and redoes it,
and keeps at most ``limit`` commands (the oldest fall off). Continuous edits (dragging a knot, a slider held
down) push one command per frame with the same ``merge_key``: while the stack is open for merging (until
:meth:`CommandStack.close`, which the editor calls on pointer up), a command with the same key folds into
the previous one, so one drag is one undo step that goes back to the state before the drag.

:class:`SnapshotCommand` is the usual command: the state before and after, and the function that applies a
state. Undo applies the exact ``before`` value (arrays are copied on the way in and out), so undo restores
the exact pose, bit for bit.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

__all__ = ["Command", "SnapshotCommand", "CommandStack", "DEFAULT_UNDO_LIMIT"]

DEFAULT_UNDO_LIMIT = 200
T = TypeVar("T")


@runtime_checkable
class Command(Protocol):
    """An undoable edit: ``label`` (shown in the undo history), ``do``/``undo``, and ``merge`` (fold a later
    command of the same continuous edit into this one; return False when it does not belong here)."""

    label: str
    merge_key: Hashable | None

    def do(self) -> None: ...

    def undo(self) -> None: ...

    def merge(self, later: Command) -> bool: ...


@dataclass
class SnapshotCommand(Generic[T]):
    """An edit described by the state ``before`` and ``after`` it, and ``apply(state)`` that sets a state.
    States are deep-copied on the way in and when applied, so later changes to the caller's objects never
    reach the stack."""

    label: str
    apply: Callable[[T], None]
    before: T
    after: T
    merge_key: Hashable | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise ValueError(f"a command needs a non-empty label, got {self.label!r}")
        if not callable(self.apply):
            raise TypeError(f"apply must be callable, got {self.apply!r}")
        self.before = copy.deepcopy(self.before)
        self.after = copy.deepcopy(self.after)

    def do(self) -> None:
        self.apply(copy.deepcopy(self.after))

    def undo(self) -> None:
        self.apply(copy.deepcopy(self.before))

    def merge(self, later: Command) -> bool:
        if self.merge_key is None or not isinstance(later, SnapshotCommand) or later.merge_key != self.merge_key:
            return False  # the merge key names the target: equal keys edit the same thing
        self.after = copy.deepcopy(later.after)
        self.label = later.label
        return True


class CommandStack:
    """do / undo / redo over a list of commands with a cursor; at most ``limit`` commands are kept."""

    def __init__(self, *, limit: int = DEFAULT_UNDO_LIMIT) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an integer >= 1, got {limit!r}")
        self.limit = limit
        self._commands: list[Any] = []
        self._cursor = 0  # commands[:cursor] are done
        self._open = False  # the last command may absorb a later one with its merge key
        self.changes = 0  # counts every do/undo/redo (panels redraw the history when it moves)

    # -- editing ---------------------------------------------------------------------------------------------
    def push(self, command: Command, *, execute: bool = True) -> Command:
        """Run ``command`` (unless ``execute`` is False: it already ran) and put it on the stack, dropping
        the redo tail; folded into the previous command when both share a merge key and the stack is open.
        Returns the command that holds the edit."""
        if not isinstance(command, Command):
            raise TypeError(f"push takes a Command (label, merge_key, do, undo, merge), got {command!r}")
        if execute:
            command.do()
        self.changes += 1
        top = self._commands[self._cursor - 1] if self._cursor else None
        if (self._open and top is not None and self._cursor == len(self._commands)
                and command.merge_key is not None and top.merge(command)):
            return top
        del self._commands[self._cursor:]
        self._commands.append(command)
        if len(self._commands) > self.limit:
            del self._commands[: len(self._commands) - self.limit]
        self._cursor = len(self._commands)
        self._open = command.merge_key is not None
        return command

    def mark(self) -> tuple[int, int]:
        """A token of the state the stack stands at (the cursor and the command under it): equal tokens mean
        the same edits are done (the editor compares it with the one of its last save)."""
        top = self._commands[self._cursor - 1] if self._cursor else None
        return self._cursor, id(top)

    def close(self) -> None:
        """End the continuous edit: the next command starts a new undo step."""
        self._open = False

    def undo(self) -> Command | None:
        """Undo the last done command (None when there is none)."""
        self._open = False
        if not self._cursor:
            return None
        self._cursor -= 1
        cmd = self._commands[self._cursor]
        cmd.undo()
        self.changes += 1
        return cmd

    def redo(self) -> Command | None:
        """Redo the last undone command (None when there is none)."""
        self._open = False
        if self._cursor >= len(self._commands):
            return None
        cmd = self._commands[self._cursor]
        cmd.do()
        self._cursor += 1
        self.changes += 1
        return cmd

    def clear(self) -> None:
        self._commands.clear()
        self._cursor = 0
        self._open = False
        self.changes += 1

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def can_undo(self) -> bool:
        return self._cursor > 0

    @property
    def can_redo(self) -> bool:
        return self._cursor < len(self._commands)

    @property
    def cursor(self) -> int:
        """How many commands are done (the position in :attr:`history`)."""
        return self._cursor

    @property
    def history(self) -> list[str]:
        """Labels of every kept command, oldest first (the first :attr:`cursor` are done)."""
        return [c.label for c in self._commands]

    def __len__(self) -> int:
        return len(self._commands)
