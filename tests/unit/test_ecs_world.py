"""World: entities, components, deferred despawn, cached queries and their invalidation, resources."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from engine.ecs import World


@dataclass
class Pos:
    x: float = 0.0


@dataclass
class Vel:
    v: float = 1.0


@dataclass
class Tag:
    pass


def rows(world, *types, **kw):
    return [(e, tuple(c)) for e, c in world.query(*types, **kw)]


def test_spawn_ids_unique_never_reused():
    w = World()
    a = w.spawn(Pos())
    w.despawn(a)
    w.flush()
    b = w.spawn(Pos())
    assert b != a and not w.is_alive(a) and w.is_alive(b)
    assert w.entities() == [b]


def test_query_matches_brute_force_after_random_structural_changes():
    w = World()
    rng = np.random.default_rng(7)
    ents = [w.spawn() for _ in range(60)]
    types = (Pos, Vel, Tag)
    for _ in range(400):
        e = ents[rng.integers(len(ents))]
        if not w.is_alive(e):
            continue
        t = types[rng.integers(3)]
        op = rng.integers(4)
        if op < 2:
            w.add(e, t())
        elif op == 2 and w.has(e, t):
            w.remove(e, t)
        elif op == 3 and rng.random() < 0.1:
            w.despawn(e)
            if rng.random() < 0.5:
                w.flush()
        # warm the cache on a rotating set of keys so invalidation is exercised
        for q, wo in (((Pos,), ()), ((Pos, Vel), ()), ((Vel,), (Tag,)), ((Pos, Vel), (Tag,))):
            got = [e2 for e2, _ in w.query(*q, without=wo)]
            want = sorted(x for x in w.entities() if w.has(x, *q) and not any(w.has(x, t2) for t2 in wo))
            assert got == want


def test_query_components_in_requested_order_and_live_objects():
    w = World()
    p, v = Pos(1.0), Vel(2.0)
    e = w.spawn(p, v)
    [(e2, (vv, pp))] = rows(w, Vel, Pos)
    assert e2 == e and vv is v and pp is p
    pp.x = 5.0  # in-place mutation is seen without any invalidation
    assert next(w.query(Pos))[1][0].x == 5.0


def test_add_replaces_and_invalidates_cached_rows():
    w = World()
    e = w.spawn(Pos(1.0))
    assert rows(w, Pos)[0][1][0].x == 1.0
    w.add(e, Pos(2.0))
    assert rows(w, Pos)[0][1][0].x == 2.0
    assert w.get(e, Pos).x == 2.0


def test_without_filter_follows_add_and_remove():
    w = World()
    a, b = w.spawn(Pos(), Tag()), w.spawn(Pos())
    assert [e for e, _ in w.query(Pos, without=(Tag,))] == [b]
    w.remove(a, Tag)
    assert [e for e, _ in w.query(Pos, without=(Tag,))] == [a, b]
    w.add(b, Tag())
    assert [e for e, _ in w.query(Pos, without=(Tag,))] == [a]


def test_despawn_is_deferred_until_flush():
    w = World()
    a, b = w.spawn(Pos()), w.spawn(Pos())
    w.despawn(a)
    w.despawn(a)  # idempotent before flush
    assert w.is_alive(a) and w.is_pending_despawn(a)
    assert [e for e, _ in w.query(Pos)] == [a, b]
    assert w.flush() == 1
    assert [e for e, _ in w.query(Pos)] == [b]
    assert not w.is_alive(a) and w.try_get(a, Pos) is None
    with pytest.raises(KeyError, match=str(a)):
        w.get(a, Pos)
    with pytest.raises(KeyError):
        w.add(a, Vel())
    with pytest.raises(KeyError):
        w.despawn(a)


def test_structural_change_while_iterating_uses_snapshot():
    w = World()
    for i in range(5):
        w.spawn(Pos(float(i)))
    seen = []
    for e, (_p,) in w.query(Pos):
        seen.append(e)
        w.spawn(Pos(99.0))  # shows up in the next query only
    assert len(seen) == 5
    assert w.count(Pos) == 10


def test_get_has_remove_errors():
    w = World()
    e = w.spawn(Pos())
    assert w.has(e, Pos) and not w.has(e, Pos, Vel)
    with pytest.raises(KeyError, match="Vel"):
        w.get(e, Vel)
    with pytest.raises(KeyError, match="Vel"):
        w.remove(e, Vel)
    assert isinstance(w.remove(e, Pos), Pos)
    assert w.count(Pos) == 0


def test_bad_components_and_queries_rejected():
    w = World()
    with pytest.raises(TypeError, match="instance"):
        w.spawn(Pos)
    with pytest.raises(ValueError, match="Pos"):
        w.spawn(Pos(), Pos())
    with pytest.raises(ValueError):
        list(w.query())
    with pytest.raises(ValueError, match="requires and excludes"):
        list(w.query(Pos, without=(Pos,)))
    with pytest.raises(TypeError):
        list(w.query("Pos"))


def test_gpu_handle_component_rejected():
    moderngl = pytest.importorskip("moderngl")
    fake = type("Buffer", (), {"__module__": moderngl.__name__})()
    w = World()
    with pytest.raises(TypeError, match="GPU"):
        w.spawn(fake)


def test_resources():
    w = World()

    class Renderer:
        pass

    r = w.insert_resource(Renderer())
    assert w.resource(Renderer) is r and w.resources[Renderer] is r and w.has_resource(Renderer)
    with pytest.raises(KeyError, match="Renderer"):
        w.resource(int)
    assert w.remove_resource(Renderer) is r and w.try_resource(Renderer) is None
