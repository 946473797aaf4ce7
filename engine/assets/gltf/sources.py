"""Where the bytes come from: the file itself (size-bounded; another format such as FBX or OBJ refused in one line,
``engine.assets.formats``) and the buffers (the GLB BIN chunk, base64 ``data:`` URIs, files beside the asset; no URI
may leave the asset's folder)."""
from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import unquote

from engine.assets.errors import AssetError
from engine.assets.formats import foreign_format, refusal
from engine.assets.gltf.state import LoaderState

BUFFER_MIME = ("application/octet-stream", "application/gltf-buffer")
IMAGE_MIME = ("image/png", "image/jpeg")
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_DATA_URI_RE = re.compile(r"^data:([^;,]*)((?:;[^;,=]+=[^;,]*)*)(;base64)?,(.*)$", re.S)


class SourceReader(LoaderState):
    """Reads the file and resolves the buffers' and images' URIs."""

    def _read_file(self) -> bytes:
        where = self.path.name or str(self.path)
        try:
            size = self.path.stat().st_size
        except OSError as exc:
            raise AssetError(where, f"cannot read the file: {exc.strerror or exc}") from exc
        if not self.path.is_file():
            raise AssetError(where, "not a regular file")
        try:
            with self.path.open("rb") as f:
                head = f.read(1024)
        except OSError as exc:
            raise AssetError(where, f"cannot read the file: {exc.strerror or exc}") from exc
        foreign = foreign_format(self.path, head)
        if foreign is not None:  # an FBX, OBJ, .blend ... : say so, not "invalid JSON"
            raise AssetError(where, refusal(foreign), unsupported=True)
        if size > self.max_bytes:
            raise AssetError(where, f"file size {size} bytes exceeds the limit max_bytes={self.max_bytes}")
        self.spend(size, where)
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise AssetError(where, f"cannot read the file: {exc.strerror or exc}") from exc

    def _load_buffers(self, is_binary: bool, bin_chunk: bytes | None) -> list[bytes | None]:
        buffers = self.doc.get("buffers", [])
        total = sum(int(b["byteLength"]) for b in buffers)
        if total > self.max_bytes:
            raise AssetError("buffers", f"total byteLength {total} exceeds the limit max_bytes={self.max_bytes}")
        out: list[bytes | None] = []
        bin_used = False
        for i, b in enumerate(buffers):
            where = f"buffers[{i}]"
            self.part = where
            declared = int(b["byteLength"])
            uri = b.get("uri")
            if uri is None:
                if is_binary and i == 0:
                    if bin_chunk is None:
                        raise AssetError(where, "refers to the GLB BIN chunk, but the file has none")
                    if len(bin_chunk) < declared:
                        raise AssetError(f"{where}.byteLength", f"byteLength {declared} exceeds the GLB BIN chunk "
                                                                f"({len(bin_chunk)} bytes)")
                    if len(bin_chunk) - declared > 3:
                        self.warn(f"{where}.byteLength", f"GLB BIN chunk has {len(bin_chunk) - declared} bytes more "
                                                         "than byteLength (expected at most 3 bytes of padding)")
                    bin_used = True
                    out.append(bin_chunk)
                else:
                    out.append(None)  # placeholder buffer: valid, but unreadable if something uses it
                continue
            if is_binary and uri.startswith("data:"):
                self.warn(f"{where}.uri", "data: URI inside a GLB")
            data = self.resolve_uri(uri, f"{where}.uri", BUFFER_MIME)
            if len(data) != declared:
                raise AssetError(f"{where}.byteLength", f"byteLength {declared} does not match the data "
                                                        f"({len(data)} bytes)")
            out.append(data)
        if bin_chunk is not None and not bin_used:
            self.warn("GLB BIN chunk", "present but no buffer refers to it")
        return out

    def resolve_uri(self, uri: str, where: str, mimes: tuple[str, ...]) -> bytes:
        """The bytes a buffer or image URI names, by the loader's rules: a base64 ``data:`` URI of one of
        ``mimes``, or a relative path inside the asset's folder (AssetError naming ``where`` otherwise)."""
        if uri.startswith("data:"):
            m = _DATA_URI_RE.match(uri)
            if m is None or not m.group(3):
                raise AssetError(where, "data URI must be base64 encoded ('data:<mime>;base64,...')")
            mime = m.group(1)
            if mime not in mimes:
                raise AssetError(where, f"data URI MIME type {mime!r} is not one of {', '.join(mimes)}")
            payload = m.group(4)
            if len(payload) * 3 // 4 > self.max_bytes:
                raise AssetError(where, f"data URI payload exceeds the limit max_bytes={self.max_bytes}")
            try:
                return base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise AssetError(where, f"invalid base64 data: {exc}") from exc
        return self._read_relative(uri, where)

    def _read_relative(self, uri: str, where: str) -> bytes:
        """Read a file named by a relative URI; refuse anything that would leave the asset's folder."""
        if _SCHEME_RE.match(uri):
            scheme = uri.split(":", 1)[0]
            raise AssetError(where, f"URI scheme {scheme!r} is not allowed (only relative paths and data: URIs)")
        if uri.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", uri):
            raise AssetError(where, f"absolute path {uri!r} is not allowed (URIs must be relative)")
        if "?" in uri or "#" in uri:
            raise AssetError(where, f"URI {uri!r} with a query or fragment is not allowed")
        rel = unquote(uri)
        if "\x00" in rel:
            raise AssetError(where, "URI contains a NUL character")
        parts = re.split(r"[/\\]", rel)
        if any(p == ".." for p in parts):
            raise AssetError(where, f"URI {uri!r} leaves the asset's folder ('..' is not allowed)")
        if rel.startswith(("/", "\\")):
            raise AssetError(where, f"absolute path {uri!r} is not allowed (URIs must be relative)")
        folder = self.path.resolve().parent
        target = (folder / rel).resolve()
        if target != folder and folder not in target.parents:
            raise AssetError(where, f"URI {uri!r} resolves outside the asset's folder")
        try:
            size = target.stat().st_size
            if not target.is_file():
                raise AssetError(where, f"{rel!r} is not a regular file")
            if size > self.max_bytes:
                raise AssetError(where, f"{rel!r} has {size} bytes, over the limit max_bytes={self.max_bytes}")
            self.spend(size, where)
            return target.read_bytes()
        except OSError as exc:
            raise AssetError(where, f"cannot read {rel!r}: {exc.strerror or exc}") from exc
