"""LSP work-done progress for summarizations.

The token is the client's `workDoneToken` when it sent one; otherwise, if the client declared
`window.workDoneProgress`, we create one with `window/workDoneProgress/create`. Reports carry the
streamed summary text so far (`text`, an extra field LSP clients ignore) and a percentage that never
goes down. Reports are coalesced so a fast stream does not flood the pipe.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from compactd.engine.progress import ProgressUpdate

if TYPE_CHECKING:
    from .server import CompactdServer

log = logging.getLogger("compactd.rpc")

REPORT_INTERVAL = 0.05  # seconds between two reports at most once per interval
CREATE_TIMEOUT = 5.0


async def acquire_token(server: CompactdServer, client_token: int | str | None) -> int | str | None:
    if client_token is not None:
        return client_token
    if not server.client_supports_progress():
        return None
    token = f"compactd-{uuid.uuid4().hex[:12]}"
    try:
        await asyncio.wait_for(
            server.protocol.send_request_async(
                types.WINDOW_WORK_DONE_PROGRESS_CREATE, types.WorkDoneProgressCreateParams(token=token)
            ),
            CREATE_TIMEOUT,
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - refused or unanswered: work without progress
        log.info("window/workDoneProgress/create failed: %s", exc)
        return None
    return token


class ProgressReporter:
    def __init__(self, server: CompactdServer, token: int | str | None, title: str) -> None:
        self.server = server
        self.token = token
        self.title = title
        self.percentage = 0
        self._pending: ProgressUpdate | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._ended = False
        self._starting = False
        self._last_sent = 0.0
        self.on_token: Callable[[int | str], None] | None = None  # tells the job its token

    async def start_later(self) -> None:
        """Create a server token now (auto-compaction only knows late that it will summarize);
        updates arriving meanwhile are kept and sent after `begin`."""
        if self.token is not None or self._ended or self._starting:
            return
        self._starting = True
        token = await acquire_token(self.server, None)
        self._starting = False
        if token is None or self._ended:
            return
        self.token = token
        if self.on_token is not None:
            self.on_token(token)
        self.begin(f"{self.title}…")
        if self._pending is not None:
            self.update(self._pending)

    @property
    def active(self) -> bool:
        return self.token is not None and not self._ended

    def _send(self, value: dict[str, Any]) -> None:
        assert self.token is not None
        self.server.protocol.notify(types.PROGRESS, types.ProgressParams(token=self.token, value=value))

    def begin(self, message: str = "") -> None:
        if self.token is None:
            return
        self._send({"kind": "begin", "title": self.title, "cancellable": True, "message": message,
                    "percentage": 0})

    def update(self, update: ProgressUpdate) -> None:
        """The engine's on_progress callback (called on the event loop)."""
        if self._starting and self.token is None:
            self._pending = update
            return
        if not self.active:
            return
        self._pending = update
        if self._timer is not None:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, self._last_sent + REPORT_INTERVAL - loop.time())
        self._timer = loop.call_later(delay, self._flush)

    def _flush(self) -> None:
        self._timer = None
        update, self._pending = self._pending, None
        if update is None or not self.active:
            return
        if update.percentage is not None:
            self.percentage = max(self.percentage, min(100, int(update.percentage)))
        self._last_sent = asyncio.get_running_loop().time()
        self._send({"kind": "report", "message": update.message, "percentage": self.percentage,
                    "text": update.text, "cancellable": True})

    def end(self, message: str) -> None:
        if not self.active:
            self._ended = True
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending is not None:
            self._flush()
        self._ended = True
        self._send({"kind": "end", "message": message})
