"""Keeping open sessions out of the cyclic garbage collector's sight.

A long session is millions of parsed containers that never form cycles and live until the session
closes. Left to the collector, its full passes scan them all: 0.2-0.5 s holding the GIL, which
stalls every other request (measured by the `daemon_first_count` benchmark). So each opened
session is frozen (`gc.freeze`) right after it is read. Frozen objects are still freed by
reference counting when the session closes; what the collector can no longer reclaim is cyclic
garbage frozen along with them, so the heap is collected just before reading (cheap: earlier
sessions are frozen already), and everything is unfrozen again once no session is open, which
lets the collector reclaim whatever was frozen with them (tests/reliability/test_load.py).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


# Smaller files are too few objects for the collector's passes to matter, and the collection
# before freezing (the whole unfrozen heap) would cost more than it saves.
FREEZE_MIN_BYTES = 8 * 1024 * 1024


def load_frozen(load: Callable[[], T], size: int) -> T:
    """Run `load` (in a worker thread) on a file of `size` bytes; from FREEZE_MIN_BYTES on, freeze
    what it built together with the rest of the heap."""
    if size < FREEZE_MIN_BYTES:
        return load()
    gc.collect()
    try:
        return load()
    finally:
        gc.freeze()


def thaw_when_idle(open_sessions: int) -> None:
    """After a close: with no session left open, hand everything back to the collector."""
    if open_sessions == 0:
        gc.unfreeze()
