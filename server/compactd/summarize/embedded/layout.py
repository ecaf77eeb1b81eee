"""How a user message is laid out: a prompt organised under Markdown headings (whose task section
says what is asked), and instructions given as a lead-in and a list. Structure only, no wording."""

from __future__ import annotations

import re

from .text import LIST_MARK, unfenced_lines

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
# The heading prompt templates put over what is asked (as opposed to context pasted above it).
_TASK_HEADING = re.compile(r"\b(?:task|instructions?|goal|objective|request|what to do)\b", re.IGNORECASE)


def task_section(text: str) -> str | None:
    """In a message organised under Markdown headings, the body of the section that states the task."""
    body: list[str] | None = None
    for line in text.splitlines():
        h = _HEADING.match(line)
        if h:
            if body:
                break
            body = [] if _TASK_HEADING.search(h.group(1)) else None
        elif body is not None:
            body.append(line)
    joined = "\n".join(body or []).strip()
    return joined or None


def without_headings(text: str) -> str:
    """Markdown heading lines dropped: they organise a message, they are not sentences of it."""
    return "\n".join(ln for ln in text.splitlines() if not _HEADING.match(ln))


def listed_rules(text: str) -> list[tuple[str, list[str]]]:
    """Instructions given as a lead-in and a list ("Leave these files alone:", "When you review, check:")
    followed by list items — (the lead-in, its items), in the user's words."""
    out: list[tuple[str, list[str]]] = []
    lead, items = "", []
    for line in [*unfenced_lines(text), ""]:
        if lead and LIST_MARK.match(line):
            items.append(LIST_MARK.sub("", line).strip())
            continue
        if lead and not items and not line:
            continue  # a blank line between the lead-in and its list
        if lead and items:
            out.append((lead, items))
        lead, items = "", []
        if line.endswith(":") and len(line.split()) >= 3 and not LIST_MARK.match(line):
            lead = line  # a lead-in of the user's, with a list after it: what they ask, item by item
    return out
