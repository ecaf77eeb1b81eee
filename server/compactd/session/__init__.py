"""Session layer: data model, JSONL store, tree and context building (no I/O above this layer)."""

from .context import SessionContext, build_session_context, convert_to_llm, project_entry
from .store import (
    ConcurrentModificationError,
    EntryNotFoundError,
    InvalidSessionFileError,
    LoadWarning,
    Session,
    SessionError,
)

__all__ = [
    "ConcurrentModificationError",
    "EntryNotFoundError",
    "InvalidSessionFileError",
    "LoadWarning",
    "Session",
    "SessionContext",
    "SessionError",
    "build_session_context",
    "convert_to_llm",
    "project_entry",
]
