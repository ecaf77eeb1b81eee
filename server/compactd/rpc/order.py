"""Requests of one session are handled in the order they arrive (issue 26 §2).

pygls starts each request's handler as a task, in arrival order, but a handler that waits (a file
loaded or re-read in a worker, a progress token asked of the client) let the requests behind it
overtake: a request pipelined right behind `session/open`, as LSP clients write them, found no
session yet ("Unknown session", 1,180 of 10,000).

Each request naming a `sessionId` takes a turn in that session's queue and starts once the turns
before it are over. A turn ends when its handler returns, or earlier when the handler hands its
work over — to a worker thread with what it read from the session captured (`CompactdServer.
off_loop`), or to a summarization job (`run_job`) — so a long count or a compaction never holds
up the appends and aborts behind it. A request for a session that is not open waits for the
`session/open` calls that arrived before it.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class Turn:
    __slots__ = ("key", "ready", "over")

    def __init__(self, key: str, ready: asyncio.Future[None] | None) -> None:
        self.key = key
        self.ready = ready  # None: it was first in line
        self.over = False


_CURRENT: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("compactd_turn", default=None)


class SessionOrder:
    def __init__(self) -> None:
        self._queues: dict[str, deque[Turn]] = {}
        self._opening: list[asyncio.Future[None]] = []

    @property
    def waiting(self) -> int:
        """Turns taken and not over (for tests and logs)."""
        return sum(len(queue) for queue in self._queues.values())

    async def enter(self, key: str) -> Turn:
        """Take a turn in `key`'s queue and wait for it; it is also the task's current turn."""
        queue = self._queues.get(key)
        if queue is None:  # nobody ahead: no future, no suspension
            turn = Turn(key, None)
            self._queues[key] = deque((turn,))
        else:
            turn = Turn(key, asyncio.get_running_loop().create_future())
            queue.append(turn)
            try:
                await turn.ready  # type: ignore[misc]
            except BaseException:  # cancelled while waiting
                self.leave(turn)
                raise
        _CURRENT.set(turn)
        return turn

    def leave(self, turn: Turn) -> None:
        """End `turn` (again: nothing); the next one in its queue starts."""
        if turn.over:
            return
        turn.over = True
        queue = self._queues.get(turn.key)
        if queue is None:
            return
        if queue[0] is not turn:
            queue.remove(turn)
            return
        queue.popleft()
        if not queue:
            del self._queues[turn.key]
            return
        ready = queue[0].ready
        if ready is not None and not ready.done():
            ready.set_result(None)

    def leave_current(self) -> None:
        """The running handler has handed its work over: the requests behind it may start."""
        turn = _CURRENT.get()
        if turn is not None:
            self.leave(turn)

    # --- session/open ------------------------------------------------------------------------

    def opens_in_flight(self) -> tuple[asyncio.Future[None], ...]:
        return tuple(self._opening)

    @contextmanager
    def opening(self) -> Iterator[asyncio.Future[None]]:
        """A `session/open` in progress: requests for unknown sessions that arrive meanwhile
        wait for it before they are refused. Set the future's result once the session is
        registered (the rest of the open need not be waited for); it is set on exit anyway."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._opening.append(done)
        try:
            yield done
        finally:
            self._opening.remove(done)
            if not done.done():
                done.set_result(None)
