"""Timestamps in Pi's two formats (E-2): ISO strings on entries, epoch milliseconds on messages."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any


def now_iso() -> str:
    """ISO-8601 UTC with milliseconds and `Z`."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def iso_to_ms(value: Any) -> int:
    """An entry timestamp to epoch milliseconds (numbers pass through); 0 when unparseable."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    if not isinstance(value, str):
        return 0
    try:
        text = value[:-1] + "+00:00" if value.endswith("Z") else value
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)
