"""Text helpers shared by every stage of the embedded summarizer: clipping, sentences, keys."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

MAX_ITEM = 400
MAX_QUOTE = 500

# A list marker at the start of a line: "- ", "* ", "- [x] ", "1. ", "2) ".
LIST_MARK = re.compile(r"^\s*(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)")
# A file path: something with a slash, or a name with a common source/doc extension.
PATH = re.compile(
    r"(?<![\w@:/])(?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]*\w"
    r"|\b[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|"
    r"swift|toml|yaml|yml|ini|cfg|sh|bash|zsh|txt|css|scss|html|sql|proto|lock|xml|vue|svelte)\b"
)
FUNC = re.compile(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\(\)")  # name() as people write function names
CODE = re.compile(r"`([^`\n]{2,80})`")  # inline code spans
# Lines that are code, not prose (comments, braces, declarations).
_CODE_LINE = re.compile(r"^(?://|/\*|\*|#!|[{}()\]\[;]|this\.|const |let |import |export |return |def |class )|[;{]\s*$")


def clip(text: str, limit: int = MAX_ITEM) -> str:
    text = " ".join(text.split()) if "\n" in text else text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def clause(text: str) -> str:
    """A sentence that more of the line follows (after ';' or a dash): its own full stop dropped, so
    the line does not read '….;' (an ellipsis or a question mark stays)."""
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def joined(parts: Iterable[str], sep: str = "; ") -> str:
    """Items joined into one line, each one's full stop dropped before the separator."""
    items = list(parts)
    return sep.join([clause(p) for p in items[:-1]] + items[-1:])


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def unfenced_lines(text: str) -> Iterator[str]:
    """The stripped lines of a text outside its fenced code blocks (the fences themselves dropped)."""
    fenced = False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield line


_NUMBERED = re.compile(r"^\d+[.)]\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\w`\"'(\[])")


def sentences(text: str) -> list[str]:
    """Prose sentences of a text: fenced blocks and lines that look like code are skipped."""
    out = []
    for line in unfenced_lines(text):
        if not line or _CODE_LINE.search(line):
            continue
        line = _NUMBERED.sub("", line)  # a numbered item's number is not a sentence of its own
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def u16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def norm(text: str) -> str:
    """Lower case, punctuation and spacing folded: the key two wordings of one item share."""
    return re.sub(r"\W+", " ", text.lower()).strip()


def dedupe(items: Iterable[str]) -> list[str]:
    """Non-empty items in order, the first of each `norm` key kept."""
    seen: set[str] = set()
    out = []
    for it in items:
        k = norm(it)
        if it and k not in seen:
            seen.add(k)
            out.append(it)
    return out


def anchors(text: str) -> set[str]:
    """Paths and backticked code in a line: what identifies a work item across messages."""
    found = set(PATH.findall(text)) | set(CODE.findall(text)) | {f[:-2] for f in FUNC.findall(text)}
    return {t for t in found if len(t) > 2}


def project_root(paths: Iterable[str]) -> str:
    """The directory the absolute paths of a session share, when it is deep enough to be a project
    (three levels or more); '' otherwise."""
    absolute = sorted({p for p in paths if p.startswith("/")})
    if len(absolute) < 2:
        return ""
    root = posixpath.commonpath(absolute)
    return root if root.count("/") >= 3 else ""


def shortener(root: str) -> Callable[[str], str]:
    """Shows a path relative to the project root (named once in Critical Context)."""
    if not root:
        return lambda p: p
    prefix = root.rstrip("/") + "/"
    return lambda p: p[len(prefix):] if p.startswith(prefix) else p
