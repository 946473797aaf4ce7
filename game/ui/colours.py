"""The colours every picture and window of the application draws strokes with (the README's): the baseline
green, the offset blue, the selected joints white. sRGB 0-255; :func:`rgba` gives imgui's float form."""
from __future__ import annotations

__all__ = ["BASELINE_RGB", "OFFSET_RGB", "JOINT_RGB", "SURFACE_RGB", "rgba"]

BASELINE_RGB = (40, 220, 90)
OFFSET_RGB = (60, 140, 255)
JOINT_RGB = (255, 255, 255)
#: a surface stroke drawn in VR (the bulge tool), on the skin
SURFACE_RGB = (255, 150, 40)


def rgba(rgb: tuple[int, int, int], alpha: float = 1.0) -> tuple[float, float, float, float]:
    """``rgb`` (0-255) as floats in [0, 1] with ``alpha``."""
    return (rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0, float(alpha))
