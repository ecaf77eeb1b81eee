"""Step budgets for the long loops of the compiled modules (compactd/_native.py) that let other
threads run.

Compiled code holds the interpreter lock for as long as it runs: a walk back over 100k entries in
a daemon worker kept every other request waiting ~70 ms, the whole-tree report ~540 ms (their
interpreted sources let a waiting thread in every 0.5 ms). Interpreted code hands the lock over
at the start of a function call, so these loops draw their steps from `step_budget(n)`, which
calls `handover.next_chunk` (never compiled) every CHUNK steps. One call per 2048 steps costs
nothing measurable. This module is compiled itself: every request draws a budget, and calling an
interpreted `step_budget` was a tenth of a small session's context request.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, repeat

from . import handover

CHUNK = 2048


def step_budget(count: int, chunk: int = CHUNK) -> Iterator[None]:
    """`count` steps (each None) for `for _ in step_budget(n)`, in chunks (see the module); a
    smaller `chunk` for loops whose steps are heavy."""
    if count <= chunk:  # a short walk needs no chunks (most requests)
        return repeat(None, count)
    full, rest = divmod(count, chunk)
    return chain(chain.from_iterable(map(handover.next_chunk, repeat(chunk, full))), repeat(None, rest))
