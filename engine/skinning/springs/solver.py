"""The spring solver: `SpringDeformer` runs one frame (initial skinning or warm start, then `spring_step`
iterations until the convergence scheme stops them, then the optional contact passes) and keeps the state
between frames (`SpringState`); `SpringStats` says what a solve did.

Convergence schemes, divergence handling and the frame-dependent mode: `SpringDeformer.iterate` and `solve`.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engine.skinning.springs.editterms import EditSource, EditTerms
from engine.skinning.springs.forces import integrate, release_held, spring_forces, spring_step
from engine.skinning.springs.frames import (
    PoseFrame,
    carry,
    pose_frame,
    pose_motion,
    pose_unit,
    to_pose_unit,
    warm_scale,
    warm_start_allowed,
)
from engine.skinning.springs.limits import (
    _lambda_coefficients,
    check_spring_ranges,
    lambda_per_vertex,
    safe_range,
    step_sizes,
)
from engine.skinning.springs.params import STIFFNESSES, SpringParams
from engine.skinning.springs.rest import build_rest, region_volumes, volume_points
from engine.skinning.springs.tiles import boundary_steps, tile_ids
from engine.skinning.springs.tiles import halo as tile_halo
from engine.skinning.springs.vec import _norm
from engine.skinning.types import Binding, MeshTopology

__all__ = ["SpringStats", "SpringState", "Skinner", "SpringDeformer"]


@dataclass
class SpringStats:
    """What one solve did. iterations: accepted position updates; reason: why it stopped."""

    iterations: int = 0
    converged: bool = False
    diverged: bool = False
    reason: str = ""
    max_displacement: float = 0.0
    max_force: float = 0.0
    energy: float = 0.0
    initial_energy: float = 0.0
    warm: bool = False  # started from last frame's carried output (SpringParams.warm_start)


@dataclass
class SpringState:
    """Between-frame state: last output, velocities (semi-implicit), the frame they belong to and its joints."""

    positions: np.ndarray | None = None
    velocities: np.ndarray | None = None
    frame: PoseFrame | None = None
    joints: np.ndarray | None = None  # posed joint world matrices (J,4,4) of that frame (warm start's motion)
    frames: int = 0
    last: SpringStats = field(default_factory=SpringStats)


Skinner = Callable[[str, np.ndarray], np.ndarray]


def _in_units(terms: EditTerms | None, unit: float) -> EditTerms | None:
    """Edit terms of scene-unit targets as the solve in bind units sees them (`SpringDeformer.solve`): C_i and
    Q_i (a position and a squared one, times K_i) divided by unit and unit^2."""
    if terms is None or unit == 1.0:
        return terms
    return EditTerms(terms.stiffness, np.asarray(terms.weighted_target, np.float64) / unit,
                     np.asarray(terms.q, np.float64) / (unit * unit), terms.held)


def _weights_skinner(topology: MeshTopology, bind_joints: np.ndarray, joints: np.ndarray,
                     weights: np.ndarray) -> Skinner:
    """LBS/DQS of the control points through skinning.skin_control_points (glTF JOINTS_0/WEIGHTS_0)."""
    def skin(method: str, posed_joints: np.ndarray) -> np.ndarray:
        from engine.skinning.skinning import skin_control_points

        return skin_control_points(method, topology, bind_joints, posed_joints, joints=joints, weights=weights)

    return skin


class SpringDeformer:
    """Spring-based skinning of one mesh's control points.

    topology, binding: from meshprep / binding; bind_joints (J,4,4) joint world matrices at bind; parents (J,);
    skinner(method, posed_joints) -> (V,3) control-point positions, needed only for initial_skinning "lbs" or
    "dqs"; or give joints/weights ((D,4) or (V,4), glTF JOINTS_0/WEIGHTS_0) and skinning.py's LBS/DQS is
    used; a caller may also pass `initial=` to `solve`.
    """

    def __init__(self, topology: MeshTopology, binding: Binding, bind_joints: np.ndarray, parents: np.ndarray,
                 params: SpringParams | None = None, *, skinner: Skinner | None = None,
                 joints: np.ndarray | None = None, weights: np.ndarray | None = None) -> None:
        self.params = (params or SpringParams()).validate()
        if skinner is None and joints is not None and weights is not None:
            skinner = _weights_skinner(topology, np.asarray(bind_joints), joints, weights)
        v = topology.n_control
        for name, arr, shape in (("binding.bone", binding.bone, (v,)), ("binding.t", binding.t, (v,)),
                                 ("binding.attach", binding.attach, (v, 3)), ("binding.scale", binding.scale, (v, 3))):
            if np.shape(arr) != shape:
                raise ValueError(f"{name} has shape {np.shape(arr)}; valid: {shape} for {v} control points")
        bind_joints = np.asarray(bind_joints, np.float64)
        parents = np.asarray(parents)
        if bind_joints.ndim != 3 or bind_joints.shape[1:] != (4, 4) or parents.shape != (bind_joints.shape[0],):
            raise ValueError(f"bind_joints {bind_joints.shape} / parents {parents.shape}; valid: (J,4,4) and (J,)")
        self.topology = topology
        self.binding = binding
        self.bind_joints = bind_joints
        self.parents = parents
        self.skinner = skinner
        self.rest = build_rest(topology, binding, bind_joints, joints=joints, weights=weights)
        check_spring_ranges(self.params, self.rest)
        x = np.asarray(topology.positions, np.float64)
        ext = x.max(0) - x.min(0) if v else np.ones(3)
        pos_ext = ext[ext > 0.0]
        self.aabb_min_extent = float(pos_ext.min()) if pos_ext.size else 1.0
        self.bbox_diag = float(np.linalg.norm(ext)) or 1.0
        self.warm_scale = warm_scale(self.rest.r)  # SpringParams.warm_limit x this bounds joint offset changes
        self.state = SpringState()
        self._lam = lambda_per_vertex(self.rest, self.params)
        self._tiles: np.ndarray | None = None
        self._warn_if_unsafe()

    # -- parameters ---------------------------------------------------------------------------------------
    @property
    def displacement_threshold(self) -> float:
        """Largest position change that counts as converged: AABB_min_extent * displacement_rel."""
        return self.aabb_min_extent * self.params.displacement_rel

    @property
    def force_threshold(self) -> float:
        p = self.params
        return p.force_tol if p.force_tol is not None else self.displacement_threshold / p.dt

    def set_params(self, params: SpringParams) -> None:
        params = params.validate()
        check_spring_ranges(params, self.rest)
        self.params = params
        self._lam = lambda_per_vertex(self.rest, self.params)
        self._warn_if_unsafe()

    def step_sizes(self, edit: EditTerms | None = None) -> np.ndarray | None:
        """Per-vertex steps dt_i (V,) for the current params (None: step_limit off, dt everywhere). The
        stiffness part of lambda_i is computed at set-up and in `set_params`; active surface edits add
        k_e K_i (they change per frame)."""
        p = self.params
        if not p.step_limit:
            return None
        lam = self._lam
        k_e = p.stiffness("k_e")
        if edit is not None and k_e:
            lam = lambda_per_vertex(self.rest, p, edit)  # k_e K_i, and no volume term in the edited regions
        return step_sizes(self.rest, p, lam=lam)

    def safe_range(self, edit: EditTerms | None = None) -> dict[str, float]:
        """See module function `safe_range`."""
        return safe_range(self.rest, self.params, edit)

    def _culprit(self, edit: EditTerms | None) -> tuple[str, dict[str, float]]:
        """The stiffness contributing most at the stiffest vertex, and the safe range."""
        rng = safe_range(self.rest, self.params, edit)
        coef = _lambda_coefficients(self.rest, edit)
        contrib = {p: self.params.stiffness(p) * coef[p] for p in STIFFNESSES}
        worst = int(np.argmax(sum(contrib.values())))
        return max(STIFFNESSES, key=lambda p: float(contrib[p][worst])), rng

    def _advice(self, edit: EditTerms | None) -> str:
        p, rng = self._culprit(edit)
        if rng[p] > 0.0:
            other = f"`{p}` (now {getattr(self.params, p):g}, safe < {rng[p]:.4g})"
        else:  # the other stiffnesses alone already use up the budget of this dt
            other = f"`{p}` (now {getattr(self.params, p):g}; at this dt no value of it alone is enough)"
        return f"lower `dt` (now {self.params.dt:g}, safe < {rng['dt']:.4g}) or {other}"

    def _warn_if_unsafe(self) -> None:
        """Warn at set-up when the plain update is selected (step_limit off) and dt is past twice the monotone
        bound: there explicit Euler is no longer guaranteed stable (dt * lambda < 2; the bound over-estimates
        lambda, so this is a caution, and the per-iteration divergence check stays the safety net). Never with
        step_limit on: every vertex's step is then inside its own stable range by construction."""
        if self.params.step_limit:
            return
        rng = safe_range(self.rest, self.params)
        factor = 2.0 if self.params.integrator == "explicit" else math.sqrt(2.0)
        if self.params.dt > factor * rng["dt"]:
            warnings.warn(f"spring parameters may be unstable on this mesh (divergence is watched for): "
                          f"{self._advice(None)}", RuntimeWarning, stacklevel=3)

    # -- per frame ----------------------------------------------------------------------------------------
    @property
    def tiles(self) -> np.ndarray:
        """(V,) the tile of each control point for the tiled iteration (springs.tiles.tile_ids)."""
        if self._tiles is None:
            self._tiles = tile_ids(self.topology.n_control, self.rest.vol_region)
        return self._tiles

    def frame(self, posed_joints: np.ndarray) -> PoseFrame:
        """Per-vertex pose data (attachments, rotations, bone references) for joint world matrices."""
        posed = np.asarray(posed_joints, np.float64)
        if posed.shape != self.bind_joints.shape:
            raise ValueError(f"posed_joints has shape {posed.shape}; valid: {self.bind_joints.shape}")
        return pose_frame(self.binding, self.bind_joints, posed, self.rest, self.params.bone_mode,
                          self.params.joint_blend)

    def rigid(self, frame: PoseFrame, *, plain: bool = False) -> np.ndarray:
        """Attachment-based rigid skinning (research 4.1, first stage): v = a' + R s, (V,3), in the vertex's
        (joint-blended) frame; plain: on the bone itself, a' + R(parent joint) s (what `skinning.rigid` does)."""
        a, r = (frame.plain_attach, frame.plain_rot) if plain else (frame.attach, frame.rot)
        return a + np.einsum("vij,vj->vi", r, np.asarray(self.binding.scale, np.float64))

    def edit_terms(self, edits: EditSource | EditTerms | None, frame: PoseFrame, time: float = 0.0) -> EditTerms | None:
        if edits is None or isinstance(edits, EditTerms):
            return edits
        return edits.terms(self.topology.n_control, frame.attach, frame.rot, time)

    def forces(self, x: np.ndarray, frame: PoseFrame, edit: EditTerms | None = None) -> tuple[np.ndarray, float]:
        return spring_forces(np.asarray(x, np.float64), frame.attach, frame.bone_ref, self.rest, self.params, edit,
                             diff=frame.diff)

    def step(self, x: np.ndarray, frame: PoseFrame, *, vel: np.ndarray | None = None,
             edit: EditTerms | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """One iteration from positions x: (x', vel', force at x, energy at x)."""
        x = np.asarray(x, np.float64)
        vel = np.zeros_like(x) if vel is None else np.asarray(vel, np.float64)
        return spring_step(x, vel, frame.attach, frame.bone_ref, self.rest, self.params, edit,
                           step=self.step_sizes(edit), diff=frame.diff)

    def initial_positions(self, posed_joints: np.ndarray, frame: PoseFrame, *, edit: EditTerms | None = None
                          ) -> np.ndarray:
        """Where iteration starts: the chosen initial skinning ("independent", or first "dependent" frame), or
        last frame's output moved by the differential bone transforms ("dependent"; "independent" with
        warm_start when `warm_allowed`). Rigid is the joint-blended rigid skinning (`rigid`) in "independent"
        mode, plain rigid on the bones in "dependent" mode (the GPU's frame-dependent loop carries its output on
        the bones). A warm start keeps the points an edit holds (edits.py static sets) at the initial skinning."""
        return self._start(posed_joints, frame, edit)[0]

    def warm_allowed(self, posed_joints: np.ndarray) -> bool:
        """Whether the next frame-independent solve for this pose starts warm (SpringParams.warm_start): there is
        a last output and the pose moved little since (`warm_start_allowed`)."""
        st = self.state
        if not self.params.warm_start or st.positions is None or st.frame is None or st.joints is None:
            return False
        angle, offset = pose_motion(self.bind_joints, self.parents, st.joints, posed_joints)
        return warm_start_allowed(self.params, angle, offset, self.warm_scale)

    def _start(self, posed_joints: np.ndarray, frame: PoseFrame, edit: EditTerms | None
               ) -> tuple[np.ndarray, bool]:
        """(start positions, whether they are the warm start)."""
        st = self.state
        dependent = self.params.mode == "dependent"
        if dependent and st.positions is not None and st.frame is not None:
            return carry(st.positions, st.frame, frame, plain=True), False
        if not dependent and self.warm_allowed(posed_joints):
            assert st.positions is not None and st.frame is not None
            x = carry(st.positions, st.frame, frame)
            if edit is not None and self.params.stiffness("k_e") and edit.any_held:
                x[edit.held] = self._cold_start(posed_joints, frame)[edit.held]
            return x, True
        return self._cold_start(posed_joints, frame), False

    def _cold_start(self, posed_joints: np.ndarray, frame: PoseFrame) -> np.ndarray:
        """The initial skinning (see the docstring of `initial_positions`)."""
        dependent = self.params.mode == "dependent"
        method = self.params.initial_skinning
        if method == "rigid":
            return self.rigid(frame, plain=dependent)
        if self.skinner is None:
            raise ValueError(f"initial_skinning = {method!r} needs a skinner(method, posed_joints) or "
                             "solve(..., initial=positions); valid without one: 'rigid'")
        x0 = np.asarray(self.skinner(method, np.asarray(posed_joints)), np.float64)
        if x0.shape != (self.topology.n_control, 3):
            raise ValueError(f"skinner returned shape {x0.shape}; valid: ({self.topology.n_control}, 3)")
        return x0

    def iterate(self, x: np.ndarray, frame: PoseFrame, *, vel: np.ndarray | None = None,
                edit: EditTerms | None = None, max_iterations: int | None = None, block: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, SpringStats]:
        """Run iterations from x until the convergence scheme (or max_iterations) stops them.

        Schemes: "iterations" runs max_iterations; "displacement" stops after the first step whose largest
        position change is below `displacement_threshold`; "force" stops before stepping once the largest
        net force is below `force_threshold`; "energy" stops at a local minimum of the total energy (a step
        that does not lower it by energy_rtol is rejected if it raised the energy). Divergence (non-finite
        values or a step longer than divergence_rel x bbox diagonal) keeps the last good state and warns.
        With step limiting, the per-vertex steps are computed once here (edits included) for all iterations.

        block: K for the tiled iteration (springs.tiles; the GPU's ``iterations_per_dispatch``): blocks of K
        Jacobi iterations in which a tile's points see their out-of-tile neighbours frozen at the block start
        and the volume term uses the previous block start's region volumes; the displacement scheme then checks
        at block ends only (where the GPU checks). K = 1 is the untiled iteration exactly; the force and energy
        schemes need K = 1; with the semi-implicit update a tile's boundary points step by BOUNDARY_STEP of
        their dt_i in blocks of K > 1 (springs.tiles). None: untiled.
        """
        p = self.params
        n_max = p.max_iterations if max_iterations is None else int(max_iterations)
        if block is not None and (int(block) < 1 or (block > 1 and p.convergence in ("force", "energy"))):
            raise ValueError(f"block = {block!r}; valid: an integer >= 1, and 1 for the {p.convergence!r} scheme")
        tiles = None if block is None else self.tiles
        blk = 1 if block is None else int(block)
        x = np.array(x, np.float64)
        vel = np.zeros_like(x) if vel is None or p.integrator == "explicit" else np.array(vel, np.float64)
        vel = release_held(vel, edit, p, self.rest)
        a, ref = frame.attach, frame.bone_ref
        # the volume term uses the regions' volumes of the previous state, x_0's own for x_0
        with_volume = bool(np.any(volume_points(self.rest, p, edit)))
        volume = region_volumes(x, a, self.rest) if with_volume else None
        halo = None
        if tiles is not None:  # the first block's base is x_0 itself (volume estimator: springs.tiles)
            halo = tile_halo(x, self.rest, tiles, *((x, a) if with_volume and blk > 1 else ()))
        force, energy = spring_forces(x, a, ref, self.rest, p, edit, volume, frame.diff, halo)
        step = self.step_sizes(edit)
        if tiles is not None and blk > 1 and p.integrator == "semi_implicit":  # springs.tiles.BOUNDARY_STEP
            step = boundary_steps(np.full(x.shape[0], p.dt) if step is None else step, self.rest, tiles)
        kinetic = 0.5 * float(np.einsum("ij,ij->", vel, vel))
        stats = SpringStats(initial_energy=energy, energy=energy, reason="max_iterations")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(force))):
            raise ValueError("spring solve started from non-finite positions or forces")
        thr_d, thr_f = self.displacement_threshold, self.force_threshold
        limit = p.divergence_rel * self.bbox_diag
        for it in range(n_max):
            fmax = float(_norm(force).max()) if force.size else 0.0
            stats.max_force = fmax
            if p.convergence == "force" and fmax < thr_f:
                stats.converged, stats.reason = True, "force"
                break
            x_new, vel_new = integrate(x, vel, force, p, step)
            # the glued points on their faces (springs.touch), placed from the previous iterate (the block start
            # in a tiled block: the GPU reads a glued point's corners from the ring's block-start state)
            x_new = self.rest.glue(x_new, x if halo is None else halo.frozen)
            disp = float(_norm(x_new - x).max()) if x.size else 0.0
            bad = ""
            if not np.all(np.isfinite(x_new)):
                bad = "non-finite positions"
            elif disp > limit:
                bad = f"a vertex moved {disp:.3g} in one step, limit {limit:.3g}"
            if not bad:
                vol_next, halo_next = volume, halo
                if tiles is not None and (it + 1) % blk == 0:  # x_new starts a block: the halo freezes at it
                    assert halo is not None  # the volume estimate's base: the block start before
                    halo_next = tile_halo(x_new, self.rest, tiles,
                                          *((halo.frozen, a) if with_volume and blk > 1 else ()))
                f_new, e_new = spring_forces(x_new, a, ref, self.rest, p, edit, vol_next, frame.diff, halo_next)
                if not (np.all(np.isfinite(f_new)) and math.isfinite(e_new)):
                    bad = "non-finite forces"
            if bad:
                stats.diverged, stats.reason = True, "diverged"
                warnings.warn(f"spring deformer diverged at iteration {it + 1} ({bad}); kept the last good "
                              f"state: {self._advice(edit)}", RuntimeWarning, stacklevel=2)
                break
            k_new = 0.5 * float(np.einsum("ij,ij->", vel_new, vel_new))
            if p.convergence == "energy":
                total, total_new = energy + kinetic, e_new + k_new
                if total_new >= total - p.energy_rtol * abs(total):
                    stats.converged, stats.reason = True, "energy"
                    if total_new <= total:  # a (tiny) descent: take it
                        x, vel, force, energy, kinetic = x_new, vel_new, f_new, e_new, k_new
                        stats.iterations += 1
                        stats.max_displacement = disp
                    break
            x, vel, force, energy, kinetic = x_new, vel_new, f_new, e_new, k_new
            if tiles is not None:
                volume, halo = vol_next, halo_next
            if with_volume and blk == 1:
                volume = region_volumes(x, a, self.rest)
            stats.iterations += 1
            stats.max_displacement = disp
            if p.convergence == "displacement" and disp < thr_d and (it + 1) % blk == 0:
                stats.converged, stats.reason = True, "displacement"
                break
        else:
            stats.converged = p.convergence == "iterations"
        stats.energy = energy
        stats.max_force = float(_norm(force).max()) if force.size else 0.0
        return x, vel, stats

    def solve(self, posed_joints: np.ndarray, *, edits: EditSource | EditTerms | None = None, time: float = 0.0,
              initial: np.ndarray | None = None, block: int | None = None) -> tuple[np.ndarray, SpringStats]:
        """Deform for one pose: initial skinning, then spring iterations. Returns float32 (V,3) and stats.
        block: the tiled iteration's K (`iterate`; None: untiled).

        edits: an EditStack (evaluated at clip `time`) or ready EditTerms. initial: start positions overriding
        the initial skinning (e.g. LBS from skinning.py).

        The solve runs in bind units: the pose is divided by `pose_unit` (1 unless the mesh is given in other
        units than its joints are posed in, a mesh under a scaled armature) and the result multiplied back, so
        the rest state, step limits and tolerances, all measured on the bind mesh, hold in any unit system (the
        contact term's lengths too: it runs before the scaling back); the edit targets and `initial` (scene units)
        are divided alike. The state carried to the next frame stays in
        bind units."""
        world = np.asarray(posed_joints, np.float64)
        unit = pose_unit(self.bind_joints, self.parents, world)
        posed = to_pose_unit(world, unit)
        fr = self.frame(posed)
        terms = _in_units(self.edit_terms(edits, fr if unit == 1.0 else self.frame(world), time), unit)
        warm = False
        if initial is not None:
            x0 = np.asarray(initial, np.float64) / unit
            if x0.shape != (self.topology.n_control, 3):
                raise ValueError(f"initial has shape {x0.shape}; valid: ({self.topology.n_control}, 3)")
        else:
            x0, warm = self._start(posed, fr, terms)
        if fr.held_target is not None and self.rest.held is not None:  # the rigid points start where they stay
            x0 = np.array(x0, np.float64)
            x0[self.rest.held] = fr.held_target[self.rest.held]
        vel = None
        if self.params.mode == "dependent" and self.state.velocities is not None:
            vel = self.state.velocities
        x, vel_out, stats = self.iterate(x0, fr, vel=vel, edit=terms, block=block)
        carried = x
        if self.params.contact:  # the optional contact term after the iterations (contact.py), in bind units too:
            # its lengths are measured on the bind mesh (as the GPU graph's contact stage, spring_frame's units)
            x = self.contact(x, fr)
            # as the GPU graph: the frame-dependent loop feeds back the contact's output, a warm start carries
            # the spring stage's own
            carried = x if self.params.mode == "dependent" else carried
        x = x * unit
        stats.warm = warm
        self.state = SpringState(positions=carried, velocities=vel_out, frame=fr, joints=posed,
                                 frames=self.state.frames + 1, last=stats)
        with np.errstate(under="ignore"):  # components below float32's range (e.g. 1e-50) become 0: harmless
            return x.astype(np.float32), stats

    def contact(self, x: np.ndarray, frame: PoseFrame) -> np.ndarray:
        """The contact term's passes (engine.skinning.contact) over positions x (V,3) in `frame`, with this
        deformer's contact parameters (whether or not `params.contact` is on). x and the frame in bind units
        (`solve` passes its own; the contact lengths are measured on the bind mesh)."""
        from engine.skinning.contact import contact_rest, resolve_contacts

        p = self.params
        key = (p.contact_thickness, p.contact_passes)
        if getattr(self, "_contact_key", None) != key:
            self._contact_rest = contact_rest(self.topology, float(p.contact_thickness), int(p.contact_passes))
            self._contact_key = key
        return resolve_contacts(x, frame.attach, self._contact_rest)[0]

    def reset(self) -> None:
        """Forget last frame (dependent mode, and a warm start, start again from the initial skinning: call it
        after a seek or a clip change when the pose may have jumped by less than warm_limit)."""
        self.state = SpringState()
