"""Procedural characters of the project: shapes, implicit surfaces meshed by surface nets, rigs and clips.

Modules: ``mathutil`` (quaternions, TRS matrices), ``meshutil`` (welding, edge incidence, normals),
``isosurface`` (naive surface nets), ``sdf`` (signed-distance primitives, smooth union),
``rig`` (skeleton, clip authoring, Character -> GLB), ``shapes`` (cylinder, box, plus test pieces),
``humanoid`` (the person), ``characters`` (name -> builder registry used by engine.assets.library).
"""
