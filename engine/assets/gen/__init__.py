"""Procedural characters of the project: shapes, implicit surfaces meshed by surface nets, rigs and clips.

Modules: ``meshutil`` (welding by position, edge incidence, topology report; quaternions, TRS matrices, normals and
the weld itself are engine.math's),
``isosurface`` (naive surface nets), ``sdf`` (signed-distance primitives, smooth union),
``rig`` (skeleton, clip authoring, Character -> GLB), ``shapes`` (cylinder, box, plus test pieces),
``humanoid`` (the person), ``characters`` (name -> builder registry used by engine.assets.library).
"""
