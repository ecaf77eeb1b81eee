"""Small builders for session entries and messages used across session tests."""

from __future__ import annotations

from typing import Any

USAGE = {
    "input": 100,
    "output": 50,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 150,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def user(text: str, ts: int = 1_700_000_000_000) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant(text: str = "ok", *, tool_calls: list[dict[str, Any]] | None = None, provider: str = "openai",
              model: str = "gpt-4o", stop: str = "stop", ts: int = 1_700_000_000_001) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += tool_calls or []
    return {
        "role": "assistant",
        "content": content,
        "api": "openai-completions",
        "provider": provider,
        "model": model,
        "usage": dict(USAGE),
        "stopReason": stop,
        "timestamp": ts,
    }


def tool_call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def tool_result(call_id: str, name: str, text: str, ts: int = 1_700_000_000_002) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": ts,
    }


def entry(entry_id: str, parent: str | None, entry_type: str = "message", ts: str | None = None,
          **fields: Any) -> dict[str, Any]:
    return {"type": entry_type, "id": entry_id, "parentId": parent,
            "timestamp": ts or "2025-01-01T00:00:00.000Z", **fields}
