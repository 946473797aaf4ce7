"""Strict reader of the GLB container (glTF 2.0 binary): 12-byte header, then 8-byte-headed chunks.

pygltflib's own GLB reader is lenient (it accepts truncated or misordered chunks), so the loader
splits the container here and hands pygltflib only the JSON. Rules enforced (glTF 2.0 spec, "GLB File
Format Specification", and the checks of the Khronos glTF-Validator):

* header: magic ``glTF``, version 2, declared total length >= 20 (header + one chunk header) and
  <= the file size; bytes after the declared length are ignored with a warning;
* chunks: each header complete, length a multiple of 4, data inside the declared length;
* the first chunk is JSON (non-empty), the optional second chunk is BIN; no second JSON or BIN chunk;
  chunks of unknown type are skipped with a warning, but a BIN chunk may not follow one.

:func:`parse_glb` splits a whole file; :func:`read_glb_json` reads just the JSON document of a file on disk
(the character library checks a cached file's generator version that way). Both use the same header and
chunk checks, and the writer packs its output with the constants defined here.
"""
from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field

from engine.assets.errors import AssetError

GLB_MAGIC = 0x46546C67  # b"glTF" little-endian
CHUNK_JSON = 0x4E4F534A  # b"JSON"
CHUNK_BIN = 0x004E4942  # b"BIN\0"
HEADER_SIZE = 12
CHUNK_HEADER_SIZE = 8


@dataclass
class GlbParts:
    """The two chunks of a GLB: ``json`` bytes (never empty) and ``bin`` bytes (None when absent)."""

    json: bytes
    bin: bytes | None
    warnings: list[str] = field(default_factory=list)


def is_glb(data: bytes) -> bool:
    """True when ``data`` starts with the GLB magic."""
    return len(data) >= 4 and data[:4] == b"glTF"


def _check_header(data: bytes, size: int) -> tuple[int, list[str]]:
    """Declared length of a GLB of ``size`` bytes whose first bytes are ``data``, and the warnings."""
    if size < HEADER_SIZE or len(data) < HEADER_SIZE:
        raise AssetError("GLB header", f"unexpected end of header: file has {size} bytes, the header needs 12")
    magic, version, length = struct.unpack_from("<III", data, 0)
    if magic != GLB_MAGIC:
        raise AssetError("GLB header", f"bad magic 0x{magic:08x} (expected 0x{GLB_MAGIC:08x}, 'glTF')")
    if version != 2:
        raise AssetError("GLB header", f"unsupported container version {version} (expected 2)")
    if length < HEADER_SIZE + CHUNK_HEADER_SIZE:
        raise AssetError("GLB header", f"declared length {length} is too small (at least 20 bytes)")
    if length > size:
        raise AssetError("GLB header", f"declared length {length} does not match the file size {size} (truncated file)")
    warnings: list[str] = []
    if length < size:
        warnings.append(f"GLB: {size - length} extra bytes after the declared length {length} ignored")
    return length, warnings


def _chunk_header(data: bytes, offset: int, index: int, length: int, size: int) -> tuple[int, int, int]:
    """``(chunk length, chunk type, data start)`` of the chunk whose 8-byte header is at ``offset``, checked
    against the declared GLB ``length`` and the file ``size``; chunk 0 must be a non-empty JSON chunk."""
    where = f"GLB chunk {index}"
    if offset + CHUNK_HEADER_SIZE > length:
        raise AssetError(where, f"unexpected end of chunk header at byte {offset} (declared length {length})")
    chunk_len, chunk_type = struct.unpack_from("<II", data, offset)
    start = offset + CHUNK_HEADER_SIZE
    if chunk_len % 4:
        raise AssetError(where, f"chunk length {chunk_len} is not a multiple of 4")
    if start + chunk_len > length:
        if start + chunk_len > size:
            raise AssetError(where, f"unexpected end of chunk data: chunk of {chunk_len} bytes at byte {start} "
                                    f"ends past the end of the file ({size} bytes)")
        raise AssetError(where, f"chunk of {chunk_len} bytes at byte {start} does not fit the declared "
                                f"GLB length {length}")
    if index == 0 and chunk_type != CHUNK_JSON:
        raise AssetError(where, f"first chunk must be JSON, found type 0x{chunk_type:08x}")
    if chunk_type == CHUNK_JSON and chunk_len == 0:
        raise AssetError(where, "JSON chunk is empty")
    return chunk_len, chunk_type, start


def parse_glb(data: bytes) -> GlbParts:
    """Split a GLB file into its JSON and BIN chunks, raising AssetError("GLB ...") on any defect."""
    size = len(data)
    length, warnings = _check_header(data, size)
    json_chunk: bytes | None = None
    bin_chunk: bytes | None = None
    offset = HEADER_SIZE
    index = 0
    seen_unknown = False
    while offset < length:
        where = f"GLB chunk {index}"
        chunk_len, chunk_type, start = _chunk_header(data, offset, index, length, size)
        body = data[start:start + chunk_len]
        if chunk_type == CHUNK_JSON:
            if json_chunk is not None:
                raise AssetError(where, "duplicate JSON chunk (a GLB holds exactly one)")
            json_chunk = body
        elif chunk_type == CHUNK_BIN:
            if bin_chunk is not None:
                raise AssetError(where, "duplicate BIN chunk (a GLB holds at most one)")
            if index != 1 or seen_unknown:
                raise AssetError(where, "BIN chunk must be the second chunk")
            bin_chunk = body
        else:
            seen_unknown = True
            warnings.append(f"GLB chunk {index}: unknown chunk type 0x{chunk_type:08x} skipped")
        offset = start + chunk_len
        index += 1
    if json_chunk is None:  # unreachable: length >= 20 guarantees chunk 0, which was checked to be JSON
        raise AssetError("GLB chunk 0", "no JSON chunk")
    return GlbParts(json=json_chunk, bin=bin_chunk, warnings=warnings)


def read_glb_json(path: str | os.PathLike) -> dict:
    """The JSON document of a GLB file, reading only the header and the JSON chunk (cheap for large files).

    The header and the JSON chunk's header pass the same checks as :func:`parse_glb`; a defect, or JSON that
    does not parse, raises ValueError naming the file.
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(HEADER_SIZE + CHUNK_HEADER_SIZE)
        try:
            length, _ = _check_header(head, size)
            chunk_len, _, _ = _chunk_header(head, HEADER_SIZE, 0, length, size)
        except AssetError as exc:
            raise ValueError(f"{os.fspath(path)}: not a valid GLB 2.0 file: {exc}") from exc
        body = f.read(chunk_len)
    try:
        doc = json.loads(body)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{os.fspath(path)}: the GLB's JSON chunk does not parse: {exc}") from exc
    if not isinstance(doc, dict):
        raise ValueError(f"{os.fspath(path)}: the GLB's JSON chunk is a {type(doc).__name__}, not an object")
    return doc
