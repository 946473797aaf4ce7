"""The GPU spring solver's report (issue 16): read the per-instance status back a few frames late, never stalling.

The spring iterations keep a :data:`engine.skinning.gpu.layouts.DEFORM_STATUS` record per instance (accepted
iterations, why it stopped: converged, iteration cap or divergence, in which case the resolve pass kept the
last good state). After each frame :meth:`SpringStatusReader.after_frame` queues a GPU-side copy of a batch's
status buffer (32 bytes per instance) into a small staging buffer of a ring; :meth:`SpringStatusReader.poll`
maps the copies that are :data:`LAG` frames old, by which time the GPU has finished them, so the frame never
waits. ``poll(wait=True)`` reads everything queued (after a read-back that waited anyway: export, tests).

A divergence is warned about once per mesh instance, like the CPU solver (``RuntimeWarning``: the iteration,
that the last good state was kept, and which parameter to lower with its safe value); every instance's last
status is kept in :attr:`SpringStatusReader.last` for tools and the UI.
"""
from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import moderngl
import numpy as np

from engine.gpu.resources import GpuResources
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu.plan import SHADER_STORAGE_BARRIER_BIT

__all__ = ["LAG", "RING", "SpringReport", "SpringStatusReader"]

log = logging.getLogger(__name__)

#: frames between a status copy and its read: the GPU has finished a frame that old, so mapping never waits
LAG = 2
#: staging buffers per batch (LAG in flight + the one being written)
RING = LAG + 1


@dataclass(frozen=True)
class SpringReport:
    """One instance's spring solve of one frame, as the GPU left it."""

    handle: int             # deform handle id of the mesh instance
    frame: int              # the graph's frame counter when it ran
    iterations: int         # accepted iterations
    max_iterations: int     # the cap
    reason: str             # "max_iterations" | "displacement" | "force" | "energy" | "diverged" | ""

    @property
    def diverged(self) -> bool:
        """True when the solver stopped on non-finite values or a too-long step and kept the last good state."""
        return self.reason == "diverged"


@dataclass
class _Pending:
    frame: int
    buffer: moderngl.Buffer
    instances: list[tuple[int, Any]]  # (handle id, SpringParams) per status row, as laid out that frame


class SpringStatusReader:
    """Staging ring and reports for the spring batches of one deformer graph.

    ``advice(handle_id, params) -> str`` says what to change after a divergence (dt and the worst stiffness
    with their safe values on that mesh); it is only called when one is reported."""

    def __init__(self, ctx: moderngl.Context, resources: GpuResources,
                 advice: Callable[[int, Any], str] | None = None) -> None:
        self.ctx = ctx
        self.resources = resources
        self.advice = advice
        self.frame = 0
        self.last: dict[int, SpringReport] = {}
        self.reported: set[int] = set()  # handles whose divergence was already warned about
        self._gone: set[int] = set()     # removed handles (ids are never reused): rows still queued are skipped
        self._free: dict[int, list[moderngl.Buffer]] = {}  # batch id -> idle staging buffers
        self._pending: dict[int, list[_Pending]] = {}

    def after_frame(self, batch_id: int, status: moderngl.Buffer, instances: list[tuple[int, Any]]) -> None:
        """Queue a GPU copy of a batch's status buffer (``instances``: handle id and params per row)."""
        size = L.DEFORM_STATUS.size * len(instances)
        if not size:
            return
        free = self._free.setdefault(batch_id, [])
        pending = self._pending.setdefault(batch_id, [])
        if not free and len(pending) >= RING:  # a consumer that never polls: reuse the oldest copy
            free.append(pending.pop(0).buffer)
        buf = next((b for b in free if b.size >= size), None)
        if buf is None:
            buf = self.resources.buffer(reserve=max(size, 4 * L.DEFORM_STATUS.size), label="spring status read-back")
        else:
            free.remove(buf)
        # the spring iterations wrote the status as an SSBO; the copy reads it as a buffer
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | SHADER_STORAGE_BARRIER_BIT)
        self.ctx.copy_buffer(buf, status, size=size)
        pending.append(_Pending(self.frame, buf, list(instances)))

    def end_frame(self) -> None:
        self.frame += 1

    def poll(self, *, wait: bool = False) -> list[SpringReport]:
        """Read the copies at least :data:`LAG` frames old (all with ``wait``); warn once per instance about a
        divergence; return the reports read (also kept in :attr:`last`)."""
        out: list[SpringReport] = []
        for batch_id, pending in self._pending.items():
            while pending and (wait or self.frame - pending[0].frame >= LAG):
                item = pending.pop(0)
                raw = self._read(item)
                if raw is None:
                    continue
                self._free.setdefault(batch_id, []).append(item.buffer)
                recs = np.frombuffer(raw, L.DEFORM_STATUS.dtype)
                for (hid, params), rec in zip(item.instances, recs):
                    if hid in self._gone:
                        continue
                    reason = int(rec["reason"])
                    report = SpringReport(hid, item.frame, int(rec["iterations"]), int(params.max_iterations),
                                          L.REASONS[reason] if 0 <= reason < len(L.REASONS) else f"code {reason}")
                    self.last[hid] = report
                    out.append(report)
                    if report.diverged and hid not in self.reported:
                        self.reported.add(hid)
                        advice = self.advice(hid, params) if self.advice is not None else "lower `dt`"
                        warnings.warn(f"spring deformer diverged at iteration {report.iterations + 1} (GPU, mesh "
                                      f"{hid}); kept the last good state: {advice}", RuntimeWarning, stacklevel=3)
        return out

    def _read(self, item: _Pending) -> bytes | None:
        """The staging copy's bytes; None when the driver refuses to map it twice (its report is lost: a
        report is advice, never state). Seen once on an NVIDIA driver (moderngl "cannot map the buffer") after a
        character left the springs; llvmpipe never refused. The refused buffer is replaced, not reused."""
        size = L.DEFORM_STATUS.size * len(item.instances)
        for attempt in range(2):
            try:
                return item.buffer.read(size=size)
            except moderngl.Error as exc:
                log.debug("spring status read-back of frame %d refused (attempt %d: %s; %d of %d bytes, GL %s)",
                          item.frame, attempt + 1, exc, size, item.buffer.size, self.ctx.error)
                self.ctx.finish()
        if self.resources.owns(item.buffer):
            self.resources.release(item.buffer)
        return None

    def forget(self, handle_id: int) -> None:
        """A removed mesh: drop its report (its pending rows are read and ignored)."""
        self.last.pop(handle_id, None)
        self.reported.discard(handle_id)
        self._gone.add(handle_id)

    def drop_batch(self, batch_id: int) -> None:
        """A released batch: release its staging buffers (pending copies are discarded)."""
        for item in self._pending.pop(batch_id, []):
            self.resources.release(item.buffer)
        for buf in self._free.pop(batch_id, []):
            self.resources.release(buf)

    def release(self) -> None:
        for batch_id in list(set(self._pending) | set(self._free)):
            self.drop_batch(batch_id)
