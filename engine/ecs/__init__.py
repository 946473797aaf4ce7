"""engine.ecs: the world (entities, components, resources, cached queries), the schedule (ordered phases,
per-system timing, error isolation) and the clock (fixed simulation step, interpolated rendering).

Components hold data only, never GPU handles; see ``engine.ecs.world``.
"""
from engine.ecs.clock import Clock, interpolate
from engine.ecs.schedule import FIXED_PHASES, FRAME_PHASES_AFTER, FRAME_PHASES_BEFORE, Phase, Schedule, System
from engine.ecs.world import Entity, World

__all__ = [
    "World", "Entity", "Schedule", "Phase", "System", "Clock", "interpolate",
    "FRAME_PHASES_BEFORE", "FIXED_PHASES", "FRAME_PHASES_AFTER",
]
