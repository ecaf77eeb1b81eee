"""Remote summary endpoint (spec S-16, [OMP]).

`POST <endpoint>` with `content-type: application/json` and `{"systemPrompt", "prompt"}`; the
response must be JSON with a string `summary` (anything else in it, e.g. `shortSummary`, is
ignored). Errors: `Remote compaction failed (<status> <statusText>)` and
`Remote compaction response missing summary`.

Only history summaries go remote: the engine always produces turn-prefix summaries locally
(S-16) and never hands a TURN_PREFIX request to this backend. Connection errors, timeouts, 429
and 5xx are retried with the shared policy (like every summarization call, S-8). Cancelling the
awaiting task closes the connection. The endpoint returns no usage, so `usage` is None.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

try:  # openai >= 3 ships httpx2; older SDKs use httpx (same API)
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

from .base import (
    OnText,
    SummarizationError,
    Summarizer,
    SummaryKind,
    SummaryRequest,
    SummaryResult,
    TransientError,
)
from .retry import RetryPolicy, retry_after_ms_from_headers, run_with_retries

__all__ = ["RemoteSummarizer", "RemoteHistorySummarizer"]

MISSING_SUMMARY = "Remote compaction response missing summary"


def _status_text(response: httpx.Response) -> str:
    phrase = response.reason_phrase
    if not phrase:
        try:
            phrase = HTTPStatus(response.status_code).phrase
        except ValueError:
            phrase = ""
    return phrase


class RemoteSummarizer:
    def __init__(
        self,
        endpoint: str,
        *,
        timeout_seconds: float = 120.0,
        retry: RetryPolicy | None = None,
        name: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout_seconds = timeout_seconds
        self.retry = retry or RetryPolicy()
        self.name = name or f"remote:{endpoint}"

    def __repr__(self) -> str:
        return f"RemoteSummarizer(endpoint={self.endpoint!r})"

    async def summarize(self, request: SummaryRequest, on_text: OnText | None = None) -> SummaryResult:
        result = await run_with_retries(lambda: self._attempt(request), self.retry)
        if on_text is not None:
            on_text(result.text)  # no streaming: deliver the whole text once
        return result

    async def _attempt(self, request: SummaryRequest) -> SummaryResult:
        payload = {"systemPrompt": request.system_prompt, "prompt": request.prompt}
        try:
            async with httpx.AsyncClient(timeout=self.timeout_seconds) as client:
                response = await client.post(
                    self.endpoint,
                    content=json.dumps(payload, ensure_ascii=False).encode(),
                    headers={"content-type": "application/json"},
                )
        except httpx.TimeoutException:
            raise TransientError(
                f"Remote compaction failed (timed out after {self.timeout_seconds:g}s at {self.endpoint})"
            ) from None
        except httpx.TransportError as exc:
            raise TransientError(
                f"Remote compaction failed (connection error: {type(exc).__name__})"
            ) from None

        status = response.status_code
        if not 200 <= status < 300:
            message = f"Remote compaction failed ({status} {_status_text(response)})"
            if status in (408, 429) or status >= 500:
                raise TransientError(
                    message, retry_after_ms=retry_after_ms_from_headers(dict(response.headers))
                )
            raise SummarizationError(message)
        try:
            data: Any = response.json()
        except ValueError:
            raise SummarizationError(MISSING_SUMMARY) from None
        summary = data.get("summary") if isinstance(data, dict) else None
        if not isinstance(summary, str):
            raise SummarizationError(MISSING_SUMMARY)
        return SummaryResult(text=summary, usage=None, model_called=True)


class RemoteHistorySummarizer:
    """Routes history summaries to the remote endpoint and everything else (turn prefixes,
    branch summaries) to a local summarizer, as S-16 requires."""

    def __init__(self, remote: RemoteSummarizer, local: Summarizer) -> None:
        self.remote = remote
        self.local = local
        self.name = f"{remote.name}+{local.name}"

    def __repr__(self) -> str:
        return f"RemoteHistorySummarizer(remote={self.remote!r}, local={self.local!r})"

    async def summarize(self, request: SummaryRequest, on_text: OnText | None = None) -> SummaryResult:
        target = self.remote if request.kind == SummaryKind.HISTORY else self.local
        return await target.summarize(request, on_text)
