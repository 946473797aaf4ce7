"""The spring forces and one iteration: `spring_forces` (eq. 22 with F_e, weighted as in Algorithm 1),
`integrate` (eq. 23 or semi-implicit Euler, optionally heavy-ball), `spring_step` (what one dispatch of the spring
compute shader does) and `release_held`.

Pure functions of arrays (the GPU contract in docs/springs.md): float64 here, float32 in the shader.
"""
from __future__ import annotations

import numpy as np

from engine.skinning.springs.editterms import EditTerms
from engine.skinning.springs.limits import step_sizes
from engine.skinning.springs.params import SpringParams
from engine.skinning.springs.rest import SpringRest, diff_share, fan_volumes, ring_means, volume_points
from engine.skinning.springs.tiles import Halo
from engine.skinning.springs.vec import _SIN_EPS, _angle, _dot, _norm, _unit

__all__ = ["spring_forces", "release_held", "integrate", "spring_step"]


def spring_forces(x: np.ndarray, attach: np.ndarray, bone_ref: np.ndarray, rest: SpringRest,
                  params: SpringParams, edit: EditTerms | None = None, volume: np.ndarray | None = None,
                  diff: np.ndarray | None = None, halo: Halo | None = None) -> tuple[np.ndarray, float]:
    """Net force (V,3) on every vertex (eq. 22 with F_e, weighted as in Algorithm 1) and the spring energy.

    volume: the bone regions' volumes (`region_volumes`) of the state one iteration earlier (x_0's own for x_0),
    for the volume term (k_v): F_i = k_v delta_r unit(G_i), delta_r = (V0_r - V_r) / S0_r, the uniform offset
    along the normals that would restore region r's bind volume; energy 0.5 k_v delta_r^2 per vertex. None
    (one-off evaluations): no volume term. The lag lets the GPU sum a region over every work group in the same
    dispatch that uses the last sum (spring.comp; a pre-pass sums x_0).

    diff: the differential term's targets R_i delta0_i (V,3) (`PoseFrame.diff`), for k_d: F_i = k_d c_i (m_i +
    R_i delta0_i - x_i), m_i the one-ring mean weighted by rest.diff_w (`ring_means`), c_i the point's share
    rest.diff_scale (`diff_scales`); energy 0.5 k_d c_i |.|^2 per vertex. None: no differential term.

    halo: a tiled block's frozen halo (springs.tiles): each slot's neighbour (and face corner) outside the point's
    tile is taken at the block start instead of from x (the same forces otherwise)."""
    n = x.shape[0]
    rows, cols = rest.rows, rest.cols
    shat, slen, nz = _unit(x - attach, rest.tiny)
    # the neighbours' values per slot: x's own, or in a tiled block the halo's frozen ones
    if halo is None:
        xc, shat_c, slen_c, nz_c = x[cols], shat[cols], slen[cols], nz[cols]
    else:
        xc = halo.neighbours(x, cols, halo.inside)
        shat_c, slen_c, nz_c = _unit(xc - attach[cols], rest.tiny)
    sden = np.maximum(slen, rest.s_floor)
    slot = np.zeros((rows.shape[0], 3))
    energy = 0.0
    k_s, k_l, k_t = params.stiffness("k_s"), params.stiffness("k_l"), params.stiffness("k_t")
    k_b, k_r, k_e = params.stiffness("k_b"), params.stiffness("k_r"), params.stiffness("k_e")
    if k_s:
        e = xc - x[rows]
        length = _norm(e)
        ok = length > rest.tiny
        stretch = length - rest.rest_len
        slot += (k_s * stretch * ok / np.where(ok, length, 1.0))[:, None] * e
        energy += 0.25 * k_s * _dot(stretch, stretch)  # each edge appears in two slots
    if k_l:
        dl = (slen[rows] - slen_c) - rest.rest_dlen
        slot -= (k_l * dl)[:, None] * shat[rows]
        energy += 0.25 * k_l * _dot(dl, dl)
    if k_t:
        theta, perp, sin = _angle(shat[rows], shat_c)
        dth = theta - rest.rest_angle
        ok = (sin > _SIN_EPS) & nz[rows] & nz_c
        torque = k_t * rest.w_t * dth
        slot += (torque * ok / (sden[rows] * np.where(ok, sin, 1.0)))[:, None] * perp
        energy += 0.25 * k_t * _dot(rest.w_t, dth * dth)
    force = np.empty((n, 3))
    for a in range(3):  # scatter slot forces into their vertex (CSR segment sum)
        force[:, a] = np.bincount(rows, weights=slot[:, a], minlength=n)
    if edit is not None and k_e:
        active = edit.active
        if np.any(active):
            force[active] *= params.handle_weight
            force += k_e * edit.force(x)
            energy += k_e * edit.energy(x)
    if k_b:
        phi, perp, sin = _angle(shat, bone_ref)
        ref_angle = rest.bone_angle if params.bone_mode == "cone" else 0.0
        dphi = phi - ref_angle
        ok = (sin > _SIN_EPS) & nz
        torque = k_b * rest.r * rest.r * dphi
        force += (torque * ok / (sden * np.where(ok, sin, 1.0)))[:, None] * perp
        energy += 0.5 * k_b * _dot(rest.r * rest.r, dphi * dphi)
    if k_r:
        dr = slen - rest.r
        force -= (k_r * dr)[:, None] * shat
        energy += 0.5 * k_r * _dot(dr, dr)
    k_v = params.stiffness("k_v")
    if k_v and volume is not None:
        on = volume_points(rest, params, edit)
        if np.any(on):
            corners = None
            if halo is not None:
                f = rest.vol_third >= 0
                third = rest.vol_third[f]
                corners = (xc[f], np.where(halo.inside_third[f, None], x[third], halo.frozen[third]))
            v_now, g = fan_volumes(x, attach, rest, corners)
            reg = rest.vol_region[on]
            if halo is not None and halo.base_region is not None:  # a tiled block's estimate (springs.tiles)
                delta = (rest.vol_v0[reg] - halo.region_estimate(v_now, rest.vol_region)[on]) / rest.vol_s0[reg]
            else:
                delta = (rest.vol_v0 - np.asarray(volume, np.float64))[reg] / rest.vol_s0[reg]
            glen = _norm(g[on])
            ok = glen > 0.0
            force[on] += (k_v * delta * ok / np.where(ok, glen, 1.0))[:, None] * g[on]
            energy += 0.5 * k_v * _dot(delta, delta)
    k_d = params.stiffness("k_d")
    if k_d and diff is not None and rest.diff_w.shape[0] == rows.shape[0]:
        d = ring_means(x, rest, None if halo is None else xc) + np.asarray(diff, np.float64) - x
        share = diff_share(rest)
        force += k_d * share[:, None] * d
        energy += 0.5 * k_d * float(np.einsum("i,ij,ij->", share, d, d))
    if edit is not None and k_e and edit.any_held:
        force[edit.held] = 0.0  # the ROI boundary is held: no force moves it (edits.py, "the sets")
    pinned = rest.pinned
    if pinned is not None:  # the rigid points stay at their joint's rigid motion (rest.rigid_points), the glued
        force[pinned] = 0.0  # ones on their faces (springs.touch: `integrate`'s caller sets them there)
    return force, energy


def release_held(vel: np.ndarray, edit: EditTerms | None, params: SpringParams,
                 rest: SpringRest | None = None) -> np.ndarray:
    """Velocities with those of held vertices (surface-edit static sets, the rest state's rigid and glued points)
    zeroed: with their force zeroed too, the update leaves them exactly in place, whatever the integrator (the
    glued points are then set on their faces, `SpringRest.glue`)."""
    edit_held = edit is not None and bool(params.stiffness("k_e")) and edit.any_held
    rigid = rest.pinned if rest is not None else None
    if not edit_held and rigid is None:
        return vel
    vel = np.array(vel, np.float64)
    if edit_held:
        assert edit is not None and edit.held is not None
        vel[edit.held] = 0.0
    if rigid is not None:
        vel[rigid] = 0.0
    return vel


def integrate(x: np.ndarray, vel: np.ndarray, force: np.ndarray, params: SpringParams,
              step: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Position update: eq. 23 (v += dt F) or semi-implicit Euler (unit mass) with velocity damping; explicit
    with acceleration "momentum": the heavy-ball step (vel is then the last step, not a velocity).

    step: per-vertex time steps dt_i (V,) from `step_sizes` (step limiting); None uses params.dt everywhere
    (the plain update)."""
    h = params.dt if step is None else np.asarray(step, np.float64)[:, None]
    if params.integrator == "explicit":
        if params.acceleration == "momentum":
            vel = params.momentum * vel + h * force  # heavy ball: vel carries the last step
            return x + vel, vel
        return x + h * force, vel
    vel = (vel + h * force) * (1.0 - params.damping)
    return x + h * vel, vel


def spring_step(x: np.ndarray, vel: np.ndarray, attach: np.ndarray, bone_ref: np.ndarray, rest: SpringRest,
                params: SpringParams, edit: EditTerms | None = None, *, step: np.ndarray | None = None,
                diff: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One iteration (what one dispatch of the spring compute shader does): (x', vel', force at x, energy at x).

    step: per-vertex steps; None computes them with `step_sizes` (the plain dt when params.step_limit is off).
    A caller iterating many times passes them in (they depend on the rest state, params and edits only).
    The glued points (springs.touch) are set on their faces after the update.
    diff: the differential term's targets (`spring_forces`)."""
    force, energy = spring_forces(x, attach, bone_ref, rest, params, edit, diff=diff)
    vel = release_held(vel, edit, params, rest)
    if step is None:
        step = step_sizes(rest, params, edit)
    x_new, vel_new = integrate(x, vel, force, params, step)
    return rest.glue(x_new, x), vel_new, force, energy
