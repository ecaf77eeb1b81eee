"""What the daemon loads for an open session is frozen out of the cyclic collector's passes, and
handed back to the collector once no session is open (so garbage frozen with it is reclaimed)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from compactd.rpc.heap import FREEZE_MIN_BYTES, load_frozen, thaw_when_idle


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
