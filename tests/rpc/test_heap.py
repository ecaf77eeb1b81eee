"""What the daemon loads for an open session is frozen out of the cyclic collector's passes, and
handed back to the collector once no session is open (so garbage frozen with it is reclaimed)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from compactd.rpc.heap import FREEZE_MIN_BYTES, QUIET_MIN_ENTRIES, build_quietly, load_frozen, thaw_when_idle


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_what_a_load_builds_is_frozen_and_thawed_when_no_session_is_open() -> None:
    entries = load_frozen(lambda: [{"id": str(i), "message": {"content": [i]}} for i in range(10_000)],
                          FREEZE_MIN_BYTES)
    frozen = gc.get_freeze_count()
    assert frozen >= 30_000  # each entry: two dicts and a list, all out of the collector's passes
    assert len(entries) == 10_000

    thaw_when_idle(1)  # another session still open: stays frozen
    assert gc.get_freeze_count() == frozen
    thaw_when_idle(0)
    assert gc.get_freeze_count() == 0


def test_cyclic_garbage_from_before_the_load_is_collected_not_frozen() -> None:
    class Node:
        pass

    gc.disable()  # no automatic pass may free it before the load does
    try:
        node = Node()
        node.self = node  # type: ignore[attr-defined]
        del node  # cyclic garbage: only the collector frees it
        load_frozen(lambda: None, FREEZE_MIN_BYTES)
    finally:
        gc.enable()
    thaw_when_idle(0)  # had it been frozen, it would be alive here
    assert not any(type(o) is Node for o in gc.get_objects())


def test_small_files_are_not_frozen() -> None:
    load_frozen(lambda: [{"id": str(i)} for i in range(1000)], FREEZE_MIN_BYTES - 1)
    assert gc.get_freeze_count() == 0


def test_loads_and_builds_run_with_the_collector_paused_and_leave_it_running() -> None:
    """No pass during the work, and none over it afterwards: what it left alive is frozen."""
    seen: list[bool] = []

    def build() -> list[dict[str, list[int]]]:
        seen.append(gc.isenabled())
        return [{"k": [i]} for i in range(20_000)]

    kept = load_frozen(build, FREEZE_MIN_BYTES)
    frozen = gc.get_freeze_count()
    assert frozen >= 40_000 and gc.isenabled()
    more = build_quietly(build, QUIET_MIN_ENTRIES)
    assert gc.get_freeze_count() >= frozen + 40_000 and gc.isenabled()
    assert seen == [False, False] and len(kept) == len(more) == 20_000


def test_small_builds_are_left_to_the_collector() -> None:
    seen: list[bool] = []
    build_quietly(lambda: seen.append(gc.isenabled()), QUIET_MIN_ENTRIES - 1)
    assert seen == [True] and gc.get_freeze_count() == 0


def test_young_cyclic_garbage_is_collected_before_a_build_is_frozen() -> None:
    class Node:
        pass

    gc.disable()
    try:
        node = Node()
        node.self = node  # type: ignore[attr-defined]
        del node
        build_quietly(lambda: None, QUIET_MIN_ENTRIES)
    finally:
        gc.enable()
    thaw_when_idle(0)
    assert not any(type(o) is Node for o in gc.get_objects())
