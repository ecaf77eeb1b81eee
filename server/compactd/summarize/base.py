"""The summarizer interface shared by every backend.

A summarizer turns one fully built prompt (system prompt + user prompt text, assembled by
`compaction.prompts`) into summary text. Backends: OpenAI-compatible streaming chat
(`openai_chat`), a remote HTTP endpoint (`remote`), the embedded extractive summarizer
(`extractive`) and an ordered fallback list (`candidates`).

Cancellation is plain asyncio task cancellation: `CancelledError` propagates out of
`summarize()` and every backend closes its HTTP stream on the way out.
"""

from __future__ import annotations

from contextvars import ContextVar
from enum import Enum
from typing import Any, Protocol, runtime_checkable
from collections.abc import Callable

from pydantic import BaseModel, Field

__all__ = [
    "SummaryKind",
    "SummaryRequest",
    "SummaryResult",
    "OnText",
    "Summarizer",
    "SummarizationError",
    "ContextOverflowError",
    "TransientError",
    "StreamCutOffError",
    "RejectedResponseError",
    "kind_label",
    "token_cap_message",
    "tool_call_message",
    "empty_text_message",
    "empty_usage",
    "usage_add",
    "retry_notice",
]


class SummaryKind(str, Enum):
    HISTORY = "history"
    TURN_PREFIX = "turn_prefix"
    BRANCH = "branch"


class SummaryRequest(BaseModel):
    kind: SummaryKind
    system_prompt: str
    # Full user-prompt text: <conversation> tags, optional <previous-summary>, instructions.
    prompt: str
    max_tokens: int
    # Pi thinking level ("minimal".."xhigh"), or None for no reasoning option.
    reasoning: str | None = None
    # convertToLlm messages behind the prompt; only the extractive summarizer reads them.
    messages: list[dict[str, Any]] = Field(default_factory=list)
    previous_summary: str | None = None
    custom_instructions: str | None = None
    # Sent alongside another call (split turn): a stream the server cuts off is reported at once
    # (StreamCutOffError) instead of retried, so the engine can retry one call at a time.
    parallel: bool = False


class SummaryResult(BaseModel):
    text: str
    # Pi usage shape (F-12) or None when the backend reports none. `usage["estimated"]` is true
    # when the server reported nothing and the counts are tiktoken estimates.
    usage: dict[str, Any] | None = None
    # False for the embedded summarizer: no model was asked (network backends set it).
    model_called: bool = False


OnText = Callable[[str], None]

# Where a backend reports a failed attempt it is about to retry (the server's own error text), so
# the caller's progress shows it; set by the engine around a call, None = nobody listens.
retry_notice: ContextVar[Callable[[str], None] | None] = ContextVar("compactd_retry_notice", default=None)
"""Receives each streamed text delta. If an attempt fails and is retried, the deltas of the
new attempt follow; the final `SummaryResult.text` is authoritative."""


@runtime_checkable
class Summarizer(Protocol):
    name: str

    async def summarize(self, request: SummaryRequest, on_text: OnText | None = None) -> SummaryResult: ...


class SummarizationError(Exception):
    """A summarization failed; `str(error)` is a user-facing message (never contains secrets)."""

    retryable: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ContextOverflowError(SummarizationError):
    """The summarization prompt itself does not fit the summarizer model's context window.
    `context_window` is the window the server named in its error, when it did."""

    def __init__(self, message: str, context_window: int | None = None) -> None:
        super().__init__(message)
        self.context_window = context_window


class TransientError(SummarizationError):
    """Temporary failure (timeout, connection, 429, 5xx, dropped stream); worth retrying."""

    retryable = True

    def __init__(self, message: str, retry_after_ms: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_ms = retry_after_ms


class StreamCutOffError(TransientError):
    """The response stream ended before a finish reason: the server stopped it (a single-slot
    server serving another request) or the connection dropped."""


class RejectedResponseError(SummarizationError):
    """The model answered but the answer cannot be used (token cap, tool call, no text) — S-14/B-13."""


_LABELS = {
    SummaryKind.HISTORY: "Summarization",
    SummaryKind.TURN_PREFIX: "Turn prefix summarization",
    SummaryKind.BRANCH: "Branch summarization",
}


def kind_label(kind: SummaryKind) -> str:
    return _LABELS[SummaryKind(kind)]


def token_cap_message(kind: SummaryKind) -> str:
    return f"{kind_label(kind)} failed: generation hit the token cap and the summary is incomplete"


def tool_call_message(kind: SummaryKind) -> str:
    return f"{kind_label(kind)} attempted to call a tool"


def empty_text_message(kind: SummaryKind) -> str:
    return f"{kind_label(kind)} failed: response contained no summary text"


_USAGE_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
_COST_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "total")


def empty_usage() -> dict[str, Any]:
    usage: dict[str, Any] = {k: 0 for k in _USAGE_FIELDS}
    usage["cost"] = {k: 0 for k in _COST_FIELDS}
    return usage


def _n(value: Any) -> int | float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def usage_add(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """Sum two Pi usage dicts field by field, including cost (S-13). None counts as absent."""
    if a is None and b is None:
        return None
    if a is None or b is None:
        only = a if a is not None else b
        assert only is not None
        return usage_add(only, empty_usage())
    out: dict[str, Any] = {k: _n(a.get(k)) + _n(b.get(k)) for k in _USAGE_FIELDS}
    # Optional extra counters (cacheWrite1h, reasoning) are summed when either side has them.
    for k in sorted((set(a) | set(b)) - set(_USAGE_FIELDS) - {"cost", "estimated"}):
        if isinstance(a.get(k, 0), (int, float)) and isinstance(b.get(k, 0), (int, float)):
            out[k] = _n(a.get(k)) + _n(b.get(k))
    ca = a.get("cost") if isinstance(a.get("cost"), dict) else {}
    cb = b.get("cost") if isinstance(b.get("cost"), dict) else {}
    out["cost"] = {k: _n(ca.get(k)) + _n(cb.get(k)) for k in _COST_FIELDS}
    if a.get("estimated") or b.get("estimated"):  # a sum with an estimated part is an estimate
        out["estimated"] = True
    return out
