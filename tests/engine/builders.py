"""Builders for engine tests: messages with realistic (current) timestamps, sessions on disk,
settings pointing at the fake OpenAI server."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from compactd.engine.settings import Settings, load_settings, merge_settings
from compactd.session import Session
from compactd.session.clock import now_ms

_tick = itertools.count()
_last = 0


def ts() -> int:
    """Increasing message timestamps at about now (ms)."""
    global _last
    _last = max(now_ms(), _last + 1)
    return _last


def earlier() -> int:
    """A timestamp surely older than an entry written just now (stale guard tests, D-11)."""
    return now_ms() - 60_000 + next(_tick)


def later() -> int:
    """A timestamp surely newer than an entry written just now."""
    global _last
    _last = max(now_ms() + 1000, _last + 1)
    return _last


USAGE_SMALL = {
    "input": 100,
    "output": 50,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 150,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def usage(total: int, *, input: int | None = None, output: int = 0, cache_read: int = 0) -> dict[str, Any]:
    inp = total - output - cache_read if input is None else input
    return {
        "input": inp,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def user(text: str, *, at: int | None = None) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "timestamp": ts() if at is None else at,
    }


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def assistant(
    text: str = "ok",
    *,
    calls: list[dict[str, Any]] | None = None,
    stop: str | None = None,
    use: dict[str, Any] | None = None,
    model: str = "gpt-4o",
    provider: str = "openai",
    error: str | None = None,
    at: int | None = None,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += calls or []
    message = {
        "role": "assistant",
        "content": content,
        "api": "openai-completions",
        "provider": provider,
        "model": model,
        "usage": dict(use or USAGE_SMALL),
        "stopReason": stop or ("toolUse" if calls else "stop"),
        "timestamp": ts() if at is None else at,
    }
    if error is not None:
        message["errorMessage"] = error
    return message


def result(call_id: str, name: str, text: str, *, at: int | None = None) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": ts() if at is None else at,
    }


def new_session(tmp_path: Path, name: str = "session.jsonl", *, in_memory: bool = False) -> Session:
    return Session.create(str(tmp_path), None if in_memory else tmp_path / name, in_memory=in_memory)


def add(session: Session, *messages: dict[str, Any]) -> list[str]:
    return [session.append_message(m) for m in messages]


def turn(
    session: Session, n: int, *, size: int = 400, path: str | None = None, edit: bool = False
) -> list[str]:
    """One user turn: request, a tool call (read, or edit), its result, and a final answer."""
    file = path or f"src/mod{n}.py"
    tool = "edit" if edit else "read"
    args = {"path": file, "oldText": "a", "newText": "b"} if edit else {"path": file}
    return add(
        session,
        user(f"Request {n}: please work on {file}. " + "x" * size),
        assistant(f"Looking at {file}.", calls=[call(f"c{n}", tool, **args)]),
        result(f"c{n}", tool, f"contents of {file} " + "y" * size),
        assistant(f"Done with request {n}. " + "z" * (size // 4)),
    )


def settings(tmp_path: Path, fake: Any = None, **sections: dict[str, Any]) -> Settings:
    """Settings with nothing read from the user's files; the summarizer is the fake server when given."""
    overrides: dict[str, Any] = {"retry": {"baseDelayMs": 1, "maxRetries": 2}}
    if fake is not None:
        overrides["summarizer"] = {"backend": "openai", "baseUrl": fake.url, "model": "fake-model"}
    else:
        overrides["summarizer"] = {"backend": "extractive"}
    for key, value in sections.items():
        overrides = merge_settings(overrides, {key: value})
    home = tmp_path / "home"
    return load_settings(tmp_path / "project", overrides, env={}, home=home)


HISTORY_TEXT = """## Goal
Ship the feature.

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] Read the code

### In Progress
- [ ] Editing

### Blocked
- (none)

## Key Decisions
- **Keep it small**: less risk

## Next Steps
1. Finish the edit

## Critical Context
- (none)"""

PREFIX_TEXT = """## Original Request
Refactor the parser.

## Early Progress
- Read the files

## Context for Suffix
- The edit follows"""

BRANCH_TEXT = """## Goal
Try another approach.

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] Explored

### In Progress
- [ ] (none)

### Blocked
- (none)

## Key Decisions
- **Abandon**: did not work

## Next Steps
1. Go back"""
