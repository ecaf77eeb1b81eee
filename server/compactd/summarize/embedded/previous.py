"""Update mode: the sections of a previous summary, whatever its layout (ours, Pi's, or another
model's), mapped onto ours so that every item is carried forward."""

from __future__ import annotations

import re

from .sectionkeys import BLOCKED, CONSTRAINTS, CRITICAL, DECISIONS, DONE, GOAL, IN_PROGRESS, NEXT, NONE, USER
from .text import LIST_MARK, clip

_FILE_TAGS = re.compile(r"<(read-files|modified-files)>.*?</\1>", re.DOTALL)

# Heading words -> section, first match wins: the usual synonyms of each section's name. A heading
# with no counterpart keeps its own title under Critical Context, so nothing is lost.
_HEADING_MAP: tuple[tuple[str, str | None], ...] = (
    ("turn context", None),
    ("original request", GOAL),
    ("user message", USER),
    ("early progress", DONE),
    ("context for suffix", CRITICAL),
    ("constraint", CONSTRAINTS),
    ("preference", CONSTRAINTS),
    ("rule", CONSTRAINTS),
    ("requirement", CONSTRAINTS),
    ("blocked", BLOCKED),
    ("blocker", BLOCKED),
    ("in progress", IN_PROGRESS),
    ("current", IN_PROGRESS),
    ("decision", DECISIONS),
    ("next", NEXT),
    ("remaining", NEXT),
    ("todo", NEXT),
    ("to do", NEXT),
    ("done", DONE),
    ("completed", DONE),
    ("finished", DONE),
    ("goal", GOAL),
    ("objective", GOAL),
    ("critical", CRITICAL),
    ("context", CRITICAL),
)
def _heading_key(title: str) -> str | None | bool:
    """A section key, None for "skip this heading's text", False for "no counterpart"."""
    t = title.lower()
    if t.strip() == "progress":
        return None  # "## Progress" only groups Done / In Progress / Blocked
    for word, key in _HEADING_MAP:
        if word in t:
            return key
    return False


def parse_summary(text: str) -> dict[str, list[str]]:
    text = _FILE_TAGS.sub("", text)
    sections: dict[str, list[str]] = {}
    current: str | None = None
    prefix = ""
    level_of_current = 0
    fence: list[str] | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("```"):
            if fence is None:
                fence = []
            else:
                if current is not None and fence:
                    sections.setdefault(current, []).append(prefix + clip(" / ".join(fence), 400))
                fence = None
            continue
        if fence is not None:
            if stripped:
                fence.append(stripped)
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*$", stripped)
        if m:
            level, title = len(m.group(1)), m.group(2).strip("*: ")
            if level == 1:
                current, prefix = None, ""
                continue
            key = _heading_key(title)
            if key is False:
                if current is not None and level > level_of_current:
                    sections.setdefault(current, []).append(prefix + title)  # a sub-heading of a known section
                    continue
                current, prefix, level_of_current = CRITICAL, f"{title}: ", level
            else:
                current, prefix, level_of_current = key, "", level  # type: ignore[assignment]
            continue
        if stripped in ("---", "**Turn Context (split turn):**"):
            current = None
            continue
        if current is None or not stripped or re.match(r"^\|?\s*:?-{3,}", stripped):
            continue
        item = LIST_MARK.sub("", stripped).strip()
        if item.startswith("|"):
            item = " | ".join(c.strip() for c in item.strip("|").split("|"))
        if not item or item in (NONE, "- (none)"):
            continue
        sections.setdefault(current, []).append(prefix + item)
    return sections

