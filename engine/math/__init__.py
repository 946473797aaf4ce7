"""The engine's shared maths, below assets, anim and skinning (one copy of each).

Modules: :mod:`engine.math.quat` (quaternions, x y z w as glTF), :mod:`engine.math.transform` (TRS
compose/decompose of 4x4 matrices), :mod:`engine.math.mesh` (face and vertex normals, welding display vertices
by position, CSR adjacency) and :mod:`engine.math.numerics` (floating-point helpers). Everything is batched numpy;
nothing here imports the rest of the engine.
"""
from engine.math import mesh, numerics, quat, transform

__all__ = ["mesh", "numerics", "quat", "transform"]
