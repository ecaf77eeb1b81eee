"""Exit when the editor that started the daemon is gone (`--clientProcessId`).

Language clients pass their own process id so that a server whose client crashed (and so never
closed stdin, e.g. because a grandchild still holds the pipe) does not live on. The check is one
`kill(pid, 0)` per interval on a daemon thread, so it never touches the event loop.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable

log = logging.getLogger("compactd.rpc")

POLL_SECONDS = 1.0


def process_alive(pid: int) -> bool:
    """True while `pid` exists (also when it belongs to another user)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def watch_process(pid: int, on_gone: Callable[[], None], interval: float = POLL_SECONDS) -> threading.Event:
    """Call `on_gone` (from the watcher thread) once `pid` has gone. Set the returned event to stop."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(interval):
            if not process_alive(pid):
                log.info("client process %d is gone; exiting", pid)
                on_gone()
                return

    threading.Thread(target=poll, name="compactd-client-watch", daemon=True).start()
    return stop
