"""Pausing the cyclic garbage collector around work that builds many containers that cannot form
cycles (parsed JSON, reports of messages): otherwise its full passes re-scan the growing heap
again and again, which costs more than the work itself on large sessions. Reference counting
still frees.

Compiled (compactd/_native.py): every context and preparation request enters a pause, and on a
small session the interpreted classes were a measurable share of the request.
"""

from __future__ import annotations

import gc

__all__ = ["PAUSE_FROM_ENTRIES", "gc_paused"]

# Work over at most this many entries allocates too little for the collector's passes to cost
# more than pausing it (about a microsecond, a quarter of a small session's context report).
PAUSE_FROM_ENTRIES = 256


def gc_paused(entries: int | None = None) -> GcPause | NoPause:
    """A context manager that suspends the collector inside its block and restores it after.
    With `entries`, the size of the session (or path) the work walks, small work (up to
    PAUSE_FROM_ENTRIES) is not paused."""
    if entries is not None and entries <= PAUSE_FROM_ENTRIES:
        return _NO_PAUSE
    return GcPause()


class GcPause:
    """The collector off for the block; back on after it only if it was on before (pauses nest)."""

    __slots__ = ("_was_enabled",)

    def __init__(self) -> None:
        self._was_enabled = False

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._was_enabled:
            gc.enable()


class NoPause:
    """Small work: the collector left as it is."""

    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info: object) -> None:
        pass


_NO_PAUSE = NoPause()
