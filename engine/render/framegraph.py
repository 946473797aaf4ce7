"""The renderer's frame as data: passes declare what they read and write; order, barriers and timer scopes follow.

No GL here (moderngl only for its barrier constants): a :class:`PassSpec` names a pass, the GPU timer scope it
is measured in (None: untimed) and the resources it reads and writes, each with the way it touches them
(:data:`ACCESS_KINDS`). :func:`plan_frame` derives from those declarations alone (STYLE.md habit 8, Filament's
frame graph, as ``engine/skinning/gpu/plan.py`` does for the deformer graph):

* **execution order**: a pass that reads a resource runs after the pass that writes it (stable topological
  order, ties broken by declaration order). Every resource has one writer; a pass that changes what another
  wrote (the overlay drawing into the composed frame) reads the old name and writes a new one, so each name
  is one state of the contents. Two writers, a read of a resource nobody writes (and not ``external``: the
  deformed vertices, the lights) or a cycle raise ``ValueError``;
* **timer scopes**: passes sharing a timer run together inside one scope (GL timer queries cannot nest or
  reopen): the order is planned over the scopes first, then within each; a scope that would have to be
  split raises ``ValueError``;
* **barriers**: before a pass, the ``glMemoryBarrier`` bits its reads need (:func:`barrier_bits`) for what was
  written since a barrier covered it. Writes through a framebuffer, a copy or the CPU are ordered by GL
  itself; shader writes to SSBOs and images are not, and need the bit of the way the reader reads. Image
  loads of framebuffer output get their bit too (the compositor reads the G-buffer that way; the GL spec
  leaves it to the implementation).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import moderngl

__all__ = ["ATTACHMENT", "SAMPLED", "IMAGE", "STORAGE", "UNIFORM", "COPY", "HOST", "ACCESS_KINDS",
           "PassSpec", "PlanStep", "FramePlan", "plan_frame", "barrier_bits", "uses"]

ATTACHMENT = "attachment"  # drawn into / depth-tested against as a framebuffer attachment
SAMPLED = "sampled"        # texture() through a sampler
IMAGE = "image"            # imageLoad / imageStore
STORAGE = "storage"        # shader storage buffer (reads, writes, atomics)
UNIFORM = "uniform"        # uniform block
COPY = "copy"              # framebuffer blit / copy
HOST = "host"              # the CPU: buffer writes and clears, read-backs
ACCESS_KINDS = (ATTACHMENT, SAMPLED, IMAGE, STORAGE, UNIFORM, COPY, HOST)

#: writes GL does not order with later commands by itself (shader stores and atomics)
_INCOHERENT = frozenset((STORAGE, IMAGE))
#: the barrier bit that makes incoherent writes visible to each kind of read
_READ_BITS = {
    STORAGE: moderngl.SHADER_STORAGE_BARRIER_BIT,
    IMAGE: moderngl.SHADER_IMAGE_ACCESS_BARRIER_BIT,
    SAMPLED: moderngl.TEXTURE_FETCH_BARRIER_BIT,
    UNIFORM: moderngl.UNIFORM_BARRIER_BIT,
    ATTACHMENT: moderngl.FRAMEBUFFER_BARRIER_BIT,
    COPY: moderngl.FRAMEBUFFER_BARRIER_BIT | moderngl.TEXTURE_UPDATE_BARRIER_BIT,
    HOST: moderngl.BUFFER_UPDATE_BARRIER_BIT,
}


def barrier_bits(written: str, read: str) -> int:
    """The memory-barrier bits a read of kind ``read`` needs after a write of kind ``written``."""
    for kind in (written, read):
        if kind not in ACCESS_KINDS:
            raise ValueError(f"access kind must be one of {ACCESS_KINDS}, got {kind!r}")
    if written in _INCOHERENT:
        return _READ_BITS[read]
    if read == IMAGE:  # image loads of framebuffer / copy output
        return _READ_BITS[IMAGE]
    return 0


def uses(kind: str, *resources: str) -> tuple[tuple[str, str], ...]:
    """(resource, kind) pairs: ``reads=uses(SAMPLED, "a", "b") + uses(STORAGE, "c")``."""
    return tuple((r, kind) for r in resources)


@dataclass(frozen=True)
class PassSpec:
    """One pass as data: its ``name``, the GPU ``timer`` scope it is measured in (None: untimed) and the
    (resource, access kind) pairs it ``reads`` and ``writes``."""

    name: str
    reads: tuple[tuple[str, str], ...] = ()
    writes: tuple[tuple[str, str], ...] = ()
    timer: str | None = None


@dataclass(frozen=True)
class PlanStep:
    name: str
    barrier: int  # glMemoryBarrier bits issued before the pass (0: none)
    timer: str | None


@dataclass(frozen=True)
class FramePlan:
    """The passes in execution order with their barriers, grouped into timer scopes."""

    steps: tuple[PlanStep, ...]
    #: (timer scope or None, its steps) in order; a None scope holds one untimed step
    scopes: tuple[tuple[str | None, tuple[PlanStep, ...]], ...]

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.steps)

    @property
    def barriers(self) -> dict[str, int]:
        """Pass name -> barrier bits, for the passes that issue one."""
        return {s.name: s.barrier for s in self.steps if s.barrier}


def _validate(specs: Sequence[PassSpec], external: Iterable[str]) -> dict[str, str]:
    """Resource -> writer pass; raises ValueError for a bad declaration."""
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"pass names must be unique, got {names}")
    ext = set(external)
    writer: dict[str, str] = {}
    for s in specs:
        for res, kind in s.reads + s.writes:
            if kind not in ACCESS_KINDS:
                raise ValueError(f"pass {s.name!r}: access kind of {res!r} must be one of {ACCESS_KINDS}, "
                                 f"got {kind!r}")
        for res in dict(s.writes):
            if res in ext:
                raise ValueError(f"pass {s.name!r} writes {res!r}, which is external (written before the frame)")
            if res in writer and writer[res] != s.name:
                raise ValueError(f"resource {res!r} is written by both {writer[res]!r} and {s.name!r}; "
                                 f"give each state of the contents its own name")
            writer[res] = s.name
        both = set(dict(s.reads)) & set(dict(s.writes))
        if both:
            raise ValueError(f"pass {s.name!r} reads and writes {sorted(both)}: read the old name, write a new one")
    for s in specs:
        for res, _ in s.reads:
            if res not in writer and res not in ext:
                raise ValueError(f"pass {s.name!r} reads {res!r}, which no pass writes and is not external "
                                 f"(written: {sorted(writer)}, external: {sorted(ext)})")
    return writer


def _toposort(items: list[str], deps: dict[str, set[str]], what: str) -> list[str]:
    """Stable topological order of ``items`` (ties by their order) given each item's prerequisites."""
    done: list[str] = []
    left = list(items)
    while left:
        ready = [i for i in left if deps[i] <= set(done)]
        if not ready:
            raise ValueError(f"the frame graph has a cycle among the {what} {left}")
        done.append(ready[0])
        left.remove(ready[0])
    return done


def plan_frame(specs: Sequence[PassSpec], *, external: Iterable[str] = ()) -> FramePlan:
    """Execution order, barrier bits and timer scopes of the declared passes (see the module docstring)."""
    writer = _validate(specs, external)
    by_name = {s.name: s for s in specs}
    deps = {s.name: {writer[r] for r, _ in s.reads if r in writer} for s in specs}
    # one group per timer scope (untimed passes each their own), placed at its first member's declaration
    group_of = {s.name: (s.timer if s.timer is not None else f"\0{s.name}") for s in specs}
    groups: dict[str, list[str]] = {}
    for s in specs:
        groups.setdefault(group_of[s.name], []).append(s.name)
    group_deps = {g: {group_of[d] for m in members for d in deps[m]} - {g} for g, members in groups.items()}
    try:
        group_order = _toposort(list(groups), group_deps, "timer scopes")
    except ValueError:
        raise ValueError(f"the frame graph has a cycle, or a timer scope would have to be split; scopes: "
                         f"{ {g: m for g, m in groups.items() if not g.startswith(chr(0))} }") from None
    order = [n for g in group_order for n in _toposort(groups[g], {m: deps[m] & set(groups[g])
                                                                   for m in groups[g]}, "passes")]
    written: dict[str, set[str]] = {}  # resource -> kinds of the write this frame
    covered: dict[str, int] = {}  # resource -> barrier bits issued since it was written
    steps = []
    for name in order:
        s = by_name[name]
        need = 0
        for res, kind in s.reads:
            for wk in written.get(res, ()):
                need |= barrier_bits(wk, kind) & ~covered[res]
        if need:
            for res in covered:
                covered[res] |= need
        for res, kind in s.writes:
            written.setdefault(res, set()).add(kind)
            covered[res] = 0
        steps.append(PlanStep(name, need, s.timer))
    scopes: list[tuple[str | None, tuple[PlanStep, ...]]] = []
    for st in steps:
        if st.timer is not None and scopes and scopes[-1][0] == st.timer:
            scopes[-1] = (st.timer, scopes[-1][1] + (st,))
        else:
            scopes.append((st.timer, (st,)))
    return FramePlan(tuple(steps), tuple(scopes))
