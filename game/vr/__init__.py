"""The VR application: the VR session (devices -> events, tools, stereo frame, controller camera) over the
one frame; the `vr` command (game/commands/vr.py) runs it."""
