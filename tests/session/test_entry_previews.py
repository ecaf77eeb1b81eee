"""Every entry kind Pi, Pi 1.6 and oh-my-pi write reads as human text in the tree (issue 27):
no "None", no bare internal id, no raw type name where a sentence fits."""

from __future__ import annotations

import re
from typing import Any

from compactd.session.views import entry_kind, entry_preview

ENTRIES: list[tuple[dict[str, Any], str, str]] = [
    ({"type": "thinking_level_change", "thinkingLevel": None, "configured": "auto"}, "thinkingLevel",
     "thinking: auto (no fixed level)"),
    ({"type": "thinking_level_change", "thinkingLevel": None}, "thinkingLevel", "thinking: model default"),
    ({"type": "thinking_level_change", "thinkingLevel": "high"}, "thinkingLevel", "thinking: high"),
    ({"type": "model_change", "model": "openai/gpt-5", "resolvedModelIsFallback": False}, "modelChange",
     "model: openai/gpt-5"),
    ({"type": "usage", "kind": "cache_warm", "provider": "anthropic", "model": "claude",
      "usage": {"totalTokens": 12345}}, "usage", "usage: cache warm · anthropic/claude · 12,345 tokens"),
    ({"type": "model_usage", "purpose": "title", "provider": "openai", "model": "gpt-5-mini", "api": "x",
      "usage": {"totalTokens": 80}, "stopReason": "stop"}, "usage", "usage: title · openai/gpt-5-mini · 80 tokens"),
    ({"type": "title_change", "title": "Fix the build"}, "sessionInfo", "title: Fix the build"),
    ({"type": "service_tier_change", "serviceTier": None}, "modelChange", "service tier: default"),
    ({"type": "reset_boundary"}, "resetBoundary", "context cleared (/clear): the model starts again after this"),
    ({"type": "credential_pin", "provider": "openai", "hash": "abc"}, "custom", "credentials pinned for openai"),
    ({"type": "custom", "customType": "tool_execution_start",
      "data": {"toolCallId": "c1", "toolName": "read", "startedAt": 1, "args": {}}}, "custom", "tool started: read"),
    ({"type": "custom", "customType": "session_exit"}, "custom", "session exited"),
    ({"type": "label", "targetId": "15fbb65c", "label": "checkpoint-A"}, "label", "label: checkpoint-A"),
    ({"type": "message", "message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "", "thinkingSignature": "sig"}]}}, "assistant", "(thinking, text not kept)"),
    ({"type": "message", "message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Let me look at app.py"}]}}, "assistant", "(thinking) Let me look at app.py"),
    ({"type": "something_new"}, "something_new", "something_new entry"),
]


def test_every_kind_reads_as_text() -> None:
    for entry, kind, preview in ENTRIES:
        assert (entry_kind(entry), entry_preview(entry)) == (kind, preview), entry
        assert "None" not in preview and not re.search(r"\b[0-9a-f]{8}\b", preview)
