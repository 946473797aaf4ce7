"""glTF 2.0 assets: loading with validation (``load``), the asset model, and GLB writing."""
from engine.assets.errors import AssetError, AssetWarning
from engine.assets.model import Asset, Channel, Clip, Image, Material, Mesh, Node, Primitive, Scene, Skin

__all__ = ["AssetError", "AssetWarning", "Asset", "Channel", "Clip", "Image", "Material", "Mesh", "Node",
           "Primitive", "Scene", "Skin", "load"]


def load(path, **kwargs) -> Asset:  # noqa: ANN001 - thin re-export
    """Load a .gltf or .glb file. See engine.assets.gltf.load."""
    from engine.assets.gltf import load as _load

    return _load(path, **kwargs)
