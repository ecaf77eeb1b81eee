"""The user's short replies to the assistant: a yes or a no to the offer a reply ended with, and the
questions (with their options) an ask-the-user call put, when the answer comes back as plain text."""

from __future__ import annotations

import re

from .text import LIST_MARK, clip, sentences, unfenced_lines

# An offer that waits for a yes or a no: "Want me to ...?", "Should I ...?", "Shall we ...?".
_OFFER = re.compile(r"\b(?:want me to|should I|shall I|shall we|should we|would you like me to|do you want me to|"
                    r"may I|can I go ahead)\b", re.IGNORECASE)
_BARE_NO = re.compile(r"^(?:no|nope|nah|not now|no thanks?|don'?t)\W*$", re.IGNORECASE)
_YES = re.compile(r"^\W*(?:y|yes|yeah|yep|yup|ok|okay|sure|sounds good|go ahead|do it|please do|proceed|lgtm|"
                  r"go for it|absolutely|definitely)\b", re.IGNORECASE)


def closing_offer(text: str) -> str:
    """The offer a message ends with (its last sentence, a question), else ''."""
    said = sentences(text)
    last = said[-1] if said else ""
    either_or = re.search(r"\bor\b", last, re.IGNORECASE)  # "X, or would you prefer Y?" is not a yes/no
    if not (last.endswith("?") and _OFFER.search(last)) or either_or:
        return ""
    if len(last.split()) < 8 and len(said) > 1:  # "Want me to do this?": what "this" is comes just before
        return f"{said[-2]} {last}"
    return last


def bare_no(text: str) -> bool:
    return bool(_BARE_NO.match(" ".join(text.split())))


def says_yes(text: str) -> bool:
    return bool(_YES.match(text))


def questions_in(text: str) -> dict[str, list[str]]:
    """The questions a text asks (lines ending in '?', emphasis removed), each with the options listed
    under it ('label (what it means)')."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in unfenced_lines(text):
        line = re.sub(r"[*_]{2}", "", raw).strip()
        if line.endswith("?") and not LIST_MARK.match(raw):
            current = out.setdefault(re.split(r"(?<=[.!:])\s+", line)[-1], [])
        elif current is not None and LIST_MARK.match(raw):
            label, _, what = LIST_MARK.sub("", line).partition(" - ")
            current.append(label.strip() + (f" ({clip(what.strip(), 80)})" if what.strip() else ""))
    return out
