"""Errors and load warnings of the session layer; `str(exc)` is the user-facing message."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class SessionError(Exception):
    """Base class; `str(exc)` is the user-facing message."""


class EntryNotFoundError(SessionError):
    def __init__(self, entry_id: str | None) -> None:
        super().__init__(f"Entry {entry_id} not found")
        self.entry_id = entry_id


class InvalidSessionFileError(SessionError):
    def __init__(self, path: Path) -> None:
        super().__init__(f"Session file is not a valid pi session: {path}")
        self.path = path


class NotARegularFileError(SessionError):
    """A directory, device (/dev/zero) or FIFO: reading it would never end or mean nothing."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(f"{path} is a {kind}, not a session file")
        self.path = path


class ConcurrentModificationError(SessionError):
    """Another process changed the file in a way we cannot safely merge (D-18)."""


class FileRewrittenError(ConcurrentModificationError):
    """The bytes we already know are no longer on disk (rewritten in place, replaced, truncated):
    nothing may be written on our view; `Session.sync()` reloads the file instead."""


@dataclass(frozen=True)
class LoadWarning:
    line: int
    message: str
