"""Calling the summarizer for the engine: the summary check (D-23) and parallel calls under one
cancellation scope (D-15).

D-23: a structured summary must contain its required section headings. When one is missing, the
same request is sent once more with a reminder appended to the prompt; if the second answer is
still incomplete, the better of the two is kept and a warning is returned. The usage of both
calls is counted (both were paid for).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..summarize.base import Summarizer, SummaryRequest, usage_add
from .progress import ProgressTracker

__all__ = ["Generated", "generate_checked", "missing_headings", "reminder_text", "run_together"]

T = TypeVar("T")


@dataclass
class Generated:
    text: str
    usage: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)
    attempts: int = 1


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
) -> Generated:
    """One summary with the D-23 check (`headings` empty = no check)."""
    on_text = tracker.stream(label, budget or request.max_tokens) if tracker is not None else None
    result = await summarizer.summarize(request, on_text)
    missing = missing_headings(result.text, headings) if headings else []
    if not missing:
        return Generated(result.text, result.usage)

    if tracker is not None:
        tracker.reset(label)
        tracker.note(f"The {label} lacks required headings; asking once more")
    retry_request = request.model_copy(update={"prompt": request.prompt + reminder_text(headings, missing)})
    second = await summarizer.summarize(retry_request, on_text)
    usage = usage_add(result.usage, second.usage)
    still_missing = missing_headings(second.text, headings)
    if not still_missing:
        return Generated(second.text, usage, attempts=2)
    # Keep the more complete answer (the newer one on a tie) and say what is missing.
    text, lacking = (
        (second.text, still_missing) if len(still_missing) <= len(missing) else (result.text, missing)
    )
    warning = f"The {label} is missing required headings even after a reminder: " + ", ".join(lacking)
    return Generated(text, usage, [warning], attempts=2)


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
