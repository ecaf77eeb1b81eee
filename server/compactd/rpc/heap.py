"""Keeping open sessions out of the cyclic garbage collector's sight.

A long session is millions of parsed containers that never form cycles and live until the session
closes. Left to the collector, its full passes scan them all: 0.2-0.5 s holding the GIL, which
stalls every other request (measured by the `daemon_first_count` benchmark). So each opened
session is frozen (`gc.freeze`) right after it is read. Frozen objects are still freed by
reference counting when the session closes; what the collector can no longer reclaim is cyclic
garbage frozen along with them, so the heap is collected just before reading (cheap: earlier
sessions are frozen already), and everything is unfrozen again once no session is open, which
lets the collector reclaim whatever was frozen with them (tests/reliability/test_load.py).

The same holds for what the daemon derives from a long session and keeps (the side panel's tree
index, the exact token counts of a first count): `build_quietly` builds it with the collector
paused and freezes what it leaves alive. Pausing alone is not enough: the first pass after the
pause would scan everything built meanwhile in one go (0.3 s after a 100k-entry open, 55 ms after
the tree index), and passes during the build rescan the growing heap again and again.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

from compactd.session.gc_pause import gc_paused

T = TypeVar("T")


# Smaller files are too few objects for the collector's passes to matter, and the collection
# before freezing (the whole unfrozen heap) would cost more than it saves.
FREEZE_MIN_BYTES = 8 * 1024 * 1024
# The same for what is derived from a session: ~7k entries are ~8 MB of a typical file.
QUIET_MIN_ENTRIES = 5000


def _paused_then_frozen(work: Callable[[], T]) -> T:
    with gc_paused():
        try:
            return work()
        finally:
            # Survivors go straight to the permanent generation: no pass ever scans them.
            gc.freeze()


def load_frozen(load: Callable[[], T], size: int) -> T:
    """Run `load` (in a worker thread) on a file of `size` bytes; from FREEZE_MIN_BYTES on, freeze
    what it built together with the rest of the heap."""
    if size < FREEZE_MIN_BYTES:
        return load()
    # Only the young generations: a full pass holds the GIL for the whole unfrozen heap (90 ms
    # with one small session open, every other request waiting); older cyclic garbage frozen
    # along stays until no session is open, as with `build_quietly`.
    gc.collect(1)
    return _paused_then_frozen(load)


def build_quietly(build: Callable[[], T], entry_count: int) -> T:
    """Run `build` (in a worker thread) for a session of `entry_count` entries; on long sessions
    with the collector paused, freezing what it leaves alive. Only the young generations are
    collected first (a full pass would itself stall the loop): cyclic garbage older than that
    stays frozen until no session is open."""
    if entry_count < QUIET_MIN_ENTRIES:
        return build()
    gc.collect(1)
    return _paused_then_frozen(build)


def thaw_when_idle(open_sessions: int) -> None:
    """After a close: with no session left open, hand everything back to the collector."""
    if open_sessions == 0:
        gc.unfreeze()
