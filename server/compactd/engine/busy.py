"""Which sessions are summarizing right now (D-20, Pi issue #9178).

While a compaction or branch summary is being generated for a session, moving that session's
leaf (navigation, fork from the leaf) is refused with `BusyError`, because the summary being
written was computed for the old position. Appends stay allowed (they end up after the kept
boundary). The state lives beside the session object, so the CLI, the daemon and the tests see
the same thing without a registry.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator

from ..session import Session

__all__ = ["BusyError", "busy_reason", "ensure_not_busy", "mark_busy"]

_BUSY: weakref.WeakKeyDictionary[Session, list[str]] = weakref.WeakKeyDictionary()


class BusyError(Exception):
    def __init__(self, session_id: str, what: str) -> None:
        super().__init__(f"Session {session_id} is busy: {what}")
        self.session_id = session_id
        self.what = what


def busy_reason(session: Session) -> str | None:
    """What the session is busy with ("compaction in progress", ...), or None."""
    reasons = _BUSY.get(session)
    return reasons[-1] if reasons else None


def ensure_not_busy(session: Session) -> None:
    reason = busy_reason(session)
    if reason is not None:
        raise BusyError(session.session_id, reason)


@contextlib.contextmanager
def mark_busy(session: Session, what: str) -> Iterator[None]:
    """Mark the session busy for the duration of the block (nestable)."""
    reasons = _BUSY.setdefault(session, [])
    reasons.append(what)
    try:
        yield
    finally:
        reasons.remove(what)
        if not reasons:
            _BUSY.pop(session, None)
