"""Where the compiled modules' long loops hand the interpreter lock over: `next_chunk`, called by
`compactd.session.steps` every CHUNK steps, runs interpreted, and an interpreted call is where
CPython lets a waiting thread take the lock. This module is never compiled (compactd/_native.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat


def next_chunk(size: int) -> Iterator[None]:
    """The next `size` steps of a budget."""
    return repeat(None, size)
