"""Session layer: data model, JSONL store, tree and context building (no I/O above this layer)."""

from .context import SessionContext, build_session_context, convert_to_llm, project_entry
from .errors import (
    ConcurrentModificationError,
    EntryNotFoundError,
    FileRewrittenError,
    InvalidSessionFileError,
    LoadWarning,
    NotARegularFileError,
    SessionError,
)
from .store import Session, SessionView, SyncResult

__all__ = [
    "ConcurrentModificationError",
    "EntryNotFoundError",
    "FileRewrittenError",
    "InvalidSessionFileError",
    "LoadWarning",
    "NotARegularFileError",
    "Session",
    "SessionContext",
    "SessionError",
    "SessionView",
    "SyncResult",
    "build_session_context",
    "convert_to_llm",
    "project_entry",
]
