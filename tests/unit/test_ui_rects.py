"""The UI cache's rectangle logic (game/ui/ui_cache.py), without GL: intersections, merging, the disjoint cover
the composite blends (each pixel exactly once), dirty rectangles between two frames' lists, tile covers."""
from __future__ import annotations

import numpy as np
import pytest

from game.ui.ui_cache import (
    DrawCommand,
    DrawList,
    dirty_rects,
    disjoint_cover,
    intersect,
    merge_overlapping,
    tile_cover,
)

W, H = 64, 48


def _mask(rects, *, count: bool = False) -> np.ndarray:
    m = np.zeros((H, W), np.int32)
    for x0, y0, x1, y1 in rects:
        m[y0:y1, x0:x1] += 1
    return m if count else m > 0


def _random_rects(rng: np.random.Generator, n: int) -> list[tuple[int, int, int, int]]:
    out = []
    for _ in range(n):
        x0, y0 = int(rng.integers(0, W - 1)), int(rng.integers(0, H - 1))
        out.append((x0, y0, int(rng.integers(x0 + 1, W + 1)), int(rng.integers(y0 + 1, H + 1))))
    return out


def test_intersect():
    assert intersect((0, 0, 10, 10), (5, 5, 20, 20)) == (5, 5, 10, 10)
    assert intersect((0, 0, 10, 10), (10, 0, 20, 10)) is None  # touching edges share no pixel
    assert intersect((0, 0, 10, 10), (2, 3, 4, 5)) == (2, 3, 4, 5)


@pytest.mark.parametrize("seed", range(20))
def test_disjoint_cover_is_the_union_once(seed):
    rects = _random_rects(np.random.default_rng(seed), int(np.random.default_rng(seed).integers(1, 8)))
    cover = disjoint_cover(rects)
    counts = _mask(cover, count=True)
    assert counts.max() == 1  # no pixel blended twice
    assert np.array_equal(counts > 0, _mask(rects))  # exactly the union
    assert len(cover) <= 4 * len(rects) ** 2


def test_disjoint_cover_of_nothing_and_of_one():
    assert disjoint_cover([]) == []
    assert disjoint_cover([(3, 4, 3, 9)]) == []  # empty rectangles draw nothing
    assert disjoint_cover([(1, 2, 5, 6)]) == [(1, 2, 5, 6)]


@pytest.mark.parametrize("seed", range(10))
def test_merge_overlapping_keeps_every_pixel_and_leaves_no_overlap(seed):
    rects = _random_rects(np.random.default_rng(100 + seed), 6)
    merged = merge_overlapping(rects)
    assert (_mask(merged) >= _mask(rects)).all()
    for i, a in enumerate(merged):
        for b in merged[i + 1:]:
            assert intersect(a, b) is None


def _list(digest: int, rect, *, cmds=1) -> DrawList:
    return DrawList((digest, 4, 6), tuple(DrawCommand(0, 6, 1, rect) for _ in range(cmds)), rect)


def test_dirty_rects_between_frames():
    a, b, c = (0, 0, 10, 10), (20, 20, 30, 30), (5, 5, 25, 25)
    prev = [_list(1, a), _list(2, b)]
    assert dirty_rects(prev, [_list(1, a), _list(2, b)]) == []  # nothing changed
    assert dirty_rects(prev, [_list(1, a), _list(3, b)]) == [b, b]  # content changed in place
    assert dirty_rects(prev, [_list(1, a), _list(2, c)]) == [b, c]  # moved: old and new place
    assert dirty_rects(prev, [_list(1, a)]) == [b]  # closed
    assert dirty_rects(prev, [_list(1, a), _list(2, b), _list(4, c)]) == [c]  # opened
    assert dirty_rects(prev, [_list(2, b), _list(1, a)]) == [a, b, b, a]  # z-order swapped
    # the same bytes drawn with other commands (another scissor) is a change too
    moved_cmd = DrawList((1, 4, 6), (DrawCommand(0, 6, 1, c),), a)
    assert dirty_rects(prev[:1], [moved_cmd]) == [a, a]
    # where its indices sit in the frame's buffer is not content
    assert dirty_rects(prev[:1], [prev[0]._replace(base=96)]) == []


def test_tile_cover_holds_every_box_and_is_tight():
    # a thin diagonal of boxes (a posing plane's edge) in imgui's rows (row 0 at the top)
    boxes = np.array([[x, x * 0.5, x + 3.0, x * 0.5 + 3.0] for x in range(0, 40, 4)], np.float64)
    cover = tile_cover(boxes, H, (0, 0, W, H), tile=8)
    mask = _mask(cover)
    assert _mask(cover, count=True).max() == 1
    for x0, y0, x1, y1 in boxes:  # GL rows: flipped
        gy0, gy1 = H - int(np.ceil(y1)), H - int(np.floor(y0))
        assert mask[gy0:gy1, int(x0):int(np.ceil(x1))].all()
    assert mask.sum() < 0.5 * (44 * 24)  # well under the bounding box
    assert tile_cover(np.zeros((0, 4)), H, (0, 0, W, H)) == ()
    # clipped to `within`
    assert all(intersect(r, (0, 0, 16, 48)) == r for r in tile_cover(boxes, H, (0, 0, 16, 48), tile=8))
