"""Stage 3, render: section lines under the exact headings of the structured formats, kept within
the token budget by dropping the lowest-priority (then oldest) lines; headings are never dropped."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base import SummaryKind
from .sectionkeys import (
    BLOCKED, CONSTRAINTS, CRITICAL, DECISIONS, DONE, EARLY, GOAL, IN_PROGRESS, NEXT, NONE, REQUEST, SUFFIX,
)
from .text import u16

# Lower = dropped first when the budget is tight.
PRIORITY = {
    DECISIONS: 2,
    DONE: 2,
    EARLY: 2,
    IN_PROGRESS: 3,
    CONSTRAINTS: 4,
    CRITICAL: 3,
    SUFFIX: 4,
    GOAL: 5,
    BLOCKED: 6,
    NEXT: 7,
    REQUEST: 8,
}


@dataclass
class Line:
    section: str
    text: str
    priority: int
    order: int


class Lines:
    """Section lines in the order they were added."""

    def __init__(self) -> None:
        self.items: list[Line] = []

    def add(self, section: str, texts: list[str], priority: int | None = None) -> None:
        for t in texts:
            self.items.append(Line(section, t, PRIORITY[section] if priority is None else priority, len(self.items)))


def render(kind: SummaryKind, lines: list[Line]) -> str:
    by: dict[str, list[str]] = {}
    for ln in lines:
        by.setdefault(ln.section, []).append(ln.text)

    def bullets(key: str, mark: str = "- ") -> str:
        items = by.get(key, [])
        return "\n".join(mark + it for it in items) if items else NONE

    if kind == SummaryKind.TURN_PREFIX:
        return "\n\n".join([
            "## Original Request\n" + ("\n".join(by.get(REQUEST, [])) or NONE),
            "## Early Progress\n" + bullets(EARLY),
            "## Context for Suffix\n" + bullets(SUFFIX),
        ])
    goals = by.get(GOAL, [])
    goal = NONE if not goals else goals[0] if len(goals) == 1 else "\n".join("- " + g for g in goals)
    nexts = by.get(NEXT, [])
    parts = [
        "## Goal\n" + goal,
        "## Constraints & Preferences\n" + bullets(CONSTRAINTS),
        "## Progress\n### Done\n" + bullets(DONE, "- [x] "),
        "### In Progress\n" + bullets(IN_PROGRESS, "- [ ] "),
        "### Blocked\n" + bullets(BLOCKED),
        "## Key Decisions\n" + bullets(DECISIONS),
        "## Next Steps\n" + ("\n".join(f"{i}. {t}" for i, t in enumerate(nexts, 1)) or NONE),
    ]
    if kind == SummaryKind.HISTORY:
        parts.append("## Critical Context\n" + bullets(CRITICAL))
    return "\n\n".join(parts)


def fit(kind: SummaryKind, lines: list[Line], max_tokens: int) -> str:
    """Drop lowest-priority (then oldest) lines until ceil(chars/4) <= max_tokens."""
    text = render(kind, lines)
    if max_tokens <= 0 or math.ceil(u16(text) / 4) <= max_tokens:
        return text
    over = math.ceil(u16(text) / 4) - max_tokens
    keep = list(lines)
    for victim in sorted(lines, key=lambda ln: (ln.priority, ln.order)):
        keep.remove(victim)
        over -= (u16(victim.text) + 8) // 4  # a cheap estimate; the render below decides
        if over <= 0:
            text = render(kind, keep)
            over = math.ceil(u16(text) / 4) - max_tokens
            if over <= 0:
                return text
    return render(kind, keep)  # headings only: never dropped
