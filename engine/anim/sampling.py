"""Clip sampling: all channels of a glTF animation evaluated with a handful of numpy calls.

A :class:`ClipSampler` is compiled once per (rig, clip). Channels are grouped by (path, interpolation); each group
stores its keyframes as padded ``(G, K)`` arrays (G channels, K = most keys in the group; shorter channels are
padded by repeating their last key). Sampling a group at times ``t`` (one per instance) is then:

1. **Key lookup without a per-channel search.** At compile time the key times of all channels of the group are
   merged into one sorted grid U, and ``seg[g, m]`` records for every grid cell the index of the last key of
   channel g at or before that cell. At run time one ``searchsorted(U, t)`` and one gather give the key index of
   every channel, so channels with different time ranges and key counts share the lookup.
2. **Local parameter** ``u = clip((t - t_k) / (t_{k+1} - t_k), 0, 1)`` from a precomputed ``1/dt`` table that is 0
   on a channel's last key. Before the first key, ``u`` clips to 0 at key 0; after the last key ``1/dt = 0`` so
   ``u = 0`` at the last key. That is exactly glTF's rule (first value before, last value after), and a
   single-key channel is constant.
3. **Interpolation**: STEP holds key k; LINEAR lerps translation/scale and slerps rotations on the shortest arc
   (nlerp for tiny angles, as :func:`engine.math.quat.slerp`; the per-segment angle, 1/sin and hemisphere flip
   are precomputed, so run time is two sines and a weighted sum); CUBICSPLINE is glTF's Hermite spline

       p(u) = (2u^3 - 3u^2 + 1) v_k + (u^3 - 2u^2 + u) dt b_k + (-2u^3 + 3u^2) v_{k+1} + (u^3 - u^2) dt a_{k+1}

   with b_k the out-tangent of key k, a_{k+1} the in-tangent of key k+1 and dt = t_{k+1} - t_k (the tangents
   are stored per unit time, hence the scaling; the products are precomputed). Cubic rotations are normalised.
4. One fancy-index assignment writes the group into the pose arrays.

Morph-target ``weights`` channels are not part of a skeletal pose: each is compiled on its own
(:class:`WeightChannel`, M weights per key, the same key lookup rule and the same Hermite spline with its
tangents scaled by the key interval) and sampled by :meth:`ClipSampler.sample_weights` into one (M,) array per
node. There are few of them (one per morphed mesh node), so they are sampled one channel at a time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.assets.model import Clip
from engine.math import quat
from engine.math.numerics import quiet_underflow

__all__ = ["ClipSampler", "WeightChannel", "PATHS", "INTERPOLATIONS"]

PATHS = ("translation", "rotation", "scale")
INTERPOLATIONS = ("STEP", "LINEAR", "CUBICSPLINE")
_WIDTH = {"translation": 3, "rotation": 4, "scale": 3}


@dataclass(eq=False)
class _Group:
    path: str
    interpolation: str
    channels: np.ndarray  # (G,) indices into clip.channels
    nodes: np.ndarray  # (G,) intp target nodes
    times: np.ndarray  # (G, K) float64 key times, padded with the last time
    inv_dt: np.ndarray  # (G, K) float64 1/(t_{k+1}-t_k), 0 on the last (and padded) keys
    grid: np.ndarray  # (M,) float64 sorted union of key times
    seg: np.ndarray  # (G, M+1) int32 last key <= grid cell (column 0: before the grid, -1)
    values: np.ndarray  # (G, K, C) float32 key values (cubic: the spline vertices)
    out_scaled: np.ndarray | None = None  # (G, K, C) dt_k * out-tangent_k (cubic only)
    in_scaled: np.ndarray | None = None  # (G, K, C) dt_k * in-tangent_{k+1} (cubic only)
    # LINEAR rotation only: per key segment k -> k+1, the slerp constants (the angle between two keys does not
    # change at run time): key k+1 sign-flipped onto key k's hemisphere (shortest arc), the half-angle theta_k,
    # 1/sin(theta_k), and a flag for nearly equal keys where nlerp is used (see quat.NLERP_DOT).
    next_short: np.ndarray | None = None  # (G, K, 4) float32
    theta: np.ndarray | None = None  # (G, K) float32
    inv_sin: np.ndarray | None = None  # (G, K) float32, 0 where nlerp
    nearly_equal: np.ndarray | None = None  # (G, K) bool

    def sample(self, t: np.ndarray) -> np.ndarray:
        """Values ``(I, G, C)`` float32 at times ``t`` (I,) float64."""
        g = self.channels.shape[0]
        k = self.seg[:, np.searchsorted(self.grid, t, side="right")].T  # (I, G), -1 .. K-1
        k0 = np.maximum(k, 0)
        rows = np.arange(g)[None, :]
        if self.interpolation == "STEP":
            return self.values[rows, k0]
        u = (t[:, None] - self.times[rows, k0]) * self.inv_dt[rows, k0]
        u = np.clip(u, 0.0, 1.0).astype(np.float32)
        v0 = self.values[rows, k0]
        if self.interpolation == "LINEAR" and self.path == "rotation":
            assert self.next_short is not None and self.theta is not None and self.inv_sin is not None
            assert self.nearly_equal is not None
            th, isn = self.theta[rows, k0], self.inv_sin[rows, k0]
            near = self.nearly_equal[rows, k0]
            wa = np.where(near, 1 - u, np.sin((1 - u) * th) * isn)
            wb = np.where(near, u, np.sin(u * th) * isn)
            return quat.normalize(wa[..., None] * v0 + wb[..., None] * self.next_short[rows, k0])
        v1 = self.values[rows, np.minimum(k0 + 1, self.times.shape[1] - 1)]
        if self.interpolation == "LINEAR":
            return v0 + u[..., None] * (v1 - v0)
        # CUBICSPLINE (Hermite basis; tangents already scaled by the key interval)
        u2 = u * u
        u3 = u2 * u
        h00 = (2 * u3 - 3 * u2 + 1)[..., None]
        h10 = (u3 - 2 * u2 + u)[..., None]
        h01 = (3 * u2 - 2 * u3)[..., None]
        h11 = (u3 - u2)[..., None]
        assert self.out_scaled is not None and self.in_scaled is not None
        p = h00 * v0 + h10 * self.out_scaled[rows, k0] + h01 * v1 + h11 * self.in_scaled[rows, k0]
        if self.path == "rotation":
            p = quat.normalize(p)
        return p


@dataclass(eq=False)
class WeightChannel:
    """One compiled morph-weights channel: ``node``, key ``times`` (K,) float64, key ``values`` (K, M) float32
    (cubic: the spline vertices), and for CUBICSPLINE ``out_scaled`` / ``in_scaled`` (K, M): dt_k * b_k and
    dt_k * a_{k+1} (zero on the last key)."""

    node: int
    interpolation: str
    times: np.ndarray
    values: np.ndarray
    out_scaled: np.ndarray | None = None
    in_scaled: np.ndarray | None = None

    @classmethod
    def compile(cls, where: str, node: int, interpolation: str, times: np.ndarray,
                values: np.ndarray) -> WeightChannel:
        tk = np.asarray(times, np.float64)
        vals = np.asarray(values, np.float32)
        if tk.ndim != 1 or tk.shape[0] < 1 or not np.all(np.isfinite(tk)) or np.any(np.diff(tk) <= 0):
            raise ValueError(f"{where}.times must be a non-empty, finite, strictly increasing (K,) array")
        cubic = interpolation == "CUBICSPLINE"
        k = tk.shape[0]
        if vals.ndim != (3 if cubic else 2) or vals.shape[0] != k or (cubic and vals.shape[1] != 3):
            raise ValueError(f"{where}.values has shape {vals.shape}; {interpolation} weights need "
                             f"{'(K, 3, M)' if cubic else '(K, M)'} with K = {k}")
        if not np.all(np.isfinite(vals)):
            raise ValueError(f"{where}.values contains non-finite numbers")
        if not cubic:
            return cls(node, interpolation, tk, vals.copy())
        dt = np.diff(tk)[:, None].astype(np.float32)
        out_s = np.zeros_like(vals[:, 1])
        in_s = np.zeros_like(vals[:, 1])
        out_s[:-1] = dt * vals[:-1, 2]
        in_s[:-1] = dt * vals[1:, 0]
        return cls(node, interpolation, tk, vals[:, 1].copy(), out_s, in_s)

    @property
    def width(self) -> int:
        return int(self.values.shape[1])

    def sample(self, t: float) -> np.ndarray:
        """(M,) float32 weights at clip time ``t``: the first key's before it, the last key's after it."""
        k = int(np.searchsorted(self.times, t, side="right")) - 1
        if k < 0:
            return self.values[0].copy()
        if k >= self.times.shape[0] - 1 or self.interpolation == "STEP":
            return self.values[k].copy()
        u = np.float32(min(max((t - self.times[k]) / (self.times[k + 1] - self.times[k]), 0.0), 1.0))
        v0, v1 = self.values[k], self.values[k + 1]
        if self.interpolation == "LINEAR":
            return (v0 + u * (v1 - v0)).astype(np.float32)
        assert self.out_scaled is not None and self.in_scaled is not None
        u2, u3 = u * u, u * u * u
        return ((2 * u3 - 3 * u2 + 1) * v0 + (u3 - 2 * u2 + u) * self.out_scaled[k] + (3 * u2 - 2 * u3) * v1
                + (u3 - u2) * self.in_scaled[k]).astype(np.float32)


class ClipSampler:
    """Compiled form of one clip for one rig. ``sample(t, pose)`` / ``sample_batch(times, T, R, S)``."""

    def __init__(self, rig: Rig, clip: Clip) -> None:
        self.name = clip.name
        self.node_count = rig.count
        self.skipped: list[str] = []
        #: morph-target weight channels (sampled by :meth:`sample_weights`)
        self.weights: list[WeightChannel] = []
        buckets: dict[tuple[str, str], list[int]] = {}
        for ci, ch in enumerate(clip.channels):
            where = f"clip {clip.name!r} channels[{ci}]"
            if ch.path == "weights":
                if ch.interpolation not in INTERPOLATIONS:
                    raise ValueError(f"{where}.interpolation = {ch.interpolation!r}; valid: {INTERPOLATIONS}")
                if not 0 <= ch.node < rig.count:
                    raise ValueError(f"{where}.node = {ch.node} out of range 0..{rig.count - 1}")
                self.weights.append(WeightChannel.compile(where, ch.node, ch.interpolation, ch.times, ch.values))
                continue
            if ch.path not in PATHS:
                raise ValueError(f"{where}.path = {ch.path!r}; valid: {PATHS + ('weights',)}")
            if ch.interpolation not in INTERPOLATIONS:
                raise ValueError(f"{where}.interpolation = {ch.interpolation!r}; valid: {INTERPOLATIONS}")
            if not 0 <= ch.node < rig.count:
                raise ValueError(f"{where}.node = {ch.node} out of range 0..{rig.count - 1}")
            if rig.has_matrix[ch.node]:
                # glTF forbids animating a matrix node; FK would ignore the channel, so say so.
                self.skipped.append(f"{where}: node {ch.node} is given by a matrix; channel ignored by FK")
            self._check_channel(where, ch.path, ch.interpolation, ch.times, ch.values)
            buckets.setdefault((ch.path, ch.interpolation), []).append(ci)

        firsts = [float(clip.channels[i].times[0]) for b in buckets.values() for i in b]
        lasts = [float(clip.channels[i].times[-1]) for b in buckets.values() for i in b]
        firsts += [float(w.times[0]) for w in self.weights]
        lasts += [float(w.times[-1]) for w in self.weights]
        self.start = min(firsts, default=0.0)
        self.end = max(lasts, default=0.0)
        self.groups = [self._compile(clip, path, interp, idx) for (path, interp), idx in sorted(buckets.items())]
        animated = np.zeros((3, rig.count), bool)
        for grp in self.groups:
            animated[PATHS.index(grp.path), grp.nodes] = True
        self.animated = animated  # (3, N) bool: [translation, rotation, scale] channels present per node

    @property
    def duration(self) -> float:
        """Length measured from t = 0, as glTF players do (= end)."""
        return self.end

    @property
    def channel_count(self) -> int:
        return int(sum(g.channels.shape[0] for g in self.groups))

    @staticmethod
    def _check_channel(where: str, path: str, interp: str, times: np.ndarray, values: np.ndarray) -> None:
        times = np.asarray(times)
        values = np.asarray(values)
        c = _WIDTH[path]
        k = times.shape[0] if times.ndim == 1 else -1
        if k < 1:
            raise ValueError(f"{where}.times must be a non-empty (K,) array, got shape {times.shape}")
        if not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
            raise ValueError(f"{where}.times must be finite and strictly increasing, got {times[:8].tolist()}...")
        want = (k, 3, c) if interp == "CUBICSPLINE" else (k, c)
        if values.shape != want:
            raise ValueError(f"{where}.values has shape {values.shape}; {interp} {path} needs {want}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{where}.values contains non-finite numbers")

    @staticmethod
    def _compile(clip: Clip, path: str, interp: str, idx: list[int]) -> _Group:
        chans = [clip.channels[i] for i in idx]
        g = len(chans)
        kmax = max(ch.times.shape[0] for ch in chans)
        c = _WIDTH[path]
        times = np.empty((g, kmax), np.float64)
        inv_dt = np.zeros((g, kmax), np.float64)
        values = np.empty((g, kmax, c), np.float32)
        cubic = interp == "CUBICSPLINE"
        out_scaled = np.zeros((g, kmax, c), np.float32) if cubic else None
        in_scaled = np.zeros((g, kmax, c), np.float32) if cubic else None
        for r, ch in enumerate(chans):  # compile time only
            tk = np.asarray(ch.times, np.float64)
            k = tk.shape[0]
            times[r, :k] = tk
            times[r, k:] = tk[-1]
            dt = np.diff(tk)
            inv_dt[r, :k - 1] = 1.0 / dt
            vals = np.asarray(ch.values, np.float32)
            verts = vals[:, 1] if cubic else vals
            values[r, :k] = verts
            values[r, k:] = verts[-1]
            if cubic:
                assert out_scaled is not None and in_scaled is not None
                out_scaled[r, :k - 1] = dt[:, None] * vals[:-1, 2]  # dt_k * b_k
                in_scaled[r, :k - 1] = dt[:, None] * vals[1:, 0]  # dt_k * a_{k+1}
        slerp_tables: dict[str, np.ndarray] = {}
        if path == "rotation" and interp != "CUBICSPLINE":
            values = quat.normalize(values).astype(np.float32)
        if path == "rotation" and interp == "LINEAR":
            v0 = values.astype(np.float64)
            v1 = np.concatenate([v0[:, 1:], v0[:, -1:]], axis=1)
            d = np.sum(v0 * v1, axis=-1)
            v1 = np.where(d[..., None] < 0, -v1, v1)
            d = np.minimum(np.abs(d), 1.0)
            near = d > quat.NLERP_DOT
            theta = np.arccos(d)
            slerp_tables = dict(next_short=v1.astype(np.float32), theta=theta.astype(np.float32),
                                inv_sin=np.where(near, 0.0, 1.0 / np.where(near, 1.0, np.sin(theta))).astype(
                                    np.float32), nearly_equal=near)
        grid = np.unique(times)
        seg = np.empty((g, grid.size + 1), np.int32)
        seg[:, 0] = -1
        for r, ch in enumerate(chans):
            seg[r, 1:] = np.searchsorted(np.asarray(ch.times, np.float64), grid, side="right") - 1
        return _Group(path=path, interpolation=interp, channels=np.asarray(idx, np.intp),
                      nodes=np.asarray([ch.node for ch in chans], np.intp), times=times, inv_dt=inv_dt,
                      grid=grid, seg=seg, values=values, out_scaled=out_scaled, in_scaled=in_scaled,
                      **slerp_tables)

    @quiet_underflow
    def sample_batch(self, times: np.ndarray | float, translation: np.ndarray, rotation: np.ndarray,
                     scale: np.ndarray) -> None:
        """Write the clip at ``times`` (I,) into pose arrays ``(I, N, 3)``, ``(I, N, 4)``, ``(I, N, 3)``.

        Only animated channels are written; the rest of each pose is left as it was.
        """
        t = np.atleast_1d(np.asarray(times, np.float64))
        if t.ndim != 1 or not np.all(np.isfinite(t)):
            raise ValueError(f"times must be finite, shape (I,); got {np.asarray(times)!r}")
        outs = {"translation": translation, "rotation": rotation, "scale": scale}
        for path, arr in outs.items():
            if arr.shape != (t.shape[0], self.node_count, _WIDTH[path]):
                raise ValueError(f"{path} output must be {(t.shape[0], self.node_count, _WIDTH[path])}, "
                                 f"got {arr.shape}")
        for grp in self.groups:
            outs[grp.path][:, grp.nodes] = grp.sample(t)

    def sample_weights(self, t: float, out: dict[int, np.ndarray] | None = None) -> dict[int, np.ndarray]:
        """The morph weights of every node the clip animates at clip time ``t``: node -> (M,) float32, written
        into ``out`` (returned) or a new dict."""
        out = {} if out is None else out
        if not math.isfinite(t):
            raise ValueError(f"time must be finite, got {t!r}")
        for ch in self.weights:
            out[ch.node] = ch.sample(float(t))
        return out

    def sample(self, t: float, pose_out: Pose) -> Pose:
        """Write the clip at time ``t`` (seconds, clip time; not wrapped) into ``pose_out``; returns it."""
        self.sample_batch(t, pose_out.translation[None], pose_out.rotation[None], pose_out.scale[None])
        return pose_out
