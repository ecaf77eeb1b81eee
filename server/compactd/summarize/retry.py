"""Transient-failure retry shared by the network backends (spec §14.9, M-26, M-27).

Delays: `base_delay_ms × 2^attempt` (2 s, 4 s, 8 s with the defaults) unless the server asked for a
specific delay (Retry-After / retry-after-ms headers, or the same hints inside an error text).
A server-requested delay above `max_delay_ms` fails at once instead of waiting (0 = no cap).
Cancellation during a backoff sleep propagates immediately.
"""

from __future__ import annotations

import asyncio
import email.utils
import re
import time
from dataclasses import dataclass
from typing import TypeVar
from collections.abc import Awaitable, Callable, Mapping

from .base import SummarizationError, TransientError

__all__ = [
    "RetryPolicy",
    "TRANSIENT_TEXT",
    "retry_after_ms_from_headers",
    "retry_after_ms_from_text",
    "run_with_retries",
]

T = TypeVar("T")

# Error texts that indicate a temporary condition (M-25's list).
TRANSIENT_TEXT = re.compile(
    r"overloaded|rate.?limit|usage.?limit|too many requests|429|500|502|503|504|service.?unavailable"
    r"|server error|internal error|connection.?error|fetch failed|retry delay",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RetryPolicy:
    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60000  # cap for server-requested delays; 0 disables the cap


def _clamp(ms: float) -> float:
    return max(0.0, ms)


def retry_after_ms_from_headers(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """`retry-after-ms` (milliseconds) wins over `retry-after` (seconds or an HTTP date)."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    raw_ms = lower.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return _clamp(float(raw_ms))
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if raw is None:
        return None
    try:
        return _clamp(float(raw) * 1000)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return _clamp((when.timestamp() - (time.time() if now is None else now)) * 1000)


_TEXT_HINTS = (
    (re.compile(r"retry-after-ms[:=]\s*(\d+(?:\.\d+)?)", re.I), "ms"),
    (re.compile(r"retry-after[:=]\s*([^\s,;]+(?:,\s*\d{2} \w{3} \d{4} [\d:]+ GMT)?)", re.I), "after"),
    (re.compile(r"x-ratelimit-reset-ms[:=]\s*(\d+(?:\.\d+)?)", re.I), "reset-ms"),
    (re.compile(r"x-ratelimit-reset[:=]\s*(\d+(?:\.\d+)?)", re.I), "reset-s"),
)


def retry_after_ms_from_text(text: str | None, now: float | None = None) -> float | None:
    """Delay hints embedded in an error text (M-26); first match wins; negatives clamp to 0."""
    if not text:
        return None
    now_s = time.time() if now is None else now
    for pattern, kind in _TEXT_HINTS:
        m = pattern.search(text)
        if not m:
            continue
        value = m.group(1)
        if kind == "ms":
            return _clamp(float(value))
        if kind == "after":
            try:
                return _clamp(float(value) * 1000)
            except ValueError:
                try:
                    return _clamp((email.utils.parsedate_to_datetime(value).timestamp() - now_s) * 1000)
                except (TypeError, ValueError):
                    continue
        if kind == "reset-ms":
            n = float(value)
            return _clamp(n - now_s * 1000 if n > 1e12 else n)
        if kind == "reset-s":
            n = float(value)
            return _clamp((n - now_s) * 1000 if n > 1e9 else n * 1000)
    return None


async def run_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[int, float, TransientError], None] | None = None,
    retry_if: Callable[[TransientError], bool] | None = None,
) -> T:
    """Run `attempt()`; on TransientError wait and try again, up to `policy.max_retries` times.
    `retry_if` can exempt some transient errors (they are raised at once, unchanged)."""
    retries = 0
    while True:
        try:
            return await attempt()
        except TransientError as err:
            if retry_if is not None and not retry_if(err):
                raise
            if not policy.enabled or retries >= policy.max_retries:
                if retries == 0:
                    raise
                raise TransientError(f"{err.message} (gave up after {retries + 1} attempts)") from err
            requested = err.retry_after_ms
            if requested is not None:
                if policy.max_delay_ms > 0 and requested > policy.max_delay_ms:
                    raise SummarizationError(
                        f"{err.message} (the server asked to retry after {requested / 1000:g}s, "
                        f"longer than retry.maxDelayMs = {policy.max_delay_ms}ms)"
                    ) from err
                delay_ms = requested
            else:
                delay_ms = policy.base_delay_ms * (2**retries)
                if policy.max_delay_ms > 0:
                    delay_ms = min(delay_ms, policy.max_delay_ms)
            retries += 1
            if on_retry is not None:
                on_retry(retries, delay_ms, err)
            await asyncio.sleep(delay_ms / 1000)
