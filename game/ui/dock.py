"""Docked panels around a central view (imgui docking, imgui-bundle): the editor's and the demo's layout.

    dock = DockLayout(left=("Tools",), right=("Character",), bottom=("Undo history", "Messages"))
    def build() -> None:                         # inside an ImGuiLayer frame (docking on)
        rect = dock.begin()                      # the dockspace over the window, below the menu bar
        ... panels: imgui.begin("Tools") ...     # docked by name into the default layout
    dock.view_rect                               # (x, y, w, h) window pixels of the central node

A dockspace covers the main viewport's work area (the window below the main menu bar). Its central node is
pass-through (no background, no mouse): the scene shows there and the pointer reaches the tools. Panels cannot
dock over the central node, so a docked panel never covers the character; the host keeps the scene's camera
image inside :attr:`DockLayout.view_rect` (engine.render.camera ``view_rect``). The first time (no layout in
the imgui ini file) the default layout is built: a left column, a right column and a bottom row, each split
into a panel per named window or tab stack; afterwards the user's splits, sizes and tabs come back from the
ini file (the layer's ``ini_path``, game/ui/userdirs.py).
"""
from __future__ import annotations

from collections.abc import Sequence

from imgui_bundle import imgui

__all__ = ["DockLayout", "DOCKSPACE_NAME"]

#: the dockspace's imgui id string (its layout is stored under it in the ini file)
DOCKSPACE_NAME = "skinengine dockspace"


class DockLayout:
    """A dockspace with a pass-through central view and a default layout (see the module docstring).
    ``left``/``right``/``bottom``: what is docked there by default, each a sequence of groups: a window name
    (a panel of its own: a column's are stacked, the bottom row's side by side) or a tuple of names (a tab
    stack, the first shown); ``sizes``: the fractions of the window those columns and the row take."""

    def __init__(self, *, left: Sequence[str | Sequence[str]] = (), right: Sequence[str | Sequence[str]] = (),
                 bottom: Sequence[str | Sequence[str]] = (),
                 sizes: tuple[float, float, float] = (0.22, 0.24, 0.22)) -> None:
        for s in sizes:
            if not 0.05 <= s <= 0.45:
                raise ValueError(f"dock sizes must be fractions in [0.05, 0.45], got {sizes!r}")
        self.left, self.right, self.bottom = tuple(left), tuple(right), tuple(bottom)
        self.sizes = sizes
        #: the central node in window pixels (x, y, w, h; y from the top) after the last :meth:`begin`
        self.view_rect: tuple[float, float, float, float] | None = None
        self._built = False
        self.reset_requested = False

    def begin(self) -> tuple[float, float, float, float] | None:
        """Submit the dockspace (call first in the frame, after the main menu bar); builds the default layout
        when there is none (or after :meth:`reset`). Returns :attr:`view_rect`."""
        internal = imgui.internal
        vp = imgui.get_main_viewport()
        dock_id = imgui.get_id(DOCKSPACE_NAME)
        node = internal.dock_builder_get_node(dock_id)
        if self.reset_requested or node is None or (not self._built and node.is_leaf_node()):
            self._build(dock_id, vp)
        self._built = True
        self.reset_requested = False
        flags = imgui.DockNodeFlags_.passthru_central_node | imgui.DockNodeFlags_.no_docking_over_central_node
        imgui.dock_space_over_viewport(dock_id, vp, flags)
        central = internal.dock_builder_get_central_node(dock_id)
        if central is None:
            self.view_rect = None
        else:
            p, s = central.pos, central.size
            self.view_rect = (float(p.x), float(p.y), float(s.x), float(s.y))
        return self.view_rect

    def reset(self) -> None:
        """Build the default layout again at the next :meth:`begin` (the View menu's "reset layout")."""
        self.reset_requested = True

    def _build(self, dock_id: int, vp: imgui.Viewport) -> None:
        internal = imgui.internal
        internal.dock_builder_remove_node(dock_id)
        internal.dock_builder_add_node(dock_id, internal.DockNodeFlagsPrivate_.dock_space)
        internal.dock_builder_set_node_size(dock_id, vp.work_size)
        rest = dock_id
        left_w, right_w, bottom_h = self.sizes
        placed: list[tuple[Sequence[str | Sequence[str]], int]] = []
        if self.left:
            _, left, rest = internal.dock_builder_split_node_py(rest, imgui.Dir.left, left_w)
            placed.append((self.left, left))
        if self.right:
            _, right, rest = internal.dock_builder_split_node_py(rest, imgui.Dir.right, right_w / (1.0 - left_w))
            placed.append((self.right, right))
        bottom_node = -1
        if self.bottom:
            _, bottom_node, rest = internal.dock_builder_split_node_py(rest, imgui.Dir.down, bottom_h)
            placed.append((self.bottom, bottom_node))
        for groups, node in placed:
            self._fill(node, groups, imgui.Dir.down if node != bottom_node else imgui.Dir.right)
        internal.dock_builder_finish(dock_id)

    @staticmethod
    def _fill(node: int, groups: Sequence[str | Sequence[str]], direction: imgui.Dir) -> None:
        """Split ``node`` into one part per group (equal shares, along ``direction``: stacked in a column,
        side by side in the bottom row); a group of several names is a tab stack, the first shown."""
        internal = imgui.internal
        parts = [(g,) if isinstance(g, str) else tuple(g) for g in groups]
        for k, names in enumerate(parts):
            here = node
            if k < len(parts) - 1:  # split this group's share off the start; the rest goes on
                opposite = imgui.Dir.up if direction == imgui.Dir.down else imgui.Dir.left
                _, here, node = internal.dock_builder_split_node_py(node, opposite, 1.0 / (len(parts) - k))
            for name in names:
                internal.dock_builder_dock_window(name, here)
