"""``cutscene export-otio``: the shots as an OpenTimelineIO timeline (the ``opentimelineio`` package), for
editing downstream (DaVinci Resolve, Premiere, Avid through OTIO's adapters).

One video track holds one clip per shot, named after its camera, with a source range of the shot's frames at
the cutscene's rate; each clip's media reference points at the rendered frames (``frame_%04d.png`` in
``--frames DIR``, an ``ImageSequenceReference``) when given, else it is missing. The events become markers on
the track at their frames. The timeline's global start time is frame 0.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from game.cutscene.document import Cutscene

__all__ = ["timeline", "write_otio"]


def timeline(doc: Cutscene, *, frames_dir: str | None = None) -> Any:
    """The OTIO Timeline of ``doc``'s shots (and events as markers)."""
    import opentimelineio as otio

    rate = float(doc.fps)
    tl = otio.schema.Timeline(name=Path(doc.name).stem)
    tl.global_start_time = otio.opentime.RationalTime(0, rate)
    track = otio.schema.Track(name="shots", kind=otio.schema.TrackKind.Video)
    for shot in doc.shots():
        rng = otio.opentime.TimeRange(otio.opentime.RationalTime(shot.first, rate),
                                      otio.opentime.RationalTime(shot.last - shot.first + 1, rate))
        if frames_dir is not None:
            media: Any = otio.schema.ImageSequenceReference(
                target_url_base=str(Path(frames_dir).as_posix()).rstrip("/") + "/", name_prefix="frame_",
                name_suffix=".png", start_frame=0, frame_step=1, rate=rate, frame_zero_padding=4,
                available_range=otio.opentime.TimeRange(otio.opentime.RationalTime(0, rate),
                                                        otio.opentime.RationalTime(doc.frames, rate)))
        else:
            media = otio.schema.MissingReference()
        clip = otio.schema.Clip(name=shot.camera, media_reference=media, source_range=rng)
        clip.metadata["skinengine"] = {"camera": shot.camera, "first": shot.first, "last": shot.last}
        track.append(clip)
    for e in doc.event_frames():
        track.markers.append(otio.schema.Marker(
            name=e["name"], marked_range=otio.opentime.TimeRange(otio.opentime.RationalTime(e["frame"], rate),
                                                                 otio.opentime.RationalTime(0, rate)),
            metadata={"skinengine": {"time": e["time"]}}))
    tl.tracks.append(track)
    return tl


def write_otio(doc: Cutscene, out: Path, *, frames_dir: str | None = None) -> Path:
    import opentimelineio as otio

    out.parent.mkdir(parents=True, exist_ok=True)
    otio.adapters.write_to_file(timeline(doc, frames_dir=frames_dir), str(out))
    return out
