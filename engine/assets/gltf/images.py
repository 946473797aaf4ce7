"""Images (decoded by Pillow, size-bounded) and materials (base colour factor and texture)."""
from __future__ import annotations

import io
import warnings

import numpy as np

from engine.assets.errors import AssetError
from engine.assets.gltf.sources import IMAGE_MIME, SourceReader
from engine.assets.model import Image, Material


class ImageReader(SourceReader):
    """Builds the images and materials of the asset model (images may come from URIs)."""

    def _images(self) -> list[Image]:
        from PIL import Image as PILImage

        images = []
        for i, img in enumerate(self.doc.get("images", [])):
            where = f"images[{i}]"
            self.part = where
            if "uri" in img:
                data = self.resolve_uri(img["uri"], f"{where}.uri", IMAGE_MIME)
            else:
                bv_index = int(img["bufferView"])
                bv = self.doc["bufferViews"][bv_index]
                if bv.get("byteStride") is not None:
                    raise AssetError(f"{where}.bufferView", f"bufferViews[{bv_index}] has a byteStride; image data "
                                                            "may not be strided")
                b = int(bv["buffer"])
                buf = self.reader.buffers[b]
                if buf is None:
                    raise AssetError(f"{where}.bufferView", f"bufferViews[{bv_index}] reads buffers[{b}], which has "
                                                            "no data")
                off = int(bv.get("byteOffset", 0))
                data = buf[off:off + int(bv["byteLength"])]
            rgba = self._decode_image(data, where, PILImage)
            images.append(Image(name=img.get("name") or f"image{i}", rgba=rgba))
        return images

    def _decode_image(self, data: bytes, where: str, PILImage) -> np.ndarray:  # noqa: N803
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", PILImage.DecompressionBombWarning)
                with PILImage.open(io.BytesIO(data)) as im:
                    w, h = im.size
                    if w * h * 4 > self.max_bytes:
                        raise AssetError(where, f"{w}x{h} image exceeds the limit max_bytes={self.max_bytes}")
                    if im.format not in ("PNG", "JPEG"):
                        self.warn(where, f"image format {im.format} is not PNG or JPEG")
                    rgba = np.asarray(im.convert("RGBA"), dtype=np.uint8)
        except AssetError:
            raise
        except Exception as exc:  # noqa: BLE001 - Pillow raises many types for bad data
            raise AssetError(where, f"cannot decode the image: {type(exc).__name__}: {exc}") from exc
        return np.ascontiguousarray(rgba)

    def _materials(self) -> list[Material]:
        mats = []
        textures = self.doc.get("textures", [])
        for i, m in enumerate(self.gltf.materials):
            pbr = m.pbrMetallicRoughness
            mat = Material(name=m.name or f"material{i}", double_sided=bool(m.doubleSided))
            if pbr is not None:
                if pbr.baseColorFactor is not None:
                    mat.base_color_factor = np.asarray(pbr.baseColorFactor, np.float32)
                tex = pbr.baseColorTexture
                if tex is not None:
                    src = textures[int(tex.index)].get("source")
                    mat.base_color_image = None if src is None else int(src)
                    mat.base_color_texcoord = int(tex.texCoord or 0)
            mats.append(mat)
        return mats
