"""Stage 3, render: section lines under the exact headings of the structured formats, kept within
the token budget by dropping the lowest-priority (then oldest) lines; headings are never dropped."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base import SummaryKind
from .sectionkeys import (
    BLOCKED, CONSTRAINTS, CRITICAL, DECISIONS, DONE, EARLY, GOAL, IN_PROGRESS, NEXT, NONE, REQUEST, SUFFIX, USER,
)
from .text import u16

USER_HEADING = "## User Messages"

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
    USER: 4,
}


@dataclass
class Line:
    section: str
    text: str
    priority: int
    order: int
    rank: int = 0  # within its section, lower = dropped first when the budget is tight


class Lines:
    """Section lines in the order they were added."""

    def __init__(self) -> None:
        self.items: list[Line] = []

    def add(self, section: str, texts: list[str], priority: int | None = None, ranks: list[int] | None = None) -> None:
        for i, t in enumerate(texts):
            self.items.append(Line(section, t, PRIORITY[section] if priority is None else priority, len(self.items),
                                   ranks[i] if ranks else 0))


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
    if by.get(USER):  # not a required heading: present when the user said something
        parts.append(USER_HEADING + "\n" + bullets(USER))
    return "\n\n".join(parts)


# When the budget is tight, content sections give up lines in proportion to their size over their
# weight, so that no section is emptied while another keeps everything; the user's messages and the
# goals keep their first item (the task as first stated) and give up the middle.
SHARE = {DONE: 3.0, EARLY: 3.0, USER: 3.0, DECISIONS: 2.0, SUFFIX: 2.0, CRITICAL: 1.5, CONSTRAINTS: 2.0,
         IN_PROGRESS: 1.0, GOAL: 1.0}
_KEEP_FIRST = (USER, GOAL)
_SHARED_FROM = 2  # lines of priority 2 and above are trimmed by share; below that, dropped first


def _size(line: Line) -> int:
    return u16(line.text) + 8


def _victim(keep: list[Line]) -> Line | None:
    """The next line to drop: the least important first (priority below the shared tier), then a line
    of the content section furthest over its share, then by priority."""
    low = [ln for ln in keep if ln.priority < _SHARED_FROM]
    if low:
        return min(low, key=lambda ln: (ln.priority, ln.order))
    by: dict[str, list[Line]] = {}
    for ln in keep:
        if ln.section in SHARE:
            by.setdefault(ln.section, []).append(ln)
    candidates = {k: v for k, v in by.items() if len(v) > (1 if k in _KEEP_FIRST else 0)}
    if candidates:
        section = max(candidates, key=lambda k: (sum(_size(ln) for ln in candidates[k]) / SHARE[k], k))
        lines = candidates[section]
        rest = lines[1:] if section in _KEEP_FIRST else lines
        # of equal rank, a long line first (by steps of ~150 characters): it frees the room of several
        # short ones, and each line is about one fact; then the oldest
        return min(rest, key=lambda ln: (ln.rank, -(_size(ln) // 150), ln.order))
    return min(keep, key=lambda ln: (ln.priority, ln.order)) if keep else None


def fit(kind: SummaryKind, lines: list[Line], max_tokens: int) -> str:
    """Drop lines (see _victim) until ceil(chars/4) <= max_tokens; headings are never dropped."""
    text = render(kind, lines)
    if max_tokens <= 0 or math.ceil(u16(text) / 4) <= max_tokens:
        return text
    over = math.ceil(u16(text) / 4) - max_tokens
    keep = list(lines)
    while keep:
        victim = _victim(keep)
        if victim is None:
            break
        keep.remove(victim)
        over -= _size(victim) // 4  # a cheap estimate; the render below decides
        if over <= 0:
            text = render(kind, keep)
            over = math.ceil(u16(text) / 4) - max_tokens
            if over <= 0:
                return text
    return render(kind, keep)  # headings only: never dropped
