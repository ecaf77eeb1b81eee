"""Daemon logging: stderr only (stdout is the protocol), with secrets masked.

We never log API keys ourselves; the filter is a second line of defence against a library that
logs a request, a header or a client payload that carries one.
"""

from __future__ import annotations

import logging
import os
import re
import sys

_SECRET_PATTERNS = (
    # "apiKey": "…", api_key=…, Authorization: Bearer …, "token": "…", password=…
    re.compile(r"""(?i)(["']?(?:api[_-]?key|authorization|x-api-key|secret|password|access[_-]?token)["']?\s*[:=]\s*)(["']?)(?:bearer\s+)?[^"',\s}\]]+"""),
    re.compile(r"(?i)(bearer\s+)()[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"()()\bsk-[A-Za-z0-9_-]{12,}"),
)


def redact(text: str) -> str:
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
    return text


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(level: str | None = None) -> None:
    """COMPACTD_LOG_LEVEL (default INFO) for compactd, WARNING for pygls unless DEBUG is asked."""
    name = (level or os.environ.get("COMPACTD_LOG_LEVEL") or "INFO").upper()
    our_level = getattr(logging, name, logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter("compactd %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("compactd").setLevel(our_level)
    # pygls logs every message body at INFO and tracebacks for expected errors; keep it quiet.
    logging.getLogger("pygls").setLevel(logging.DEBUG if our_level <= logging.DEBUG else logging.CRITICAL)
