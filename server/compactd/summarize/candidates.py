"""Ordered fallback over several summarizers (spec M-25, simplified).

Each candidate already retries its own transient failures; when one still fails (any
SummarizationError or unexpected exception) the next candidate is tried with the same request.
Cancellation is never swallowed: CancelledError is a BaseException and propagates at once.
If every candidate fails, the last error is raised.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import OnText, SummarizationError, Summarizer, SummaryRequest, SummaryResult

__all__ = ["CandidateSummarizer"]


class CandidateSummarizer:
    def __init__(self, candidates: Sequence[Summarizer], name: str | None = None) -> None:
        if not candidates:
            raise ValueError("CandidateSummarizer needs at least one candidate")
        self.candidates = list(candidates)
        self.name = name or "candidates(" + ", ".join(c.name for c in self.candidates) + ")"
        # (candidate name, error message) of the failures during the last call, for diagnostics.
        self.failures: list[tuple[str, str]] = []

    def __repr__(self) -> str:
        return f"CandidateSummarizer({self.candidates!r})"

    @property
    def context_window(self) -> int | None:
        """The smallest known window: a prompt that fits it fits every candidate."""
        windows = [w for c in self.candidates if (w := getattr(c, "context_window", None))]
        return min(windows) if windows else None

    async def summarize(self, request: SummaryRequest, on_text: OnText | None = None) -> SummaryResult:
        self.failures = []
        last: Exception | None = None
        for candidate in self.candidates:
            try:
                return await candidate.summarize(request, on_text)
            except Exception as exc:  # CancelledError is not an Exception: it propagates
                self.failures.append((candidate.name, str(exc)))
                last = exc
        assert last is not None
        if isinstance(last, SummarizationError):
            raise last
        raise SummarizationError(f"Summarization failed: {last}") from last
