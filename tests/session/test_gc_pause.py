"""`gc_paused`: the collector is off inside the block and back as it was after it; work over a
small session (at most PAUSE_FROM_ENTRIES entries) is not paused at all."""

from __future__ import annotations

import gc

from compactd.session.gc_pause import PAUSE_FROM_ENTRIES, gc_paused


def test_the_collector_pauses_for_large_work_and_comes_back() -> None:
    assert gc.isenabled()
    for entries in (None, PAUSE_FROM_ENTRIES + 1, 100_000):
        with gc_paused(entries):
            assert not gc.isenabled()
        assert gc.isenabled()


def test_small_work_leaves_the_collector_running() -> None:
    for entries in (0, 6, PAUSE_FROM_ENTRIES):
        with gc_paused(entries):
            assert gc.isenabled()
    assert gc.isenabled()


def test_a_pause_inside_a_pause_leaves_the_collector_off_until_the_outer_one_ends() -> None:
    with gc_paused():
        with gc_paused(100_000):
            pass
        with gc_paused(3):
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
