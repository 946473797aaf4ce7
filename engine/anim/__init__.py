"""Animation: clip sampling (STEP / LINEAR / CUBICSPLINE), playback and crossfades, forward kinematics.

Per frame: ``ClipSampler.sample`` (or ``Playback.evaluate``) writes a local :class:`Pose`;
``timeline.TimelinePlayback`` plays clip segments placed on a timeline (trims, speeds, crossfades; cutscenes);
``fk.global_matrices`` composes world matrices level by level; ``fk.skin_matrices`` gives
``joint world @ inverse bind`` for the skinning stage. All of it is batched numpy over nodes, and the ``*_batch``
/ ``*_batched`` variants add an instance axis for many characters sharing one rig. Quaternions and TRS
compose/decompose live below, in :mod:`engine.math`.
"""
from engine.anim.fk import global_matrices, global_matrices_batched, joint_matrices, local_matrices, skin_matrices
from engine.anim.playback import MODES, Playback, blend_poses, wrap_time
from engine.anim.pose import Pose
from engine.anim.rig import Rig
from engine.anim.sampling import ClipSampler

__all__ = ["global_matrices", "global_matrices_batched", "joint_matrices",
           "local_matrices", "skin_matrices", "MODES", "Playback", "blend_poses", "wrap_time", "Pose", "Rig",
           "ClipSampler"]
