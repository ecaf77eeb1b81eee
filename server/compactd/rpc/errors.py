"""Error codes of the daemon and the mapping from engine/session exceptions to JSON-RPC errors.

Codes are documented in protocol.md; a test keeps the two in sync. Application codes live in the
JSON-RPC server range (-32099..-32000), clear of the two codes LSP takes there (-32001, -32002).
Messages are user-facing and never carry secrets (summarizer errors are sanitized at the source).
"""

from __future__ import annotations

import logging
from enum import IntEnum
from typing import Any

import pydantic
from pygls.exceptions import JsonRpcException

from compactd.engine.busy import BusyError
from compactd.engine.compactor import CompactionError
from compactd.engine.navigator import NavigationError
from compactd.engine.registry import SessionConflictError, UnknownSessionError
from compactd.engine.settings import SettingsError
from compactd.session import (
    ConcurrentModificationError,
    EntryNotFoundError,
    InvalidSessionFileError,
    SessionError,
)
from compactd.summarize.base import SummarizationError

log = logging.getLogger("compactd.rpc")


class Code(IntEnum):
    # JSON-RPC / LSP
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_NOT_INITIALIZED = -32002
    REQUEST_CANCELLED = -32800
    # compactd
    UNKNOWN_SESSION = -32010
    ENTRY_NOT_FOUND = -32011
    SESSION_BUSY = -32012
    NOTHING_TO_COMPACT = -32013
    SETTINGS_ERROR = -32014
    SUMMARIZATION_FAILED = -32015
    CONCURRENT_MODIFICATION = -32016
    INVALID_SESSION_FILE = -32017
    FILE_ERROR = -32018
    CANCELLED_BY_HOOK = -32019
    SESSION_CONFLICT = -32020


class RpcError(JsonRpcException):
    """A JSON-RPC error response with one of our codes."""

    def __init__(self, code: Code | int, message: str, data: Any = None) -> None:
        super().__init__(message=message, code=int(code), data=data)


def invalid_params(error: pydantic.ValidationError | str) -> RpcError:
    """InvalidParams naming the offending field(s): `sessionId: Field required`."""
    if isinstance(error, str):
        return RpcError(Code.INVALID_PARAMS, error)
    parts = []
    for item in error.errors(include_url=False, include_input=False):
        cause = item.get("ctx", {}).get("error")
        if hasattr(cause, "problems"):  # schema.FieldsError: fields that do not fit together
            parts.extend(f"{name}: {message}" for name, message in cause.problems)
            continue
        loc = ".".join(str(p) for p in item.get("loc", ())) or "params"
        parts.append(f"{loc}: {item.get('msg', 'invalid')}")
    return RpcError(Code.INVALID_PARAMS, "; ".join(parts) or "invalid params")


def _compaction_error(exc: CompactionError) -> RpcError:
    if exc.code == "already_compacted":
        return RpcError(Code.NOTHING_TO_COMPACT, exc.message, {"reason": "alreadyCompacted"})
    if exc.code == "nothing_to_compact":
        return RpcError(Code.NOTHING_TO_COMPACT, exc.message, {"reason": "tooSmall"})
    if exc.code == "cancelled":
        return RpcError(Code.CANCELLED_BY_HOOK, exc.message)
    return RpcError(Code.SUMMARIZATION_FAILED, exc.message)


def to_rpc_error(exc: BaseException) -> JsonRpcException:
    """Map any exception raised by a handler to the error the client receives."""
    if isinstance(exc, JsonRpcException):
        return exc
    if isinstance(exc, UnknownSessionError):
        return RpcError(Code.UNKNOWN_SESSION, str(exc), {"sessionId": exc.session_id})
    if isinstance(exc, BusyError):
        return RpcError(Code.SESSION_BUSY, str(exc), {"sessionId": exc.session_id})
    if isinstance(exc, SessionConflictError):
        return RpcError(Code.SESSION_CONFLICT, str(exc))
    if isinstance(exc, EntryNotFoundError):
        return RpcError(Code.ENTRY_NOT_FOUND, str(exc), {"entryId": exc.entry_id})
    if isinstance(exc, ConcurrentModificationError):
        return RpcError(Code.CONCURRENT_MODIFICATION, str(exc))
    if isinstance(exc, InvalidSessionFileError):
        return RpcError(Code.INVALID_SESSION_FILE, str(exc))
    if isinstance(exc, CompactionError):
        return _compaction_error(exc)
    if isinstance(exc, SettingsError):
        return RpcError(Code.SETTINGS_ERROR, str(exc), {"key": exc.key})
    if isinstance(exc, (SummarizationError, NavigationError)):
        return RpcError(Code.SUMMARIZATION_FAILED, str(exc))
    if isinstance(exc, SessionError):
        return RpcError(Code.FILE_ERROR, str(exc))
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return RpcError(Code.FILE_ERROR, f"{where}{exc.strerror or exc}")
    log.error("internal error: %s", exc, exc_info=exc)
    return RpcError(Code.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}")
