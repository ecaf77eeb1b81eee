"""Tool-output pruning plan (spec §13.1, N-1..N-5, [OMP] seed-era rules; decision D-19).

Pure: decides which old tool results would be replaced by a short notice and what that saves.
Applying the plan (rewriting content, stamping `prunedAt`, archiving originals, rewriting the
file) is the engine's job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .jscompat import utf16_len
from .tokens import calculate_context_tokens, estimate_tokens

__all__ = [
    "PruneSettings",
    "DEFAULT_PRUNE_SETTINGS",
    "PruneCandidate",
    "PrunePlan",
    "pruned_notice",
    "pruned_content",
    "plan_prune",
    "context_tokens_after_prune",
]

Entry = dict[str, Any]


@dataclass(frozen=True)
class PruneSettings:
    """N-1/D-19 defaults: protect the newest 40000 tool-output tokens, prune only when at least
    20000 would be saved, never prune `skill` or `read` results."""

    protect_tokens: int = 40000
    minimum_savings: int = 20000
    protected_tools: tuple[str, ...] = ("skill", "read")


DEFAULT_PRUNE_SETTINGS = PruneSettings()


def pruned_notice(tokens: int) -> str:
    """N-5: the text that replaces a pruned tool result."""
    return f"[Output truncated - {tokens} tokens]"


def pruned_content(tokens: int) -> list[dict[str, str]]:
    """N-5: the replacement `content` of a pruned tool result."""
    return [{"type": "text", "text": pruned_notice(tokens)}]


def _savings(tokens: int) -> int:
    """N-4: what replacing a result of `tokens` by its notice saves."""
    notice_tokens = -(-utf16_len(pruned_notice(tokens)) // 4)
    return max(0, tokens - notice_tokens)


@dataclass(frozen=True)
class PruneCandidate:
    entry_id: str
    tool_name: str | None
    tokens: int  # K-1 estimate of the result before pruning (the number in its notice)
    savings: int

    @property
    def notice(self) -> str:
        return pruned_notice(self.tokens)


@dataclass(frozen=True)
class PrunePlan:
    """What a prune would do. Empty (`pruned_count == 0`, `tokens_saved == 0`) when nothing
    qualifies or the savings stay below the minimum (N-5)."""

    candidates: tuple[PruneCandidate, ...] = field(default_factory=tuple)
    tokens_saved: int = 0

    @property
    def pruned_count(self) -> int:
        return len(self.candidates)

    @property
    def entry_ids(self) -> list[str]:
        return [c.entry_id for c in self.candidates]

    def replacements(self) -> dict[str, list[dict[str, str]]]:
        """entry id → new `content` for that tool result."""
        return {c.entry_id: pruned_content(c.tokens) for c in self.candidates}

    def to_json(self) -> dict[str, Any]:
        return {"prunedCount": self.pruned_count, "tokensSaved": self.tokens_saved, "entryIds": self.entry_ids}


def _is_pruned(message: dict[str, Any]) -> bool:
    return message.get("prunedAt") is not None


def plan_prune(path_entries: Sequence[Entry], settings: PruneSettings = DEFAULT_PRUNE_SETTINGS) -> PrunePlan:
    """N-2..N-5 over the current path (all of it, also before a compaction).

    Newest → oldest over tool results, with a running total of their estimates: already pruned
    results and results inside the protection window (checked *before* adding the current one,
    so the result that crosses the window stays protected) or of protected tools only add to the
    total; every other result is a candidate. Candidates are returned oldest first.
    """
    accumulated = 0
    picked: list[PruneCandidate] = []
    for entry in reversed(path_entries):
        if entry.get("type") != "message":
            continue
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") != "toolResult":
            continue
        tokens = estimate_tokens(message)
        tool_name = message.get("toolName")
        protected = isinstance(tool_name, str) and tool_name in settings.protected_tools
        if _is_pruned(message) or accumulated < settings.protect_tokens or protected:
            accumulated += tokens
            continue
        picked.append(PruneCandidate(entry["id"], tool_name if isinstance(tool_name, str) else None, tokens,
                                     _savings(tokens)))
        accumulated += tokens
    savings = sum(c.savings for c in picked)
    if not picked or savings < settings.minimum_savings:
        return PrunePlan()
    picked.reverse()
    return PrunePlan(tuple(picked), savings)


def context_tokens_after_prune(usage: dict[str, Any], tokens_saved: int) -> int | float:
    """N-8: the threshold check after a prune uses the last usage minus what the prune saved."""
    return max(0, calculate_context_tokens(usage) - tokens_saved)
