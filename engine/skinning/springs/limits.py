"""Stability of the spring iteration: Gershgorin bounds, step limiting and the safe parameter ranges.

`lambda_per_vertex` bounds each vertex's row of the force Jacobian from the per-pair stiffnesses (Gershgorin,
coefficients from rest.py's `lambda_columns`); `step_sizes` turns it into the per-vertex steps of step limiting;
`safe_range` gives the plain update's stable dt and stiffnesses. `spring_ranges` / `check_spring_ranges` refuse
parameters float32 cannot integrate on a mesh (both devices apply them); `spring_advice` words the fix after a
divergence. See docs/springs.md (step limiting).
"""
from __future__ import annotations

import math

import numpy as np

from engine.skinning.springs.editterms import EditTerms
from engine.skinning.springs.params import (
    DIFF_LAMBDA,
    LAMBDA_COLUMNS,
    STEP_SAFETY,
    STIFFNESSES,
    VOLUME_LAMBDA,
    SpringParams,
)
from engine.skinning.springs.rest import SpringRest, diff_share, lambda_columns, volume_points

__all__ = ["lambda_per_vertex", "step_sizes", "safe_range", "FLOAT32_STEP", "spring_ranges", "check_spring_ranges",
           "spring_advice"]

#: The smallest relative change float32 holds (2**-23). A spring step below this fraction of the stable step
#: moves no float32 position; a stiffness this many times past its stable value leaves every other force
#: below float32 resolution (and overflows long before 3e38). Both bound the mesh-derived ranges below.
FLOAT32_STEP = 2.0 ** -23


def _lambda_coefficients(rest: SpringRest, edit: EditTerms | None) -> dict[str, np.ndarray]:
    """Per-vertex Gershgorin bounds of the force Jacobian per unit of each stiffness (linearised at bind)."""
    cols = rest.lam_cols if rest.lam_cols.shape[0] == rest.n_vertices else lambda_columns(rest)
    out = {p: cols[:, c] for c, group in enumerate(LAMBDA_COLUMNS) for p in group}
    out["k_e"] = (np.asarray(edit.stiffness, np.float64).copy() if edit is not None
                  else np.zeros(rest.n_vertices))
    out["k_v"] = VOLUME_LAMBDA * (rest.vol_region >= 0) if rest.vol_region.shape[0] == rest.n_vertices \
        else np.zeros(rest.n_vertices)
    out["k_d"] = DIFF_LAMBDA * diff_share(rest)
    return out


def lambda_per_vertex(rest: SpringRest, params: SpringParams, edit: EditTerms | None = None) -> np.ndarray:
    """(V,) lambda_i = sum_p k_p c_p,i: the Gershgorin bound of vertex i's row of the force Jacobian for the
    current stiffnesses (switches applied), with k_e K_i of active surface edits."""
    cols = rest.lam_cols if rest.lam_cols.shape[0] == rest.n_vertices else lambda_columns(rest)
    k = np.array([sum(params.stiffness(p) for p in group) for group in LAMBDA_COLUMNS])
    lam = np.einsum("vc,c->v", cols, k)  # no BLAS (see _dot)
    lam = lam + params.stiffness("k_v") * VOLUME_LAMBDA * volume_points(rest, params, edit)
    lam = lam + params.stiffness("k_d") * DIFF_LAMBDA * diff_share(rest)
    k_e = params.stiffness("k_e")
    if edit is not None and k_e:
        lam = lam + k_e * np.asarray(edit.stiffness, np.float64)
    return lam


def step_sizes(rest: SpringRest, params: SpringParams, edit: EditTerms | None = None, *,
               lam: np.ndarray | None = None) -> np.ndarray | None:
    """Per-vertex steps (V,) of step limiting: min(dt, STEP_SAFETY / lambda_i) (explicit) or
    min(dt, sqrt(2 STEP_SAFETY / lambda_i)) (semi-implicit); dt where lambda_i = 0. None when
    params.step_limit is off (the plain update). lam: a precomputed `lambda_per_vertex`."""
    if not params.step_limit:
        return None
    lam = lambda_per_vertex(rest, params, edit) if lam is None else np.asarray(lam, np.float64)
    pos = lam > 0.0
    bound = np.full(lam.shape, math.inf)
    np.divide(STEP_SAFETY if params.integrator == "explicit" else 2.0 * STEP_SAFETY, lam, out=bound, where=pos)
    if params.integrator != "explicit":
        bound = np.sqrt(bound)
    return np.minimum(params.dt, bound)


def safe_range(rest: SpringRest, params: SpringParams, edit: EditTerms | None = None,
               shortest_edge: float | None = None) -> dict[str, float]:
    """Largest stable dt for the current stiffnesses, and the largest value of each stiffness for the current
    dt and other stiffnesses. Rule: explicit dt * lambda_max < 1 (monotone, no overshoot; instability starts
    at 2), semi-implicit dt^2 * lambda_max < 2 (instability at 4), with lambda_max <= max_i sum_p k_p c_p,i
    (Gershgorin over the per-pair stiffnesses). Also returns lambda_max and the mesh's shortest edge (the
    stiffnesses are per metre, so the bound itself does not depend on it; it is reported for context).

    The range is that of the plain update (params.step_limit off). With step limiting every dt and stiffness
    is stable: vertices past the range move with their own smaller step (`step_sizes`) instead."""
    coef = _lambda_coefficients(rest, edit)
    ks = {p: params.stiffness(p) for p in STIFFNESSES}
    lam_i = np.asarray(sum(ks[p] * coef[p] for p in STIFFNESSES))
    lam = float(lam_i.max()) if lam_i.size else 0.0
    explicit = params.integrator == "explicit"
    # 2 / dt / dt, not 2 / dt ** 2: dt ** 2 underflows to 0 for an absurdly small dt (refused by the caller)
    budget = 1.0 / params.dt if explicit else 2.0 / params.dt / params.dt
    out: dict[str, float] = {"lambda_max": lam}
    if lam <= 0.0:
        out["dt"] = math.inf
    else:
        out["dt"] = 1.0 / lam if explicit else math.sqrt(2.0 / lam)
    for p in STIFFNESSES:
        c = coef[p]
        mask = c > 0.0
        if not np.any(mask):
            out[p] = math.inf
            continue
        others = lam_i - ks[p] * c
        out[p] = float(max(0.0, np.min((budget - others[mask]) / c[mask])))
    out["shortest_edge"] = float(shortest_edge if shortest_edge is not None else
                                 (rest.rest_len.min() if rest.rest_len.size else 0.0))
    return out


# -- spring parameter ranges derived from the mesh (research 8.2: "automated safe parameter range settings") --
def spring_ranges(params: SpringParams, rest: SpringRest) -> dict[str, tuple[float, float]]:
    """The ranges float32 can integrate on this mesh: ``"dt"`` -> (smallest dt whose step float32 can still
    hold, the stable dt for the current stiffnesses), and each active stiffness ``"k_*"`` -> (0, the largest
    value at the current dt, 2**23 times its own stable value). From :func:`safe_range`
    (Gershgorin bound lambda_max of the force Jacobian): a step moves vertices by about dt * lambda (explicit)
    or dt^2 * lambda / 2 (semi-implicit) of their distance to rest, which must stay within [2**-23, 2**23]."""
    explicit = params.integrator == "explicit"
    full = safe_range(rest, params)
    out: dict[str, tuple[float, float]] = {}
    lam = float(full["lambda_max"])
    if lam > 0.0:
        low = FLOAT32_STEP / lam if explicit else math.sqrt(2.0 * FLOAT32_STEP / lam)
        out["dt"] = (low, float(full["dt"]))
    for name in STIFFNESSES:
        if not params.stiffness(name):
            continue
        # lambda is linear in each stiffness: its coefficient is lambda_max with only this force on, at 1
        alone = params.replace(**{f"use_{p[2:]}": p == name for p in STIFFNESSES}, **{name: 1.0})
        coef = float(safe_range(rest, alone)["lambda_max"])
        if coef > 0.0:
            # divided in turn: a product of an absurdly small dt with itself underflows to 0
            high = 1.0 / FLOAT32_STEP / coef / params.dt if explicit else \
                2.0 / FLOAT32_STEP / coef / params.dt / params.dt
            out[name] = (0.0, high)
    return out


def check_spring_ranges(params: SpringParams, rest: SpringRest) -> None:
    """Raise ValueError for absurd spring parameters on this mesh (:func:`spring_ranges`): a stiffness far above
    its stable bound, or a dt below what float32 can step; the message gives the valid range."""
    ranges = spring_ranges(params, rest)
    for name in STIFFNESSES:
        if name in ranges and params.stiffness(name) > ranges[name][1]:
            raise ValueError(f"spring.{name} = {getattr(params, name):g} is far above the stable bound on this "
                             f"mesh; valid: [0, {ranges[name][1]:.4g}] at dt = {params.dt:g} (2**23 x its "
                             f"stable value)")
    if "dt" in ranges and params.dt < ranges["dt"][0]:
        low, stable = ranges["dt"]
        raise ValueError(f"spring.dt = {params.dt:g} is below what float32 can step on this mesh; valid: "
                         f"[{low:.4g}, 10] (stable below {stable:.4g})")


def spring_advice(params: SpringParams, rest: SpringRest) -> str:
    """What to change after a divergence: dt and the stiffness furthest past its safe value, with their safe
    bounds (the form of the CPU solver's warning)."""
    rng = safe_range(rest, params)
    active = [p for p in STIFFNESSES if params.stiffness(p)]
    if not active:
        return f"lower `dt` (now {params.dt:g})"
    worst = max(active, key=lambda p: params.stiffness(p) / rng[p] if rng[p] > 0 else math.inf)
    if rng[worst] > 0:
        other = f"`{worst}` (now {getattr(params, worst):g}, safe < {rng[worst]:.4g})"
    else:
        other = f"`{worst}` (now {getattr(params, worst):g}; at this dt no value of it alone is enough)"
    return f"lower `dt` (now {params.dt:g}, safe < {rng['dt']:.4g}) or {other}"
