"""Calling the summarizer for the engine: the summary check (D-23), parallel calls under one
cancellation scope (D-15) and the concurrency limit.

D-23: a structured summary must contain its required section headings. When one is missing, the
same request is sent once more with a reminder appended to the prompt. If the second answer is
still incomplete it is never stored as is: the embedded summarizer's summary of the same request
replaces it, with a warning naming what the model left out (or, with `strict`, the call fails).
The usage of both model calls is counted (both were paid for).

Concurrency (`run_limited`): with `max_concurrency` 1 the calls run one after the other. Otherwise
they run together; a call whose stream the server cut off (a single-slot server stops the running
request when another arrives) is not retried in parallel but run again alone once the others are
done. Any other failure stops all calls at once (D-15).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..summarize.base import (
    StreamCutOffError,
    SummarizationError,
    Summarizer,
    SummaryRequest,
    retry_notice,
    usage_add,
)
from .progress import ProgressTracker

__all__ = ["Generated", "generate_checked", "missing_headings", "reminder_text", "run_limited", "run_together"]

T = TypeVar("T")


@dataclass
class Generated:
    text: str
    usage: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)
    attempts: int = 1
    model_calls: int = 0  # requests that reached a model (0 for the embedded summarizer)


def missing_headings(text: str, headings: Sequence[str]) -> list[str]:
    """The required headings that do not appear on a line of their own."""
    return [h for h in headings if not re.search(rf"^[ \t]*{re.escape(h)}[ \t]*$", text, re.MULTILINE)]


def reminder_text(headings: Sequence[str], missing: Sequence[str]) -> str:
    return (
        "\n\nReminder: the summary must contain every one of these headings, each on its own line and "
        "written exactly like this: "
        + ", ".join(headings)
        + ". Your previous answer left out: "
        + ", ".join(missing)
        + ". Write the complete summary again in that format."
    )


async def generate_checked(
    summarizer: Summarizer,
    request: SummaryRequest,
    *,
    headings: Sequence[str] = (),
    tracker: ProgressTracker | None = None,
    label: str = "summary",
    budget: int | None = None,
    fallback: Summarizer | None = None,
    strict: bool = False,
) -> Generated:
    """One summary with the D-23 check (`headings` empty = no check). `fallback` writes the
    summary when the model's answers both lack headings (None: keep the more complete answer)."""
    if tracker is None:
        return await _generate_checked(summarizer, request, headings, None, label, budget, fallback, strict)

    def notice(message: str) -> None:  # the server's error text of a retried attempt, in the progress
        tracker.reset(label)
        tracker.note(message)

    token = retry_notice.set(notice)
    try:
        return await _generate_checked(summarizer, request, headings, tracker, label, budget, fallback, strict)
    finally:
        retry_notice.reset(token)


async def _generate_checked(
    summarizer: Summarizer,
    request: SummaryRequest,
    headings: Sequence[str],
    tracker: ProgressTracker | None,
    label: str,
    budget: int | None,
    fallback: Summarizer | None,
    strict: bool,
) -> Generated:
    on_text = tracker.stream(label, budget or request.max_tokens) if tracker is not None else None
    result = await summarizer.summarize(request, on_text)
    calls = int(result.model_called)
    missing = missing_headings(result.text, headings) if headings else []
    if not missing:
        return Generated(result.text, result.usage, model_calls=calls)

    if tracker is not None:
        tracker.reset(label)
        tracker.note(f"The {label} lacks required headings; asking once more")
    retry_request = request.model_copy(update={"prompt": request.prompt + reminder_text(headings, missing)})
    second = await summarizer.summarize(retry_request, on_text)
    calls += int(second.model_called)
    usage = usage_add(result.usage, second.usage)
    still_missing = missing_headings(second.text, headings)
    if not still_missing:
        return Generated(second.text, usage, attempts=2, model_calls=calls)
    # The more complete answer (the newer one on a tie) names what the model could not do.
    text, lacking = (
        (second.text, still_missing) if len(still_missing) <= len(missing) else (result.text, missing)
    )
    failure = f"the {label} from {summarizer.name} is missing required headings even after a reminder: " + ", ".join(
        lacking
    )
    if strict:
        raise SummarizationError(failure[0].upper() + failure[1:] + " (summarizer.strictHeadings is on)")
    if fallback is None:
        return Generated(text, usage, [failure[0].upper() + failure[1:]], attempts=2, model_calls=calls)
    if tracker is not None:
        tracker.reset(label)
        tracker.note(f"The {label} from the model lacks required headings; using the embedded summarizer")
    embedded = await fallback.summarize(request, on_text)
    warning = failure[0].upper() + failure[1:] + f"; the summary of {fallback.name} was written instead"
    return Generated(embedded.text, usage, [warning], attempts=3, model_calls=calls)


class _CutOff:
    """Marks a parallel call the server cut off (to be run again alone)."""

    def __init__(self, error: StreamCutOffError) -> None:
        self.error = error


async def run_limited(
    calls: Sequence[Callable[[bool], Awaitable[T]]],
    max_concurrency: int,
    *,
    on_sequential_retry: Callable[[int, StreamCutOffError], None] | None = None,
) -> list[T]:
    """Run `calls` (each called with `parallel`: whether it runs beside another call) and return
    their results in order; see the module docstring for the rules."""
    if len(calls) <= 1 or max_concurrency <= 1:
        return [await call(False) for call in calls]

    async def guarded(call: Callable[[bool], Awaitable[T]]) -> T | _CutOff:
        try:
            return await call(True)
        except StreamCutOffError as err:
            return _CutOff(err)

    first: list[T | _CutOff] = await run_together(*(guarded(c) for c in calls))
    results: list[T] = []
    for index, outcome in enumerate(first):
        if isinstance(outcome, _CutOff):
            if on_sequential_retry is not None:
                on_sequential_retry(index, outcome.error)
            results.append(await calls[index](False))
        else:
            results.append(outcome)
    return results


async def run_together(*coros: Awaitable[T]) -> list[T]:
    """Run the coroutines concurrently and return their results in order. If one fails, the
    others are cancelled and awaited (so their HTTP streams are closed) before the first failure
    is raised; cancelling the caller cancels and awaits them all the same way."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:  # the first failure in call order, for a stable message
            if task in done and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return [task.result() for task in tasks]
    finally:
        pending = [t for t in tasks if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        for task in tasks:  # mark every failure as retrieved: asyncio would log the unread ones
            if task.done() and not task.cancelled():
                task.exception()
