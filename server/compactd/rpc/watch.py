"""Keeping open sessions in step with their files while other programs write them (issue 12 §2).

Pi (or another compactd) appends to the same file; without watching, `session/context` and
`session/tokenStats` would show the old leaf until the daemon writes itself. We poll with one
`stat` per open session file every `COMPACTD_WATCH_INTERVAL_MS` (default 200 ms; 0 turns the
poller off) rather than using inotify (`watchfiles`): a stat costs about a microsecond (see
`bench/scenarios/watch_poll.py`), needs no extra dependency or thread, behaves the same on every
file system (inotify misses writes made over NFS and from other containers) and the file rules
already know what to do once a change is seen. Requests that prepare something from the session
(`prepareCompaction`, `compact`, `navigate`) and the views re-sync first as well, so they never
work on a stale view even between two polls.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING

from compactd.engine.registry import SessionHandle
from compactd.session import ConcurrentModificationError, SessionError

if TYPE_CHECKING:
    from .server import CompactdServer

log = logging.getLogger("compactd.rpc")

DEFAULT_INTERVAL_MS = 200


def poll_interval() -> float:
    """Seconds between polls (0: off), from COMPACTD_WATCH_INTERVAL_MS."""
    raw = os.environ.get("COMPACTD_WATCH_INTERVAL_MS", "")
    try:
        value = int(raw) if raw.strip() else DEFAULT_INTERVAL_MS
    except ValueError:
        log.warning("COMPACTD_WATCH_INTERVAL_MS=%r is not an integer; using %d", raw, DEFAULT_INTERVAL_MS)
        value = DEFAULT_INTERVAL_MS
    return max(0, value) / 1000


async def resync(ls: CompactdServer, handle: SessionHandle, *, strict: bool = False,
                 refuse_reload: bool = False) -> bool:
    """Adopt what other programs appended, or reload a file they rewrote, and announce it with
    `session/didChange`; True when the file was reloaded. While a summarization runs, only appends
    are adopted: its entry ids must stay valid, and its own final write refuses a rewritten file.
    `strict`: a file that is half written or gone raises ConcurrentModificationError instead of
    keeping the current view. `refuse_reload` (client writes built on the old view: appends,
    labels): after a reload the request is refused with ConcurrentModificationError, so the
    client decides again on the new content instead of us guessing where its entry belongs."""
    session = handle.session
    if not session.changed_on_disk():
        return False
    reloaded = False
    async with handle.lock:
        try:
            result = session.sync(reload=False)
            if result.stale and not handle.running():
                assert session.file is not None
                # A big file is parsed off the loop, the request's turn kept (order.py).
                raw = await asyncio.to_thread(session.file.read)
                if not handle.running():  # (an automatic compaction may have started meanwhile)
                    session.reload(raw)
                    reloaded = True
                    handle.forget_derived(token_counts=True)  # same ids may now hold other content
                    log.info("session %s reloaded: %s", handle.session_id, result.reason)
        except ConcurrentModificationError as exc:
            if strict:
                raise
            log.info("session %s not synced: %s", handle.session_id, exc)
        except (SessionError, OSError) as exc:
            if strict:
                raise
            log.warning("session %s could not be re-read: %s", handle.session_id, exc)
    ls.announce(handle, "appended")
    if reloaded and refuse_reload:
        raise ConcurrentModificationError(
            f"Session file was rewritten by another program and has been reloaded: {session.path}; "
            "nothing was written, send the request again")
    return reloaded


async def watch_files(ls: CompactdServer, interval: float) -> None:
    """The poller: one stat per open session file and tick; work only when something changed."""
    while True:
        await asyncio.sleep(interval)
        for handle in ls.registry:
            if handle.lock.locked() or not handle.session.changed_on_disk():
                continue
            try:
                await resync(ls, handle)
            except Exception as exc:  # never let one session stop the watcher
                log.error("watching %s failed", handle.session_id, exc_info=exc)
