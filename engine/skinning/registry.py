"""The one deformer table: every deformation method the engine offers, in one place.

A row says what a newcomer needs to know about a method: its name (the ``--deformer`` value and the config
key), a one-line description, where its numpy reference is, which built-in GPU graph preset runs it (None: CPU
only), what it works on (display vertices or welded control points with an attachment binding), which
sections of :class:`~engine.skinning.config.DeformerConfig` it reads, and whether its result depends on the
previous frame (frame-dependent methods step on the fixed step and are not interpolated; see engine/frame.py).

The command line (``--deformer`` choices), config validation, the Session and the UI read this table; nothing
else lists the method names.

=================  ==========================================================================================
name               method
=================  ==========================================================================================
lbs                linear blend skinning (engine/skinning/skinning.py ``lbs``)
dqs                dual-quaternion skinning (``dqs``)
rigid              rigid attachment skinning: attachment points on the bones + scale vectors (``rigid``)
irs                incremental rotation skinning (``irs``)
spring             the spring deformer iterated from rigid skinning (engine/skinning/springs/)
spring-feedback    the frame-dependent spring loop (GPU only): each frame starts from the last
arap               as-rigid-as-possible on scale vectors (engine/skinning/arap.py, CPU only)
=================  ==========================================================================================
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DeformerSpec", "DEFORMERS", "deformer", "names", "check", "skinning_methods", "vertex_methods"]


@dataclass(frozen=True)
class DeformerSpec:
    """One row of the deformer table."""

    name: str
    description: str
    #: numpy reference, as "module:function" (documentation and the UI's tooltip)
    reference: str
    #: the DeformerGraph preset that runs it on the GPU (``default_config(gpu_preset)``), None: CPU only
    gpu_preset: str | None
    #: the numpy reference runs it (``--device cpu``)
    cpu: bool
    #: works on welded control points with an attachment binding (False: on display vertices, glTF weights)
    control_points: bool
    #: the DeformerConfig sections it reads
    parameters: tuple[str, ...]
    #: its result depends on the previous frame's state (stepped on the fixed step, not interpolated)
    frame_dependent: bool = False
    #: shown in user-facing choices (``--deformer``); internal variants are hidden
    public: bool = True
    #: a closed-form skinning method: one dispatch of the graph's skin stage (and a spring start)
    skinning: bool = False

    @property
    def gpu(self) -> bool:
        return self.gpu_preset is not None

    def available(self, device: str) -> bool:
        """Whether this method runs on ``device`` ("gpu" or "cpu")."""
        if device not in ("gpu", "cpu"):
            raise ValueError(f"device must be 'gpu' or 'cpu', got {device!r}")
        return self.gpu if device == "gpu" else self.cpu


DEFORMERS: dict[str, DeformerSpec] = {s.name: s for s in (
    DeformerSpec("lbs", "linear blend skinning", "engine.skinning.skinning:lbs", "lbs", True, False, (),
                 skinning=True),
    DeformerSpec("dqs", "dual-quaternion skinning", "engine.skinning.skinning:dqs", "dqs", True, False, (),
                 skinning=True),
    DeformerSpec("rigid", "rigid attachment skinning (attachment points + scale vectors)",
                 "engine.skinning.skinning:rigid", "rigid", True, True, ("binding",), skinning=True),
    DeformerSpec("irs", "incremental rotation skinning", "engine.skinning.skinning:irs", "irs", True, True,
                 ("binding", "irs"), skinning=True),
    DeformerSpec("spring", "spring deformer iterated from rigid skinning",
                 "engine.skinning.springs:SpringDeformer", "spring", True, True, ("binding", "spring")),
    DeformerSpec("spring-feedback", "frame-dependent spring loop (each frame starts from the last)",
                 "engine.skinning.springs:SpringDeformer", "spring-feedback", False, True,
                 ("binding", "spring"), frame_dependent=True, public=False),
    DeformerSpec("arap", "as-rigid-as-possible on scale vectors", "engine.skinning.arap:ScaleArap", None, True,
                 True, ("binding", "arap")),
)}


def names(*, device: str | None = None, public_only: bool = True) -> tuple[str, ...]:
    """Method names in table order, optionally only those available on ``device``."""
    return tuple(n for n, s in DEFORMERS.items()
                 if (s.public or not public_only) and (device is None or s.available(device)))


def deformer(name: str) -> DeformerSpec:
    """The row of ``name``; a ValueError lists the valid names."""
    spec = DEFORMERS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ValueError(f"unknown deformer {name!r}; valid: {', '.join(names(public_only=False))}")
    return spec


def check(name: str, device: str) -> DeformerSpec:
    """The row of ``name`` if it runs on ``device``, else a ValueError naming what does."""
    spec = deformer(name)
    if not spec.available(device):
        other = "cpu" if device == "gpu" else "gpu"
        raise ValueError(f"deformer {name!r} does not run on --device {device} (use --device {other}); "
                         f"on {device}: {', '.join(names(device=device))}")
    return spec


def skinning_methods() -> tuple[str, ...]:
    """The closed-form skinning methods (the graph's skin stage; ``SKINNING_METHODS`` of the reference)."""
    return tuple(n for n, s in DEFORMERS.items() if s.skinning)


def vertex_methods() -> tuple[str, ...]:
    """Skinning methods that work on display vertices with glTF weights (no attachment binding)."""
    return tuple(n for n, s in DEFORMERS.items() if s.skinning and not s.control_points)
