"""Step budgets for the long loops of the compiled modules (compactd/_native.py) that let other
threads run.

Compiled code holds the interpreter lock for as long as it runs: a walk back over 100k entries in
a daemon worker kept every other request waiting ~70 ms, the whole-tree report ~540 ms (their
interpreted sources let a waiting thread in every 0.5 ms). Interpreted code hands the lock over
at the start of a function call, so these loops draw their steps from `step_budget(n)`, which
calls `_next_chunk` every CHUNK steps. This module is never compiled: that call is where the lock
moves on. One call per 2048 steps costs nothing measurable.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, repeat

CHUNK = 2048


def _next_chunk(size: int) -> Iterator[None]:
    return repeat(None, size)


def step_budget(count: int) -> Iterator[None]:
    """`count` steps (each None) for `for _ in step_budget(n)`, in chunks (see the module)."""
    if count <= CHUNK:  # a short walk needs no chunks (most requests: a few microseconds saved)
        return repeat(None, count)
    full, rest = divmod(max(count, 0), CHUNK)
    return chain(chain.from_iterable(map(_next_chunk, repeat(CHUNK, full))), repeat(None, rest))
