"""Progress of a running summarization, for `$/progress` reports and the CLI.

`ProgressTracker` turns streamed text deltas of one or more parallel summary calls into
`ProgressUpdate`s. The percentage is an estimate: streamed tokens (chars / 4, as Pi estimates)
over the requested output budget. It never goes down and stays below 100 until `done()`,
because a model usually stops well before its budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["OnProgress", "ProgressTracker", "ProgressUpdate", "emit"]


@dataclass
class ProgressUpdate:
    message: str
    text: str  # streamed summary text so far
    percentage: int | None


OnProgress = Callable[[ProgressUpdate], None]


def emit(on_progress: OnProgress | None, message: str, text: str = "", percentage: int | None = None) -> None:
    if on_progress is not None:
        on_progress(ProgressUpdate(message, text, percentage))


@dataclass
class _Stream:
    label: str
    budget: int
    text: str = ""


class ProgressTracker:
    """Combines the streams of the calls of one operation (history + turn prefix run in parallel).

    `join` decides how the texts of several streams are shown together (the split-turn merge
    layout, so the user sees roughly what will be stored)."""

    def __init__(
        self,
        on_progress: OnProgress | None,
        message: str,
        *,
        join: Callable[[list[str]], str] | None = None,
    ) -> None:
        self.on_progress = on_progress
        self.message = message
        self.join = join or (lambda texts: "\n\n".join(t for t in texts if t))
        self._streams: list[_Stream] = []
        self._percentage = 0

    def stream(self, label: str, budget: int) -> Callable[[str], None]:
        """Register one summary call; returns the `on_text` callback to hand to the summarizer.
        A label already registered is reused and starts over (a retry, the next chunk)."""
        entry = next((s for s in self._streams if s.label == label), None)
        if entry is None:
            entry = _Stream(label, max(1, budget))
            self._streams.append(entry)
        else:
            entry.text, entry.budget = "", max(1, budget)

        def on_text(delta: str) -> None:
            entry.text += delta
            self._report()

        return on_text

    def reset(self, label: str) -> None:
        """Forget a stream's text (a retry starts the answer again)."""
        for entry in self._streams:
            if entry.label == label:
                entry.text = ""

    @property
    def text(self) -> str:
        return self.join([s.text for s in self._streams])

    def _estimate(self) -> int:
        produced = sum(math.ceil(len(s.text) / 4) for s in self._streams)
        budget = sum(s.budget for s in self._streams)
        return min(99, int(100 * produced / budget)) if budget else 0

    def _report(self) -> None:
        self._percentage = max(self._percentage, self._estimate())
        emit(self.on_progress, self.message, self.text, self._percentage)

    def note(self, message: str) -> None:
        """A status change without new text (e.g. "Retrying with a reminder")."""
        self.message = message
        emit(self.on_progress, message, self.text, self._percentage)

    def done(self, message: str, text: str | None = None) -> None:
        self._percentage = 100
        emit(self.on_progress, message, self.text if text is None else text, 100)
