"""The editor window: a pyglet window whose input goes through the one event model (engine/input/events.py)
into the editor's systems (game/editor/), and the real-time replay of a recording.

``python main.py --record FILE`` opens it on the humanoid (or ``--asset``), recording the session to FILE;
``python main.py replay FILE`` (with a display) plays a recording back in it. Controls (game/editor/systems.py
``KEY_BINDINGS``): P pose tool (left-drag draws a baseline, then an offset stroke), B bulge tool and S
silhouette tool (surface edits, game/editor/surface.py; the Tools panel sets them), Shift+W the Weights tool
(game/editor/weights_edit.py), O orbit tool, right-drag
orbits, middle-drag pans, wheel zooms, Ctrl+Z / Ctrl+Shift+Z undo / redo, Space pause, ``.`` one step,
``[`` / ``]`` time scale, K the skeleton (a click on a joint: its rotate gizmo, game/editor/joint_ui.py), Ctrl+K
keys the pose, Ctrl+O / Ctrl+S / Ctrl+Shift+S open / save / save as (game/editor/files.py), Esc drops the
strokes (and quits when there are none, asking first when edits are unsaved). With ``editor --cutscene FILE``
the cutscene's timeline panel docks along the bottom (game/editor/cutscene_panel.py): C the live camera, Shift+K
a pose key.

The panels dock around a central view (game/ui/dock.py) under a menu bar; the scene's camera image fills the
central view (its ``view_rect``, set at once and recorded as a ``view_rect`` action). From the command line the
layout is kept in the user's config folder and the session autosaved to the user's cache
(game/editor/autosave.py).
"""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from engine.controls import VIEW_HELP
from game.ui.colours import BASELINE_RGB, JOINT_RGB, OFFSET_RGB, rgba

__all__ = ["run_editor", "run_editor_window", "replay_window", "EditorUI", "HELP_LINES",
           "select_at"]

#: The help overlay (H): every key and mouse control of the editor window: its tools, then the controls every
#: window shares (engine/controls.py), then its Esc (the demo's help has the same layout).
HELP_LINES = (
    "P  pose tool: left-drag a baseline",
    "   along a limb, then an offset stroke",
    "   where it should go; drag their knots",
    "   (dots) to adjust the pose",
    "B  bulge tool: left-drag a stroke on the",
    "   skin; = / - height, R / Shift+R rings;",
    "   then drag the stroke to move it",
    "S  silhouette tool: left-drag beside an",
    "   outline (view from the side)",
    "O  orbit tool (left-drag orbits too)",
    "Shift+W weights tool: paint the joint",
    "   (Tools panel: joint, brush, drag a",
    "   vertex, influence region)",
    "click a character to select it",
    "K  skeleton: click a joint, then drag",
    "   its gizmo's rings to turn it",
    "Ctrl+K key the pose at the playhead",
    "Ctrl+Z undo, Ctrl+Shift+Z redo",
    "Ctrl+O open, Ctrl+S save, +Shift: as",
    "cutscene: C live camera, Shift+K key",
    "   the pose at the playhead",
    *VIEW_HELP,
    "Esc drop strokes (quit when none)",
)
#: seconds between two refreshes of the profiler panel in the editor (its numbers stay readable, and the
#: cached UI layer redraws it only then)
PROFILER_REFRESH_S = 0.25
_SPRING_PARAMS = (("spring_k_s", "k_s (shape)", 0.0, 2.0), ("spring_k_l", "k_l (length)", 0.0, 2.0),
                  ("spring_k_t", "k_t (twist)", 0.0, 2.0), ("spring_k_b", "k_b (bend)", 0.0, 2.0),
                  ("spring_k_v", "k_v (volume)", 0.0, 8.0),
                  ("spring_dt", "dt", 0.001, 1.0), ("spring_damping", "damping", 0.0, 0.95))
_PLANE = (("plane_offset", "plane offset m", -1.0, 1.0), ("plane_turn", "plane turn deg", -90.0, 90.0),
          ("plane_tilt", "plane tilt deg", -80.0, 80.0))
_CONVERGENCE = ("iterations", "displacement", "force", "energy")
_INTEGRATORS = ("semi_implicit", "explicit")  # the default first; "explicit" is the research's eq. 23
#: how often (Hz) the character panel's clip time readout changes while the clip plays
TIME_READOUT_HZ = 10.0
#: the questions the editor asks: name -> (title, [(button, answer)]); keys: quit S / D / Esc (cancel),
#: restore R / D
PROMPTS = {"quit": ("Unsaved changes", [("Save (S)", "save"), ("Discard (D)", "discard"), ("Cancel (Esc)", "cancel")]),
           "restore": ("Restore the last session", [("Restore (R)", "restore"), ("Discard (D)", "discard")])}
_COLOURS = {"baseline": rgba(BASELINE_RGB), "offset": rgba(OFFSET_RGB), "drawing": (1.0, 1.0, 1.0, 0.9),
            "brush": (1.0, 1.0, 1.0, 0.5), "joint": rgba(JOINT_RGB), "plane": (0.6, 0.9, 0.6, 0.45),
            "hull": (1.0, 0.85, 0.2, 0.9), "reach": (0.2, 1.0, 1.0, 1.0)}


class EditorUI:
    """The editor's imgui panels and stroke overlay, drawn through the session's imgui overlay (game/ui):
    tool palette, brush radius, RDP epsilon, the selected character's deformer and parameters, clip
    transport, undo history, messages and the help (H). Widgets never change state themselves: they push
    :class:`engine.input.events.Action` events into the editor's queue, so a recording replays them."""

    def __init__(self, editor: Any, *, show_help: bool = True, live: bool = True,
                 persist_layout: bool = False, cutscene: Any = None) -> None:
        from game.editor.joint_ui import JointUI
        from game.ui.dock import DockLayout
        from game.ui.filedialog import FileDialog
        from game.ui.overlay import SessionOverlay
        from game.ui.userdirs import layout_ini_path

        self.editor = editor
        #: the cutscene open with ``editor --cutscene`` (game/editor/cutscene_panel.py), or None
        self.cutscene = cutscene
        #: the docked layout: tools on the left, the character and joint panels on the right, messages, undo
        #: history, help and profiler along the bottom (with a cutscene: its timeline first, the messages and
        #: the history as tabs), the scene in the centre (game/ui/dock.py)
        bottom: tuple[Any, ...] = ("Messages", "Undo history", ("Help (H)", "Profiler (P)"))
        if cutscene is not None:
            from game.editor.cutscene_panel import PANEL

            bottom = (PANEL, ("Messages", "Undo history"), ("Help (H)", "Profiler (P)"))
        self.dock = DockLayout(left=("Tools",), right=("###character", "Joint"), bottom=bottom)
        self.live = bool(live)
        self.overlay = SessionOverlay(editor.session, show_profiler=False, show_help=show_help,
                                      help_lines=HELP_LINES, profiler_at=(260.0, 8.0),
                                      profiler_refresh_s=PROFILER_REFRESH_S, dock=self.dock,
                                      ini_path=layout_ini_path("editor") if persist_layout else "",
                                      menu=self._menu, on_view_rect=self._view_rect)
        self.overlay.panels.append(self.draw)
        #: the file question (native dialog or typed path) of Open / Save as
        self.files = FileDialog()
        #: what the menu asked for ("open", "save", "save_as", "quit"): the window loop carries it out
        self.requests: list[str] = []
        self.joints = JointUI(self)
        self.overlay.layer.captures_mouse = self.joints.captures_mouse
        # the posing plane's outline and the selected joints in window pixels, kept while what they are
        # computed from (root / joints, camera, settings, window size) stays the same: (key, points)
        self._memo: dict[str, tuple[Any, Any]] = {}
        self._scrubbing = False  # the time slider is being dragged: it shows the exact time
        self._seen_messages = 0  # the Messages panel scrolls to a new message
        self._seen_cursor = -1  # the undo history scrolls to a new current entry
        #: the question being asked: "quit" (unsaved changes: save / discard / cancel) or "restore" (an
        #: autosave was left behind: restore / discard); ``choice``: the answer, read by the window loop
        self.asking: str | None = None
        self.choice: str | None = None

    @property
    def confirm_quit(self) -> bool:
        """The unsaved-changes prompt is open."""
        return self.asking == "quit"

    def ask(self, what: str) -> None:
        """Open the "quit" or "restore" prompt (its keys: S/D/Esc, R/D)."""
        if what not in PROMPTS:
            raise ValueError(f"unknown prompt {what!r}; prompts: {', '.join(PROMPTS)}")
        self.asking, self.choice = what, None

    def act(self, action: str, /, **args: Any) -> None:
        """Push an Action (recorded and replayed like any event)."""
        from engine.input.events import Action, now

        self.editor.queue.push(Action(now(), action, args))

    def _view_rect(self, frac: tuple[float, float, float, float] | None) -> None:
        """The central view moved: an action (recorded, so a replay projects as the session did)."""
        if self.live:  # at once (what the user sees), and as an action for the recording
            cam = self.editor.session.camera
            if hasattr(cam, "view_rect"):
                cam.view_rect = frac
            self.act("view_rect", rect=None if frac is None else [float(v) for v in frac])

    def draw(self) -> None:
        """All panels and the stroke overlay (inside an imgui frame)."""
        self._strokes()
        self.joints.draw()
        self._tools()
        self._character()
        self._messages()
        self._history()
        if self.cutscene is not None:
            self.cutscene.draw()
        self.files.draw()
        if self.asking is not None:
            self._prompt()

    def _menu(self) -> None:
        """The main menu bar: File, Edit, View (each entry names its key)."""
        from imgui_bundle import imgui

        if not imgui.begin_main_menu_bar():
            return
        st = self.editor.state
        if imgui.begin_menu("File"):
            for label, key, request in (("Open...", "Ctrl+O", "open"), ("Save", "Ctrl+S", "save"),
                                        ("Save as...", "Ctrl+Shift+S", "save_as"), ("Quit", "Esc", "quit")):
                if imgui.menu_item(label, key, False)[0]:
                    self.requests.append(request)
            imgui.end_menu()
        if imgui.begin_menu("Edit"):
            undo = self.editor.undo
            if imgui.menu_item("Undo", "Ctrl+Z", False, undo.can_undo)[0]:
                self.act("undo")
            if imgui.menu_item("Redo", "Ctrl+Shift+Z", False, undo.can_redo)[0]:
                self.act("redo")
            if imgui.menu_item("Key pose at playhead", "Ctrl+K", False)[0]:
                self.act("key_pose")
            imgui.end_menu()
        if imgui.begin_menu("View"):
            if imgui.menu_item("Skeleton", "K", st.show_skeleton)[0]:
                self.act("skeleton")
            ov = self.overlay
            if imgui.menu_item("Profiler", "Shift+P", ov.show_profiler)[0]:
                ov.show_profiler = not ov.show_profiler
            if imgui.menu_item("Help", "H", ov.show_help)[0]:
                ov.show_help = not ov.show_help
            if imgui.menu_item("Reset layout", "", False)[0]:
                self.dock.reset()
            imgui.end_menu()
        imgui.end_main_menu_bar()

    def _prompt(self) -> None:
        """The open question (see :data:`PROMPTS`), centred over the view; its buttons or keys answer."""
        from imgui_bundle import imgui

        assert self.asking is not None
        title, choices = PROMPTS[self.asking]
        vp = imgui.get_main_viewport()
        imgui.set_next_window_pos(imgui.ImVec2(vp.work_pos.x + vp.work_size.x / 2.0,
                                               vp.work_pos.y + vp.work_size.y / 2.0), imgui.Cond_.always,
                                  imgui.ImVec2(0.5, 0.5))
        flags = imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize | imgui.WindowFlags_.no_collapse | \
            imgui.WindowFlags_.always_auto_resize | imgui.WindowFlags_.no_docking
        imgui.begin(title, None, flags)
        if self.asking == "quit":
            target = self.editor.save_path.name if self.editor.save_path else "a file you choose"
            imgui.text(f"The edits are not saved. Save them to {target}?")
        else:
            imgui.text("The last session ended without saving. Restore it?")
        for label, choice in choices:
            if imgui.button(label):
                self.choice = choice
            imgui.same_line()
        imgui.new_line()
        imgui.end()

    def _window(self, title: str, x: float, y: float, w: float) -> bool:
        """Begin a panel; False (and nothing more to draw, the window ended) when it is collapsed."""
        from imgui_bundle import imgui

        imgui.set_next_window_pos(imgui.ImVec2(x, y), imgui.Cond_.first_use_ever)
        imgui.set_next_window_size(imgui.ImVec2(w + 140.0, 240.0), imgui.Cond_.first_use_ever)
        expanded, _ = imgui.begin(title)  # docked (game/ui/dock.py): the dock node sizes it
        if not expanded:  # collapsed: its widgets are not built at all
            imgui.end()
            return False
        # widgets take half the panel (at least ``w``): their labels keep the other half, whatever the dock's size
        imgui.push_item_width(max(w, imgui.get_content_region_avail().x * 0.5))
        return True

    def _tools(self) -> None:
        from imgui_bundle import imgui

        from game.editor.state import TOOLS
        from game.ui.surface_panel import draw_surface_controls
        from game.ui.weights_panel import draw_weights_controls

        st = self.editor.state
        if not self._window("Tools", 8.0, 8.0, 110.0):
            return
        for tool in TOOLS:
            if imgui.radio_button(tool, st.settings.tool == tool) and st.settings.tool != tool:
                self.act("tool", name=tool)
        changed, v = imgui.slider_float("brush px", st.settings.brush_radius, 2.0, 200.0, "%.0f")
        if changed:
            self.act("set", brush_radius=float(v))
        changed, v = imgui.slider_float("RDP eps px", st.settings.epsilon_px, 0.0, 32.0, "%.1f")
        if changed:
            self.act("set", epsilon_px=float(v))
        n = len(st.strokes)
        if st.settings.tool == "pose":
            for key, label, lo, hi in _PLANE:
                changed, v = imgui.slider_float(label, float(getattr(st.settings, key)), lo, hi, "%.2f")
                if changed:
                    self.act("set", **{key: float(v)})
            imgui.text("draw the baseline" if n == 0 else "now the offset stroke")
        draw_surface_controls(self.editor, self.act)
        draw_weights_controls(self.editor, self.act)
        imgui.pop_item_width()
        imgui.end()

    def _messages(self) -> None:
        """What the user should read, wrapped to the panel, newest last; a new one scrolls into view."""
        from imgui_bundle import imgui

        msgs = self.editor.state.messages
        if not self._window("Messages", 8.0, 300.0, 120.0):
            return
        for m in msgs:
            imgui.text_wrapped(m)
        if len(msgs) != self._seen_messages:
            imgui.set_scroll_here_y(1.0)
            self._seen_messages = len(msgs)
        imgui.pop_item_width()
        imgui.end()

    def _character(self) -> None:
        from imgui_bundle import imgui

        from engine.skinning.registry import names as deformer_names

        ch = self.editor.selected
        if ch is None:
            return
        r = self.editor.session.renderer
        if not self._window(f"Character: {ch.name} #{ch.entity}###character", float(r.width) - 250.0, 8.0, 120.0):
            return
        methods = [d for d in deformer_names() if d != "arap"]
        idx = methods.index(ch.deformer) if ch.deformer in methods else 0
        changed, i = imgui.combo("deformer", idx, methods)
        if changed and methods[i] != ch.deformer:
            self.act("deformer", name=methods[i])
        sp = ch.config.spring
        if ch.deformer == "spring":
            cur = _INTEGRATORS.index(sp.integrator) if sp.integrator in _INTEGRATORS else 0
            changed, c = imgui.combo("integrator", cur, list(_INTEGRATORS))
            if changed:
                self.act("config", spring_integrator=_INTEGRATORS[c])
            for key, label, lo, hi in _SPRING_PARAMS:
                changed, v = imgui.slider_float(label, float(getattr(sp, key[len("spring_"):])), lo, hi, "%.3f")
                if changed:
                    self.act("config", **{key: float(v)})
            changed, it = imgui.slider_int("iterations", int(sp.max_iterations), 1, 300)
            if changed:
                self.act("config", spring_max_iterations=int(it))
            cur = _CONVERGENCE.index(sp.convergence) if sp.convergence in _CONVERGENCE else 0
            changed, c = imgui.combo("convergence", cur, list(_CONVERGENCE))
            if changed:
                self.act("config", spring_convergence=_CONVERGENCE[c])
        imgui.separator_text("clip")
        clips = ch.clips
        try:
            pb = ch.playback() if clips else None
        except ValueError:  # a cutscene's timeline plays it (editor --cutscene): the Timeline panel is its transport
            pb = None
            imgui.text("played by the cutscene's timeline")
        if pb is not None:
            changed, c = imgui.combo("clip", int(pb.clip), clips)
            if changed:
                self.act("clip", name=clips[c])
            clock = self.editor.session.clock
            if imgui.button("play" if clock.paused else "pause"):
                self.act("toggle_pause")
            imgui.same_line()
            if imgui.button("step") and clock.paused:
                self.act("step")
            duration = float(ch.asset.clips[int(pb.clip)].duration) or 1.0
            shown = float(pb.local_time)
            if not clock.paused and not self._scrubbing:
                # while the clip plays the readout ticks at TIME_READOUT_HZ: the panel's pixels (and so the UI
                # layer's redraw, game/ui/ui_cache.py) change at that rate, not every frame
                shown = math.floor(shown * TIME_READOUT_HZ) / TIME_READOUT_HZ
            changed, tv = imgui.slider_float("time", shown, 0.0, duration, "%.2f s")
            self._scrubbing = imgui.is_item_active()
            if changed:
                self.act("scrub", time=float(tv))
            changed, sv = imgui.slider_float("speed", float(ch.speed), -2.0, 2.0, "%.2f")
            if changed:
                self.act("speed", value=float(sv))
        imgui.pop_item_width()
        imgui.end()

    def _history(self) -> None:
        from imgui_bundle import imgui

        undo = self.editor.undo
        r = self.editor.session.renderer
        if not self._window("Undo history", 8.0, float(r.height) - 150.0, 120.0):
            return
        if imgui.button("undo (Ctrl+Z)"):
            self.act("undo")
        imgui.same_line()
        if imgui.button("redo (Ctrl+Shift+Z)"):
            self.act("redo")
        for i, label in enumerate(undo.history):
            current = i == undo.cursor - 1
            imgui.text_wrapped(("> " if current else "  ") + label)
            if current and undo.cursor != self._seen_cursor:  # the current entry stays in view
                imgui.set_scroll_here_y(0.5)
        self._seen_cursor = undo.cursor
        imgui.pop_item_width()
        imgui.end()

    def _strokes(self) -> None:
        """The strokes over the scene: the one being drawn, the held baseline, the last pose's baseline and
        offset (distinct colours), the selected joints and the brush circle under the pointer."""
        from imgui_bundle import imgui

        dl = imgui.get_background_draw_list()

        def col(name: str) -> int:
            return int(imgui.color_convert_float4_to_u32(imgui.ImVec4(*_COLOURS[name])))

        def poly(points: Any, colour: str, width: float = 3.0) -> None:
            pts: list[Any] = [imgui.ImVec2(float(x), float(y)) for x, y in points]
            if len(pts) >= 2:
                dl.add_polyline(pts, col(colour), width, 0)

        def curve(stroke: Any, colour: str) -> None:
            import numpy as np

            def sample() -> tuple[list[Any], list[Any]]:
                line = [imgui.ImVec2(float(x), float(y)) for x, y in stroke.point(np.linspace(0.0, 1.0, 64))]
                return line, [imgui.ImVec2(float(x), float(y)) for x, y in stroke.knots]

            # a finished stroke is drawn every frame: sampled again only when its control points change
            line, knots = self._memoised(f"curve {colour} {id(stroke)}", stroke.control_points.tobytes(), sample)
            dl.add_polyline(line, col(colour), 3.0, 0)
            for k in knots:
                dl.add_circle_filled(k, 4.0, col(colour))

        ed = self.editor
        st = ed.state
        pair = st.editable  # the last pose's strokes: their knots can be dragged
        if len(pair) == 2 and not st.strokes:
            curve(pair[0], "baseline")
            curve(pair[1], "offset")
        for i, stroke in enumerate(st.strokes):
            curve(stroke, "baseline" if i == 0 else "offset")
        if st.drawing is not None:
            poly(st.drawing.points, "baseline" if not st.strokes else "offset", 2.0)
        line = ed.surface.stroke_window() if st.settings.tool in ("bulge", "silhouette") else None
        if line is not None:  # the active surface edit's stroke where the skin is now (it follows an orbit)
            poly(line, "baseline")
        if ed.posing.last is not None and ed.selected is not None and pair and not st.strokes:
            self._joints(dl, col("joint"))
        if st.settings.tool == "pose" and ed.selected is not None:
            self._plane(dl, col("plane"))
        if st.settings.tool == "pose" and st.pointer is not None:
            dl.add_circle(imgui.ImVec2(*st.pointer), float(st.settings.brush_radius), col("brush"), 48, 1.5)
        drag = ed.weights.drag_overlay() if st.settings.tool == "weights" else None
        if drag is not None:
            self._hull(dl, drag, col("hull"), col("reach"), col("brush"))
        for iso in ed.weights.spline_overlay() if st.settings.tool == "weights" else []:
            line, ends = self._project(iso["points"]), self._project(iso["anchors"])
            if line is not None and ends is not None:
                poly(line, "hull", 2.0)
                for (x, y), v in zip(ends, iso["isos"]):
                    dl.add_circle_filled(imgui.ImVec2(x, y), 5.0, col("reach"))
                    dl.add_text(imgui.ImVec2(x + 6.0, y - 6.0), col("drawing"), f"{v:.2f}")

    def _view_key(self) -> tuple[Any, ...]:
        """What a projection to window pixels depends on: the camera's eye, target and fov, the window size."""
        s = self.editor.session
        cam = s.camera
        return (tuple(cam.eye.tolist()), tuple(cam.target.tolist()), float(cam.fov_y), s.renderer.width,
                s.renderer.height)

    def _memoised(self, name: str, key: Any, compute: Any) -> Any:
        """``compute()`` again only when ``key`` differs from the last call's under ``name``."""
        hit = self._memo.get(name)
        if hit is None or hit[0] != key:
            if len(self._memo) > 64:  # names of strokes long gone
                self._memo.clear()
            hit = (key, compute())
            self._memo[name] = hit
        return hit[1]

    def _project(self, points: Any) -> list[tuple[float, float]] | None:
        """World points (N, 3) -> window pixels (row 0 at the top); None when one is behind the camera."""
        import numpy as np

        from engine.authoring.view import window_points

        r = self.editor.session.renderer
        px = window_points(self.editor.session.camera, r.width, r.height, points)
        if np.isnan(px).any():
            return None
        return [(float(x), float(y)) for x, y in px]

    def _plane(self, dl: Any, colour: int) -> None:
        """The posing plane's outline (a 1 m square around the root) and its centre."""
        from imgui_bundle import imgui

        from engine.authoring.posing import skeleton_root
        from game.editor.posing import PosingTool

        ch, st = self.editor.selected, self.editor.state

        def outline() -> list[tuple[float, float]] | None:
            try:
                plane = PosingTool.plane(ch, self.editor.session.camera, st)
            except ValueError:
                return None
            return self._project(plane.corners(0.5))

        try:
            root = skeleton_root(ch)
        except ValueError:
            return
        settings = (st.settings.plane_offset, st.settings.plane_turn, st.settings.plane_tilt)
        pts = self._memoised("plane", (ch.entity, root.tobytes(), settings, self._view_key()), outline)
        if pts is not None:
            dl.add_polyline([imgui.ImVec2(x, y) for x, y in pts], colour, 1.5, imgui.ImDrawFlags_.closed)

    def _joints(self, dl: Any, colour: int) -> None:
        from imgui_bundle import imgui

        g = self.editor.selected.joints()[self.editor.posing.last.selected, :3, 3]
        for x, y in self._memoised("joints", (g.tobytes(), self._view_key()), lambda: self._project(g)) or []:
            dl.add_circle_filled(imgui.ImVec2(x, y), 5.0, colour)
            dl.add_circle(imgui.ImVec2(x, y), 5.5, 0xFF000000, 16, 1.0)  # a dark rim: white dots on light skin

    def _hull(self, dl: Any, drag: dict[str, Any], colour: int, reach: int, target: int) -> None:
        """A Weights-tool vertex drag: the hull LBS can reach (its q_i and edges), the reachable point (filled)
        and the pointer's target (a ring), joined when they differ."""
        from imgui_bundle import imgui

        px = self._project(drag["hull"])
        ends = self._project([drag["reached"], drag["target"]])
        if px is None or ends is None:
            return
        for i, j in drag["edges"]:
            dl.add_line(imgui.ImVec2(*px[i]), imgui.ImVec2(*px[j]), colour, 1.5)
        for x, y in px:
            dl.add_circle_filled(imgui.ImVec2(x, y), 3.5, colour)
        (rx, ry), (tx, ty) = ends
        dl.add_line(imgui.ImVec2(rx, ry), imgui.ImVec2(tx, ty), target, 1.0)
        dl.add_circle(imgui.ImVec2(tx, ty), 5.0, target, 16, 1.5)
        dl.add_circle_filled(imgui.ImVec2(rx, ry), 5.0, reach)

    def release(self) -> None:
        self.overlay.release()


def run_editor_window(ed: Any, *, frames: int | None = None, ui: bool = True,
                      before_frame: Callable[[int, Any], None] | None = None, autosave: bool = False,
                      persist_layout: bool = False, cutscene: Any = None) -> list[float]:
    """The interactive editor loop: pyglet events -> the editor's queue (imgui takes the events over its
    panels first); one frame per redraw. ``before_frame(i, window)`` runs before frame i (scripted input:
    tests dispatch pyglet events to the window there). ``autosave``: record the session to the user's cache
    and offer to restore one a crash left behind (game/editor/autosave.py); ``persist_layout``: keep the
    panel layout in the user's config folder; ``cutscene``: the CutscenePanel of ``editor --cutscene``
    (game/editor/cutscene_panel.py: its timeline panel, C the live camera, Shift+K a pose key, Ctrl+S saves the
    cutscene). Returns the frame times in ms."""
    from pyglet.window import key, mouse

    from engine.runloop import toggle_overlay, window_loop
    from game.editor import autosave as autosaving
    from game.editor.files import FileCommands

    s = ed.session
    window = s.gl.window
    if window is None:
        raise ValueError("this session has no window (Session(window=True) with a display)")
    panels = EditorUI(ed, persist_layout=persist_layout, cutscene=cutscene) if ui else None
    files = FileCommands(ed, panels, cutscene=cutscene)
    count = {"n": 0, "quit": False}
    previous = None
    if autosave:
        previous = autosaving.take_previous()
        ed.start_autosave(autosaving.autosave_path())
        if previous is not None and panels is not None:
            panels.ask("restore")

    prompt_keys = {"quit": {key.S: "save", key.D: "discard", key.C: "cancel", key.ESCAPE: "cancel"},
                   "restore": {key.R: "restore", key.D: "discard"}}

    def on_key_press(symbol: int, modifiers: int) -> bool | None:
        if panels is not None and panels.files.typed:  # the typed path takes the keys (imgui, below)
            return None
        if panels is not None and panels.asking is not None:  # a prompt takes the keys
            panels.choice = prompt_keys[panels.asking].get(symbol, panels.choice)
            return True
        ctrl, shift = bool(modifiers & key.MOD_CTRL), bool(modifiers & key.MOD_SHIFT)
        if symbol == key.S and ctrl:
            files.request("save_as" if shift else "save")
            return True
        if symbol == key.O and ctrl:
            files.request("open")
            return True
        if symbol == key.ESCAPE and not (ed.state.strokes or ed.state.drawing):
            ask_or_quit()
        elif symbol == key.H and panels is not None:
            panels.overlay.show_help = not panels.overlay.show_help
        elif cutscene is not None and not ctrl and (symbol, shift) == (key.C, False):
            cutscene.toggle_live()  # a view toggle, like H
        elif cutscene is not None and not ctrl and (symbol, shift) == (key.K, True):
            cutscene.pose_key()
        elif symbol in (key.P, key.F) and shift and panels is not None:
            # the demo's P / F; in the editor plain P is the pose tool. A view toggle, like H: not an edit
            toggle_overlay(panels.overlay, "profiler" if symbol == key.P else "freeze")
        return None

    def ask_or_quit() -> None:
        """Quit, or with unsaved edits ask first (save / discard / cancel): work is never lost unasked."""
        if ed.unsaved and panels is not None:
            panels.ask("quit")
        else:
            count["quit"] = True

    def on_close() -> bool:  # the window's close button: like Esc with no strokes
        ask_or_quit()
        return True  # handled: the loop ends by itself when it quits

    press: dict[str, Any] = {}

    def on_mouse_press(x: float, y: float, button: int, modifiers: int) -> None:
        press["at"] = (x, y, button)

    def on_mouse_release(x: float, y: float, button: int, modifiers: int) -> None:
        if press.pop("at", None) == (x, y, button) and button == mouse.LEFT:
            select_at(ed, x, window.get_size()[1] - y, window)

    def attach(window: Any) -> None:  # above the loop's event adapter: imgui, then the window keys and clicks
        if panels is not None:
            panels.overlay.attach_window(window)
            panels.overlay.settle()  # the docked layout's view rectangle holds from the first frame
        window.push_handlers(on_key_press=on_key_press, on_mouse_press=on_mouse_press,
                             on_mouse_release=on_mouse_release, on_close=on_close)

    def answer(choice: str) -> None:
        nonlocal previous
        asking = panels.asking if panels is not None else None
        if panels is not None:
            panels.asking = None
        if asking == "restore":
            rec, previous = previous, None
            if choice == "restore" and rec is not None:
                from engine.assets.errors import AssetError

                try:
                    autosaving.restore(ed, rec, window=window)
                except (AssetError, ValueError) as exc:
                    ed.state.say(f"restore refused: {exc}")
            else:
                autosaving.discard_previous()
        elif asking == "quit":
            if choice == "discard":
                count["quit"], count["discarded"] = True, True
            elif choice == "save":
                files.request("save", then_quit=True)

    def on_frame(dt: float) -> bool:
        if before_frame is not None:
            before_frame(count["n"], window)
        if panels is not None:
            while panels.requests:
                request = panels.requests.pop(0)
                if request == "quit":
                    ask_or_quit()
                else:
                    files.request(request)
            if panels.choice is not None:
                choice, panels.choice = panels.choice, None
                answer(choice)
        if files.poll():
            count["quit"] = True
        if cutscene is not None:
            cutscene.frame()
        s.frame(dt)
        title = f"skinengine editor - {ed.save_path.name if ed.save_path else ed.selected_name}" + \
            (" *" if ed.unsaved else "")
        if window.caption != title:
            window.set_caption(title)
        count["n"] += 1
        return not count["quit"] and (frames is None or count["n"] < frames)

    try:
        return window_loop(s, on_frame, attach=attach)
    finally:
        if panels is not None:
            panels.release()
        kept = ed.stop_autosave()
        if kept is not None and (not ed.unsaved or count.get("discarded")):
            kept.unlink(missing_ok=True)  # nothing left unsaved: nothing to restore next time


def select_at(ed: Any, x: float, y: float, window: Any = None) -> Any:
    """A click at window point (x, y) (row 0 at the top, window coordinates): with the skeleton shown, a joint
    under it becomes the selected joint (a ``select_joint`` action); otherwise the character the last frame
    shows there becomes the selection, through the G-buffer query, pushed as a ``select`` action (so a
    recording replays the choice, not the pixel); a click on the background keeps the selection."""
    from engine.input.events import Action, now

    s = ed.session
    r = s.renderer
    sx, sy = 1.0, 1.0
    if window is not None:
        fw, fh = window.get_framebuffer_size()
        ww, wh = window.get_size()
        sx, sy = fw / max(ww, 1), fh / max(wh, 1)
    px, py = int(x * sx), int(y * sy)
    if not (0 <= px < r.width and 0 <= py < r.height):
        return None
    ch = ed.selected
    if ed.state.show_skeleton and ch is not None:
        from engine.authoring.view import window_points
        from game.editor.joints import joint_under, skeleton_segments

        g, _bones, joints = skeleton_segments(ch)
        j = joint_under(window_points(s.camera, r.width, r.height, g), joints, x * sx, y * sy)
        if j is not None:
            ed.queue.push(Action(now(), "select_joint", {"joint": int(j)}))
            return j
    hit = s.pick(px, py)
    if hit is not None and hit.entity != ed.state.selected:
        ed.queue.push(Action(now(), "select", {"entity": int(hit.entity)}))
    return hit


def run_editor(args: argparse.Namespace) -> int:
    """``main.py`` (the default command), ``main.py editor`` or ``main.py --record FILE``: the editor window on
    ``--asset`` (default the humanoid), recorded with ``--record``."""
    from engine import Session
    from engine.gpu.context import display_present
    from game.editor import Editor

    cutscene_file = getattr(args, "cutscene", None)
    if cutscene_file:  # a refused document: one error line before any window opens
        from game.cutscene.document import load

        if args.asset or args.record:
            raise ValueError(f"--cutscene plays the cutscene's own characters: it cannot be combined with "
                             f"{'--asset' if args.asset else '--record'}")
        load(cutscene_file)
    if not display_present():
        raise ValueError("the editor needs a display (DISPLAY or WAYLAND_DISPLAY); "
                         "run it under a desktop or xvfb-run")
    deformer = None if args.deformer == "auto" else args.deformer
    with Session(window=True, width=args.width, height=args.height, device=args.device,
                 title="skinengine editor") as s:
        ed = Editor(s)
        cutscene = None
        if cutscene_file:  # the cutscene's characters are the scene (no recording or autosave of them)
            from game.editor.cutscene_panel import open_cutscene

            cutscene = open_cutscene(ed, cutscene_file, device=args.device)
        else:
            ed.spawn(args.asset or "humanoid", clip="idle" if not args.asset else 0, deformer=deformer)
            ed.frame_camera()
        if args.record:
            ed.record(args.record)
        try:
            run_editor_window(ed, frames=args.frames, autosave=cutscene is None, persist_layout=True,
                              cutscene=cutscene)
        finally:
            path = ed.stop_recording()
        if path is not None:
            print(f"recorded {path}")
        if args.screenshot:
            s.render()
            s.save_png(args.screenshot)
    return 0


def replay_window(rec: Any, *, device: str = "gpu", outputs: Callable[[Any], None] | None = None) -> int:
    """Play a recording back in a window, one recorded frame per redraw (each with its recorded dt, so the
    result is the headless replay's); ``outputs(editor)`` runs at the end. Returns the frame count."""
    from engine.runloop import window_loop
    from game.editor import open_recording

    ed = open_recording(rec, headless=False, window=True, device=device)
    panels = EditorUI(ed, live=False, persist_layout=False)  # the recording's own actions place the view
    try:
        frames = iter(rec.frames)
        done = {"n": 0}

        def on_frame(_dt: float) -> bool:
            f = next(frames, None)
            if f is None:
                return False
            ed.queue.extend(f.events)
            ed.session.frame(f.dt, interpolate=False)
            done["n"] += 1
            return True

        # the recording is the only input: the window's own events stay out of the queue
        window_loop(ed.session, on_frame, title=f"skinengine replay: {rec.path.name if rec.path else 'recording'}",
                    input_events=False)
        panels.release()  # the outputs show the scene, as a headless replay's do
        if outputs is not None:
            outputs(ed)
        return int(done["n"])
    finally:
        panels.release()
        ed.session.release()
