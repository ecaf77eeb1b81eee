"""The user's short replies to the assistant: a yes or a no to the offer a reply ended with, and the
questions (with their options) an ask-the-user call put, when the answer comes back as plain text."""

from __future__ import annotations

import re

from .dialog import stem
from .text import LIST_MARK, clip, sentences, unfenced_lines

# An offer that waits for a yes or a no: "Want me to ...?", "Should I ...?", "Shall we ...?".
_OFFER = re.compile(r"\b(?:want me to|should I|shall I|shall we|should we|would you like me to|do you want me to|"
                    r"may I|can I go ahead)\b", re.IGNORECASE)
# The same offer made as a statement: "If you want, I can ...", "Let me know if you'd like me to ...",
# "I can also ... if you like".
_STATED_OFFER = re.compile(r"\bif you(?:'d| would)? (?:like|want|prefer),? I can\b"
                           r"|\b(?:let me know|tell me) if you(?:'d| would)? (?:like|want) me to\b"
                           r"|^I (?:can|could) (?:also )?.{3,200}\bif you(?:'d| would)? (?:like|want)\b", re.IGNORECASE)
_BARE_NO = re.compile(r"^(?:no|nope|nah|not now|no thanks?|don'?t)\W*$", re.IGNORECASE)
_YES = re.compile(r"^\W*(?:y|yes|yeah|yep|yup|ok|okay|sure|sounds good|go ahead|do it|please do|proceed|lgtm|"
                  r"go for it|absolutely|definitely)\b", re.IGNORECASE)


def closing_offer(text: str) -> str:
    """The offer a message ends with (its last sentence, a question), else ''."""
    said = [s for s in sentences(text) if re.search(r"[^\W\d_]", s)]  # a closing rule ("---") says nothing
    last = said[-1] if said else ""
    either_or = re.search(r"\bor\b", last, re.IGNORECASE)  # "X, or would you prefer Y?" is not a yes/no
    offers = (last.endswith("?") and _OFFER.search(last)) or _STATED_OFFER.search(last)
    if not offers or either_or:
        return ""
    if len(last.split()) < 8 and len(said) > 1:  # "Want me to do this?": what "this" is comes just before
        return f"{said[-2]} {last}"
    return last


def bare_no(text: str) -> bool:
    return bool(_BARE_NO.match(" ".join(text.split())))


# Words of a short reply that say nothing about what it agrees to.
_FILLER = {"please", "plz", "pls", "then", "that", "this", "them", "those", "also", "just", "now", "too", "and",
           "the", "it", "yes", "ok", "okay", "sure"}


def says_yes(text: str, offer: str = "") -> bool:
    """A yes, or a short reply that takes up the offer's own verb or object ("please include", "add it")."""
    if _YES.match(text):
        return True
    words = [w for w in re.findall(r"[a-z]+", text.lower()) if w not in _FILLER]
    offered = {stem(w) for w in re.findall(r"[a-z]+", offer.lower()) if len(w) >= 3}
    return 0 < len(text.split()) <= 4 and bool(words) and all(stem(w) in offered for w in words)


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
