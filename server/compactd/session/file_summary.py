"""What a session picker shows of a file it has not opened (issue 27): the session's name (Pi's
latest `session_info`, oh-my-pi's title slot or latest `title_change`), else its first user request,
and how many entries it holds. One streaming pass over the lines; only the lines that can carry a
name or the first request are parsed, so a long session costs about a read of its bytes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIRST_REQUEST_CHARS = 120


@dataclass
class FileSummary:
    name: str | None
    first_request: str | None
    entry_count: int


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _one_line(text: str) -> str | None:
    line = " ".join(text.split())
    if not line:
        return None
    return line if len(line) <= FIRST_REQUEST_CHARS else line[: FIRST_REQUEST_CHARS - 1] + "…"


def summarize_file(path: Path) -> FileSummary:
    """Name, first request and entry count of a session file (lines that do not parse are skipped,
    as the loader skips them; the header and oh-my-pi's title slot are not entries)."""
    name: str | None = None
    first: str | None = None
    count = 0
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            named = b'"session_info"' in raw or b'"title' in raw
            asks = first is None and b'"user"' in raw
            header = b'"type":"session"' in raw[:40] or b'"type": "session"' in raw[:40]
            if not (named or asks or header):
                count += 1
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            kind = obj.get("type")
            if kind == "session" or (kind == "title" and obj.get("v") == 1):
                if kind == "title" and isinstance(obj.get("title"), str):
                    name = obj["title"] or name
                continue
            count += 1
            if kind == "session_info" and "name" in obj:
                name = obj["name"] if isinstance(obj["name"], str) and obj["name"] else None
            elif kind == "title_change" and isinstance(obj.get("title"), str):
                name = obj["title"] or name
            elif first is None and kind == "message":
                message = obj.get("message")
                if isinstance(message, dict) and message.get("role") == "user":
                    first = _one_line(_text(message.get("content")))
    return FileSummary(_one_line(name) if name else None, first, count)
