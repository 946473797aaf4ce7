"""Deformation core: mesh preparation, attachment binding, numpy reference deformers, deformer graph."""
