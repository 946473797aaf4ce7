"""``cutscene render``: the frames drawn by a backend (game/cutscene/backends.py) into a PNG sequence, then, for a
movie, encoded through PyAV (FFmpeg's libraries from the ``av`` wheel; no system ffmpeg).

* ``DIR/`` (or an existing folder): ``frame_0000.png``, ``frame_0001.png``, ... (numbered by document frame) and
  ``events.json``.
* ``MOVIE.mp4|.mkv|.mov``: the frames are kept beside it in ``MOVIE.mp4.frames/`` (what a resumed render
  reuses) and encoded with ``--codec``: ``h264`` (yuv420p, needs an even width and height), ``ffv1`` (lossless:
  its decoded frames equal ``cutscene frame`` exactly) or ``png`` (lossless, in .mov/.mkv); the events go to
  ``MOVIE.events.json``.

Resume: a frame file already there is kept when it decodes as a PNG of the right size and the folder's
``render.json`` says it was drawn from the same document, size and device; anything else (a truncated file) is
drawn again, and the frame files of another document are removed first (so a later run cannot keep them).
Files are written under a temporary name and renamed, so a killed render leaves no half-written frame under a
final name.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from game.cutscene.document import Cutscene, CutsceneError

__all__ = ["CODECS", "MOVIE_SUFFIXES", "Output", "plan_output", "parse_range", "frame_name", "valid_frame",
           "render_cutscene", "encode_movie", "RenderResult"]

CODECS = ("h264", "ffv1", "png")
MOVIE_SUFFIXES = (".mp4", ".mkv", ".mov", ".avi")
_AV_CODEC = {"h264": ("libx264", "yuv420p"), "ffv1": ("ffv1", "bgr0"), "png": ("png", "rgb24")}


@dataclass(frozen=True)
class Output:
    """Where a render goes: ``frames`` the PNG folder; ``movie`` the movie file (None for a PNG sequence);
    ``codec``; ``events`` the events JSON."""

    frames: Path
    movie: Path | None
    codec: str
    events: Path


def plan_output(out: str, codec: str | None, width: int, height: int) -> Output:
    """Read ``--out`` and ``--codec`` (refusing what cannot be written, with the reason)."""
    if codec is not None and codec not in CODECS:
        raise ValueError(f"--codec must be one of {', '.join(CODECS)}, got {codec!r}")
    p = Path(out)
    is_dir = out.endswith(("/", os.sep)) or p.is_dir()
    if is_dir:
        if codec not in (None, "png"):
            raise ValueError(f"--out {out} is a folder: a PNG sequence (--codec png); give a movie file "
                             f"(MOVIE.mp4 or .mkv) for --codec {codec}")
        return Output(p, None, "png", p / "events.json")
    suffix = p.suffix.lower()
    if suffix not in MOVIE_SUFFIXES:
        raise ValueError(f"--out must be a folder ending in / (PNG sequence) or a movie file ending in "
                         f"{', '.join(MOVIE_SUFFIXES)}, got {out!r}")
    codec = codec or "h264"
    if codec == "h264" and (width % 2 or height % 2):
        raise ValueError(f"--codec h264 cannot encode {width}x{height}: h264 (yuv420p) halves the colour resolution "
                         "and needs an even width and height; use an even size or --codec ffv1 (lossless)")
    if codec == "png" and suffix == ".mp4":
        raise ValueError("--codec png does not go into .mp4; use a .mov or .mkv file, or a folder ending in / for a "
                         "PNG sequence")
    return Output(p.parent / (p.name + ".frames"), p, codec, p.with_suffix(".events.json"))


def parse_range(text: str | None, frames: int) -> list[int]:
    """``--range A:B`` (frames A to B inclusive; either side may be left out) as a list of frames."""
    if text is None:
        return list(range(frames))
    a, sep, b = text.partition(":")
    try:
        if not sep:
            raise ValueError
        first = int(a) if a.strip() else 0
        last = int(b) if b.strip() else frames - 1
    except ValueError:
        raise ValueError(f"--range must look like A:B (first and last frame, inclusive), got {text!r}") from None
    if not 0 <= first <= last < frames:
        raise ValueError(f"--range {text}: valid frames are 0..{frames - 1} with A <= B, got {first}..{last}")
    return list(range(first, last + 1))


def frame_name(k: int) -> str:
    return f"frame_{k:04d}.png"


def valid_frame(path: Path, width: int, height: int) -> bool:
    """The file decodes completely as a PNG of ``width`` x ``height``."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            if im.format != "PNG" or im.size != (width, height):
                return False
            im.load()  # a truncated file fails here
    except (OSError, ValueError, SyntaxError):
        return False
    return True


def _fingerprint(doc: Cutscene, width: int, height: int, device: str, preroll: float) -> str:
    text = doc.dumps() + f"\n{width}x{height} {device} preroll={preroll!r}"
    return hashlib.sha256(text.encode()).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@dataclass
class RenderResult:
    frames: list[int]
    drawn: list[int]
    kept: list[int]
    seconds: float
    output: Output


def render_cutscene(doc: Cutscene, output: Output, frames: list[int], *, backend: str = "serial",
                    workers: int = 1, address: str | None = None, preroll: float = 1.0, device: str = "gpu",
                    width: int | None = None, height: int | None = None,
                    bar: Callable[..., Any] | None = None) -> RenderResult:
    """Draw ``frames`` of ``doc`` into ``output.frames`` (keeping valid ones), encode the movie when there is one,
    write the events. ``bar``: a tqdm-like factory (``bar(total=..., unit=...)``) for progress."""
    from game.cutscene.backends import plan_units, run_units
    from game.cutscene.player import check_assets
    from game.cutscene.player import frame_dependent as is_frame_dependent

    w, h = int(width or doc.width), int(height or doc.height)
    if not (0 <= preroll <= 600):
        raise ValueError(f"--preroll must be in [0, 600] seconds, got {preroll!r}")
    if not 1 <= workers <= 256:
        raise ValueError(f"--workers must be in [1, 256], got {workers}")
    check_assets(doc)
    frame_dependent = is_frame_dependent(doc)  # decides the units: frames or whole shots

    folder = output.frames
    folder.mkdir(parents=True, exist_ok=True)
    stamp = folder / "render.json"
    finger = _fingerprint(doc, w, h, device, preroll if frame_dependent else 0.0)
    same = False
    if stamp.is_file():
        try:
            same = json.loads(stamp.read_text()).get("fingerprint") == finger
        except (OSError, ValueError):
            same = False
    if not same:  # frames of another document (or size, device): none of them may be kept by a later run
        for old in folder.glob("frame_[0-9][0-9][0-9][0-9]*.png"):
            old.unlink()
    kept = [k for k in frames if same and valid_frame(folder / frame_name(k), w, h)]
    todo = [k for k in frames if k not in set(kept)]
    stamp.write_text(json.dumps({"fingerprint": finger, "document": str(doc.path or ""), "width": w, "height": h,
                                 "device": device}) + "\n")

    t0 = time.perf_counter()
    progress = bar(total=len(frames), initial=len(kept), unit="frame", desc="cutscene") if bar else None
    try:
        if todo:
            units = plan_units(doc, todo, frame_dependent=frame_dependent, workers=workers)
            job = {"doc_text": doc.dumps(), "doc_path": str(doc.path or "cutscene.toml"), "device": device,
                   "width": w, "height": h, "preroll": preroll}
            for done in run_units(backend, units, job, workers=workers, address=address):
                for k, png in done:
                    _write_atomic(folder / frame_name(k), png)
                if progress is not None:
                    progress.update(len(done))
    finally:
        if progress is not None:
            progress.close()
    seconds = time.perf_counter() - t0
    if output.movie is not None:
        encode_movie(folder, frames, output.movie, output.codec, doc.fps)
    output.events.parent.mkdir(parents=True, exist_ok=True)
    output.events.write_text(json.dumps(doc.event_frames(), indent=1) + "\n")
    return RenderResult(frames, todo, kept, seconds, output)


def encode_movie(folder: Path, frames: list[int], movie: Path, codec: str, fps: float) -> None:
    """Encode the PNG frames (in order) into ``movie`` with PyAV; written under a temporary name, then renamed."""
    from fractions import Fraction

    import av
    from PIL import Image

    name, pix_fmt = _AV_CODEC[codec]
    movie.parent.mkdir(parents=True, exist_ok=True)
    tmp = movie.with_name(movie.stem + ".part" + movie.suffix)
    rate = Fraction(fps).limit_denominator(1001)
    try:
        with av.open(str(tmp), "w") as container:
            stream = container.add_stream(name, rate=rate)
            assert isinstance(stream, av.VideoStream)
            first = np.asarray(Image.open(folder / frame_name(frames[0])).convert("RGB"))
            stream.height, stream.width = first.shape[:2]
            stream.pix_fmt = pix_fmt
            if codec == "h264":
                stream.options = {"crf": "18", "preset": "medium"}
            for k in frames:
                with Image.open(folder / frame_name(k)) as im:
                    rgb = np.asarray(im.convert("RGB"))
                for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
    except (av.FFmpegError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise CutsceneError(f"cannot encode {movie.name} with --codec {codec}: {exc}") from None
    os.replace(tmp, movie)
