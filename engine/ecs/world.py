"""The ECS world: entities (ints), components (plain objects keyed by their type), resources, queries.

Design notes
------------
* Entities are ints handed out by a counter starting at 1 and never reused, so a stale id can never
  alias a new entity (no generation counter needed at this scale; 2**63 spawns is out of reach). An
  operation on an id that is not alive raises ``KeyError`` naming the id.
* Components are plain objects, usually dataclasses; an entity holds at most one component per type
  (``add`` with a type already present replaces it). Storage is one ``dict[entity, component]`` per
  component type, so a query walks the smallest store among its types and probes the others.
* Components hold game data only (numpy arrays, numbers, ids); they never hold GPU handles. Every
  moderngl object is owned by the render / deform side, which reads a per-frame snapshot of the
  components (STYLE.md habit 1). As a cheap guard, ``spawn``/``add`` reject a component that *is* a
  moderngl/glcontext object; fields are not scanned.
* Resources are singletons keyed by type (the clock, the renderer handle, the input state):
  ``world.insert_resource(obj)`` / ``world.resource(Type)`` or the ``world.resources`` dict itself.
  Resources may hold GPU handles: they are owned by whoever inserted them.
* ``despawn`` is deferred: the entity stays alive and visible to queries until ``flush()``, which the
  schedule calls once at the end of each frame ("entities die at the end of the frame").
* ``query(*types, without=())`` results are cached per (types, without) key and the cache entries that
  involve a type are dropped on any structural change of that type (a component of that type added,
  replaced or removed; an entity holding it despawned). Mutating a component in place is not a
  structural change and needs no invalidation: the cached rows hold references to the live objects.
  A query returns an iterator over an immutable snapshot of rows, so systems may spawn, add or remove
  while iterating; the changes show up in the next query. Rows are ordered by entity id.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar, cast

__all__ = ["World", "Entity"]

Entity = int
T = TypeVar("T")

_GPU_MODULES = frozenset({"moderngl", "glcontext"})

QueryKey = tuple[tuple[type, ...], frozenset[type]]
Row = tuple[int, tuple[Any, ...]]


def _check_component(component: Any) -> type:
    """Return the storage type of a component; reject classes, None and GPU handles."""
    if component is None:
        raise TypeError("a component must be an object, got None")
    if isinstance(component, type):
        raise TypeError(
            f"a component must be an instance, got the class {component.__qualname__!r} "
            f"(did you mean {component.__qualname__}()?)"
        )
    ctype = type(component)
    if ctype.__module__.partition(".")[0] in _GPU_MODULES:
        raise TypeError(
            f"components never hold GPU handles, got a {ctype.__module__}.{ctype.__qualname__}; "
            "the render/deform side owns GPU objects (store them in a resource or the renderer)"
        )
    return ctype


def _check_types(types: Iterable[Any], what: str) -> tuple[type, ...]:
    out = tuple(types)
    for t in out:
        if not isinstance(t, type):
            raise TypeError(f"{what} takes component types, got {t!r} ({type(t).__qualname__})")
    return out


class World:
    """Entities, their components, and resources. Hand it to systems; never keep it in a module global."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        # entity -> set of component types it holds (the set of alive entities is its keys)
        self._entities: dict[int, set[type]] = {}
        # component type -> {entity: component}
        self._stores: dict[type, dict[int, Any]] = {}
        # despawns waiting for flush(); a dict used as an ordered set
        self._pending: dict[int, None] = {}
        # query cache and, per type, the cache keys that involve it
        self._cache: dict[QueryKey, list[Row]] = {}
        self._keys_by_type: dict[type, set[QueryKey]] = {}
        #: singletons keyed by type (clock, renderer handle, ...). Public: ``world.resources[Clock]``.
        self.resources: dict[type, Any] = {}

    # ------------------------------------------------------------------ entities
    def spawn(self, *components: Any) -> int:
        """Create an entity with the given components (at most one per type) and return its id."""
        types = [_check_component(c) for c in components]
        if len(set(types)) != len(types):
            dup = sorted({t.__qualname__ for t in types if types.count(t) > 1})
            raise ValueError(f"spawn got several components of the same type: {dup}; one per type")
        entity = next(self._ids)
        self._entities[entity] = set(types)
        for ctype, comp in zip(types, components):
            self._stores.setdefault(ctype, {})[entity] = comp
            self._invalidate(ctype)
        return entity

    def despawn(self, entity: int) -> None:
        """Mark an entity for removal at the next ``flush()`` (end of frame). Idempotent until then."""
        self._require(entity)
        self._pending[entity] = None

    def is_pending_despawn(self, entity: int) -> bool:
        """True when ``despawn`` was called and ``flush`` has not run yet."""
        return entity in self._pending

    def flush(self) -> int:
        """Apply the deferred despawns; return how many entities died."""
        dead = 0
        while self._pending:  # robust against despawn() called from within this loop (it is not)
            entity = next(iter(self._pending))
            del self._pending[entity]
            types = self._entities.pop(entity, None)
            if types is None:
                continue
            for ctype in types:
                del self._stores[ctype][entity]
                self._invalidate(ctype)
            dead += 1
        return dead

    def is_alive(self, entity: int) -> bool:
        """True from ``spawn`` until the ``flush`` that follows its ``despawn``."""
        return entity in self._entities

    def entities(self) -> list[int]:
        """The alive entity ids in increasing order."""
        return sorted(self._entities)

    def __len__(self) -> int:
        return len(self._entities)

    def __contains__(self, entity: object) -> bool:
        return entity in self._entities

    # ------------------------------------------------------------------ components
    def add(self, entity: int, component: Any) -> None:
        """Attach a component; an existing component of the same type is replaced."""
        ctype = _check_component(component)
        types = self._require(entity)
        types.add(ctype)
        self._stores.setdefault(ctype, {})[entity] = component
        self._invalidate(ctype)

    def remove(self, entity: int, ctype: type[T]) -> T:
        """Detach and return the component of type ``ctype``; ``KeyError`` when the entity has none."""
        types = self._require(entity)
        if ctype not in types:
            raise KeyError(f"entity {entity} has no {getattr(ctype, '__qualname__', ctype)!s} component")
        types.discard(ctype)
        comp = self._stores[ctype].pop(entity)
        self._invalidate(ctype)
        return cast(T, comp)  # a store keyed by a type holds instances of that type

    def get(self, entity: int, ctype: type[T]) -> T:
        """The component of type ``ctype``; ``KeyError`` when the entity is dead or has none."""
        store = self._stores.get(ctype)
        if store is not None:
            comp = store.get(entity, _MISSING)
            if comp is not _MISSING:
                return cast(T, comp)
        self._require(entity)
        raise KeyError(f"entity {entity} has no {getattr(ctype, '__qualname__', ctype)!s} component")

    def try_get(self, entity: int, ctype: type[T]) -> T | None:
        """The component of type ``ctype`` or None (also None for a dead entity)."""
        store = self._stores.get(ctype)
        return None if store is None else store.get(entity)

    def has(self, entity: int, *ctypes: type) -> bool:
        """True when the entity is alive and holds every given component type."""
        types = self._entities.get(entity)
        return types is not None and all(t in types for t in ctypes)

    def components(self, entity: int) -> dict[type, Any]:
        """All components of an entity, keyed by type (a new dict; for inspection and tools)."""
        return {t: self._stores[t][entity] for t in self._require(entity)}

    # ------------------------------------------------------------------ queries
    def query(self, *types: type, without: Iterable[type] = ()) -> Iterator[Row]:
        """Iterate ``(entity, (c1, c2, ...))`` for the alive entities holding all ``types`` and none of
        ``without``, in increasing entity order. The components come in the order of ``types``."""
        key = (types, frozenset(without) if without else _EMPTY)
        rows = self._cache.get(key)
        if rows is None:
            rows = self._build(key)
        return iter(rows)

    def count(self, *types: type, without: Iterable[type] = ()) -> int:
        """How many entities ``query(*types, without=without)`` yields."""
        key = (types, frozenset(without) if without else _EMPTY)
        rows = self._cache.get(key)
        if rows is None:
            rows = self._build(key)
        return len(rows)

    def _build(self, key: QueryKey) -> list[Row]:
        types, without = key
        _check_types(types, "query")
        _check_types(without, "query(without=...)")
        if not types:
            raise ValueError("query needs at least one component type, got none")
        if len(set(types)) != len(types):
            raise ValueError(f"query lists a type twice: {[t.__qualname__ for t in types]}")
        both = without.intersection(types)
        if both:
            raise ValueError(f"query both requires and excludes {sorted(t.__qualname__ for t in both)}")
        stores = [s for s in (self._stores.get(t) for t in types) if s]
        if len(stores) < len(types):  # a type no entity has
            rows: list[Row] = []
        else:
            # key-view set operations run in C: intersect from the smallest store, subtract exclusions
            ordered = sorted(stores, key=len)
            cand = set(ordered[0])
            for s in ordered[1:]:
                cand &= s.keys()
            for t in without:
                ex = self._stores.get(t)
                if ex:
                    cand -= ex.keys()
            ents = sorted(cand)
            if len(stores) == 1:
                s0 = stores[0]
                rows = [(e, (s0[e],)) for e in ents]
            elif len(stores) == 2:
                s0, s1 = stores
                rows = [(e, (s0[e], s1[e])) for e in ents]
            else:
                rows = [(e, tuple(s[e] for s in stores)) for e in ents]
        self._cache[key] = rows
        for t in itertools.chain(types, without):
            self._keys_by_type.setdefault(t, set()).add(key)
        return rows

    def _invalidate(self, ctype: type) -> None:
        keys = self._keys_by_type.pop(ctype, None)
        if keys:
            for k in keys:
                self._cache.pop(k, None)

    def _require(self, entity: int) -> set[type]:
        types = self._entities.get(entity)
        if types is None:
            raise KeyError(f"entity {entity!r} is not alive (never spawned, or despawned and flushed)")
        return types

    # ------------------------------------------------------------------ resources
    def insert_resource(self, resource: Any, *, as_type: type | None = None) -> Any:
        """Store a singleton under ``as_type`` (default: its own type), replacing any previous one."""
        if resource is None or isinstance(resource, type):
            raise TypeError(f"a resource must be an instance, got {resource!r}")
        key = type(resource) if as_type is None else as_type
        if not isinstance(resource, key):
            raise TypeError(f"resource {type(resource).__qualname__} is not an instance of {key.__qualname__}")
        self.resources[key] = resource
        return resource

    def resource(self, rtype: type[T]) -> T:
        """The resource stored under ``rtype``; ``KeyError`` listing the present ones when absent."""
        try:
            return cast(T, self.resources[rtype])  # stored under its own type (or a base of it)
        except KeyError:
            have = sorted(t.__qualname__ for t in self.resources)
            raise KeyError(f"no {rtype.__qualname__} resource in the world; present: {have}") from None

    def try_resource(self, rtype: type[T]) -> T | None:
        return self.resources.get(rtype)

    def has_resource(self, rtype: type) -> bool:
        return rtype in self.resources

    def remove_resource(self, rtype: type[T]) -> T:
        """Remove and return the resource stored under ``rtype``."""
        self.resource(rtype)
        return cast(T, self.resources.pop(rtype))


_MISSING = object()
_EMPTY: frozenset[type] = frozenset()
